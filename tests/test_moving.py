"""A user's whole memory moves (issue 24 section 4): export -> erase -> import gives back
the same memories (archived ones with their lineage), the same files with the same
revisions, the access log and the consolidation runs, and the same answers to a fixed
set of searches and reads; re-importing skips everything and embeds nothing. Through the
command line, through REST (POST /v1/import) and through the Python HTTP client, against
the real embedded PostgreSQL and the real embedding model; plus who may import history."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest
from memexdb_client import AsyncMemexClient

from memexdb import AsyncMemex
from memexdb.embedding import BatchingEmbedder
from memexdb.errors import Conflict, Forbidden, NotFound
from memexdb.export_format import LINE_MAX_BYTES
from memexdb.memories.models import MemoryCreate, NewMemory
from memexdb.rest.app import create_app
from tests.conftest import scratch_dir
from tests.live_service import Service, free_port, run_cli, service_env, uvicorn_args

A, U = "mover", "maria"
START = datetime(2025, 1, 6, 9, tzinfo=UTC)
NOW = datetime(2026, 12, 1, tzinfo=UTC)
QUERIES = [
    "Where does Maria live?",
    "What is Maria allergic to?",
    "Which tracker does Maria's team use?",
    "What did Maria talk about on day 40?",
]
FACTS = [
    "Maria lives in Porto, near the river.",
    "Maria is allergic to shellfish.",
    "Maria's team moved its tracker from Jira to Linear.",
]


def _history(n: int) -> list[MemoryCreate]:
    texts = FACTS + [f"Day {i}: Maria talked about the weather." for i in range(n - len(FACTS))]
    return [
        MemoryCreate(agent_id=A, user_id=U, content=t, created_at=START + timedelta(days=i))
        for i, t in enumerate(texts)
    ]


async def _build(memex: AsyncMemex) -> None:
    """Memories (some archived by consolidation, one run restored), files with several
    revisions (one deleted), access-log entries."""
    await memex.store_many(_history(120))
    first = await memex.consolidate(A, U, force=True)
    assert first is not None and first.status == "done"
    await memex.restore_consolidation(first.id or 0)
    second = await memex.consolidate(A, U, force=True)
    assert second is not None and second.status == "done"
    profile = "user/profile.md"
    await memex.write_file(A, U, profile, "# Profile\n\nMaria lives in Porto.\n\n## Work\n")
    await memex.patch_file(A, U, profile, heading="## Work", append="Maria is a nurse.")
    await memex.patch_file(A, U, profile, old_text="Porto", new_text="Porto (Ribeira)")
    await memex.write_file(A, U, "agent/notes.md", "Ask Maria about her trip.\n")
    await memex.write_file(A, U, "agent/scratch.md", "temporary\n")
    await memex.delete_file(A, U, "agent/scratch.md")
    await memex.read_file(A, U, profile)
    await memex.smart_read(A, U, "Maria's work")


async def _snapshot(memex: AsyncMemex) -> dict[str, Any]:
    """What a user of the tenant sees: memories, files and revisions, runs, searches and
    reads (their order and scores)."""
    page = await memex.list_memories(A, U, limit=1000, include_archived=True)
    files, _ = await memex.list_files(A, U)
    revisions = {}
    for path in ("user/profile.md", "agent/notes.md", "agent/scratch.md"):
        listed = await memex.list_revisions(A, U, path)
        revisions[path] = [dataclasses.replace(r, id=0) for r in listed]
    runs = await memex.consolidation_runs(A, U)
    searches = [
        [(h.id, round(h.score, 5)) for h in await memex.search(A, U, q, now=NOW, mode="hybrid")]
        for q in QUERIES
    ]
    reads = [(f.path, f.revision, (await memex.read_file(A, U, f.path)).content) for f in files]
    # a small budget: the best passages only (recency moves with the clock, which smart_read
    # does not take, so near-ties further down could swap between two snapshots)
    smart = (await memex.smart_read(A, U, "Where does Maria work?", budget=300)).context
    return {
        "memories": sorted(page.memories, key=lambda m: m.id),
        "files": files,
        "revisions": revisions,
        "runs": [
            (r.kind, r.status, r.summary_id, r.memories_in, r.started_at, r.restored_by is None)
            for r in runs
        ],
        "searches": searches,
        "reads": reads,
        "smart_read": smart,
    }


def _history_of(lines: list[dict[str, Any]], until: datetime) -> list[dict[str, Any]]:
    """An export's history records, access-log entries written up to `until` only; a
    restore run's details.run, the id of the run it restored (a number of the agent's
    history, given anew by an import), left out."""
    return [
        {**r, "details": {k: v for k, v in r["details"].items() if k != "run"}}
        if r["record"] == "consolidation_run" and r["kind"] == "restore"
        else r
        for r in lines
        if r["record"] in ("file_revision", "consolidation_run")
        or (r["record"] == "access" and datetime.fromisoformat(r["at"]) <= until)
    ]


def _embedded() -> float:
    """Texts embedded by this process's batching embedder so far (its metric)."""
    from memexdb import metrics

    for metric in metrics.EMBEDDING_BATCH_SIZE.collect():
        for sample in metric.samples:
            if sample.name.endswith("_sum"):
                return float(sample.value)
    return 0.0


