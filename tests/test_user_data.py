"""A user's data through the Python API (AsyncMemex and Memex, the real embedding model)
and the command line: list, get, update, erase, the metadata filter, and export -> erase
-> import restoring identical memories and identical search scores."""

from __future__ import annotations

import json
import os
import pty
import subprocess
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from memexdb import AsyncMemex, InvalidArgument, Memex, MemoryType, NotFound
from tests.live_service import REPO, cli_args, run_cli, service_env

NOW = datetime(2026, 6, 1, tzinfo=UTC)


async def test_list_get_update_and_erase(amemex: AsyncMemex) -> None:
    stored = [
        await amemex.store(
            "agent",
            "ann",
            f"Ann's note number {i}",
            metadata={"n": i, "even": i % 2 == 0},
            created_at=NOW - timedelta(days=i),
        )
        for i in range(5)
    ]
    await amemex.store("agent", "bob", "Bob's note")
    pages, cursor = [], None
    while True:
        page = await amemex.list_memories("agent", "ann", limit=2, cursor=cursor)
        pages.append([m.id for m in page.memories])
        if page.next_cursor is None:
            break
        cursor = page.next_cursor
    assert pages == [[stored[0].id, stored[1].id], [stored[2].id, stored[3].id], [stored[4].id]]
    even = await amemex.list_memories("agent", "ann", metadata={"even": True})
    assert [m.id for m in even.memories] == [stored[0].id, stored[2].id, stored[4].id]
    assert even.next_cursor is None
    ranged = await amemex.list_memories(
        "agent", "ann", created_after=NOW - timedelta(days=3), created_before=NOW
    )
    assert [m.id for m in ranged.memories] == [stored[1].id, stored[2].id, stored[3].id]
    assert await amemex.count("agent", "ann", metadata={"even": True}) == 3
    with pytest.raises(InvalidArgument) as bad:
        await amemex.list_memories("agent", "ann", cursor="not-a-cursor")
    assert bad.value.field == "cursor"

    assert await amemex.get("agent", "ann", stored[0].id) == stored[0]
    with pytest.raises(NotFound):
        await amemex.get("agent", "bob", stored[0].id)

    changed = await amemex.update(
        "agent",
        "ann",
        stored[0].id,
        content="Ann moved to Lisbon in May",
        memory_type=MemoryType.SEMANTIC,
        expires_at=NOW + timedelta(days=3650),
    )
    assert (changed.content, changed.memory_type, changed.metadata) == (
        "Ann moved to Lisbon in May",
        MemoryType.SEMANTIC,
        stored[0].metadata,
    )
    assert changed.updated_at > stored[0].updated_at and changed.created_at == stored[0].created_at
    hits = await amemex.search("agent", "ann", "where does Ann live now?", top_k=1)
    assert hits[0].id == stored[0].id  # found by the new content's embedding
    cleared = await amemex.update("agent", "ann", stored[0].id, clear_expires_at=True)
    assert cleared.expires_at is None
    with pytest.raises(InvalidArgument) as nothing:
        await amemex.update("agent", "ann", stored[0].id)
    assert nothing.value.field == "patch"
    with pytest.raises(NotFound):
        await amemex.update("agent", "bob", stored[0].id, importance=2.0)

    hits = await amemex.search("agent", "ann", "note", metadata={"n": 3}, top_k=5)
    assert [h.id for h in hits] == [stored[3].id]

    with pytest.raises(InvalidArgument) as unconfirmed:
        await amemex.erase_user("agent", "ann", confirm="bob")
    assert unconfirmed.value.field == "confirm"
    assert await amemex.count("agent", "ann") == 5
    assert await amemex.erase_user("agent", "ann", confirm="ann") == {
        "memories": 5,
        "tenants": 1,
        "file_revisions": 0,
        "access_log": 0,
        "consolidation_runs": 0,
    }
    assert await amemex.count("agent", "ann") == 0
    assert await amemex.count("agent", "bob") == 1


