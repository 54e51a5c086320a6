"""The agentic tools, memory_memorize and memory_search, as their users meet them: the
Python API and the MCP tools through the official SDK client against a real service.

The LLM paths run against tests/scripted_llm.py, a local OpenAI-compatible server that
answers with scripted tool calls: real chat models cannot run on these machines. What is
real: the database, the embedder, the validation and write path every proposal takes."""

from __future__ import annotations

import inspect
import json
import re
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import psycopg
import pytest

import memexdb
from memexdb import AsyncMemex, agentic
from memexdb.agentic.models import MEMORIZE_MAX_PROPOSALS, MEMORIZE_PROPOSAL_MAX_CHARS
from memexdb.embedded import EmbeddedPostgres
from memexdb.embedding import BatchingEmbedder
from memexdb.errors import Forbidden, RateLimited
from memexdb.llm import ChatModel
from tests.conftest import drop_database, new_database
from tests.live_service import free_port
from tests.scripted_llm import ScriptedLLM, answer, tool_calls
from tests.test_mcp_support import call, call_error, connected, http_client_of, serve

A, U = "agentic", "alice"
LIMIT = "rate_limit_store_per_minute"
NOW = datetime(2026, 12, 3, 14, 5, tzinfo=UTC)
PROFILE = "# Alice\n\n## Preferences\n\n- dark mode\n\n## Work\n\n- writes Rust at Acme\n"


async def test_memorize_without_an_llm_keeps_the_text(amemex: AsyncMemex) -> None:
    first = await agentic.memorize(amemex, A, U, "I moved to Lisbon last week.", now=NOW)
    assert first.mode == "fallback" and first.llm_error is None and first.refused == []
    assert first.decisions == []  # nothing is superseded by guesswork
    [stored] = first.applied  # one home for the text
    assert (stored.tool, stored.path) == ("store_memory", None)
    memory = await amemex.get(A, U, stored.memory_id)
    assert (memory.memory_type, memory.created_at) == ("episodic", NOW)
    assert memory.metadata == {"source": "memorize"}
    hits = await amemex.search(A, U, "where does she live now?", top_k=1)
    assert hits[0].id == stored.memory_id
    assert await amemex.list_files(A, U) == ([], None)  # no copy in a log file


async def test_memorize_fallback_logs_its_write_with_its_memory(
    amemex: AsyncMemex, conn: psycopg.Connection
) -> None:
    """docs/security.md: memorize stores its memory and its log entry in one transaction
    (issue 34, item 7: the fallback wrote no access-log entry). A refused call (over the
    store limit) writes neither."""
    conn.execute("update memex.settings set value = '1' where name = %s", (LIMIT,))
    done = await agentic.memorize(amemex, A, U, "Alice's flat is on the third floor.", now=NOW)
    [stored] = done.applied
    [entry] = await amemex.access_log(A, U)
    assert (entry.operation, entry.target) == ("memorize", str(stored.memory_id))
    assert entry.actor == "memorize-agent" and entry.details == {"on_behalf_of": "open"}
    # the entry is written by the statement that stores the memory: one transaction
    with pytest.raises(RateLimited):
        await agentic.memorize(amemex, A, U, "Alice takes the stairs.", now=NOW)
    assert len(await amemex.access_log(A, U)) == 1
    assert await amemex.count(A, U) == 1


async def test_a_memorized_sentence_comes_back_once(amemex: AsyncMemex) -> None:
    sentence = "Dana's daughter Mia starts violin lessons on Thursday."
    await amemex.write_file(A, U, "user/profile.md", PROFILE)
    later = NOW.replace(hour=18, minute=30)
    await agentic.memorize(amemex, A, U, sentence, now=NOW)
    await agentic.memorize(amemex, A, U, "The car needs new tyres before winter.", now=later)
    found = await amemex.call(
        agentic.SEARCH_PASSAGES, agent_id=A, user_id=U, query="When are Mia's violin lessons?"
    )
    with_it = [p for p in found.passages if "violin" in p.passage]
    assert len(with_it) == 1 and found.passages[0].passage == sentence
    block = await amemex.smart_read(A, U, "Mia violin lessons", budget=2000)
    assert block.context.count("violin") == 1


