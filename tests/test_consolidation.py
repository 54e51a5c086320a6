"""Consolidation as its users meet it: memories written over time and asked later through
the Python API (real embedder), the LLM's abstractive summary (a scripted local chat
server: real models cannot run here), the operator endpoints of a live service, and the
service's own scheduler condensing a due tenant by itself."""

from __future__ import annotations

import contextlib
import json
import re
import shutil
import time
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime, timedelta

import httpx
import psycopg
import pytest

from memexdb import AsyncMemex
from memexdb.agentic import consolidation, dream_changes
from memexdb.embedded import EmbeddedPostgres
from memexdb.embedding import BatchingEmbedder
from memexdb.errors import Forbidden, NotFound
from memexdb.llm import ChatModel, ToolCall
from memexdb.memories.models import MemoryCreate
from memexdb.rest.app import create_app
from tests.conftest import drop_database, new_database, scratch_dir
from tests.live_service import (
    Service,
    client,
    free_port,
    service_env,
    service_on_new_database,
    uvicorn_args,
)
from tests.scripted_llm import answer, scripted_llm, tool_calls

A, U = "dreamer", "dana"
START = datetime(2025, 3, 1, 9, tzinfo=UTC)
TOPICS = [
    "Dana's sister Ines lives in Porto and works as a pharmacist.",
    "Dana adopted a grey cat called Miso in spring.",
    "Dana is allergic to peanuts and carries an epipen.",
    "Dana's favourite hike is the Rota Vicentina coastal trail.",
    "Dana switched her team's tracker from Jira to Linear.",
]


def _history(n: int) -> list[MemoryCreate]:
    """n episodic memories, one a day: the five facts first, then everyday chatter."""
    texts = TOPICS + [
        f"Day {i}: Dana talked about the weather and lunch, nothing new."
        for i in range(n - len(TOPICS))
    ]
    return [
        MemoryCreate(agent_id=A, user_id=U, content=t, created_at=START + timedelta(days=i))
        for i, t in enumerate(texts)
    ]


async def test_a_fact_is_found_before_and_after_consolidation(amemex: AsyncMemex) -> None:
    await amemex.store_many(_history(130))
    question = "Which tracker does Dana's team use?"
    before = await amemex.search(A, U, question, top_k=3, mode="hybrid")
    assert "Linear" in before[0].content
    run = await amemex.consolidate(A, U, force=True)  # just written: an operator's run
    assert run is not None and run.status == "done" and run.memories_in == 50
    after = await amemex.search(A, U, question, top_k=3, mode="hybrid")
    assert after[0].id == run.summary_id and "Jira to Linear" in after[0].content
    # the original is still there, archived, and found when asked for
    archived = await amemex.search(A, U, question, top_k=3, mode="hybrid", include_archived=True)
    original = next(h for h in archived if h.content == TOPICS[4])
    # a search result carries the lineage as a read does
    assert original.superseded_by == run.summary_id and original.archived_at is not None
    summary = next(h for h in after if h.id == run.summary_id)
    assert original.id in summary.source_ids
    memory = await amemex.get(A, U, original.id)
    assert memory.superseded_by == run.summary_id and memory.archived_at is not None
    page = await amemex.list_memories(A, U, limit=200, include_archived=True)
    assert len(page.memories) == 131
    assert len((await amemex.list_memories(A, U, limit=200)).memories) == 81
    # export and import carry the lineage
    rows, _ = await amemex.export_page(A, U, limit=1000)
    lines = [r.to_json() for r in rows]
    assert sum("archived_at" in line for line in lines) == 50
    assert sum(len(line.get("source_ids", [])) for line in lines) == 50
    restored = await amemex.restore_consolidation(run.id or 0)
    assert restored.memories_out == 50
    assert len((await amemex.list_memories(A, U, limit=200)).memories) == 130


async def _with_llm(dsn: str, embedder: BatchingEmbedder, url: str) -> AsyncMemex:
    return await AsyncMemex.connect(
        dsn, embedder=embedder, llm=ChatModel(url, "scripted", timeout=10)
    )


