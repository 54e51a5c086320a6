"""Consolidation in SQL, as pg_cron or any SQL client runs it: memex.consolidate_tenant,
memex.consolidate_due, memex.restore_consolidation, memex.dream_config. Nothing may be
lost: every test counts live + archived memories before and after."""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
import pytest
from psycopg.rows import dict_row

from tests.sqlapi import unit

A, U = "agent", "user"
LATER = datetime.now(UTC) + timedelta(hours=2)  # past the grace period of what we write


def _fill(
    conn: psycopg.Connection,
    n: int,
    *,
    agent: str = A,
    user: str = U,
    memory_type: str = "episodic",
    start: datetime | None = None,
) -> None:
    """n memories a day apart (oldest first), each a distinct fact, one axis each."""
    start = start or datetime(2026, 1, 1, tzinfo=UTC)
    from pgvector.psycopg import register_vector

    register_vector(conn)
    conn.execute(
        "select count(*) from memex.store_many(%s, %s, %s, %s, 'test-model',"
        " %s::text[]::memex.memory_type[], null, null, null, %s)",
        (
            [agent] * n,
            [user] * n,
            [f"Fact number {i}: the {agent} {user} code word is w{i}x." for i in range(n)],
            [unit((i % 300, 1.0), (383, 0.3)) for i in range(n)],
            [memory_type] * n,
            [start + timedelta(days=i) for i in range(n)],
        ),
    )


def _counts(conn: psycopg.Connection, agent: str = A, user: str = U) -> dict[str, int]:
    row = conn.execute(
        "select count(*) filter (where archived_at is null),"
        " count(*) filter (where archived_at is not null), count(*)"
        " from memex.memories where agent_id = %s and user_id = %s",
        (agent, user),
    ).fetchone()
    assert row is not None
    return {"live": row[0], "archived": row[1], "total": row[2]}


def _consolidate(conn: psycopg.Connection, **args: Any) -> dict[str, Any] | None:
    names = ", ".join(f"p_{k} => %({k})s" for k in args)
    row = (
        conn.cursor(row_factory=dict_row)
        .execute(
            f"select * from memex.consolidate_tenant(%(a)s, %(u)s{', ' if args else ''}{names})",
            {"a": A, "u": U, **args},
        )
        .fetchone()
    )
    return None if row is None or row["status"] is None else row


def test_a_due_tenant_is_condensed_once_and_nothing_is_lost(conn: psycopg.Connection) -> None:
    _fill(conn, 130)
    _fill(conn, 5, memory_type="semantic")
    _fill(conn, 5, memory_type="procedural")
    before = _counts(conn)
    run = _consolidate(conn, now=LATER)
    assert run is not None and run["status"] == "done", run
    assert (run["memories_in"], run["memories_out"]) == (50, 1)
    after = _counts(conn)
    assert after == {"live": before["live"] - 50 + 1, "archived": 50, "total": before["total"] + 1}
    summary = (
        conn.cursor(row_factory=dict_row)
        .execute("select * from memex.memories where id = %s", (run["summary_id"],))
        .fetchone()
    )
    assert summary is not None
    assert summary["memory_type"] == "semantic" and summary["actor"] == "dream-agent"
    assert len(summary["source_ids"]) == 50
    # the newest source's time, not now(): old content stays old to recency
    assert summary["created_at"] == datetime(2026, 1, 1, tzinfo=UTC) + timedelta(days=49)
    assert summary["content"].startswith("Summary of 50 memories, 2026-01-01 to 2026-02-19:")
    assert "code word is w0x" in summary["content"] and "w49x" in summary["content"]
    assert "w50x" not in summary["content"]
    sources = conn.execute(
        "select memory_type, superseded_by from memex.memories where id = any (%s)",
        (summary["source_ids"],),
    ).fetchall()
    assert {(str(t), s) for t, s in sources} == {("episodic", run["summary_id"])}
    # queued for an embedding of its own text; the centroid stands in meanwhile
    assert conn.execute(
        "select count(*) from memex.embed_queue where memory_id = %s", (run["summary_id"],)
    ).fetchone() == (1,)
    # 80 live episodic memories left (the summary is semantic): not due again
    again = _consolidate(conn, now=LATER)
    assert again is not None and again["status"] == "nothing"
    assert "80 live episodic memories" in again["details"]["reason"]
    # semantic and procedural memories are never condensed
    assert conn.execute(
        "select count(*) from memex.memories where memory_type <> 'episodic'"
        " and archived_at is not null"
    ).fetchone() == (0,)