async def test_memorize_applies_valid_proposals_and_refuses_the_rest(
    with_llm: AsyncMemex, llm: ScriptedLLM
) -> None:
    await with_llm.write_file(A, U, "user/profile.md", PROFILE)
    await with_llm.write_file(A, "bob", "user/profile.md", "# Bob\n")
    llm.script(
        tool_calls(
            ("memory_patch", {"path": "user/profile.md", "old_text": "Rust", "new_text": "Go"}),
            (
                "memory_patch",
                {"path": "user/profile.md", "heading": "## Home", "append": "- lives in Lisbon"},
            ),
            ("memory_write", {"path": "agent/notes/alice.md", "content": "Prefers short answers."}),
            # hostile: none of these may write anything
            ("memory_write", {"path": "user/x/../../bob/profile.md", "content": "pwned"}),
            ("memory_write", {"path": "user/profile.md", "content": "x", "user_id": "bob"}),
            ("memory_write", {"path": "users/bob/profile.md", "content": "pwned"}),
            ("memory_write", {"path": "/etc/passwd", "content": "pwned"}),
            ("memory_write", {"path": "user/huge.md", "content": "x" * 50_000}),
        ),
        tool_calls(  # malformed, or not applicable to the file as it is
            ("memory_patch", {"path": "user/profile.md", "old_text": "Python", "new_text": "C"}),
            ("memory_patch", {"path": "user/profile.md", "append": "a", "old_text": "b"}),
            ("shell", {"command": "rm -rf /"}),
            ("memory_write", "{not json"),
            ("memory_write", "[1, 2]"),
        ),
    )
    result = await agentic.memorize(
        with_llm, A, U, "I moved to Lisbon and switched from Rust to Go."
    )
    assert result.mode == "llm" and result.llm_error is None
    assert [(c.tool, c.path) for c in result.applied] == [
        ("memory_patch", "user/profile.md"),
        ("memory_patch", "user/profile.md"),
        ("memory_write", "agent/notes/alice.md"),
    ]
    reasons = [r.reason for r in result.refused]
    assert len(reasons) == 5
    assert reasons[0] == "path: must not contain . or .. segments"
    assert "user_id" in reasons[1] and "extra" in reasons[1].lower()
    assert reasons[2] == "path: must start with user/ or agent/"
    assert reasons[3] == "path: must be relative (no leading /)"
    assert "content" in reasons[4] and str(MEMORIZE_PROPOSAL_MAX_CHARS) in reasons[4]
    assert (
        result.refused[4].arguments
        == json.dumps({"path": "user/huge.md", "content": "x" * 50_000})[:500]
    )
    second = await agentic.memorize(with_llm, A, U, "Nothing durable here.")
    assert second.applied == []
    reasons = [r.reason for r in second.refused]
    assert "old_text: was not found" in reasons[0]
    assert "either append" in reasons[1]
    assert reasons[2].startswith("unknown tool 'shell'")
    assert reasons[3:] == ["arguments are not JSON", "arguments are not a JSON object"]
    profile = await with_llm.read_file(A, U, "user/profile.md")
    assert (
        "writes Go at Acme" in profile.content and "## Home\n\n- lives in Lisbon" in profile.content
    )
    files, _ = await with_llm.list_files(A, U)
    assert [f.path for f in files] == ["agent/notes/alice.md", "user/profile.md"]
    bob = await with_llm.read_file(A, "bob", "user/profile.md")
    assert (bob.content, bob.revision) == ("# Bob\n", 1)
    revisions = await with_llm.list_revisions(A, U, "user/profile.md")
    assert [(r.revision, r.actor) for r in revisions] == [
        (3, "memorize-agent"),
        (2, "memorize-agent"),
        (1, "open"),
    ]
    assert revisions[0].details["on_behalf_of"] == "open"
    # what the model was given: the two tools, the file names, the relevant memory, the text
    body = llm.requests[0]["body"]
    assert [t["function"]["name"] for t in body["tools"]] == [
        "memory_fact",
        "memory_write",
        "memory_patch",
    ]
    prompt = body["messages"][1]["content"]
    assert "- user/profile.md (" in prompt and "### user/profile.md" in prompt
    assert prompt.endswith("I moved to Lisbon and switched from Rust to Go.")
    assert all(t["function"]["parameters"]["additionalProperties"] is False for t in body["tools"])
    assert result.decisions == []