async def _erase(memex: AsyncMemex) -> None:
    deleted = await memex.erase_user(A, U, confirm=U)
    assert deleted["memories"] > 100 and deleted["file_revisions"] == 6, deleted
    assert deleted["access_log"] > 0 and deleted["consolidation_runs"] == 3, deleted


async def test_export_erase_import_in_process_gives_back_the_same_memory(
    amemex: AsyncMemex,
) -> None:
    operator = amemex.as_operator("test")
    await _build(operator)
    lines = [r async for r in operator.export(A, U, embeddings=True)]
    header = lines[0]
    assert (header["record"], header["format"], header["version"]) == (
        "header",
        "memexdb-export",
        3,
    )
    kinds = {r["record"] for r in lines[1:]}
    assert kinds == {"memory", "file_revision", "access", "consolidation_run", "memory_revision"}
    assert any(r.get("path") == "user/profile.md" for r in lines)  # a file, not a memory
    before = await _snapshot(operator)
    await _erase(operator)

    embedded = _embedded()
    result = await operator.import_memories(lines)
    assert result.reembedded == 0 and _embedded() == embedded  # the exported vectors
    assert result.kinds["file_revision"] == {"imported": 6, "skipped": 0}
    assert result.kinds["consolidation_run"] == {"imported": 3, "skipped": 0}
    assert result.skipped == 0
    assert await _snapshot(operator) == before
    exported_at = datetime.fromisoformat(header["exported_at"])
    again = [r async for r in operator.export(A, U, embeddings=True)]
    assert [r for r in again if r["record"] == "memory"] == [
        r for r in lines if r["record"] == "memory"
    ]
    assert _history_of(again, exported_at) == _history_of(lines, exported_at)

    # re-import: everything skipped, nothing embedded, even without the vectors
    bare = [{k: v for k, v in r.items() if k != "embedding"} for r in lines]
    embedded = _embedded()
    result = await operator.import_memories(bare)
    assert (result.imported, result.reembedded) == (0, 0)
    assert result.skipped == len(lines) - 1
    assert _embedded() == embedded


async def test_history_is_imported_only_by_an_admin_of_the_tenant(
    amemex: AsyncMemex, conn: psycopg.Connection
) -> None:
    operator = amemex.as_operator("test")
    await operator.write_file(A, U, "user/a.md", "one\n")
    lines = [r async for r in operator.export(A, U)]
    revision = next(r for r in lines if r["record"] == "file_revision")
    forged = {**revision, "user_id": "victim", "actor": "key:someone", "revision": 7}
    writer = (await operator.create_key("write", agent_id=A, name="writer")).token
    admin_b = (await operator.create_key("admin", agent_id="B", name="other")).token
    for token in (writer, admin_b):
        with pytest.raises(Forbidden):
            await amemex.with_key(token).import_memories([forged])
    # a file memory (a path) and an actor are history too
    memory = next(r for r in lines if r["record"] == "memory")
    with pytest.raises(Forbidden):
        await amemex.with_key(writer).import_memories([{**memory, "id": str(uuid.uuid4())}])
    admin = (await operator.create_key("admin", agent_id=A, name="admin")).token
    result = await amemex.with_key(admin).import_memories([forged])
    assert result.kinds["file_revision"] == {"imported": 1, "skipped": 0}
    # the original revision and the one the admin imported: nothing of the refused calls
    assert conn.execute("select count(*) from memex.file_revisions").fetchone() == (2,)