async def test_with_an_llm_the_summary_is_abstractive(
    dsn: str, batching_embedder: BatchingEmbedder
) -> None:
    with scripted_llm() as llm:
        async with await _with_llm(dsn, batching_embedder, llm.url) as memex:
            await memex.store_many(_history(120))
            operator = memex.as_operator("test")
            await operator.set_dream_config(grace_minutes=0)
            llm.script(answer("- (2025-03-05) Dana's team moved from Jira to Linear."))
            runs = await consolidation.tick(operator)
            assert [(r.status, r.details["method"]) for r in runs] == [("done", "llm")]
            summary = await memex.get(A, U, runs[0].summary_id)  # type: ignore[arg-type]
            assert summary.content == "- (2025-03-05) Dana's team moved from Jira to Linear."
            assert summary.source_ids and len(summary.source_ids) == 50
            prompt = llm.requests[0]["body"]["messages"][1]["content"]
            assert "(2025-03-01) Dana's sister Ines lives in Porto" in prompt
            # a failing model leaves the batch to the extractive summary
            llm.script(503)
            await memex.store_many(_history(50))  # 120 - 50 + 1 + 50: due again
            runs = await consolidation.tick(operator)
            assert [r.details["method"] for r in runs] == ["extractive"]


async def test_an_operators_run_for_one_tenant_is_abstractive_too(
    dsn: str, batching_embedder: BatchingEmbedder
) -> None:
    with scripted_llm() as llm:
        async with await _with_llm(dsn, batching_embedder, llm.url) as memex:
            await memex.store_many(_history(60))  # under the threshold: forced
            operator = memex.as_operator("test")
            [plan] = await consolidation.condense(operator, (A, U), dry_run=True, force=True)
            assert plan.status == "dry_run" and llm.requests == []  # a plan asks no model
            llm.script(answer("- (2025-03-05) Dana's team moved from Jira to Linear."))
            [run] = await consolidation.condense(operator, (A, U), force=True)
            assert (run.status, run.details["method"], run.memories_in) == ("done", "llm", 50)
            assert len(llm.requests) == 1


PROFILE = (
    "# Dana\n\n- Lives in Berlin, Kreuzberg\n- Works at Acme as a designer\n"
    "- Moved to Lisbon in March 2026\n- Likes oat milk\n- likes oat milk.\n"
)


async def test_with_an_llm_a_dream_resolves_contradictions(
    dsn: str, batching_embedder: BatchingEmbedder
) -> None:
    with scripted_llm() as llm:
        async with await _with_llm(dsn, batching_embedder, llm.url) as memex:
            await memex.write_file(A, U, "user/profile.md", PROFILE)
            await memex.write_file(A, U, "user/log.md", "- Lives in Berlin\n")
            operator = memex.as_operator("test")
            await operator.set_dream_config(grace_minutes=0)
            fix = {
                "path": "user/profile.md",
                "old_text": "- Lives in Berlin, Kreuzberg",
                "new_text": "- Lived in Berlin, Kreuzberg, until March 2026",
                "reason": "moved to Lisbon",
            }
            llm.script(
                tool_calls(
                    ("resolve_contradiction", fix),
                    # hostile or broken proposals: refused, the good one still applies
                    ("resolve_contradiction", fix | {"path": "user/log.md"}),
                    ("resolve_contradiction", fix | {"path": "../../etc/passwd"}),
                    ("resolve_contradiction", fix | {"agent_id": "someone-else"}),
                    ("resolve_contradiction", fix | {"old_text": "x" * 50_000}),
                    ("resolve_contradiction", fix | {"old_text": "Lives on Mars"}),
                    ("memory_write", {"path": "user/profile.md", "content": "gone"}),
                    ("resolve_contradiction", "{not json"),
                )
            )
            [run] = await consolidation.tick(operator)
            assert run.kind == "dream" and run.status == "done", run
            profile = await memex.read_file(A, U, "user/profile.md")
            assert profile.content == (
                "# Dana\n\n- Lived in Berlin, Kreuzberg, until March 2026\n"
                "- Works at Acme as a designer\n- Moved to Lisbon in March 2026\n"
                "- Likes oat milk\n"
            )
            [done] = run.details["files"]
            assert [e["reason"] for e in done["resolved"]] == ["moved to Lisbon"]
            assert done["lines_removed"] == 1
            refused = [r["reason"] for r in run.details["refused"]]
            assert len(refused) == 7, refused
            assert refused.count("not a file the model was shown") == 1  # the log
            assert any(r.startswith("path:") for r in refused)  # the traversal
            assert any("agent_id" in r for r in refused)  # no tenant of its own choosing
            assert any(r.startswith("old_text:") for r in refused)  # 50,000 characters
            assert "unknown tool 'memory_write'" in refused
            assert "arguments are not JSON" in refused
            assert (await memex.read_file(A, U, "user/log.md")).content == "- Lives in Berlin\n"
            # the model was shown the file it may edit, not the log
            prompt = llm.requests[0]["body"]["messages"][1]["content"]
            assert "=== user/profile.md (written since the last review) ===" in prompt
            assert "user/log.md" not in prompt
            revisions = await memex.list_revisions(A, U, "user/profile.md")
            newest = max(revisions, key=lambda r: r.revision)
            assert newest.actor == "dream-agent"
            dream_log = (await memex.read_file(A, U, "user/dream-log.md")).content
            assert "1 contradiction resolved, 1 duplicate line removed" in dream_log
            # a model that fails leaves the files to the tidying alone
            await memex.write_file(A, U, "user/notes.md", "- tea\n- Tea\n")
            llm.script(503)
            [run] = await consolidation.tick(operator)
            assert run.status == "done" and "refused" not in run.details
            assert (await memex.read_file(A, U, "user/notes.md")).content == "- tea\n"