def test_dry_run_writes_nothing_and_fresh_or_paused_tenants_wait(conn: psycopg.Connection) -> None:
    _fill(conn, 120)
    before = _counts(conn)
    plan = _consolidate(conn, now=LATER, dry_run=True)
    assert plan is not None and plan["status"] == "dry_run" and plan["id"] is None
    assert len(plan["details"]["source_ids"]) == 50
    assert plan["details"]["summary"].startswith("Summary of 50 memories")
    assert _counts(conn) == before
    assert conn.execute("select count(*) from memex.consolidation_runs").fetchone() == (0,)
    # the oldest batch's newest memory (the 50th, 2026-02-19) written 30 minutes ago:
    # within the 60-minute grace period
    recent = datetime(2026, 2, 19, 0, 30, tzinfo=UTC)
    fresh = _consolidate(conn, now=recent)
    assert fresh is not None and "grace period" in fresh["details"]["reason"]
    conn.execute("update memex.tenants set dream_paused = true")
    paused = _consolidate(conn, now=LATER)
    assert paused is not None and paused["details"]["reason"] == "paused"
    forced = _consolidate(conn, force=True)  # an operator's manual run
    assert forced is not None and forced["status"] == "done"


def test_a_tenant_written_continuously_is_condensed_all_the_same(
    conn: psycopg.Connection,
) -> None:
    """A tenant written every 3 minutes is never quiet for the 60-minute grace period;
    its oldest memories are condensed anyway, the ones being written are left alone."""
    start = datetime(2026, 3, 1, tzinfo=UTC)
    every = timedelta(minutes=3)
    from pgvector.psycopg import register_vector

    register_vector(conn)
    n = 130
    conn.execute(
        "select count(*) from memex.store_many(%s, %s, %s, %s, 'test-model',"
        " %s::text[]::memex.memory_type[], null, null, null, %s)",
        (
            [A] * n,
            [U] * n,
            [f"Turn {i}: the user mentioned topic t{i}." for i in range(n)],
            [unit((i % 300, 1.0), (383, 0.3)) for i in range(n)],
            ["episodic"] * n,
            [start + i * every for i in range(n)],
        ),
    )
    # a tick a minute after the newest write, as pg_cron or the service runs it
    now = start + (n - 1) * every + timedelta(minutes=1)
    runs = conn.execute(
        "select status, memories_in from memex.consolidate_due(p_now => %s)", (now,)
    ).fetchall()
    assert runs == [("done", 50)]  # 130 -> 81 live episodic: no longer over the threshold
    newest_condensed = conn.execute(
        "select max(created_at) from memex.memories where archived_at is not null"
    ).fetchone()
    assert newest_condensed == (start + 49 * every,)  # the oldest 50, hours old
    assert _counts(conn)["total"] == n + 1  # nothing lost
    # the batch must be older than the grace period: a tenant whose 50 oldest memories
    # are all within the last hour waits
    conn.execute("select memex.restore_consolidation(id) from memex.consolidation_runs")
    # a restore sticks until something new arrives for the tenant (issue 36): a write now
    conn.execute(
        "select memex.store(%s, %s, 'a new turn', %s, 'test-model')", (A, U, unit((1, 1.0)))
    )
    early = start + 49 * every + timedelta(minutes=30)
    waiting = _consolidate(conn, now=early)
    assert waiting is not None and "grace period" in waiting["details"]["reason"]


