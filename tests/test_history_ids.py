"""History ids that reveal nothing (issue 34, section 4): the ids of the access log and
file revisions count one user's own history (1, 2, 3...), those of consolidation runs one
agent's, whatever other tenants do in between, users of the same agent included; another
agent's id names nothing of theirs; two writers of one user get distinct consecutive ids,
and writers of different users (of one agent or not) do not wait for each other; an
export imported elsewhere continues the tenant's numbering with its runs linked again.
Against the real embedded PostgreSQL, the Python library (in-process, with API keys) and
plain SQL."""

from __future__ import annotations

import asyncio
import threading
import time
from datetime import UTC, datetime, timedelta

import psycopg
import pytest

from memexdb import AsyncMemex
from memexdb.embedded import EmbeddedPostgres
from memexdb.embedding import BatchingEmbedder
from memexdb.errors import InvalidArgument, NotFound
from memexdb.memories.models import MemoryCreate
from tests.conftest import drop_database, new_database

A, B, U, V = "agent-a", "agent-b", "ursula", "victor"
START = datetime(2025, 3, 1, 9, tzinfo=UTC)


def _history(agent: str, n: int) -> list[MemoryCreate]:
    return [
        MemoryCreate(
            agent_id=agent,
            user_id=U,
            content=f"Day {i}: {agent} heard about the weather and lunch.",
            created_at=START + timedelta(days=i),
        )
        for i in range(n)
    ]


async def test_b_ids_count_only_bs_history(amemex: AsyncMemex) -> None:
    """B's next access-log id used to jump across A's reads (97 -> 105 across seven)."""
    operator = amemex.as_operator("test")
    await operator.store_many(_history(A, 160) + _history(B, 110))
    for i in range(3):  # A and B interleaved, A busier
        for j in range(4):
            await operator.write_file(A, U, f"agent/a-{i}-{j}.md", f"A's note {i} {j}\n")
            await operator.read_file(A, U, f"agent/a-{i}-{j}.md")
        await operator.write_file(B, U, "agent/b-notes.md", f"B's note {i}\n")
        await operator.create_key("read", agent_id=A, name=f"a{i}")
        await operator.create_key("read", agent_id=B, name=f"b{i}")
        run = await operator.consolidate(A, U, force=True)
        assert run is not None and run.status == "done"
        # a second user of agent A, writing between A's first user's writes
        await operator.write_file(A, V, "agent/v-notes.md", f"V's note {i}\n")
        await operator.read_file(A, V, "agent/v-notes.md")
    for _ in range(2):
        run = await operator.consolidate(B, U, force=True)
        assert run is not None and run.status == "done"
    admin_b = amemex.with_key((await operator.create_key("admin", agent_id=B)).token)

    log = await admin_b.access_log(B, U, limit=1000)
    assert [e.id for e in log] == list(range(len(log), 0, -1)) and len(log) >= 3
    revisions = await admin_b.list_revisions(B, U, "agent/b-notes.md")
    assert sorted(r.id for r in revisions) == [1, 2, 3]
    # users of one agent: each counts only its own history
    admin_a = amemex.with_key((await operator.create_key("admin", agent_id=A)).token)
    log_v = await admin_a.access_log(A, V, limit=1000)
    assert [e.id for e in log_v] == list(range(len(log_v), 0, -1)) and len(log_v) >= 6
    assert {e.user_id for e in log_v} == {V}
    log_u = await admin_a.access_log(A, U, limit=1000)
    assert [e.id for e in log_u] == list(range(len(log_u), 0, -1)) and len(log_u) >= 24
    revisions_v = await admin_a.list_revisions(A, V, "agent/v-notes.md")
    assert sorted(r.id for r in revisions_v) == [1, 2, 3]  # after U's twelve file writes
    runs = await admin_b.consolidation_runs(B)
    assert [r.id for r in runs] == [2, 1]
    # A's numbers are A's alone too
    runs_a = await operator.consolidation_runs(A)
    assert [r.id for r in runs_a] == [3, 2, 1]
    # an operator's page over every agent ends with every run of its last number
    page = await operator.consolidation_runs(limit=1)
    assert [(r.agent_id, r.id) for r in page] == [(A, 3)]
    page = await operator.consolidation_runs(limit=1, before=3)
    assert sorted((r.agent_id, r.id) for r in page) == [(A, 2), (B, 2)]