NOTES = (
    "# Dana\n\n- Drinks her coffee with oat milk\n- Has a cat, Miso\n"
    "- Oat milk is what Dana takes in coffee\n\n## Work\n\n- Acme\n- designer there\n"
    "- since 2024\n- in Lisbon office\n"
)


async def test_with_an_llm_a_dream_merges_facts_and_rewrites_sections(
    dsn: str, batching_embedder: BatchingEmbedder
) -> None:
    with scripted_llm() as llm:
        async with await _with_llm(dsn, batching_embedder, llm.url) as memex:
            written = await memex.write_file(A, U, "user/notes.md", NOTES)
            await memex.write_file(A, U, "user/log.md", "- Drinks coffee\n")
            operator = memex.as_operator("test")
            await operator.set_dream_config(grace_minutes=0)
            milk = ["- Drinks her coffee with oat milk", "- Oat milk is what Dana takes in coffee"]
            merge = {
                "path": "user/notes.md",
                "facts": milk,
                "merged": "- Dana takes her coffee with oat milk",
                "reason": "the same fact twice",
            }
            work = "- Acme\n- designer there\n- since 2024\n- in Lisbon office"
            rewrite = {
                "path": "user/notes.md",
                "old_text": work,
                "new_text": "- Designer at Acme since 2024, Lisbon office",
                "reason": "fragments",
            }
            llm.script(
                tool_calls(
                    # hostile proposals: none of these may write anything
                    ("merge_facts", merge | {"path": "user/log.md"}),  # not shown
                    ("merge_facts", merge | {"facts": ["- Has a cat, Miso", "- nowhere"]}),
                    ("merge_facts", merge | {"merged": "- Takes coffee with milk"}),  # Dana
                    ("rewrite_section", rewrite | {"new_text": "- Designer at Acme"}),  # 2024
                    ("rewrite_section", rewrite | {"old_text": "x" * 5000}),  # oversized
                    ("merge_facts", merge | {"user_id": "bob"}),  # a tenant of its own
                    # the good ones still apply, each its own revision
                    ("merge_facts", merge),
                    ("rewrite_section", rewrite),
                    ("rewrite_section", rewrite),  # a ninth proposal: over the limit
                )
            )
            [run] = await consolidation.tick(operator)
            notes = await memex.read_file(A, U, "user/notes.md")
            assert notes.content == (
                "# Dana\n\n- Has a cat, Miso\n- Dana takes her coffee with oat milk\n\n"
                "## Work\n\n- Designer at Acme since 2024, Lisbon office\n"
            )
            # each change is one revision by dream-agent; the first one keeps the old text
            revisions = await memex.list_revisions(A, U, "user/notes.md")
            mine = sorted(r.revision for r in revisions if r.revision > written.revision)
            assert len(mine) == 2
            assert {r.actor for r in revisions if r.revision in mine} == {"dream-agent"}
            dream_log = (await memex.read_file(A, U, "user/dream-log.md")).content
            assert "user/notes.md: 2 facts merged (the same fact twice)" in dream_log
            assert "user/notes.md: a fragmented section rewritten (fragments)" in dream_log
            refused = [r["reason"] for r in run.details["refused"]]
            assert len(refused) == 7, refused
            assert "not a file the model was shown" in refused
            assert "fact 2 does not occur exactly once in the file as shown" in refused
            assert "drops facts: Dana" in refused and "drops facts: 2024, Lisbon" in refused
            assert any(r.startswith("old_text:") for r in refused)
            assert any("user_id" in r for r in refused)
            assert "over 8 edits" in refused
            assert (await memex.read_file(A, U, "user/log.md")).content == "- Drinks coffee\n"
            # nothing lost: the revision before the merge has the old wording back
            restored = await memex.restore_revision(A, U, "user/notes.md", written.revision)
            assert restored.content == NOTES