async def test_memorize_refuses_the_rest_of_too_many_proposals(
    with_llm: AsyncMemex, llm: ScriptedLLM
) -> None:
    calls = [
        ("memory_patch", {"path": "user/facts.md", "append": f"- fact {i}"})
        for i in range(MEMORIZE_MAX_PROPOSALS + 3)
    ]
    llm.script(tool_calls(*calls))
    result = await agentic.memorize(with_llm, A, U, "many facts")
    assert (len(result.applied), len(result.refused)) == (MEMORIZE_MAX_PROPOSALS, 3)
    facts = await with_llm.read_file(A, U, "user/facts.md")
    assert facts.line_count == MEMORIZE_MAX_PROPOSALS


async def test_memorize_falls_back_when_the_llm_fails(
    with_llm: AsyncMemex, llm: ScriptedLLM, dsn: str, batching_embedder: BatchingEmbedder
) -> None:
    llm.script(500, {"content": None, "tool_calls": "not a list"})
    failed = await agentic.memorize(with_llm, A, U, "Remember the dentist on Friday.", now=NOW)
    assert failed.mode == "fallback" and failed.llm_error and "HTTP 500" in failed.llm_error
    malformed = await agentic.memorize(with_llm, A, U, "And the car service.", now=NOW)
    assert malformed.mode == "fallback" and "not a chat completion" in str(malformed.llm_error)
    unreachable = ChatModel(f"http://127.0.0.1:{free_port()}/v1", "none", timeout=5)
    async with await AsyncMemex.connect(dsn, embedder=batching_embedder, llm=unreachable) as c:
        down = await agentic.memorize(c, A, U, "And the plumber.", now=NOW)
    assert down.mode == "fallback" and "ConnectError" in str(down.llm_error)
    kept = (await with_llm.list_memories(A, U, memory_type="episodic")).memories
    assert sorted(m.content for m in kept) == [
        "And the car service.",
        "And the plumber.",
        "Remember the dentist on Friday.",
    ]


async def test_memorize_needs_write_access_before_any_model_call(
    with_llm: AsyncMemex, llm: ScriptedLLM
) -> None:
    operator = with_llm.as_operator("test")
    reader = await operator.create_key("read", agent_id=A)
    with pytest.raises(Forbidden):
        await agentic.memorize(with_llm.with_key(reader.token), A, U, "I like tea.")
    assert llm.requests == []


async def test_search_passages_pick_the_matching_paragraph(amemex: AsyncMemex) -> None:
    await amemex.write_file(A, U, "user/profile.md", PROFILE)
    memory = await amemex.store(A, U, "Alice's manager at Acme is Dana.")
    rows = await amemex.passages(A, U, "where does Alice work, in which language?", top_k=2)
    by_path = {r.path: r for r in rows}
    profile = by_path["user/profile.md"]
    assert (profile.from_line, profile.to_line) == (9, 9)
    assert profile.passage == "## Work\n- writes Rust at Acme"
    assert by_path[None].memory_id == memory.id
    assert by_path[None].passage == memory.content and by_path[None].from_line is None
    assert sorted(r.rank for r in rows) == [1, 2]
    long = "\n".join(["Acme history."] * 200)
    await amemex.write_file(A, U, "user/acme.md", long)
    cut = await amemex.passages(A, U, "Acme history", top_k=1, passage_chars=100)
    assert cut[0].truncated and len(cut[0].passage) == 100 and cut[0].passage.endswith("…")
    log = await amemex.access_log(A, U)
    assert log[0].operation == "search"


