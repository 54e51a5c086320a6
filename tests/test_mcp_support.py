"""Shared by the MCP tests (no tests here): live `memexdb serve` processes, SDK clients
on every transport, and the npm MCP tools (Node 22, the Inspector CLI, the conformance
suite, mcp-remote) installed from `.ci/node/package.json`."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import pytest
from mcp import Client
from mcp.client.sse import sse_client
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp_types import CallToolResult

from tests.live_service import REPO, Service, cli_args, free_port, run_cli, service_env

NODE_DIR = REPO / ".ci" / "node"
NODE_BIN = NODE_DIR / "node_modules" / ".bin"
NPM_INSTALL_TIMEOUT = 600.0
NODE_TOOL_TIMEOUT = 120.0

TOOLS = {
    "store_memory",
    "search_memories",
    "delete_memory",
    "count_memories",
    "get_memory",
    "update_memory",
    "list_memories",
    "memory_history",
    "diff_memory",
    "revert_memory",
    "memory_list",
    "memory_read",
    "memory_write",
    "memory_patch",
    "memory_delete",
    "memory_smart_read",
    "memory_revisions",
    "memory_diff",
    "memory_restore",
    "memory_search",
    "memory_memorize",
}
MEMORIES = [
    ("Alice prefers dark mode in every editor", "semantic", 1.0),
    ("Alice flew to Berlin on Monday for a conference", "episodic", 1.0),
    ("To deploy, run make release and tag the commit", "procedural", 1.5),
]
QUERY = "which theme does Alice like?"


# --- the memexdb service ------------------------------------------------------------


@contextlib.contextmanager
def serve(
    log_dir: Path, *, workers: int = 1, dsn: str | None = None, **env: str
) -> Iterator[Service]:
    """`memexdb serve` on a free port (MEMEX_DATABASE_URL=`dsn`, else the embedded server
    in MEMEX_DATA_DIR from `env`); healthy on entry, gone on exit."""
    port = free_port()
    overrides = dict(env)
    if dsn is not None:
        overrides["MEMEX_DATABASE_URL"] = dsn
    args = cli_args("serve", "--port", str(port), "--workers", str(workers))
    service = Service(args, service_env(**overrides), port, log_dir / f"serve-{port}.log")
    try:
        service.wait_healthy()
        yield service
    finally:
        if service.proc.poll() is None:
            service.stop()
        service.close()


def create_admin_key(dsn: str, name: str) -> str:
    """`memexdb keys create --access admin` on the database `dsn`: the new key."""
    code, out = run_cli(
        ["keys", "create", "--access", "admin", "--name", name],
        service_env(MEMEX_DATABASE_URL=dsn),
    )
    token = re.search(r"mxk_\S+", out)
    assert code == 0 and token, out
    return token.group(0)


# --- SDK clients ----------------------------------------------------------------------


def stdio_params(
    env: dict[str, str], command: Sequence[str] | None = None
) -> StdioServerParameters:
    """`memexdb mcp` (or `command`) as an MCP client starts it: only `env` on top of the
    SDK's minimal inherited environment (PATH, HOME, ...)."""
    args = list(command) if command is not None else cli_args("mcp")
    return StdioServerParameters(command=args[0], args=args[1:], env=env, cwd=str(REPO))


def stdio_client_of(params: StdioServerParameters, errlog: IO[str]) -> Client:
    # The server's stderr goes to a file: pytest's captured sys.stderr has no descriptor.
    return Client(stdio_client(params, errlog=errlog), mode="legacy", read_timeout_seconds=120)


def http_client_of(url: str, mode: str = "legacy") -> Client:
    return Client(url, mode=mode, read_timeout_seconds=120)


def sse_client_of(url: str) -> Client:
    return Client(sse_client(url), mode="legacy", read_timeout_seconds=120)


@contextlib.asynccontextmanager
async def connected(client: Client) -> AsyncIterator[Client]:
    async with client as session:
        yield session


async def call(client: Client, tool: str, **arguments: Any) -> dict[str, Any]:
    """Call a tool that must succeed; its structured result."""
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, f"{tool}({arguments}) failed: {text(result)}"
    assert result.structured_content is not None
    # The text content is the same result as JSON, for clients without structured output.
    assert json.loads(text(result)) == result.structured_content
    return result.structured_content


async def call_error(client: Client, tool: str, **arguments: Any) -> str:
    """Call a tool that must fail with a tool error (not a protocol error); its message."""
    result = await client.call_tool(tool, arguments)
    assert result.is_error, f"{tool}({arguments}) did not fail: {result}"
    return text(result)


def text(result: CallToolResult) -> str:
    assert result.content, result
    block = result.content[0]
    assert block.type == "text"
    return block.text