def test_restore_brings_the_sources_back(conn: psycopg.Connection) -> None:
    _fill(conn, 110)
    before = _counts(conn)
    run = _consolidate(conn, now=LATER)
    assert run is not None
    restore = (
        conn.cursor(row_factory=dict_row)
        .execute("select * from memex.restore_consolidation(%s)", (run["id"],))
        .fetchone()
    )
    assert restore is not None
    assert (restore["kind"], restore["memories_out"]) == ("restore", 50)
    after = _counts(conn)
    # the sources are live again; the summary is kept, archived
    assert after == {"live": before["live"], "archived": 1, "total": before["total"] + 1}
    status = conn.execute(
        "select status, restored_by from memex.consolidation_runs where id = %s", (run["id"],)
    ).fetchone()
    assert status == ("restored", restore["id"])
    with pytest.raises(psycopg.Error) as twice:
        conn.execute("select memex.restore_consolidation(%s)", (run["id"],))
    assert twice.value.sqlstate == "MX409"
    with pytest.raises(psycopg.Error) as missing:
        conn.execute("select memex.restore_consolidation(999999)")
    assert missing.value.sqlstate == "MX404"


def test_forgetting_a_summary_brings_its_sources_back(conn: psycopg.Connection) -> None:
    _fill(conn, 105)
    total = _counts(conn)["total"]
    run = _consolidate(conn, now=LATER)
    assert run is not None
    conn.execute("select memex.forget(%s, %s, %s)", (A, U, run["summary_id"]))
    assert _counts(conn) == {"live": total, "archived": 0, "total": total}


def test_search_skips_archived_memories_unless_asked(conn: psycopg.Connection) -> None:
    _fill(conn, 101)
    run = _consolidate(conn, now=LATER)
    assert run is not None
    query = unit((3, 1.0), (383, 0.3))  # memory 3's own vector: archived now
    sql = (
        "select id, content from memex.search(%s, %s, %s, p_top_k => 3, p_alpha => 1,"
        " p_include_archived => %s)"
    )
    default = conn.execute(sql, (A, U, query, False)).fetchall()
    assert all("w3x." not in c or c.startswith("Summary") for _, c in default)
    included = conn.execute(sql, (A, U, query, True)).fetchall()
    assert included[0][1].endswith("code word is w3x.")
    listed = conn.execute(
        "select count(*) filter (where archived_at is not null) from"
        " memex.list_memories(%s, %s, p_limit => 1000, p_include_archived => true)",
        (A, U),
    ).fetchone()
    assert listed == (50,)
    archived_id = included[0][0]
    got = (
        conn.cursor(row_factory=dict_row)
        .execute("select * from memex.get_memory(%s, %s, %s)", (A, U, archived_id))
        .fetchone()
    )
    assert got is not None and got["superseded_by"] == run["summary_id"]
    exported = conn.execute(
        "select count(*) filter (where archived_at is not null),"
        " count(*) filter (where cardinality(source_ids) = 50)"
        " from memex.export_memories(%s, %s, p_limit => 1000)",
        (A, U),
    ).fetchone()
    assert exported == (50, 1)


def test_consolidate_due_ticks_within_budget_and_the_switch(conn: psycopg.Connection) -> None:
    for user in ("u1", "u2", "u3"):
        _fill(conn, 160, user=user)
    _fill(conn, 20, user="small")
    conn.execute('select memex.set_dream_config(\'{"write_budget": 4, "concurrency": 2}\')')
    runs = conn.execute(
        "select user_id, status from memex.consolidate_due(p_now => %s)", (LATER,)
    ).fetchall()
    # the two largest tenants, batch after batch while due (160 -> 111 -> 62), 4 in all
    assert sorted(runs) == [("u1", "done"), ("u1", "done"), ("u2", "done"), ("u2", "done")]
    conn.execute("select memex.set_dream_config('{\"enabled\": false}')")
    assert conn.execute(
        "select count(*) from memex.consolidate_due(p_now => %s)", (LATER,)
    ).fetchone() == (0,)
    for bad, field in (
        ('{"threshold": 5}', "threshold"),
        ('{"batch_size": 1.5}', "batch_size"),
        ('{"enabled": "yes"}', "enabled"),
        ('{"colour": 1}', "colour"),
    ):
        with pytest.raises(psycopg.Error) as invalid:
            conn.execute("select memex.set_dream_config(%s)", (bad,))
        assert invalid.value.sqlstate == "MX422" and field in str(invalid.value)
    config = conn.execute("select memex.dream_config()").fetchone()
    assert config is not None and config[0]["enabled"] is False and config[0]["threshold"] == 100