async def test_search_answers_with_citations(with_llm: AsyncMemex, llm: ScriptedLLM) -> None:
    await with_llm.write_file(A, U, "user/profile.md", PROFILE)
    plain = await agentic.search_passages(with_llm, A, U, "what does Alice write?")
    assert plain.llm == "not_asked" and plain.answer is None and plain.passages
    llm.script(answer("She writes Rust [1], per her profile [1][7]."))
    answered = await agentic.search_passages(with_llm, A, U, "what does Alice write?", answer=True)
    assert answered.llm == "answered" and answered.cited == [1]  # [7] is no passage
    assert answered.answer is not None and answered.answer.startswith("She writes Rust")
    prompt = llm.requests[-1]["body"]["messages"][1]["content"]
    assert "[1] (user/profile.md)\n## Work\n- writes Rust at Acme" in prompt
    assert prompt.endswith("Question: what does Alice write?")
    llm.script(503)
    failed = await agentic.search_passages(with_llm, A, U, "what does Alice write?", answer=True)
    assert failed.llm == "failed" and "HTTP 503" in str(failed.llm_error)
    # the same passages (scores move with recency as time passes)
    assert [p.passage for p in failed.passages] == [p.passage for p in answered.passages]


async def test_search_without_an_llm_says_so(amemex: AsyncMemex) -> None:
    result = await agentic.search_passages(amemex, A, U, "anything", answer=True)
    assert (result.llm, result.answer, result.passages) == ("not_configured", None, [])


async def test_mcp_memorize_and_search(
    pg_server: EmbeddedPostgres, template_db: str, tmp_path: Path, llm: ScriptedLLM
) -> None:
    dsn = new_database(pg_server)
    try:
        with serve(tmp_path, dsn=dsn, MEMEX_LLM_URL=llm.url, MEMEX_LLM_MODEL="scripted") as s:
            async with connected(http_client_of(f"{s.base_url}/mcp")) as c:
                names = {t.name for t in (await c.list_tools()).tools}
                assert {"memory_memorize", "memory_search"} <= names
                llm.script(
                    tool_calls(
                        (
                            "memory_patch",
                            {"path": "user/profile.md", "heading": "## Pets", "append": "- a cat"},
                        ),
                        ("memory_write", {"path": "user/x/../../escape.md", "content": "no"}),
                    )
                )
                who = {"agent_id": A, "user_id": U}
                done = await call(c, "memory_memorize", **who, text="We adopted a cat, Miso.")
                assert done["mode"] == "llm"
                assert [a["path"] for a in done["applied"]] == ["user/profile.md"]
                assert "path" in done["refused"][0]["reason"]
                revisions = await call(c, "memory_revisions", **who, path="user/profile.md")
                assert revisions["revisions"][0]["actor"] == "memorize-agent"
                llm.script(answer("A cat [1]."))
                found = await call(c, "memory_search", **who, query="pets?", answer=True)
                assert found["llm"] == "answered" and found["cited"] == [1]
                assert found["passages"][0]["path"] == "user/profile.md"
                assert json.loads(json.dumps(found))["answer"] == "A cat [1]."
                err = await call_error(c, "memory_memorize", **who, text="   ")
                assert "text" in err
                err = await call_error(c, "memory_search", **who, query="q", top_k=0)
                assert "top_k" in err
    finally:
        drop_database(pg_server, dsn)


def test_the_client_does_not_import_the_llm_layer() -> None:
    """memexdb.agentic orchestrates AsyncMemex's calls, one layer above it: the client and
    the session do not import it (they used to, in a circle hidden by TYPE_CHECKING)."""
    code = (
        "import sys, memexdb.client, memexdb.session;"
        "print(sorted(m for m in sys.modules if m.startswith('memexdb.agentic')))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
    for module in ("client.py", "session.py"):
        source = (Path(memexdb.__file__).parent / module).read_text()
        assert not re.search(r"^\s*(from|import) memexdb[.\w]* ?.*\bagentic\b", source, re.M)


def test_the_python_functions_take_their_request_fields() -> None:
    """agentic.memorize and agentic.search_passages take what their operation's request
    model has (memorize also `now`), so the Python API and REST/MCP cannot drift."""
    for function, operation, extra in (
        (agentic.memorize, agentic.MEMORIZE, {"now"}),
        (agentic.search_passages, agentic.SEARCH_PASSAGES, set()),
    ):
        parameters = list(inspect.signature(function).parameters)[1:]  # after the client
        assert set(parameters) == set(operation.request.model_fields) | extra
