"""A request's transaction as Session.fetch sends it: the caller's entry (memex._enter)
and the call in one pipeline, one transaction (the pipeline's implicit one, committed at
its Sync, with no BEGIN and COMMIT statements of its own): both apply or neither does, the
call is bounded by the request's statement_timeout that the entry sets, and nothing the
entry set outlives the request on the pooled connection."""

from __future__ import annotations

import psycopg
import pytest

from memexdb import AsyncMemex
from memexdb.errors import Busy, NotFound, Unauthenticated

A, U = "agent-tx", "user-tx"


def _key(dsn: str) -> tuple[str, str]:
    """An admin key of agent A (token, id), never used yet."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        row = conn.execute(
            "select token, id::text from memex.create_key(p_access => 'admin',"
            " p_agent_id => %s, p_name => 'tx')",
            (A,),
        ).fetchone()
    assert row is not None
    return row[0], row[1]


def _last_used(dsn: str, key_id: str) -> object:
    with psycopg.connect(dsn, autocommit=True) as conn:
        row = conn.execute(
            "select last_used_at from memex.api_keys where id = %s", (key_id,)
        ).fetchone()
    assert row is not None
    return row[0]


async def test_the_entry_and_the_call_commit_together(one_connection: AsyncMemex, dsn: str) -> None:
    """A call that fails takes its entry down with it: the key's last_used_at, which
    memex._enter writes, stays unset; a call that succeeds records it."""
    token, key_id = _key(dsn)
    keyed = one_connection.with_key(token)
    missing = "00000000-0000-4000-8000-000000000000"
    with pytest.raises(NotFound):
        await keyed.get(A, U, missing)
    assert _last_used(dsn, key_id) is None
    await keyed.store(A, U, "The entry and the call commit together.")
    assert _last_used(dsn, key_id) is not None


async def test_nothing_the_entry_sets_outlives_the_request(one_connection: AsyncMemex) -> None:
    """The caller, lock_timeout and statement_timeout that memex._enter sets for a request
    end with its transaction: the next statement on the same connection (entering nobody)
    sees none of them, and the connection is idle, not in a transaction."""
    await one_connection.store(A, U, "Set for one request only.")
    rows = await one_connection.fetch(
        None,
        "select array[coalesce(current_setting('memex.caller', true), ''),"
        " current_setting('statement_timeout'), current_setting('lock_timeout')]",
        enter=False,
    )
    assert rows == [["", "0", "0"]]
    async with one_connection.pool.connection() as conn:
        assert conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE


async def test_the_request_statement_timeout_bounds_the_call(
    one_connection: AsyncMemex, dsn: str
) -> None:
    """memex._enter sets settings.request_statement_timeout_ms for the statements after it
    in the request's transaction: a call that runs longer is cancelled (Busy, 503)."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(
            "insert into memex.settings (name, value)"
            " values ('request_statement_timeout_ms', '100')"
            " on conflict (name) do update set value = excluded.value"
        )
    with pytest.raises(Busy):
        await one_connection.fetch(None, "select pg_sleep(2)")
    # a call within the bound still runs, on the same connection
    assert await one_connection.fetch(None, "select pg_sleep(0.01)::text") == [""]


async def test_failed_requests_leave_no_stale_prepared_statement(
    one_connection: AsyncMemex, dsn: str
) -> None:
    """psycopg prepares a statement on its sixth run; a request whose entry fails (a bad
    key) skips the call behind it in the pipeline, so what psycopg meant to prepare there
    was never prepared. Calls after many such failures, on the same connection, still run
    (no "prepared statement _pg3_N does not exist")."""
    token, _ = _key(dsn)
    good = one_connection.with_key(token)
    bad = one_connection.with_key("mxk_000000000000_" + "0" * 64)
    stored = await good.store(A, U, "Still found after refused requests.")
    for _ in range(12):
        with pytest.raises(Unauthenticated):
            await bad.get(A, U, str(stored.id))
        assert (await good.get(A, U, str(stored.id))).id == stored.id
    for _ in range(12):
        with pytest.raises(Unauthenticated):
            await bad.search(A, U, "refused")
    hits = await good.search(A, U, "found after refused requests")
    assert [h.id for h in hits][:1] == [stored.id]
