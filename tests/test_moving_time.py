"""Export and import keep memory that knows time (issue 36): a tenant with changed,
superseded, validity-bounded, reverted and restored memories is exported, imported into a
fresh database (as it was, and into another tenant), and answers the same: each memory's
history (its revisions), supersession links both ways, validity, the restore marker, and
search as of past moments. Forged memory history is refused as forged file history is:
only an admin of the tenant imports it, and it must be coherent with the memory."""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
import pytest

from memexdb import AsyncMemex
from memexdb.embedding import BatchingEmbedder
from memexdb.errors import Conflict, Forbidden
from tests.conftest import drop_database, new_database

A, U = "timekeeper", "tara"
NOW = datetime.now(UTC)
DAY = timedelta(days=1)
QUERIES = ["Where does Tara live?", "What car does Tara drive?", "Where does Tara work?"]


async def _build(memex: AsyncMemex) -> tuple[dict[str, uuid.UUID], list[datetime]]:
    """Memories that changed: updated, superseded (a chain of two), bounded in validity,
    reverted, and sources of a consolidation that was restored (restored_at)."""
    one = await memex.store(A, U, "Tara went hiking on Saturday.", created_at=NOW - 10 * DAY)
    two = await memex.store(A, U, "Tara went hiking again on Sunday.", created_at=NOW - 9 * DAY)
    run = await memex.consolidate(A, U, force=True)  # the two: all there is yet
    assert run is not None and run.status == "done"
    await memex.restore_consolidation(run.id or 0)
    assert two.id != one.id
    paris = await memex.store(A, U, "Tara lives in Paris.", created_at=NOW - 60 * DAY)
    await memex.update(A, U, paris.id, metadata={"source": "chat"})
    berlin = await memex.store(
        A, U, "Tara moved to Berlin last month.", supersedes=[paris.id], created_at=NOW - 20 * DAY
    )
    kia = await memex.store(A, U, "Tara drives a Kia Niro.", created_at=NOW - 50 * DAY)
    skoda = await memex.store(A, U, "Picked up my new car, a Skoda Octavia.", supersedes=[kia.id])
    job = await memex.store(
        A,
        U,
        "Tara worked at Acme as a nurse.",
        valid_from=NOW - 400 * DAY,
        valid_to=NOW - 30 * DAY,
    )
    note = await memex.store(A, U, "Tara's favourite colour is green.")
    green = datetime.now(UTC)
    await memex.update(A, U, note.id, content="Tara's favourite colour is blue.", importance=1.5)
    blue = datetime.now(UTC)
    await memex.revert_memory(A, U, note.id, 1)
    return {
        "paris": paris.id,
        "berlin": berlin.id,
        "kia": kia.id,
        "skoda": skoda.id,
        "job": job.id,
        "note": note.id,
        "one": one.id,
    }, [green, blue]


def _same(value: Any) -> Any:
    """A revision without its id (a number of the tenant's history an import gives anew)."""
    return dataclasses.replace(value, id=0)


async def _snapshot(
    memex: AsyncMemex, agent: str, user: str, ids: dict[str, uuid.UUID], moments: list[datetime]
) -> Any:
    memories = {name: await memex.get(agent, user, i) for name, i in ids.items()}
    history = {
        name: [_same(r) for r in await memex.memory_history(agent, user, i)]
        for name, i in ids.items()
    }
    searches = [
        [
            (h.id, round(h.score, 5))
            for h in await memex.search(agent, user, q, as_of=moment, mode="hybrid")
        ]
        if moment is not None
        else [(h.id, round(h.score, 5)) for h in await memex.search(agent, user, q, now=NOW)]
        for q in QUERIES
        for moment in (NOW - 45 * DAY, NOW - 25 * DAY, NOW - 5 * DAY, None)
    ]
    with_superseded = [
        [h.id for h in await memex.search(agent, user, q, now=NOW, include_superseded=True)]
        for q in QUERIES
    ]
    valid = [h.id for h in await memex.search(agent, user, QUERIES[2], valid_at=NOW - 100 * DAY)]
    as_of_reads = [(await memex.get(agent, user, ids["note"], as_of=t)).content for t in moments]
    return {
        "memories": {
            name: dataclasses.replace(m, agent_id="-", user_id="-") for name, m in memories.items()
        },
        "history": {
            name: [dataclasses.replace(r, agent_id="-", user_id="-") for r in revisions]
            for name, revisions in history.items()
        },
        "searches": searches,
        "with_superseded": with_superseded,
        "valid": valid,
        "as_of_reads": as_of_reads,
    }