async def test_a_merge_over_a_stale_revision_is_refused(amemex: AsyncMemex) -> None:
    first = await amemex.write_file(A, U, "user/notes.md", "- tea\n- Tea, always\n")
    await amemex.write_file(A, U, "user/notes.md", "- tea\n- Tea, always\n- coffee\n")
    shown = {"user/notes.md": dream_changes.Shown(first.revision, "- tea\n- Tea, always\n")}
    merge = {"path": "user/notes.md", "facts": ["- tea", "- Tea, always"], "merged": "- tea"}
    call = ToolCall("merge_facts", json.dumps(merge))
    with pytest.raises(dream_changes.Refused, match="stale: written since revision 1"):
        await dream_changes.apply(amemex, (A, U), shown, call)
    now = await amemex.read_file(A, U, "user/notes.md")
    assert now.content == "- tea\n- Tea, always\n- coffee\n"  # the user's write stands


@pytest.fixture(scope="module")
def live(pg_server: EmbeddedPostgres, template_db: str) -> Iterator[httpx.Client]:
    dsn = new_database(pg_server)
    log = scratch_dir("memexdb-dream-") / "service.log"
    port = free_port()
    # the defaults: condensing on, dreaming over files off
    env = service_env(MEMEX_DATABASE_URL=dsn)
    service = Service(uvicorn_args(port), env, port, log)
    try:
        service.wait_healthy()
        with client(service.base_url) as http:
            yield http
        service.stop()
    finally:
        service.close()
        drop_database(pg_server, dsn)
        shutil.rmtree(log.parent, ignore_errors=True)