# --- over HTTP: REST and the Python client -------------------------------------------


@dataclass
class Live:
    service: Service
    operator: str  # an admin key of every agent
    writer: str  # a write key of agent A


@pytest.fixture
def live(dsn: str) -> Iterator[Live]:
    log = scratch_dir("memexdb-moving-") / "service.log"
    port = free_port()
    running = Service(uvicorn_args(port), service_env(MEMEX_DATABASE_URL=dsn), port, log)
    try:
        running.wait_healthy()
        with httpx.Client(base_url=running.base_url, timeout=60) as http:
            operator = http.post("/v1/admin/keys", json={"access": "admin"}).json()["token"]
            headers = {"Authorization": f"Bearer {operator}"}
            writer = http.post(
                "/v1/admin/keys", json={"access": "write", "agent_id": A}, headers=headers
            ).json()["token"]
        yield Live(running, operator, writer)
    finally:
        running.close()


async def _service_embedded(http: httpx.AsyncClient) -> float:
    """Texts the service has embedded so far (its memex_embedding_batch_size_sum)."""
    text = (await http.get("/metrics")).text
    found = [
        line for line in text.splitlines() if line.startswith("memex_embedding_batch_size_sum")
    ]
    return float(found[0].split()[-1]) if found else 0.0


@pytest.fixture
async def operator_memex(
    dsn: str, batching_embedder: BatchingEmbedder
) -> AsyncIterator[AsyncMemex]:
    client = await AsyncMemex.connect(dsn, embedder=batching_embedder)
    yield client.as_operator("test")
    await client.aclose()


async def _embed_queue_drained(memex: AsyncMemex) -> None:
    """Wait until the service's embed worker has embedded the summaries consolidation
    queued (their vector changes then: an export taken before that would differ)."""
    deadline = time.monotonic() + 60
    while (await memex.embed_queue_depth()).queued:
        assert time.monotonic() < deadline, "the embed queue was not drained"
        await asyncio.sleep(0.2)