def test_four_runners_at_once_condense_each_batch_exactly_once(
    conn: psycopg.Connection, dsn: str
) -> None:
    for user in ("r1", "r2", "r3"):
        _fill(conn, 230, user=user)  # 230 -> 181 -> 132 -> 83: three batches each
    conn.execute('select memex.set_dream_config(\'{"write_budget": 100, "concurrency": 8}\')')
    totals = {u: _counts(conn, user=u)["total"] for u in ("r1", "r2", "r3")}
    errors: list[BaseException] = []
    barrier = threading.Barrier(4)

    def runner() -> None:
        try:
            with psycopg.connect(dsn, autocommit=True) as own:
                barrier.wait(timeout=30)
                for _ in range(5):  # bounded: each call condenses what it can
                    own.execute("select count(*) from memex.consolidate_due(p_now => %s)", (LATER,))
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=runner) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not errors, errors
    for user in ("r1", "r2", "r3"):
        counts = _counts(conn, user=user)
        # three summaries, 150 sources archived, nothing lost
        assert counts == {"live": 83, "archived": 150, "total": totals[user] + 3}, (user, counts)
        sources = conn.execute(
            "select count(*), count(distinct s) from memex.memories m,"
            " unnest(m.source_ids) s where m.user_id = %s",
            (user,),
        ).fetchone()
        assert sources == (150, 150)  # no memory in two summaries
    failed = conn.execute(
        "select count(*) from memex.consolidation_runs where status = 'failed'"
    ).fetchone()
    assert failed == (0,)


def test_a_run_yields_to_a_store_in_progress(conn: psycopg.Connection, dsn: str) -> None:
    """A store into the tenant, not committed yet, holds the tenant's counters: the run
    waits for them at most 200 ms, then gives up (nothing written, status nothing, said
    why) instead of making the store's followers queue behind a whole tick."""
    from pgvector.psycopg import register_vector

    _fill(conn, 60)
    conn.commit()
    with psycopg.connect(dsn) as writer:
        register_vector(writer)
        writer.execute(
            "select memex.store(%s, %s, 'written just now', %s, 'test-model')",
            (A, U, unit((5, 1.0))),
        )
        conn.execute("set statement_timeout = '10s'")
        started = time.monotonic()
        run = _consolidate(conn, force=True)
        waited = time.monotonic() - started
        assert run is not None and run["status"] == "nothing", run
        assert "being written" in run["details"]["reason"]
        assert waited < 5, waited
        conn.commit()
        writer.commit()
    assert _counts(conn) == {"live": 61, "archived": 0, "total": 61}
    run = _consolidate(conn, force=True)  # the store is done: the run goes
    assert run is not None and run["status"] == "done" and run["memories_in"] == 50


def test_maintenance_commits_expired_deletes_before_indexing(conn: psycopg.Connection) -> None:
    """Deleting expired memories holds their tenants' counters until commit: a call that
    deleted some returns before moving a grown tenant into the ANN index (~10 s), and the
    next call indexes."""
    from tests.sqlapi import store_expired

    conn.execute(
        "insert into memex.settings (name, value) values ('exact_scan_max_rows', '5')"
        " on conflict (name) do update set value = excluded.value"
    )
    _fill(conn, 20)
    store_expired(conn, "gone", unit((7, 1.0)), datetime.now(UTC) - timedelta(days=1))
    first = conn.execute(
        "select expired_memories_deleted, memories_indexed from memex.maintenance()"
    ).fetchone()
    assert first == (1, 0)
    second = conn.execute(
        "select expired_memories_deleted, memories_indexed from memex.maintenance()"
    ).fetchone()
    assert second is not None and second[0] == 0 and second[1] > 0