async def exercise(client: Client, who: dict[str, str]) -> None:
    """The whole tool surface as an agent uses it: list, store, search (the stored memory
    comes back first, with its score parts), count, delete."""
    tools = {t.name: t for t in (await client.list_tools()).tools}
    assert set(tools) == TOOLS
    for tool in tools.values():
        assert tool.description and not tool.description.startswith(" ")
        assert tool.output_schema is not None
        assert {"agent_id", "user_id"} <= set(tool.input_schema["properties"])
    search_args = tools["search_memories"].input_schema["properties"]
    assert (search_args["top_k"]["minimum"], search_args["top_k"]["maximum"]) == (1, 100)
    # alpha, half_life_days and mode are optional (null: the default ranking, docs/ranking.md)
    alpha, mode = search_args["alpha"]["anyOf"], search_args["mode"]["anyOf"]
    assert (alpha[0]["minimum"], alpha[0]["maximum"], alpha[1]) == (0, 1, {"type": "null"})
    assert search_args["half_life_days"]["anyOf"][0]["minimum"] == 0.001
    assert (mode[0]["enum"], mode[1]) == (["vector", "text", "hybrid"], {"type": "null"})
    assert {"memory_types", "context_weight"} <= set(search_args)
    store_args = tools["store_memory"].input_schema["properties"]
    assert store_args["memory_type"]["enum"] == ["episodic", "semantic", "procedural"]
    assert store_args["content"]["maxLength"] == 32768

    stored = []
    for content, kind, importance in MEMORIES:
        memory = await call(
            client,
            "store_memory",
            **who,
            content=content,
            memory_type=kind,
            importance=importance,
            metadata={"source": "test"},
        )
        assert (memory["content"], memory["memory_type"]) == (content, kind)
        assert memory["metadata"] == {"source": "test"}
        stored.append(memory)

    found = await call(client, "search_memories", **who, query=QUERY, top_k=2)
    assert found["total"] == 2 and found["query"] == QUERY
    best = found["results"][0]
    assert best["id"] == stored[0]["id"]
    assert best["content"] == MEMORIES[0][0]
    assert {"score", "relevance", "similarity", "recency", "text_rank"} <= best.keys()
    assert best["score"] >= found["results"][1]["score"]

    only = await call(client, "search_memories", **who, query=QUERY, memory_type="procedural")
    assert [r["memory_type"] for r in only["results"]] == ["procedural"]

    assert (await call(client, "count_memories", **who))["count"] == 3
    assert (await call(client, "count_memories", **who, memory_type="semantic"))["count"] == 1

    # what an agent does to review and correct what it knows: list, get, update
    listed = await call(client, "list_memories", **who, limit=2)
    assert [m["id"] for m in listed["memories"]] == [stored[2]["id"], stored[1]["id"]]
    rest = await call(client, "list_memories", **who, limit=2, cursor=listed["next_cursor"])
    assert [m["id"] for m in rest["memories"]] == [stored[0]["id"]]
    assert rest["next_cursor"] is None
    assert (await call(client, "get_memory", **who, id=stored[0]["id"]))["content"] == (
        MEMORIES[0][0]
    )
    changed = await call(
        client,
        "update_memory",
        **who,
        id=stored[0]["id"],
        content="Alice now prefers a light theme",
        metadata={"source": "corrected"},
    )
    assert (changed["content"], changed["metadata"]) == (
        "Alice now prefers a light theme",
        {"source": "corrected"},
    )
    assert changed["updated_at"] > stored[0]["updated_at"]
    tagged = await call(client, "search_memories", **who, query=QUERY, metadata=changed["metadata"])
    assert [r["id"] for r in tagged["results"]] == [stored[0]["id"]]
    counted = await call(client, "count_memories", **who, metadata=changed["metadata"])
    assert counted["count"] == 1

    deleted = await call(client, "delete_memory", **who, id=stored[1]["id"])
    assert deleted["deleted"]["id"] == stored[1]["id"]
    assert (await call(client, "count_memories", **who))["count"] == 2
    message = await call_error(client, "delete_memory", **who, id=stored[1]["id"])
    assert "memory not found for this agent_id and user_id" in message