async def test_rest_and_python_client_round_trip(
    live: Live, operator_memex: AsyncMemex, tmp_path: Path
) -> None:
    await _build(operator_memex)
    await _embed_queue_drained(operator_memex)
    auth = {"Authorization": f"Bearer {live.operator}"}
    ndjson = {**auth, "Content-Type": "application/x-ndjson"}
    async with httpx.AsyncClient(base_url=live.service.base_url, timeout=120, headers=auth) as http:
        query = {"agent_id": A, "user_id": U, "embeddings": True}
        exported = await http.get("/v1/export", params=query)
        assert exported.status_code == 200
        body = exported.content
        lines = [json.loads(line) for line in body.splitlines()]
        assert lines[0]["record"] == "header"
        before = await _snapshot(operator_memex)
        await _erase(operator_memex)

        # REST: streamed in chunks, imported as it was
        async def chunks() -> AsyncIterator[bytes]:
            for start in range(0, len(body), 65536):
                yield body[start : start + 65536]

        answer = await http.post("/v1/import", content=chunks(), headers=ndjson)
        assert answer.status_code == 200, answer.text
        counts = answer.json()
        assert counts["skipped"] == 0 and counts["reembedded"] == 0
        assert counts["imported"] == len(lines) - 1
        assert counts["access_log_expiring"] == 0  # today's entries
        assert await _snapshot(operator_memex) == before
        embedded = await _service_embedded(http)
        answer = await http.post("/v1/import", content=body, headers=ndjson)
        assert answer.json()["imported"] == 0 and answer.json()["skipped"] == len(lines) - 1
        assert await _service_embedded(http) == embedded  # re-import: no embedding call

        # the write key of the agent may not import (operator or admin key only)
        refused = await http.post(
            "/v1/import",
            content=body,
            headers={**ndjson, "Authorization": f"Bearer {live.writer}"},
        )
        assert refused.status_code == 403, refused.text

        # the Python client: from the file, then again from the dicts
        await _erase(operator_memex)
        path = tmp_path / "export.jsonl"
        path.write_bytes(body)
        async with AsyncMemexClient(live.service.base_url, live.operator) as client:
            result = await client.import_memories(str(path))
            assert (result.imported, result.skipped) == (len(lines) - 1, 0)
            assert result.access_log_expiring == 0
            assert await _snapshot(operator_memex) == before
            streamed = [r async for r in client.export(A, U)]
            assert [r["id"] for r in streamed if r["record"] == "memory"] == [
                r["id"] for r in lines if r["record"] == "memory"
            ]
            embedded = await _service_embedded(http)
            result = await client.import_memories(streamed)  # without vectors
            assert (result.imported, result.reembedded) == (0, 0)
            assert result.skipped == len(streamed) - 1
            assert await _service_embedded(http) == embedded


def test_rest_import_names_the_bad_line(live: Live) -> None:
    auth = {"Authorization": f"Bearer {live.operator}"}
    ndjson = {**auth, "Content-Type": "application/x-ndjson"}
    good = {"id": str(uuid.uuid4()), "agent_id": A, "user_id": U, "content": "fine"}
    at = "2026-01-01T00:00:00+00:00"
    access = {
        "record": "access",
        "agent_id": A,
        "user_id": U,
        "actor": "a",
        "operation": "read",
        "at": at,
    }
    run = {
        "record": "consolidation_run",
        "agent_id": A,
        "user_id": U,
        "kind": "condense",
        "status": "done",
        "actor": "a",
        "started_at": at,
    }
    with httpx.Client(base_url=live.service.base_url, timeout=60) as http:

        def post(body: bytes, headers: dict[str, str] = ndjson) -> httpx.Response:
            return http.post("/v1/import", content=body, headers=headers)

        cases: list[tuple[bytes, int, str]] = [
            (json.dumps(good).encode() + b"\nnot json\n", 422, "line 2"),
            (json.dumps(good).encode() + b"\n\n", 422, "line 2"),
            (b"[1, 2]\n", 422, "line 1"),
            (json.dumps({**good, "importance": 7}).encode(), 422, "line 1 importance"),
            (json.dumps({**good, "record": "diary"}).encode(), 422, "line 1 record"),
            (
                b'{"record": "header", "format": "memexdb-export", "version": 9, "agent_id": "a",'
                b' "exported_at": "2026-01-01T00:00:00Z"}\n',
                422,
                "line 1 version",
            ),
            (b'{"a": "' + b"x" * LINE_MAX_BYTES + b'"}\n', 413, "line 1"),
            (b"\xff\xfe\n", 422, "line 1"),
            # Postgres text cannot hold NUL, nor an integer column 2**31
            (json.dumps({**access, "actor": "a\u0000b"}).encode(), 422, "line 1 actor"),
            (json.dumps({**access, "details": {"k": "\u0000"}}).encode(), 422, "line 1 details"),
            (json.dumps({**run, "memories_in": 2**31}).encode(), 422, "line 1 memories_in"),
        ]
        for body, status, where in cases:
            r = post(body)
            assert r.status_code == status, (body[:80], r.status_code, r.text[:300])
            error = r.json()["error"]
            assert where in error["message"], (where, error)
        r = post(json.dumps(good).encode(), {**auth, "Content-Type": "application/json"})
        assert r.status_code == 415 and r.json()["error"]["code"] == "unsupported_media_type"
        r = post(b"not json\n", {"Content-Type": "application/x-ndjson"})
        assert r.status_code == 401  # no key: nothing about the body is answered
        # a bad line stops the import before its batch (of 500) is inserted: nothing here
        count = http.get("/v1/memories/count", params={"agent_id": A, "user_id": U}, headers=auth)
        assert count.json()["count"] == 0