Databases = Any  # async (): a new migrated database's operator client and its DSN


@pytest.fixture
async def databases(
    pg_server: Any, template_db: str, batching_embedder: BatchingEmbedder
) -> AsyncIterator[Databases]:
    """Fresh databases on the session's server, each with an operator client."""
    made: list[tuple[str, AsyncMemex]] = []

    async def make() -> tuple[str, AsyncMemex]:
        dsn = new_database(pg_server)
        client = await AsyncMemex.connect(dsn, embedder=batching_embedder)
        made.append((dsn, client))
        return dsn, client.as_operator("test")

    try:
        yield make
    finally:
        for dsn, client in made:
            await client.aclose()
            drop_database(pg_server, dsn)


def _comparable(lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """An export's lines but the header and the access log (the reads of the checks go on
    writing it), memory revisions by memory and number (an import numbers their ids anew
    in that order), a restore run's details.run (a run id of the exporting database) out."""
    kept = [r for r in lines[1:] if r["record"] != "access"]
    for r in kept:
        if r["record"] == "consolidation_run":
            r["details"] = {k: v for k, v in r["details"].items() if k != "run"}
    return sorted(
        kept,
        key=lambda r: (
            r["record"] == "memory_revision",
            r.get("memory_id", ""),
            r.get("revision", 0),
        ),
    )


def _restored_at(dsn: str, memory_id: uuid.UUID) -> Any:
    with psycopg.connect(dsn) as conn:
        row = conn.execute(
            "select restored_at from memex.memories where id = %s", (memory_id,)
        ).fetchone()
    assert row is not None
    return row[0]


async def test_export_import_keeps_history_supersession_validity_and_as_of_answers(
    amemex: AsyncMemex, dsn: str, databases: Databases
) -> None:
    operator = amemex.as_operator("test")
    ids, moments = await _build(operator)
    lines = [r async for r in operator.export(A, U, embeddings=True)]
    assert lines[0]["version"] == 3
    kinds = [r["record"] for r in lines[1:]]
    assert kinds.count("memory_revision") >= 2 * len(ids)  # every change left one
    by_id = {r["id"]: r for r in lines if r["record"] == "memory"}
    paris, berlin = by_id[str(ids["paris"])], by_id[str(ids["berlin"])]
    assert paris["superseded_by"] == str(ids["berlin"]) and "superseded_at" in paris
    assert berlin["supersedes"] == [str(ids["paris"])]
    assert "valid_to" in by_id[str(ids["job"])] and "restored_at" in by_id[str(ids["one"])]
    before = await _snapshot(operator, A, U, ids, moments)
    assert before["memories"]["note"].content == "Tara's favourite colour is green."
    assert before["as_of_reads"] == [
        "Tara's favourite colour is green.",
        "Tara's favourite colour is blue.",
    ]
    assert [r.operation for r in before["history"]["note"]] == ["revert", "update", "store"]
    assert before["memories"]["paris"].superseded_by == ids["berlin"]

    # into a fresh database, as it was
    other_dsn, other = await databases()
    result = await other.import_memories(lines)
    assert result.reembedded == 0 and result.skipped == 0
    assert result.kinds["memory_revision"]["imported"] == kinds.count("memory_revision")
    assert await _snapshot(other, A, U, ids, moments) == before
    assert _restored_at(other_dsn, ids["one"]) == _restored_at(dsn, ids["one"]) is not None
    again = [r async for r in other.export(A, U, embeddings=True)]
    assert _comparable(again) == _comparable(lines)
    # running it again changes nothing
    result = await other.import_memories(lines)
    assert result.imported == 0 and result.skipped == len(lines) - 1

    # into another tenant (the records say whose they are; the ids stay)
    moved = [
        r if r["record"] == "header" else {**r, "agent_id": "mover", "user_id": "mia"}
        for r in lines
    ]
    _, third = await databases()
    await third.import_memories(moved)
    assert await _snapshot(third, "mover", "mia", ids, moments) == before

    # without its revisions, an export still carries the time fields: an import starts
    # each history anew (one revision, operation import) with the same links and validity
    bare = [r async for r in operator.export(A, U, embeddings=True, memory_revisions=False)]
    assert "memory_revision" not in {r["record"] for r in bare}
    _, fourth = await databases()
    await fourth.import_memories(bare)
    alone = await _snapshot(fourth, A, U, ids, moments)
    assert alone["memories"] == before["memories"]
    assert {r.operation for h in alone["history"].values() for r in h} == {"import"}


async def test_forged_memory_history_is_refused(
    amemex: AsyncMemex, conn: psycopg.Connection
) -> None:
    """As for file revisions: a write key imports no memory revision, an admin key of
    another agent neither, nor a key of another agent as actor; history that is not the
    memory as it is, that has gaps, that names another tenant's memory, or that goes back
    before the memory's live history is refused (nothing inserted). A tenant role can
    neither update nor delete a revision."""
    operator = amemex.as_operator("test")
    memory = await operator.store(A, U, "Tara lives in Paris.")
    await operator.update(A, U, memory.id, content="Tara lives in Lyon.")
    lines = [r async for r in operator.export(A, U)]
    revisions = [r for r in lines if r["record"] == "memory_revision"]
    assert [r["revision"] for r in revisions] == [1, 2]
    count = f"select count(*) from memex.memory_revisions where agent_id = '{A}'"
    assert conn.execute(count).fetchone() == (2,)

    # a third revision that rewrites what the memory said: a write key, another agent's
    # admin, another agent's key as actor (operator-made keys)
    forged = {**revisions[1], "revision": 3, "content": "Tara lives in Rome."}
    writer = (await operator.create_key("write", agent_id=A, name="writer")).token
    admin_b = (await operator.create_key("admin", agent_id="B", name="other")).token
    admin = (await operator.create_key("admin", agent_id=A, name="admin")).token
    b_key = await operator.create_key("write", agent_id="B", name="b")
    for token in (writer, admin_b):
        with pytest.raises(Forbidden):
            await amemex.with_key(token).import_memories([forged])
    tenant_admin = amemex.with_key(admin)
    with pytest.raises(Forbidden):
        await tenant_admin.import_memories(
            [{**revisions[1], "revision": 3, "actor": f"key:{b_key.id}"}]
        )
    # coherent with the memory or refused: not the memory as it is, a gap, another
    # tenant's memory, a time before its newest revision
    other = await operator.store("B", "bob", "Bob's note.")
    stale_at = datetime.fromisoformat(revisions[0]["at"]) - DAY
    for bad in (
        [forged],
        [{**revisions[1], "revision": 4}],
        [{**revisions[1], "memory_id": str(other.id), "revision": 2}],
        [{**revisions[1], "revision": 3, "at": stale_at.isoformat()}],
    ):
        with pytest.raises(Conflict):
            await tenant_admin.import_memories(bad)
    assert conn.execute(count).fetchone() == (2,)
    # what continues the history is the admin's to import (as for file revisions)
    later = datetime.now(UTC).isoformat()
    done = await tenant_admin.import_memories([{**revisions[1], "revision": 3, "at": later}])
    assert done.kinds["memory_revision"] == {"imported": 1, "skipped": 0}

    # append-only for tenants: no privilege to change or delete a revision
    conn.execute("set role memex_tenant")
    for statement in (
        "update memex.memory_revisions set content = 'x'",
        "delete from memex.memory_revisions",
        "insert into memex.memory_revisions (id, agent_id, user_id, memory_id, revision,"
        " operation, actor, content, memory_type, importance)"
        f" values (99, '{A}', '{U}', '{memory.id}', 9, 'store', 'me', 'x', 'episodic', 1)",
    ):
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute(statement)
