"""The agentic tools in the TypeScript direct client (issue 38, item 3): memorize and memory
search in Node, against the scripted OpenAI-compatible chat server the Python tests use
(tests/scripted_llm.py), as SQL roles bound to a tenant.

- clients/typescript/test/agentic.test.mjs (node --test): one test per decision (add,
  supersede, retire, none), hostile and malformed proposals, file proposals, the fallback,
  memory search with and without an answer; it scripts the chat server through its
  /control/ endpoints;
- here: a Node memorize leaves the same records as a Python memorize for the same script
  (memories, their revisions, the access log, file revisions, and the chat request
  itself), ids and the caller's name aside;
- the prompts and tool schemas the TypeScript client sends are generated from the Python
  package (clients/typescript/scripts/generate_agentic.py) and current."""

from __future__ import annotations

import contextlib
import json
import re
import shutil
import sys
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from uuid import UUID

import psycopg
import pytest
from psycopg.rows import dict_row

from memexdb import AsyncMemex, agentic
from memexdb.embedding import Embedder
from memexdb.llm import ChatModel
from tests.live_service import Service, required
from tests.scripted_llm import ScriptedLLM, scripted_llm, tool_calls
from tests.sqlapi import bound_login_role
from tests.test_typescript_client import (  # noqa: F401 (fixtures)
    PACKAGE,
    built,
    database,
    libpq_url,
    npm,
    npm_env,
    run,
    service,
)

AGENT = "agentic"
GENERATOR = PACKAGE / "scripts" / "generate_agentic.py"


def test_generated_prompts_are_current(tmp_path: Path) -> None:
    """src/generated/agentic.ts is what the generator writes from memexdb.agentic."""
    sys.path.insert(0, str(GENERATOR.parent))
    try:
        import generate_agentic
    finally:
        sys.path.remove(str(GENERATOR.parent))
    committed = PACKAGE / "src" / "generated" / "agentic.ts"
    assert committed.read_text() == generate_agentic.render(), (
        f"{committed} is stale: run `npm run generate` in clients/typescript"
    )
    from memexdb.agentic.memorizing import MEMORIZE_SYSTEM, memorize_tools

    assert json.dumps(MEMORIZE_SYSTEM) in committed.read_text()
    assert json.dumps(memorize_tools(), indent=2) in committed.read_text()


@pytest.fixture(scope="module")
def chat() -> Iterator[ScriptedLLM]:
    with scripted_llm() as server:
        yield server


@pytest.fixture(scope="module")
def roles(database: str) -> Iterator[dict[str, str]]:  # noqa: F811
    """Login roles bound to tenants of AGENT (a user per test of the suite), to bob's, and
    one with read access only; as URLs the suite reads from the environment."""
    users = ["add", "supersede", "retire", "none", "hostile", "cap", "files", "fallback"]
    users += ["passages", "node"]
    with contextlib.ExitStack() as stack:
        mine = stack.enter_context(bound_login_role(database, AGENT, users))
        bob = stack.enter_context(bound_login_role(database, AGENT, ["bob"]))
        reader = stack.enter_context(bound_login_role(database, AGENT, ["reader"], "read"))
        yield {
            "MEMEX_AGENTIC_URL": libpq_url(mine),
            "MEMEX_AGENTIC_OTHER_URL": libpq_url(bob),
            "MEMEX_AGENTIC_READER_URL": libpq_url(reader),
        }


def test_node_agentic_suite(
    built: Path,  # noqa: F811
    service: tuple[Service, str],  # noqa: F811
    roles: dict[str, str],
    chat: ScriptedLLM,
) -> None:
    running, token = service
    env = npm_env(MEMEX_URL=running.base_url, MEMEX_API_KEY=token, MEMEX_LLM_URL=chat.url, **roles)
    node = required(shutil.which("node"), "node is not installed")
    output = run([node, "--test", "test/agentic.test.mjs"], PACKAGE, env)
    assert re.search(r"^# pass 10$", output, flags=re.M), output[-8000:]
    assert re.search(r"^# fail 0$", output, flags=re.M), output[-8000:]
    assert re.search(r"^# skipped 0$", output, flags=re.M), output[-8000:]