def test_operator_endpoints(live: httpx.Client) -> None:
    http = live
    memories = [m.model_dump(mode="json") for m in _history(110)]
    for m in memories:
        m["agent_id"] = "ops"
    assert http.post("/v1/memories/batch", json={"memories": memories}).status_code == 201
    config = http.get("/v1/admin/dream/config").json()
    assert config["threshold"] == 100 and config["enabled"] is True
    # what runs here, by default: the service condenses; nobody dreams over files
    assert (config["condense"], config["dream"]) == ("service", "not scheduled")
    console = http.get("/admin/dream").text
    assert "Condensing old memories runs: the service runs it" in console
    assert "Dreaming over files does not run: not scheduled here" in console
    off = http.put("/v1/admin/dream/config", json={"enabled": False}).json()
    assert (off["condense"], off["dream"]) == ("disabled", "disabled")
    assert http.put("/v1/admin/dream/config", json={"enabled": True}).status_code == 200
    r = http.put("/v1/admin/dream/config", json={"threshold": 5})
    assert r.status_code == 422 and r.json()["error"]["fields"][0]["field"] == "threshold"
    users = http.get("/v1/admin/dream/users", params={"agent_id": "ops"}).json()["users"]
    assert [(u["user_id"], u["paused"], u["memory_count"]) for u in users] == [(U, False, 110)]
    # a dry run shows the plan and writes nothing
    plan = http.post(
        "/v1/admin/dream/run",
        json={"agent_id": "ops", "user_id": U, "dry_run": True, "force": True},
    ).json()["runs"]
    assert plan[0]["status"] == "dry_run" and len(plan[0]["details"]["source_ids"]) == 50
    assert http.get("/v1/admin/dream/runs", params={"agent_id": "ops"}).json()["runs"] == []
    paused = http.put(f"/v1/admin/dream/users/{U}/paused", json={"agent_id": "ops", "paused": True})
    assert paused.json() == {"agent_id": "ops", "user_id": U, "paused": True}
    assert (
        http.put(
            "/v1/admin/dream/users/nobody/paused", json={"agent_id": "ops", "paused": True}
        ).status_code
        == 404
    )
    # paused: a forced run still goes (an operator's decision), the tick skips the tenant
    done = http.post(
        "/v1/admin/dream/run", json={"agent_id": "ops", "user_id": U, "force": True}
    ).json()["runs"]
    assert done[0]["status"] == "done"
    runs = http.get("/v1/admin/dream/runs", params={"agent_id": "ops", "user_id": U}).json()
    assert [r["id"] for r in runs["runs"]] == [done[0]["id"]]
    restore = http.post(f"/v1/admin/dream/runs/{done[0]['id']}/restore")
    assert restore.status_code == 200 and restore.json()["kind"] == "restore"
    again = http.post(f"/v1/admin/dream/runs/{done[0]['id']}/restore")
    assert again.status_code == 409 and again.json()["error"]["code"] == "conflict"
    assert http.post("/v1/admin/dream/runs/99999/restore").status_code == 404
    assert http.post("/v1/admin/dream/run", json={"agent_id": "ops"}).status_code == 422
    # the same run tidies the tenant's files (dreaming), as dream-agent
    profile = "# Dana\n\n## Pets\n\n- a cat, Miso\n\n## Pets\n\n- A cat, Miso.\n- a dog\n"
    body = {"agent_id": "ops", "user_id": U, "path": "user/profile.md", "content": profile}
    assert http.put("/v1/files", json=body).status_code == 200
    runs = http.post(
        "/v1/admin/dream/run", json={"agent_id": "ops", "user_id": U, "force": True}
    ).json()["runs"]
    dream = next(r for r in runs if r["kind"] == "dream")
    assert dream["status"] == "done" and dream["files_touched"] == 1
    where = {"agent_id": "ops", "user_id": U, "path": "user/profile.md"}
    tidied = http.get("/v1/files/read", params=where).json()
    assert tidied["content"] == "# Dana\n\n## Pets\n\n- a cat, Miso\n- a dog\n"
    assert tidied["actor"] == "dream-agent"


def test_the_service_condenses_a_due_tenant_by_itself(live: httpx.Client) -> None:
    http = live
    memories = [m.model_dump(mode="json") for m in _history(105)]
    for m in memories:
        m["agent_id"] = "auto"
    assert http.post("/v1/memories/batch", json={"memories": memories}).status_code == 201
    r = http.put("/v1/admin/dream/config", json={"grace_minutes": 0, "interval_seconds": 10})
    assert r.status_code == 200 and r.json()["condense"] == "service"
    deadline = time.monotonic() + 90  # the job checks every 30 s, ticks every 10 s
    runs: list[dict[str, object]] = []
    while time.monotonic() < deadline and not runs:
        time.sleep(2)
        runs = http.get("/v1/admin/dream/runs", params={"agent_id": "auto"}).json()["runs"]
    assert runs and runs[0]["status"] == "done" and runs[0]["actor"] == "dream-agent"