# --- the command line -------------------------------------------------------------------


async def test_cli_export_erase_import_round_trip(
    operator_memex: AsyncMemex, dsn: str, tmp_path: Path
) -> None:
    env = service_env(MEMEX_DATABASE_URL=dsn)
    await _build(operator_memex)
    out = tmp_path / "export.jsonl"
    flags = ["--agent-id", A, "--user-id", U, "--embeddings", "-o", str(out), "-q"]
    code, log = run_cli(["export", *flags], env)
    assert code == 0, log
    assert "exported 124 memories, 6 file revisions" in log, log
    assert "1 consolidation runs" not in log and "3 consolidation runs" in log, log
    before = await _snapshot(operator_memex)
    await _erase(operator_memex)
    code, log = run_cli(["import", str(out), "-q"], env)
    assert code == 0, log
    # the vectors exported are this model's: nothing is embedded (a summary's vector, its
    # sources' centroid until the embed worker embeds its text, is kept as it was too)
    assert "imported 124 memories, skipped 0 (their id exists already), embedded 0" in log
    assert "file revisions: imported 6, skipped 0" in log, log
    assert "consolidation runs: imported 3, skipped 0" in log, log
    assert await _snapshot(operator_memex) == before
    code, log = run_cli(["import", str(out), "-q"], env)
    assert code == 0, log
    assert "imported 0 memories, skipped 124 (their id exists already), embedded 0" in log
    assert "file revisions: imported 0, skipped 6" in log, log


# --- a refused POST /v1/import applies nothing -------------------------------------------


async def test_rest_import_over_its_limits_applies_nothing(
    dsn: str, batching_embedder: BatchingEmbedder, conn: psycopg.Connection
) -> None:
    """413 (too many lines) and 422 (a bad record) come before anything is applied, even
    when a batch before the bad line was complete (a change of record kind flushes it)."""
    token = conn.execute("select token from memex.create_key('admin', %s)", (A,)).fetchone()
    assert token is not None

    @contextlib.asynccontextmanager
    async def connect() -> AsyncIterator[AsyncMemex]:
        async with await AsyncMemex.connect(dsn, embedder=batching_embedder) as memex:
            yield memex

    at = "2026-01-01T00:00:00+00:00"
    memory = {"record": "memory", "agent_id": A, "user_id": U}
    access = {"record": "access", "agent_id": A, "user_id": U, "actor": "a", "at": at}
    lines = [
        {**memory, "id": str(uuid.uuid4()), "content": "Maria lives in Porto."},
        {**memory, "id": str(uuid.uuid4()), "content": "Maria is a nurse."},
        {**access, "operation": "read"},
        {**access, "operation": "write"},
    ]
    app = create_app(connect, import_lines_max=3)
    headers = {"Authorization": f"Bearer {token[0]}", "Content-Type": "application/x-ndjson"}
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app), base_url="http://localhost", headers=headers
        ) as http,
    ):

        async def post(records: list[dict[str, Any]]) -> httpx.Response:
            return await http.post("/v1/import", content="\n".join(map(json.dumps, records)))

        too_many = await post(lines)
        assert too_many.status_code == 413, too_many.text
        assert "more than 3 lines" in too_many.json()["error"]["message"]
        bad = await post([*lines[:3], {**access, "operation": "read", "at": "never"}][1:])
        assert bad.status_code == 422, bad.text
        assert "line 3 at" in bad.json()["error"]["message"], bad.text
        nothing = conn.execute(
            "select (select count(*) from memex.memories), (select count(*) from memex.access_log)"
        ).fetchone()
        assert nothing == (0, 0)
        # within the limits, the same lines are imported
        done = await post(lines[:3])
        assert done.status_code == 200, done.text
        assert done.json()["imported"] == 3