# --- the same records from Node and from Python ---

NOW = datetime(2026, 12, 1, 9, 30, tzinfo=UTC)
SETUP = {
    "Alice lives in Paris, in a flat near the Canal Saint-Martin.": 30,
    "Alice has a membership at the FitX gym on Main Street.": 30,
    "Alice drinks green tea without sugar.": 5,
}
TEXT = (
    "Big news: Alice moved to Berlin and cancelled her gym. She still drinks green tea"
    " without sugar. She started learning Portuguese."
)
NODE_MEMORIZE = """\
import {{ MemexDirectClient }} from {module};
const env = process.env;
const client = new MemexDirectClient({{
  connectionString: env.MEMEX_AGENTIC_URL,
  llm: {{ url: env.MEMEX_LLM_URL, model: "scripted", timeoutMs: 10000 }},
  embeddings: {{ url: `${{env.MEMEX_URL}}/v1/embeddings`, apiKey: env.MEMEX_API_KEY }},
}});
const request = {{ agent_id: env.AGENT, user_id: "node", text: env.TEXT }};
const result = await client.memorize(request, {{ now: new Date(env.NOW) }});
console.log(JSON.stringify(result));
await client.close();
"""
_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def script_for(ids: dict[str, UUID], other: UUID) -> dict[str, Any]:
    """One script, written with a tenant's own ids (`other`: the other tenant's)."""
    paris, gym, tea = (str(ids[c]) for c in SETUP)
    return tool_calls(
        (
            "memory_fact",
            {"action": "add", "fact": "Alice is learning Portuguese.", "reason": "new"},
        ),
        ("memory_fact", {"action": "supersede", "fact": "Alice lives in Berlin.", "ids": [paris]}),
        ("memory_fact", {"action": "retire", "ids": [gym], "reason": "cancelled"}),
        ("memory_fact", {"action": "none", "ids": [tea], "reason": "known"}),
        ("memory_fact", {"action": "retire", "ids": [str(other)], "reason": "hostile"}),
        ("memory_patch", {"path": "user/profile.md", "heading": "## Home", "append": "- Berlin"}),
        ("memory_write", {"path": "agent/notes/alice.md", "content": "Moved in December."}),
        ("memory_write", {"path": "../bob.md", "content": "pwned"}),
    )