async def test_a_run_number_used_by_b_restores_nothing_of_as(amemex: AsyncMemex) -> None:
    operator = amemex.as_operator("test")
    await operator.store_many(_history(A, 160) + _history(B, 60))
    runs_a = [await operator.consolidate(A, U, force=True) for _ in range(2)]
    assert [r.id for r in runs_a if r] == [1, 2]
    run_b = await operator.consolidate(B, U, force=True)
    assert run_b is not None and run_b.id == 1
    writer_b = amemex.with_key((await operator.create_key("write", agent_id=B)).token)
    with pytest.raises(NotFound):  # A's run 2: B has none of that number
        await writer_b.restore_consolidation(2)
    restored = await writer_b.restore_consolidation(1)  # B's own run 1, not A's
    assert (restored.agent_id, restored.id, restored.details["run"]) == (B, 2, 1)
    assert [(r.id, r.status) for r in await operator.consolidation_runs(A)] == [
        (2, "done"),
        (1, "done"),
    ]
    assert [(r.id, r.status, r.restored_by) for r in await operator.consolidation_runs(B)] == [
        (2, "done", None),
        (1, "restored", 2),
    ]
    # a caller of every agent who sees run 1 in both is asked for the agent's key
    with pytest.raises(InvalidArgument, match="exist in 2 agents"):
        await operator.restore_consolidation(1)
    # ... and names it
    undone = await operator.restore_consolidation(1, agent_id=A)
    assert (undone.agent_id, undone.id, undone.details["run"]) == (A, 3, 1)
    assert [(r.id, r.status) for r in await operator.consolidation_runs(B)] == [
        (2, "done"),
        (1, "restored"),
    ]


def _log_access(dsn: str, agent: str, user: str, hold: float, ids: list[int]) -> None:
    """Appends one access-log entry of (`agent`, `user`) and commits `hold` seconds later."""
    with psycopg.connect(dsn) as conn:
        conn.execute(
            "select memex._log_access(%s, %s, 'read', 'probe')",
            (agent, user),
        )
        row = conn.execute(
            "select max(id) from memex.access_log where agent_id = %s and user_id = %s",
            (agent, user),
        ).fetchone()
        assert row is not None
        time.sleep(hold)
        conn.commit()
        ids.append(int(row[0]))


def test_writers_of_one_user_get_consecutive_ids_and_others_do_not_wait(dsn: str) -> None:
    first: list[int] = []
    holder = threading.Thread(target=_log_access, args=(dsn, A, U, 2.0, first))
    holder.start()
    time.sleep(0.5)  # (A, U)'s counter is held by the first writer now
    started = time.monotonic()
    other: list[int] = []
    _log_access(dsn, B, U, 0, other)  # another agent: no wait
    _log_access(dsn, A, V, 0, other)  # another user of the same agent: no wait either
    assert time.monotonic() - started < 1.0 and other == [1, 1]
    second: list[int] = []
    _log_access(dsn, A, U, 0, second)  # the same user: waits for the first to commit
    holder.join()
    assert time.monotonic() - started > 1.0
    assert (first, second) == ([1], [2])


async def test_an_open_transaction_of_one_user_holds_up_no_other_user_of_the_agent(
    amemex: AsyncMemex,
) -> None:
    """One agent app, many users: user U's transaction that wrote history (a file write and
    a logged read), left open, must not stall user V's stores, file writes and reads. With
    one counter per agent, V's first history row waited for U's commit."""
    operator = amemex.as_operator("test")
    await operator.write_file(A, V, "agent/v.md", "V was here before\n")

    async def other_user() -> float:
        started = time.monotonic()
        await operator.store(A, V, "V likes tea.")
        await operator.write_file(A, V, "agent/v.md", "V was here again\n")
        file = await operator.read_file(A, V, "agent/v.md")
        assert "again" in file.content
        return time.monotonic() - started

    async with operator.transaction() as held:
        await held.write_file(A, U, "agent/u.md", "U's open transaction\n")
        await held.read_file(A, U, "agent/u.md")
        elapsed = await asyncio.wait_for(other_user(), timeout=10)
    assert elapsed < 2.0
    log_v = await operator.access_log(A, V, limit=100)
    assert sorted(e.id for e in log_v) == list(range(1, len(log_v) + 1))
    revisions = await operator.list_revisions(A, V, "agent/v.md")
    assert sorted(r.id for r in revisions) == [1, 2]