# --- another tenant's memory id -----------------------------------------------------------


async def test_another_tenants_id_answers_as_ones_own_taken_id(amemex: AsyncMemex) -> None:
    """Ids are one namespace: an id another tenant holds is taken, and a probe of it by
    store or import answers exactly as the caller's own taken id does (the same MX409,
    the same import counts, nothing embedded counted), while reads answer as for a
    missing id."""
    operator = amemex.as_operator("test")
    theirs = (await operator.store(A, U, "Maria's secret: the safe code is 0451.")).id
    admin_b = amemex.with_key((await operator.create_key("admin", agent_id="B")).token)
    ours = uuid.uuid4()
    await admin_b.store("B", "bob", "Bob's note.", id=ours)

    def error_of(exc: pytest.ExceptionInfo[Conflict], memory_id: uuid.UUID) -> str:
        return str(exc.value).replace(str(memory_id), "<id>")

    with pytest.raises(Conflict) as own:
        await admin_b.store("B", "bob", "Another note.", id=ours)
    with pytest.raises(Conflict) as other:
        await admin_b.store("B", "bob", "Another note.", id=theirs)
    assert error_of(other, theirs) == error_of(own, ours)
    with pytest.raises(Conflict) as own:
        await admin_b.store_many([NewMemory(agent_id="B", user_id="bob", content="N.", id=ours)])
    with pytest.raises(Conflict) as other:
        await admin_b.store_many([NewMemory(agent_id="B", user_id="bob", content="N.", id=theirs)])
    assert error_of(other, theirs) == error_of(own, ours)
    with pytest.raises(NotFound):
        await admin_b.get("B", "bob", theirs)

    def record(memory_id: uuid.UUID) -> dict[str, Any]:  # no vector: it would be embedded
        return {
            "record": "memory",
            "id": str(memory_id),
            "agent_id": "B",
            "user_id": "bob",
            "content": "Imported note.",
        }

    own_import = await admin_b.import_memories([record(ours)])
    other_import = await admin_b.import_memories([record(theirs)])
    assert dataclasses.astuple(other_import) == dataclasses.astuple(own_import)
    assert (other_import.imported, other_import.skipped, other_import.reembedded) == (0, 1, 0)
    fresh = await admin_b.import_memories([record(uuid.uuid4())])
    assert (fresh.imported, fresh.skipped, fresh.reembedded) == (1, 0, 1)
    # A's memory is as it was
    assert (await operator.get(A, U, theirs)).content == "Maria's secret: the safe code is 0451."


# --- imported history continues the live history -----------------------------------------


async def test_imported_file_revisions_continue_the_live_history_or_are_refused(
    amemex: AsyncMemex,
) -> None:
    operator = amemex.as_operator("test")
    path = "user/plan.md"
    for text in ("one\n", "two\n", "three\n"):
        await operator.write_file(A, U, path, text)
    exported = [r async for r in operator.export(A, U)]
    revisions = [r for r in exported if r["record"] == "file_revision"]
    assert [r["revision"] for r in revisions] == [1, 2, 3]
    await operator.erase_user(A, U, confirm=U)

    # another database's file of the same path lives here at revision 1
    await operator.write_file(A, U, path, "live\n")
    with pytest.raises(Conflict, match="do not continue its live history"):
        await operator.import_memories(revisions)  # 2 and 3 are older than the live 1
    later = [
        {**r, "at": (datetime.now(UTC) + timedelta(minutes=r["revision"])).isoformat()}
        for r in revisions
    ]
    with pytest.raises(Conflict, match="is not the file as it is"):
        await operator.import_memories(later)  # newer, but the file is not revision 3
    read = await operator.read_file(A, U, path)
    assert (read.revision, read.content) == (1, "live\n")  # nothing was imported
    await operator.erase_user(A, U, confirm=U)

    # the export back, its file's history in two imports: the second continues the first
    memory = [r for r in exported if r["record"] == "memory"]
    first = await operator.import_memories([*memory, revisions[0]])
    assert first.kinds["file_revision"] == {"imported": 1, "skipped": 0}
    second = await operator.import_memories(revisions)
    assert second.kinds["file_revision"] == {"imported": 2, "skipped": 1}
    read = await operator.read_file(A, U, path)
    assert (read.revision, read.content) == (3, "three\n")
    at_2 = datetime.fromisoformat(revisions[1]["at"])
    read = await operator.read_file(A, U, path, as_of=at_2)
    assert (read.revision, read.content) == (2, "two\n")
    # times that go back as numbers go up are refused, even for a new history
    await operator.erase_user(A, U, confirm=U)
    swapped = [
        revisions[0],
        {**revisions[1], "at": revisions[2]["at"]},
        {**revisions[2], "at": revisions[1]["at"]},
    ]
    with pytest.raises(Conflict, match="older than one with a lower number"):
        await operator.import_memories([*memory, *swapped])