def test_sync_export_and_import_reembed_and_skip(memex: Memex) -> None:
    for i in range(7):
        memex.store("agent", f"user{i % 2}", f"fact {i} about the garden", metadata={"i": i})
    # the memories alone (their revisions left out: tests/test_moving_time.py has them)
    header, *records = list(memex.export("agent", batch_size=3, memory_revisions=False))
    assert (header["record"], header["version"], header["user_id"]) == ("header", 3, None)
    assert [r["user_id"] for r in records] == ["user0"] * 4 + ["user1"] * 3
    assert all("embedding" not in r and r["record"] == "memory" for r in records)
    _, *with_vectors = list(memex.export("agent", "user1", embeddings=True, memory_revisions=False))
    assert [len(r["embedding"]) for r in with_vectors] == [384] * 3

    result = memex.import_memories(records)
    assert (result.imported, result.skipped) == (0, 7)  # every id exists already
    memex.erase_user("agent", "user1", confirm="user1")
    foreign = [{**r, "embedding_model": "another-model"} for r in with_vectors[:1]]
    result = memex.import_memories([*foreign, *with_vectors[1:]])
    assert (result.imported, result.skipped, result.reembedded) == (3, 0, 1)
    again = memex.export("agent", "user1", embeddings=True, memory_revisions=False)
    assert list(again)[1:] == with_vectors

    with pytest.raises(InvalidArgument) as bad:
        memex.import_memories([{**records[0], "id": str(uuid.uuid4()), "importance": 5}])
    assert bad.value.field == "records[0].importance"


# --- the command line ------------------------------------------------------------------

QUERY = "what does the user grow in the garden?"


def _snapshot(memex: Memex, agent: str, user: str) -> tuple[list[Any], list[tuple[Any, float]]]:
    memories = memex.list_memories(agent, user, limit=1000).memories
    hits = memex.search(agent, user, QUERY, top_k=10, now=NOW, mode="hybrid")
    return sorted(memories, key=lambda m: m.id), [(h.id, h.score) for h in hits]


def test_cli_export_erase_import_restores_identical_data(
    memex: Memex, dsn: str, tmp_path: Path
) -> None:
    env = service_env(MEMEX_DATABASE_URL=dsn)
    texts = [
        "The user grows tomatoes and basil in the back garden",
        "The user planted three apple trees last spring",
        "The user's neighbour lends them a lawnmower",
        "The user waters the garden every evening at seven",
        "Café crème with the garden club on Sundays — ünïcode kept",
    ]
    for i, text in enumerate(texts):
        memex.store(
            "cli",
            "gardener",
            text,
            memory_type=MemoryType.SEMANTIC if i % 2 else MemoryType.EPISODIC,
            importance=0.7 + i * 0.2,
            metadata={"i": i, "tags": ["garden", {"deep": [None, 1.5]}]},
            created_at=NOW - timedelta(days=30 * i, microseconds=123457 * i),
            expires_at=NOW + timedelta(days=3650) if i == 1 else None,
        )
    first = memex.list_memories("cli", "gardener", limit=1).memories[0]
    memex.update("cli", "gardener", first.id, metadata={"edited": True})  # updated_at moves
    memex.store("cli", "someone-else", "not exported with --user-id")
    before = _snapshot(memex, "cli", "gardener")

    history = [(r.revision, r.operation) for r in memex.memory_history("cli", "gardener", first.id)]
    assert history == [(2, "update"), (1, "store")]
    # with the vectors and the memories' revisions (the default), then without either
    for embeddings in (True, False):
        out = tmp_path / f"export-{embeddings}.jsonl"
        flags = ["--embeddings"] if embeddings else ["--no-memory-revisions"]
        code, log = run_cli(
            ["export", "--agent-id", "cli", "--user-id", "gardener", *flags, "-o", str(out)], env
        )
        assert code == 0, log
        revisions = 6 if embeddings else 0  # a store each, and the update
        assert "exported 5 memories, 0 file revisions" in log, log
        assert f"0 consolidation runs, {revisions} memory revisions" in log, log
        header, *records = [json.loads(line) for line in out.read_text("utf-8").splitlines()]
        assert header["record"] == "header"
        lines = [r for r in records if r["record"] == "memory"]
        assert [r["user_id"] for r in records] == ["gardener"] * (5 + revisions)
        assert len(lines) == 5 and len(records) == 5 + revisions
        assert all(("embedding" in r) is embeddings for r in lines)

        assert memex.erase_user("cli", "gardener", confirm="gardener") == {
            "memories": 5,
            "tenants": 1,
            "file_revisions": 0,
            "access_log": 0,
            "consolidation_runs": 0,
        }
        assert memex.list_memories("cli", "gardener").memories == []

        code, log = run_cli(["import", str(out)], env)
        assert code == 0, log
        again = 0 if embeddings else 5
        summary = f"imported 5 memories, skipped 0 (their id exists already), embedded {again}"
        assert summary in log, log
        memories, scores = _snapshot(memex, "cli", "gardener")
        assert memories == before[0]  # ids, timestamps, metadata, every field
        assert [s[0] for s in scores] == [s[0] for s in before[1]]
        restored = memex.memory_history("cli", "gardener", first.id)
        if embeddings:
            assert scores == before[1]  # the very same vectors
            assert [(r.revision, r.operation) for r in restored] == history
        else:
            assert [s[1] for s in scores] == pytest.approx([s[1] for s in before[1]], abs=1e-6)
            assert [(r.revision, r.operation) for r in restored] == [(1, "import")]

    code, log = run_cli(["import", str(out)], env)
    assert code == 0 and "imported 0 memories, skipped 5" in log, log
    assert memex.count("cli", "someone-else") == 1