async def records(dsn: str, user_id: str) -> dict[str, Any]:
    """What memory holds for the tenant, normalized: ids as what they name, times that
    are now() as <time>, the caller that memorize acted for as <caller>."""
    async with await psycopg.AsyncConnection.connect(dsn, row_factory=dict_row) as conn:
        tenant = {"a": AGENT, "u": user_id}
        memories = await (
            await conn.execute(
                "select id, path, content, memory_type, importance, metadata, embedding_model,"
                " created_at, supersedes, superseded_by, superseded_at, valid_from, valid_to,"
                " archived_at, expires_at from memex.memories"
                " where agent_id = %(a)s and user_id = %(u)s order by content",
                tenant,
            )
        ).fetchall()
        revisions = await (
            await conn.execute(
                "select r.*, m.content as of from memex.memory_revisions r"
                " join memex.memories m on m.id = r.memory_id"
                " where r.agent_id = %(a)s and r.user_id = %(u)s order by m.content, r.revision",
                tenant,
            )
        ).fetchall()
        files = await (
            await conn.execute(
                "select * from memex.file_revisions where agent_id = %(a)s and user_id = %(u)s"
                " order by path, revision",
                tenant,
            )
        ).fetchall()
        log = await (
            await conn.execute(
                "select actor, operation, target, details from memex.access_log"
                " where agent_id = %(a)s and user_id = %(u)s order by id",
                tenant,
            )
        ).fetchall()
    labels = {m["id"]: f"<{m['path'] or m['content'][:30]}>" for m in memories}
    fixed = {NOW} | {NOW - timedelta(days=d) for d in SETUP.values()}

    def normal(value: Any, key: str = "") -> Any:
        if key in ("id", "at", "agent_id", "user_id", "updated_at", "history_id"):
            return "-"
        if key == "on_behalf_of":
            return "<caller>"
        if isinstance(value, UUID):
            return labels.get(value, "<other uuid>")
        if isinstance(value, datetime):
            return value.isoformat() if value in fixed else "<time>"
        if isinstance(value, str):
            return _UUID.sub(lambda m: labels.get(UUID(m.group()), "<other uuid>"), value)
        if isinstance(value, dict):
            return {k: normal(v, k) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [normal(v) for v in value]
        return value

    return normal({"memories": memories, "revisions": revisions, "files": files, "log": log})


async def test_node_memorize_leaves_the_same_records_as_python(
    built: Path,  # noqa: F811
    service: tuple[Service, str],  # noqa: F811
    database: str,  # noqa: F811
    roles: dict[str, str],
    chat: ScriptedLLM,
    embedder: Embedder,
    tmp_path: Path,
) -> None:
    running, token = service
    llm = ChatModel(chat.url, "scripted", timeout=10)
    memex = await AsyncMemex.connect(database, embedder=embedder, key=token, llm=llm)
    try:
        ids: dict[str, dict[str, UUID]] = {}
        for user in ("python", "node"):
            ids[user] = {}
            for content, days in SETUP.items():
                memory = await memex.store(
                    AGENT,
                    user,
                    content,
                    memory_type="semantic",
                    created_at=NOW - timedelta(days=days),
                )
                ids[user][content] = memory.id
            await memex.write_file(AGENT, user, "user/profile.md", "# Profile\n\n- writes Go\n")
        chat.requests.clear()
        chat.script(script_for(ids["python"], ids["node"][next(iter(SETUP))]))
        in_python = await agentic.memorize(memex, AGENT, "python", TEXT, now=NOW)

        chat.script(script_for(ids["node"], ids["python"][next(iter(SETUP))]))
        program = tmp_path / "memorize.mjs"
        module = json.dumps((PACKAGE / "dist" / "direct" / "index.js").as_uri())
        program.write_text(NODE_MEMORIZE.format(module=module))
        env = npm_env(
            MEMEX_URL=running.base_url,
            MEMEX_API_KEY=token,
            MEMEX_LLM_URL=chat.url,
            AGENT=AGENT,
            TEXT=TEXT,
            NOW=NOW.isoformat(),
            **roles,
        )
        node = required(shutil.which("node"), "node is not installed")
        in_node = json.loads(run([node, str(program)], PACKAGE, env).strip().splitlines()[-1])
    finally:
        await memex.aclose()
        await llm.aclose()

    python_records = await records(database, "python")
    node_records = await records(database, "node")
    # the results: the same decisions, changes and refusals (the ids of each tenant)
    result = in_python.model_dump(mode="json")
    assert [d["action"] for d in result["decisions"]] == ["add", "supersede", "retire", "none"]
    assert len(result["refused"]) == 2 and len(result["applied"]) == 2

    def labelled(out: dict[str, Any], tenant: dict[str, UUID], created: list[str]) -> Any:
        names = {str(v): k[:30] for k, v in tenant.items()} | {c: "<new>" for c in created}
        text = json.dumps(out, sort_keys=True)
        return json.loads(_UUID.sub(lambda m: names.get(m.group(), "<other>"), text))

    def created(out: dict[str, Any]) -> list[str]:
        return [str(d["memory_id"]) for d in out["decisions"] if d["memory_id"]] + [
            str(c["memory_id"]) for c in out["applied"]
        ]

    assert labelled(in_node, ids["node"], created(in_node)) == labelled(
        result, ids["python"], created(result)
    )
    # the records: memories, revisions, files, access log
    for part in ("memories", "revisions", "files", "log"):
        assert node_records[part] == python_records[part], part
    assert any(e["operation"] == "memorize" for e in node_records["log"])
    # the model was asked the same (each tenant's ids in its own request)
    python_body, node_body = (r["body"] for r in chat.requests)
    swap = {str(ids["node"][c]): str(ids["python"][c]) for c in SETUP}
    node_text = _UUID.sub(lambda m: swap.get(m.group(), m.group()), json.dumps(node_body))
    assert json.loads(node_text) == python_body
