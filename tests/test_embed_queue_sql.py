"""The embed queue's SQL contract, called the way any worker in any language would: take
due entries (locked, SKIP LOCKED) with their content, store vectors only for contents
that did not change, back off on failures, and report the queue's depth. Also the
functions `memexdb reembed` uses, and who may call them."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any
from uuid import UUID

import psycopg
import pytest
from pgvector.psycopg import register_vector

from tests.sqlapi import store, unit

STAND_IN = unit((0, 1.0))
REAL = unit((1, 1.0))


def queued(conn: psycopg.Connection, content: str, **options: Any) -> UUID:
    memory_id: UUID = store(conn, content, STAND_IN, **options)["id"]
    conn.execute("select memex._queue_embedding(%s)", (memory_id,))
    return memory_id


def entry(conn: psycopg.Connection, memory_id: UUID) -> tuple[Any, ...] | None:
    return conn.execute(
        "select attempts, next_attempt_at, last_error from memex.embed_queue where memory_id = %s",
        (memory_id,),
    ).fetchone()


def assert_invalid(conn: psycopg.Connection, field: str, sql: str, args: Any = None) -> None:
    """The call raises MX422 (invalid argument) naming `field`."""
    with pytest.raises(psycopg.Error) as info:
        conn.execute(sql, args)
    assert (info.value.sqlstate, info.value.diag.column_name) == ("MX422", field)


def take(conn: psycopg.Connection, *args: Any) -> list[tuple[Any, ...]]:
    marks = ", ".join(["%s"] * len(args))
    return conn.execute(f"select * from memex.embed_queue_take({marks})", args).fetchall()


def test_take_locks_due_entries_with_their_content_and_a_second_taker_skips_them(
    conn: psycopg.Connection, dsn: str
) -> None:
    ids = [queued(conn, f"memory {n}") for n in range(5)]
    with conn.transaction():
        first = take(conn, 3)
        assert [(r[1], r[2]) for r in first] == [(f"memory {n}", 0) for n in range(3)]
        with psycopg.connect(dsn, autocommit=True) as other:
            second = take(other, 10)  # the first three are locked: skipped, not waited for
            assert [r[0] for r in second] == ids[3:]
    # the first transaction ended without storing anything: all five are still queued
    assert conn.execute("select count(*) from memex.embed_queue").fetchone() == (5,)


def test_take_stops_at_its_character_budget_but_always_takes_one(
    conn: psycopg.Connection,
) -> None:
    for n in range(3):
        queued(conn, f"{n}" * 1000)
    assert len(take(conn, 10, 2500)) == 2
    assert len(take(conn, 10, 10)) == 1  # a content longer than the budget still goes
    assert_invalid(conn, "limit", "select * from memex.embed_queue_take(0)")
    assert_invalid(conn, "max_chars", "select * from memex.embed_queue_take(1, 0)")


def test_only_due_entries_are_taken(conn: psycopg.Connection) -> None:
    later = queued(conn, "not yet")
    now = queued(conn, "now")
    conn.execute(
        "update memex.embed_queue set next_attempt_at = now() + interval '1 hour'"
        " where memory_id = %s",
        (later,),
    )
    assert [r[0] for r in take(conn)] == [now]


def test_vectors_are_stored_only_for_contents_that_did_not_change(
    conn: psycopg.Connection, dsn: str
) -> None:
    register_vector(conn)
    same, changed, gone = (queued(conn, text) for text in ("same", "old text", "deleted"))
    before = conn.execute("select updated_at from memex.memories where id = %s", (same,)).fetchone()
    with conn.transaction():
        taken = {r[0]: r[1] for r in take(conn)}
        assert set(taken) == {same, changed, gone}
        with psycopg.connect(dsn, autocommit=True) as writer:  # while the worker embeds
            writer.execute(
                "update memex.memories set content = 'new text' where id = %s", (changed,)
            )
        ids = list(taken)
        written = conn.execute(
            "select memex.set_embeddings(%s, %s, %s, 'real-model')",
            (ids, [taken[i] for i in ids], [REAL] * len(ids)),
        ).fetchone()
        assert written == (2,)  # "same" and "deleted" (still there in this transaction)
        conn.execute("delete from memex.memories where id = %s", (gone,))
    rows = dict(
        conn.execute("select id, (embedding_model, embedding) from memex.memories").fetchall()
    )
    assert rows[same][0] == "real-model"
    assert rows[changed][0] == "test-model"  # not overwritten with the old text's vector
    assert [r[0] for r in conn.execute("select memory_id from memex.embed_queue")] == [changed]
    after = conn.execute("select updated_at from memex.memories where id = %s", (same,))
    assert after.fetchone() == before  # a vector is not a change of the memory


def test_a_memory_locked_by_a_writer_is_skipped_not_waited_for(
    conn: psycopg.Connection, dsn: str
) -> None:
    register_vector(conn)
    memory_id = queued(conn, "being deleted")
    with psycopg.connect(dsn) as writer:
        writer.execute("select from memex.memories where id = %s for update", (memory_id,))
        with conn.transaction():
            conn.execute("set local lock_timeout = '2s'")  # a wait would fail this test
            written = conn.execute(
                "select memex.set_embeddings(%s, %s, %s, 'real-model')",
                ([memory_id], ["being deleted"], [REAL]),
            ).fetchone()
        assert written == (0,)
        writer.rollback()
    assert entry(conn, memory_id) is not None


def test_set_embeddings_checks_its_arguments(conn: psycopg.Connection) -> None:
    register_vector(conn)
    memory_id = queued(conn, "x")
    call = "select memex.set_embeddings(%s, %s, %s, 'm')"
    assert_invalid(conn, "ids", call, ([memory_id], [], [REAL]))
    assert_invalid(conn, "ids", call, ([memory_id] * 2, ["x"] * 2, [REAL] * 2))
    assert_invalid(
        conn,
        "embeddings",
        "select memex.set_embeddings(%s, %s, array['[1,0]'::vector], 'm')",
        ([memory_id], ["x"]),
    )
    assert_invalid(
        conn,
        "embedding_model",
        "select memex.set_embeddings(%s, %s, %s, '')",
        ([memory_id], ["x"], [REAL]),
    )


def test_failures_back_off_exponentially_up_to_a_cap(conn: psycopg.Connection) -> None:
    memory_id = queued(conn, "the embedding service is down")
    delays = []
    for attempt in range(1, 6):
        started = datetime.now(UTC)
        conn.execute(
            "select memex.embed_queue_failed(%s, %s, 10, 100)",
            ([memory_id], [f"attempt {attempt}: connection refused"]),
        )
        row = entry(conn, memory_id)
        assert row is not None
        attempts, next_attempt_at, last_error = row
        assert attempts == attempt and last_error == f"attempt {attempt}: connection refused"
        delays.append(round((next_attempt_at - started).total_seconds()))
        assert take(conn) == []  # not due until the backoff has passed
    assert delays == [10, 20, 40, 80, 100]
    conn.execute("update memex.embed_queue set attempts = 1000")  # no overflow, the cap
    conn.execute("select memex.embed_queue_failed(%s, %s, 10, 100)", ([memory_id], ["x" * 5000]))
    row = entry(conn, memory_id)
    assert row is not None and row[0] == 1001 and len(row[2]) == 1000
    assert row[1] - datetime.now(UTC) < timedelta(seconds=101)


def test_queuing_again_resets_a_failing_entry(conn: psycopg.Connection) -> None:
    memory_id = queued(conn, "x")
    conn.execute("select memex.embed_queue_failed(%s, %s)", ([memory_id], ["down"]))
    conn.execute("select memex._queue_embedding(%s)", (memory_id,))
    row = entry(conn, memory_id)
    assert row is not None and row[0] == 0 and row[2] is None
    assert [r[0] for r in take(conn)] == [memory_id]


def test_depth_counts_queued_due_and_failing_entries(conn: psycopg.Connection) -> None:
    assert conn.execute(
        "select queued, due, failing from memex.embed_queue_depth()"
    ).fetchone() == (
        0,
        0,
        0,
    )
    ids = [queued(conn, f"m{n}") for n in range(4)]
    conn.execute("select memex.embed_queue_failed(%s, %s)", (ids[:1], ["down"]))
    depth = conn.execute("select * from memex.embed_queue_depth()").fetchone()
    assert depth is not None
    assert depth[:3] == (4, 3, 1)
    assert depth[3] <= depth[4]  # the failing one is due after the others were queued


def test_stale_embeddings_pages_through_other_models_in_id_order(
    conn: psycopg.Connection,
) -> None:
    register_vector(conn)
    ids = sorted((store(conn, f"old {n}", STAND_IN)["id"] for n in range(5)), key=str)
    current = store(conn, "already current", STAND_IN)["id"]
    conn.execute(
        "update memex.memories set embedding_model = 'new-model' where id = %s", (current,)
    )
    assert conn.execute("select * from memex.embedding_models()").fetchall() == [
        ("test-model", 5),
        ("new-model", 1),
    ]
    page = conn.execute("select * from memex.stale_embeddings('new-model', null, 3)").fetchall()
    assert [r[0] for r in page] == ids[:3]
    assert {r[2] for r in page} == {"test-model"} and all(r[1].startswith("old ") for r in page)
    rest = conn.execute(
        "select memory_id from memex.stale_embeddings('new-model', %s, 3)", (page[-1][0],)
    ).fetchall()
    assert [r[0] for r in rest] == ids[3:]


# --- who may call them ----------------------------------------------------------------------

QUEUE_FUNCTIONS = (
    "embed_queue_take",
    "set_embeddings",
    "embed_queue_failed",
    "embed_queue_depth",
    "stale_embeddings",
    "embedding_models",
    "_authorize_embedding",
    "_queue_embedding",
)


def test_the_queue_is_the_services_alone(conn: psycopg.Connection) -> None:
    rows = conn.execute(
        """
        select p.proname, has_function_privilege('memex_tenant', p.oid, 'execute'),
               has_function_privilege('memex_app', p.oid, 'execute'),
               exists (select from aclexplode(coalesce(p.proacl, acldefault('f', p.proowner))) a
                       where a.grantee = 0 and a.privilege_type = 'EXECUTE')
        from pg_proc p
        where p.pronamespace = 'memex'::regnamespace and p.proname = any(%s)
        """,
        (list(QUEUE_FUNCTIONS),),
    ).fetchall()
    assert sorted(r[0] for r in rows) == sorted(QUEUE_FUNCTIONS)
    assert [r[0] for r in rows if r[1] or r[3]] == []  # not tenants', not PUBLIC's
    assert all(r[2] for r in rows)
    grants = conn.execute(
        "select grantee, string_agg(privilege_type, ',' order by privilege_type)"
        " from information_schema.role_table_grants"
        " where table_schema = 'memex' and table_name = 'embed_queue'"
        " and grantee not in (current_user, 'memex_owner') group by grantee"
    ).fetchall()
    assert grants == [("memex_app", "DELETE,INSERT,SELECT,UPDATE")]


def test_the_service_needs_the_operator_to_drain_the_queue(
    conn: psycopg.Connection, dsn: str
) -> None:
    queued(conn, "x")
    with psycopg.connect(dsn, autocommit=True) as app:
        app.execute("set role memex_app")  # the service, no caller entered
        with pytest.raises(psycopg.errors.InvalidAuthorizationSpecification):
            app.execute("select * from memex.embed_queue_take()")
        with pytest.raises(psycopg.errors.InvalidAuthorizationSpecification):
            app.execute("select memex._authorize_embedding()")
        with app.transaction():
            app.execute("select memex._enter_operator('test')")
            assert len(app.execute("select * from memex.embed_queue_take()").fetchall()) == 1


def test_a_key_of_one_agent_may_embed_but_not_drain_the_queue(
    conn: psycopg.Connection, dsn: str
) -> None:
    row = conn.execute("select token from memex.create_key('read', 'A')").fetchone()
    assert row is not None
    with psycopg.connect(dsn, autocommit=True) as app, app.transaction():
        app.execute("set role memex_app")
        app.execute("select memex._enter(%s)", (row[0],))
        app.execute("select memex._authorize_embedding()")  # any valid key, read access
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            app.execute("select * from memex.embed_queue_depth()")