def test_cli_import_names_the_bad_line(dsn: str, tmp_path: Path) -> None:
    env = service_env(MEMEX_DATABASE_URL=dsn)
    bad = tmp_path / "bad.jsonl"
    good = {"id": str(uuid.uuid4()), "agent_id": "a", "user_id": "u", "content": "fine"}
    for lines, expected in [
        ([good, "not json"], "memexdb: invalid line 2: is not JSON"),
        ([good, ""], "memexdb: invalid line 2: is empty"),
        ([good, {**good, "id": str(uuid.uuid4()), "importance": 3}], "invalid line 2 importance"),
        (
            [{**good, "embedding": [0.5] * 3, "embedding_model": "all-MiniLM-L6-v2-int8"}],
            "invalid line 1 embedding: must have 384 dimensions, not 3",
        ),
    ]:
        bad = tmp_path / "bad.jsonl"
        bad.write_text("".join((json.dumps(x) if isinstance(x, dict) else x) + "\n" for x in lines))
        code, log = run_cli(["import", str(bad)], env)
        assert code == 2, log
        assert expected in log, log
        assert "Traceback" not in log


async def test_empty_or_malformed_ids_are_refused_before_any_call(amemex: AsyncMemex) -> None:
    """Issue 33: the in-process client refuses an empty or malformed id as the HTTP
    clients do (InvalidArgument naming it); nothing is deleted."""
    await amemex.store("agent", "ivy", "Ivy likes tea.")
    refusals = [
        (amemex.forget("agent", "ivy", ""), "memory_id"),  # type: ignore[arg-type]
        (amemex.get("agent", "ivy", "123"), "memory_id"),  # type: ignore[arg-type]
        (amemex.update("agent", "ivy", "x", importance=2), "memory_id"),  # type: ignore[arg-type]
        (amemex.delete_file("agent", "ivy", ""), "path"),
        (amemex.read_file("agent", "ivy", ""), "path"),
        (amemex.revoke_key(""), "key"),
        (amemex.erase_user("agent", "", confirm=""), "user_id"),
        (amemex.erase_user("agent", "ivy", confirm=""), "confirm"),
    ]
    for call, field in refusals:
        with pytest.raises(InvalidArgument) as refused:
            await call
        assert refused.value.field == field
    assert await amemex.count("agent", "ivy") == 1


def test_cli_erase_asks_for_the_user_by_name(memex: Memex, dsn: str) -> None:
    """`memexdb erase` erases only with --yes (or the user id typed again on a terminal):
    a script without it is refused and nothing is deleted."""
    env = service_env(MEMEX_DATABASE_URL=dsn)
    memex.store("cli", "ivy", "Ivy likes tea.")
    memex.write_file("cli", "ivy", "user/profile.md", "# Ivy\n")
    memex.store("cli", "kept", "not erased")
    code, out = run_cli(["erase", "--agent-id", "cli", "--user-id", "ivy"], env)
    assert code == 2, out
    assert "not erased" in out and "--yes" in out, out
    assert memex.count("cli", "ivy") == 2
    code, out = run_cli(["erase", "--agent-id", "cli", "--user-id", "ivy", "--yes"], env)
    assert code == 0, out
    assert "erased user ivy of agent cli: memories 2, tenants 1, file_revisions 1" in out, out
    assert memex.count("cli", "ivy") == 0
    assert memex.count("cli", "kept") == 1


def test_cli_erase_on_a_terminal_takes_the_user_id_typed_again(memex: Memex, dsn: str) -> None:
    env = service_env(MEMEX_DATABASE_URL=dsn)
    memex.store("cli", "tty", "a memory on a terminal")
    for typed, code, left in (("TTY\n", 2, 1), ("tty\n", 0, 0)):
        terminal, child_side = pty.openpty()
        try:
            os.write(terminal, typed.encode())  # what the admin types at the question
            done = subprocess.run(
                cli_args("erase", "--agent-id", "cli", "--user-id", "tty"),
                stdin=child_side,
                capture_output=True,
                text=True,
                env=env,
                cwd=REPO,
                timeout=180,
                check=False,
            )
        finally:
            os.close(terminal)
            os.close(child_side)
        assert done.returncode == code, done.stdout + done.stderr
        assert "Type the user id to confirm" in done.stderr
        assert memex.count("cli", "tty") == left
