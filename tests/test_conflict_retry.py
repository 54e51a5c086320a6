"""A call that loses a deadlock to a concurrent transaction: PostgreSQL rolls the loser
back whole (40P01), so outside a caller's transaction memexdb runs it again and it is
applied once; inside a caller's transaction only the caller can re-run its work, and the
call fails with Busy (503), not an untyped error."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import Any

import psycopg
import pytest

from memexdb import AsyncMemex
from memexdb.errors import Busy, NotFound
from memexdb.session import CONFLICT_ATTEMPTS
from tests.live_service import REPO, wait_until

AGENT, USER, PATH = "locks", "u", "user/today.md"
FILE_LOCK = (
    "select pg_advisory_xact_lock(memex._lock_key('file', jsonb_build_array("
    "%s::text, %s::text, %s::text)::text))"
)


def deadlocks(conn: psycopg.Connection) -> int:
    row = conn.execute(
        "select deadlocks from pg_stat_database where datname = current_database()"
    ).fetchone()
    assert row is not None
    return int(row[0])


async def lose_a_deadlock(dsn: str, call: Callable[[], Coroutine[Any, Any, Any]]) -> Any:
    """Run `call` (a write of PATH) into a deadlock: another transaction holds the
    tenant's row, the call takes the file's lock and waits for that row, then the other
    transaction asks for the file's lock. The call's backend detects the cycle (the other
    one waits 20 s before looking) and is rolled back; the other transaction then gets
    the file's lock and rolls back, releasing the row. Returns what the call returned."""
    with (
        psycopg.connect(dsn, autocommit=True) as other,
        psycopg.connect(dsn, autocommit=True) as watcher,  # sees activity outside a snapshot
    ):
        before = deadlocks(watcher)
        other.execute("begin")
        other.execute("set local deadlock_timeout = '20s'")
        other.execute(
            "select 1 from memex.tenants where agent_id = %s and user_id = %s for update",
            (AGENT, USER),
        )
        task = asyncio.create_task(call())

        def call_waits_for_the_row() -> bool:
            row = watcher.execute(
                "select count(*) from pg_stat_activity where wait_event_type = 'Lock'"
                " and datname = current_database() and query like '%%write_file%%'"
            ).fetchone()
            return row is not None and row[0] == 1

        assert await asyncio.to_thread(wait_until, call_waits_for_the_row, 10)
        await asyncio.to_thread(other.execute, FILE_LOCK, (AGENT, USER, PATH))
        other.execute("rollback")
        try:
            return await asyncio.wait_for(task, 10)
        finally:
            # the victim's backend reports its statistics within a second or so
            assert wait_until(lambda: deadlocks(watcher) == before + 1, 10)


async def test_a_call_that_loses_a_deadlock_is_run_again_and_applied_once(
    dsn: str, amemex: AsyncMemex
) -> None:
    await amemex.store(AGENT, USER, "the tenant exists")
    written = await lose_a_deadlock(
        dsn, lambda: amemex.write_file(AGENT, USER, PATH, "written despite the deadlock")
    )
    assert written.content == "written despite the deadlock"
    revisions = await amemex.list_revisions(AGENT, USER, PATH, limit=10)
    assert len(revisions) == 1


async def test_in_a_callers_transaction_a_lost_deadlock_is_busy(
    dsn: str, amemex: AsyncMemex
) -> None:
    await amemex.store(AGENT, USER, "the tenant exists")

    async def in_transaction() -> None:
        async with amemex.transaction() as tx:
            await tx.write_file(AGENT, USER, PATH, "rolled back with its transaction")

    with pytest.raises(Busy, match="deadlock"):
        await lose_a_deadlock(dsn, in_transaction)
    with pytest.raises(NotFound):
        await amemex.read_file(AGENT, USER, PATH)


def test_the_typescript_direct_client_makes_as_many_attempts() -> None:
    # its own deadlock test is in clients/typescript/test/direct.test.mjs
    source = (REPO / "clients" / "typescript" / "src" / "direct" / "client.ts").read_text()
    assert f"const CONFLICT_ATTEMPTS = {CONFLICT_ATTEMPTS};" in source