async def test_concurrent_writes_in_one_tenant_number_without_gaps_or_repeats(
    amemex: AsyncMemex,
) -> None:
    operator = amemex.as_operator("test")

    async def writer(agent: str, w: int) -> None:
        for i in range(5):
            await operator.write_file(agent, U, f"agent/w{w}-{i}.md", f"writer {w} note {i}\n")

    async def other_user(w: int) -> None:
        for i in range(5):
            await operator.write_file(A, V, f"agent/v{w}-{i}.md", f"V's note {w} {i}\n")

    # six writers of (A, U); two of B and two of A's other user V in between
    await asyncio.gather(
        *(writer(A, w) for w in range(6)), writer(B, 0), writer(B, 1), other_user(0), other_user(1)
    )
    log_v = await operator.access_log(A, V, limit=1000)
    assert sorted(e.id for e in log_v) == list(range(1, len(log_v) + 1)) and len(log_v) >= 10
    log = await operator.access_log(A, U, limit=1000)
    assert sorted(e.id for e in log) == list(range(1, len(log) + 1))
    assert len(log) >= 30
    revisions = [
        r
        for w in range(6)
        for i in range(5)
        for r in await operator.list_revisions(A, U, f"agent/w{w}-{i}.md")
    ]
    assert sorted(r.id for r in revisions) == list(range(1, 31))


async def test_export_import_continues_the_tenants_numbers(
    amemex: AsyncMemex, pg_server: EmbeddedPostgres, batching_embedder: BatchingEmbedder
) -> None:
    operator = amemex.as_operator("test")
    await operator.store_many(_history(A, 160))
    first = await operator.consolidate(A, U, force=True)
    assert first is not None and first.id is not None
    await operator.restore_consolidation(first.id)
    await operator.consolidate(A, U, force=True)
    await operator.write_file(A, U, "agent/notes.md", "one\n")
    await operator.write_file(A, U, "agent/notes.md", "two\n")
    lines = [r async for r in operator.export(A, U, embeddings=True)]
    exported_runs = [(r.kind, r.status) for r in reversed(await operator.consolidation_runs(A))]
    assert exported_runs == [("condense", "restored"), ("restore", "done"), ("condense", "done")]

    other = new_database(pg_server)
    try:
        async with await AsyncMemex.connect(other, embedder=batching_embedder) as elsewhere:
            there = elsewhere.as_operator("test")
            # the agent has history there already (another user): a run, a file, reads
            await there.store_many(
                [m.model_copy(update={"user_id": "other-user"}) for m in _history(A, 60)]
            )
            mine = await there.consolidate(A, "other-user", force=True)
            assert mine is not None and mine.id == 1
            await there.write_file(A, "other-user", "agent/mine.md", "mine\n")
            await there.read_file(A, "other-user", "agent/mine.md")
            before_log = len(await there.access_log(A, "other-user"))
            assert before_log >= 2
            result = await there.import_memories(lines)
            assert result.kinds["consolidation_run"] == {"imported": 3, "skipped": 0}
            log = await there.access_log(A, U, limit=1000)
            exported_log = [r for r in lines if r["record"] == "access"]
            numbers = sorted(e.id for e in log)
            assert len(numbers) == len(exported_log)
            # numbered from the user's own last number (none yet), not after other-user's
            assert numbers == list(range(1, len(numbers) + 1))
            runs = list(reversed(await there.consolidation_runs(A, U)))
            assert [r.id for r in runs] == [2, 3, 4]
            assert [(r.kind, r.status) for r in runs] == exported_runs
            restored, restore = runs[0], runs[1]
            assert restored.restored_by == restore.id and restore.details["run"] == restored.id
            revisions = await there.list_revisions(A, U, "agent/notes.md")
            assert sorted(r.id for r in revisions) == [1, 2]  # other-user's count apart
            assert [r.id for r in await there.list_revisions(A, "other-user", "agent/mine.md")] == [
                1
            ]
    finally:
        drop_database(pg_server, other)


async def test_an_agents_export_pages_every_users_history_once(amemex: AsyncMemex) -> None:
    """Ids repeat across an agent's users now: the export's cursor is (kind, user, id), so
    small pages over every user of the agent miss and repeat nothing."""
    operator = amemex.as_operator("test")
    for i in range(4):
        for user in (U, V):
            await operator.write_file(A, user, "agent/notes.md", f"{user} note {i}\n")
            await operator.read_file(A, user, "agent/notes.md")
    whole = [r async for r in operator.export(A, embeddings=False, batch_size=1000)]
    paged = [r async for r in operator.export(A, embeddings=False, batch_size=3)]
    assert paged[1:] == whole[1:]  # the header's time aside
    revisions = [(r["user_id"], r["revision"]) for r in paged if r["record"] == "file_revision"]
    assert sorted(revisions) == [(u, n) for u in (U, V) for n in range(1, 5)]
    access = [r for r in paged if r["record"] == "access"]
    assert len(access) == len({(r["user_id"], r["at"], r["operation"]) for r in access}) >= 16