async def test_imported_actors_name_no_other_agents_key(amemex: AsyncMemex) -> None:
    operator = amemex.as_operator("test")
    admin_a = (await operator.create_key("admin", agent_id=A)).token
    key_b = await operator.create_key("write", agent_id="B")
    key_a = await operator.create_key("write", agent_id=A)
    tenant = {"agent_id": A, "user_id": U}

    def records(actor: str) -> list[dict[str, Any]]:  # runs are told apart by their start
        at = (datetime(2026, 1, 1, tzinfo=UTC) + timedelta(seconds=len(seen))).isoformat()
        seen.append(actor)
        return [
            {"record": "memory", "id": str(uuid.uuid4()), **tenant, "content": "x", "actor": actor},
            {"record": "access", **tenant, "actor": actor, "operation": "read", "at": at},
            {
                "record": "file_revision",
                **tenant,
                "path": f"p/{actor}.md",
                "revision": 1,
                "operation": "write",
                "actor": actor,
                "at": at,
                "content": "x\n",
            },
            {
                "record": "consolidation_run",
                **tenant,
                "kind": "condense",
                "status": "done",
                "actor": actor,
                "started_at": at,
            },
        ]

    seen: list[str] = []
    as_admin = amemex.with_key(admin_a)
    for record in records(f"key:{key_b.id}"):
        with pytest.raises(Forbidden, match="a key of another agent"):
            await as_admin.import_memories([record])
    # its own agent's keys, and keys this database does not know, are kept as exported
    for actor in (f"key:{key_a.id}", f"key:{uuid.uuid4()}"):
        result = await as_admin.import_memories(records(actor))
        assert (result.imported, result.skipped) == (4, 0), result
    # the operator may name any key
    result = await operator.import_memories(records(f"key:{key_b.id}")[1:2])
    assert result.imported == 1


async def test_an_import_says_which_access_entries_the_next_maintenance_prunes(
    amemex: AsyncMemex,
) -> None:
    """Issue 34, section 5: imported access-log entries older than the retention window are
    pruned by the next maintenance, as live ones that old are; the import says how many."""
    operator = amemex.as_operator("test")
    await operator.set_setting("access_log_retention_days", 30)
    now = datetime.now(UTC)
    entry = {"record": "access", "agent_id": A, "user_id": U, "actor": "operator:old"}
    ages = {"old-1": 400, "old-2": 31, "recent": 29, "today": 0}
    records = [
        {**entry, "operation": "read", "target": name, "at": (now - timedelta(days=d)).isoformat()}
        for name, d in ages.items()
    ]
    result = await operator.import_memories(records)
    assert result.kinds["access"] == {"imported": 4, "skipped": 0}
    assert result.access_log_expiring == 2
    again = await operator.import_memories(records)  # skipped, still there, still old
    assert (again.kinds["access"]["skipped"], again.access_log_expiring) == (4, 2)
    pruned = await operator.maintenance()
    assert pruned.access_log_rows_deleted == 2
    left = {e.target for e in await operator.access_log(A, U, limit=100)}
    assert left == {"recent", "today"}