async def test_consolidation_keeps_to_the_callers_scope(amemex: AsyncMemex) -> None:
    await amemex.store_many(_history(110))
    other = [m.model_copy(update={"agent_id": "other"}) for m in _history(110)]
    await amemex.store_many(other)
    operator = amemex.as_operator("test")
    writer = amemex.with_key((await operator.create_key("write", agent_id=A)).token)
    reader = amemex.with_key((await operator.create_key("read", agent_id=A)).token)
    admin_a = amemex.with_key((await operator.create_key("admin", agent_id=A)).token)
    with pytest.raises(Forbidden):
        await writer.consolidate("other", U, force=True)
    with pytest.raises(Forbidden):
        await reader.consolidate(A, U, force=True)
    with pytest.raises(Forbidden):
        await admin_a.set_dream_config(threshold=50)  # every agent's setting
    with pytest.raises(Forbidden):
        await admin_a.consolidate_due()
    mine = await writer.consolidate(A, U, force=True)
    assert mine is not None and mine.status == "done"
    assert mine.actor == "dream-agent"
    await operator.consolidate("other", U, force=True)
    theirs = await operator.consolidate("other", U, force=True)  # other's run 2: A has none
    assert theirs is not None and theirs.id == 2
    # each sees its own runs only; the admin of A manages A's users
    assert [r.id for r in await reader.consolidation_runs(A)] == [mine.id]
    with pytest.raises(Forbidden):
        await reader.consolidation_runs("other")
    with pytest.raises(Forbidden):
        await reader.restore_consolidation(mine.id or 0)
    with pytest.raises(NotFound):  # another agent's run is indistinguishable from none
        await writer.restore_consolidation(theirs.id or 0)
    assert [u.user_id for u in await admin_a.dream_users(A)] == [U]
    assert await admin_a.set_dream_paused(A, U, True) is True
    with pytest.raises(Forbidden):
        await admin_a.set_dream_paused("other", U, True)


def test_the_consoles_run_now_is_abstractive_with_an_llm(
    pg_server: EmbeddedPostgres, template_db: str
) -> None:
    """The console's "run now" used to call SQL's extractive consolidation directly while
    REST's went through consolidation.condense (the LLM when configured): one operation,
    two behaviours (issue 22). Both now run the operation memexdb.agentic.RUN_NOW."""
    with (
        scripted_llm() as llm,
        service_on_new_database(
            pg_server, "console-llm", MEMEX_LLM_URL=llm.url, MEMEX_LLM_MODEL="scripted"
        ) as service,
        client(service.base_url) as http,
    ):
        stored = http.post(
            "/v1/memories/batch",
            json={"memories": [m.model_dump(mode="json") for m in _history(60)]},
        )
        assert stored.status_code == 201, stored.text
        page = http.get("/admin/dream")
        token = re.search(r'name="csrf" value="([^"]+)"', page.text)
        assert token, page.text[:300]
        llm.script(answer("- (2025-03-05) Dana's team moved from Jira to Linear."))
        ran = http.post(
            "/admin/dream/run",
            data={"agent_id": A, "user_id": U, "csrf": token.group(1)},
            follow_redirects=False,
        )
        assert ran.status_code == 303, ran.text[:500]
        runs = http.get("/v1/admin/dream/runs", params={"agent_id": A, "user_id": U}).json()
        condensed = [r for r in runs["runs"] if r["kind"] == "condense"]
        assert [(r["status"], r["details"]["method"]) for r in condensed] == [("done", "llm")]
        assert len(llm.requests) == 1


async def test_a_forced_run_now_says_which_step_another_runner_held(
    dsn: str, batching_embedder: BatchingEmbedder
) -> None:
    """Issue 34, item 7: while the scheduler held the tenant's consolidation lock, a forced
    run-now answered 200 with only the dream step, saying nothing of the condense step."""
    async with await AsyncMemex.connect(dsn, embedder=batching_embedder) as memex:
        await memex.store_many(_history(110))

    @contextlib.asynccontextmanager
    async def connect() -> AsyncIterator[AsyncMemex]:
        async with await AsyncMemex.connect(dsn, embedder=batching_embedder) as memex:
            yield memex

    app = create_app(connect)
    run = {"agent_id": A, "user_id": U, "force": True}
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://x") as http,
    ):
        with psycopg.connect(dsn) as scheduler:  # a tick in the middle of this tenant's run
            scheduler.execute(
                "select pg_advisory_xact_lock(memex._lock_key('consolidate',"
                " jsonb_build_array(%s::text, %s::text)::text))",
                (A, U),
            )
            r = await http.post("/v1/admin/dream/run", json=run)
            assert r.status_code == 200, r.text
            body = r.json()
            assert [s["step"] for s in body["skipped"]] == ["condense"]
            assert "consolidation lock" in body["skipped"][0]["reason"]
            assert [run["kind"] for run in body["runs"]] == ["dream"]
            scheduler.rollback()
        r = await http.post("/v1/admin/dream/run", json=run)
        body = r.json()
        assert body["skipped"] == []
        assert body["runs"][0]["kind"] == "condense" and body["runs"][0]["status"] == "done"