async def exercise_errors(client: Client, who: dict[str, str]) -> None:
    """Each bad call is a tool error naming what is wrong, and the server keeps serving."""
    ok = {**who, "query": QUERY}
    cases: list[tuple[str, dict[str, Any], str]] = [
        (
            "search_memories",
            {**ok, "top_k": 1000},
            "top_k: Input should be less than or equal to 100",
        ),
        ("search_memories", {**ok, "top_k": 0}, "top_k"),
        ("search_memories", {**ok, "alpha": 1.5}, "alpha"),
        ("search_memories", {**ok, "half_life_days": 0}, "half_life_days"),
        ("search_memories", {**ok, "memory_type": "dream"}, "memory_type"),
        ("search_memories", {**ok, "query": ""}, "query"),
        ("search_memories", {**who}, "query: Field required"),
        ("store_memory", {**who, "content": "x", "importance": 3}, "importance"),
        ("store_memory", {**who, "content": ""}, "content"),
        ("store_memory", {**who, "content": "x" * 32769}, "content"),
        ("store_memory", {**who, "content": "   "}, "content: must contain a non-whitespace"),
        ("store_memory", {**who, "content": "a\x00b"}, "content: must not contain NUL"),
        ("store_memory", {**who, "content": "x", "metadata": [1, 2]}, "metadata"),
        ("count_memories", {**who, "agent_id": ""}, "agent_id"),
        ("count_memories", {**who, "user_id": "u" * 129}, "user_id"),
        ("delete_memory", {**who, "id": "not-a-uuid"}, "id: Input should be a valid UUID"),
        (
            "delete_memory",
            {**who, "id": "00000000-0000-4000-8000-000000000000"},
            "memory not found for this agent_id and user_id",
        ),
        (
            "update_memory",
            {**who, "id": "00000000-0000-4000-8000-000000000000"},
            "arguments: must change at least one of",
        ),
        (
            "update_memory",
            {**who, "id": "00000000-0000-4000-8000-000000000000", "importance": 1},
            "memory not found for this agent_id and user_id",
        ),
        ("get_memory", {**who, "id": "00000000-0000-4000-8000-000000000000"}, "not found"),
        ("list_memories", {**who, "limit": 1001}, "limit"),
        ("list_memories", {**who, "cursor": "page-2"}, "cursor: is not a cursor"),
        ("forget_everything", {**who}, "Unknown tool: forget_everything"),
    ]
    for tool, arguments, expected in cases:
        message = await call_error(client, tool, **arguments)
        assert expected in message, (tool, arguments, message)
        assert "Traceback" not in message and "pydantic" not in message
    # Still serving.
    assert (await call(client, "count_memories", **who))["count"] >= 0


# --- npm tools -----------------------------------------------------------------------


@dataclass(frozen=True)
class NodeTools:
    """The pinned npm MCP tools, run with Node 22 first on PATH."""

    bin_dir: Path

    def env(self, **extra: str) -> dict[str, str]:
        env = dict(os.environ)
        env["PATH"] = f"{self.bin_dir}{os.pathsep}{env.get('PATH', '')}"
        # The Inspector and mcp-remote keep state under HOME: keep it in the project.
        home = NODE_DIR / ".home"
        home.mkdir(exist_ok=True)
        env["HOME"] = str(home)
        env.update(extra)
        return env

    def run(
        self, args: Sequence[str], timeout: float = NODE_TOOL_TIMEOUT, **env: str
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            list(args),
            cwd=NODE_DIR,
            env=self.env(**env),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )

    def inspector(self, *args: str, timeout: float = NODE_TOOL_TIMEOUT) -> dict[str, Any]:
        """Run `inspector --cli ARGS --format json`; its JSON result. A tool error is
        `isError: true` in the JSON; Inspector 2.x also exits 5 then (1.x exited 0)."""
        # a stdio server on a loaded machine may take longer than the Inspector's 15 s
        # default to answer `initialize` (memexdb mcp imports the embedder first)
        connect_ms = str(int(timeout * 1000 * 3 / 4))
        command = [str(self.bin_dir / "inspector"), "--cli", "--connect-timeout", connect_ms]
        res = self.run([*command, *args, "--format", "json"], timeout)
        assert res.stdout.strip(), f"no output (exit {res.returncode}):\n{res.stderr[-3000:]}"
        document: dict[str, Any] = json.loads(res.stdout)
        is_error = document.get("result", {}).get("isError") is True
        assert res.returncode == (5 if is_error else 0), res.stderr[-3000:]
        return document


def _installed() -> bool:
    names = ("node", "inspector", "conformance", "mcp-remote")
    return all((NODE_BIN / name).exists() for name in names)


def npm_install() -> None:
    """`npm ci` of .ci/node, its cache inside that folder (what .ci/run does)."""
    npm = shutil.which("npm")
    assert npm is not None
    subprocess.run(
        [npm, "ci", "--no-audit", "--no-fund", "--loglevel=error"],
        cwd=NODE_DIR,
        env={**os.environ, "npm_config_cache": str(NODE_DIR / ".npm-cache")},
        check=True,
        timeout=NPM_INSTALL_TIMEOUT,
        stdin=subprocess.DEVNULL,
        capture_output=True,
    )


def node_tools() -> NodeTools:
    """The npm tools; installed on first use when npm exists. Skipped only without npm,
    and never in CI (CI=true), where .ci/run installs them."""
    if not _installed():
        if shutil.which("npm") is None:
            if os.environ.get("CI"):
                pytest.fail("npm is not installed, but CI needs the npm MCP tools")
            pytest.skip("npm is not installed: the npm MCP tools cannot be installed")
        npm_install()
    assert _installed(), f"npm ci in {NODE_DIR} did not install the MCP tools"
    version = subprocess.run(
        [str(NODE_BIN / "node"), "--version"], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert version.startswith("v22."), f"the tools need Node 22 from npm, found {version}"
    return NodeTools(NODE_BIN)


def python() -> str:
    return sys.executable
