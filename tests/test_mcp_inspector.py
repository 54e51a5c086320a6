"""The npm MCP Inspector CLI (`@modelcontextprotocol/inspector --cli`, Node 22) against
`memexdb serve` over streamable HTTP and SSE, and against `memexdb mcp` over stdio:
tools/list and tools/call, reading its JSON output (a tool error is `isError: true` in
the JSON, whatever the exit code)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from memexdb.embedded import EmbeddedPostgres
from tests.conftest import drop_database, new_database
from tests.live_service import Service, cli_args
from tests.test_mcp_support import MEMORIES, QUERY, TOOLS, NodeTools, node_tools, serve

pytestmark = pytest.mark.e2e  # docs/development.md, 'Test tiers'


@pytest.fixture(scope="module")
def tools() -> NodeTools:
    return node_tools()


@pytest.fixture(scope="module")
def database(pg_server: EmbeddedPostgres, template_db: str) -> Iterator[str]:
    dsn = new_database(pg_server)
    yield dsn
    drop_database(pg_server, dsn)


@pytest.fixture(scope="module")
def service(database: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Service]:
    with serve(tmp_path_factory.mktemp("inspector"), dsn=database) as running:
        yield running


def targets(service: Service, database: str) -> dict[str, list[str]]:
    return {
        "streamable-http": [f"{service.base_url}/mcp"],
        "sse": [f"{service.base_url}/sse"],
        "stdio": [*cli_args("mcp"), "-e", f"MEMEX_DATABASE_URL={database}"],
    }


def list_tools(tools: NodeTools, target: list[str]) -> list[dict[str, Any]]:
    listed: list[dict[str, Any]] = tools.inspector(*target, "--method", "tools/list")["result"][
        "tools"
    ]
    return listed


def call_tool(tools: NodeTools, target: list[str], name: str, **arguments: Any) -> dict[str, Any]:
    result: dict[str, Any] = tools.inspector(
        *target,
        "--method",
        "tools/call",
        "--tool-name",
        name,
        "--tool-args-json",
        json.dumps(arguments),
    )["result"]
    return result


@pytest.mark.parametrize("transport", ["streamable-http", "sse", "stdio"])
def test_inspector_lists_and_calls_tools(
    tools: NodeTools, service: Service, database: str, transport: str
) -> None:
    target = targets(service, database)[transport]
    who = {"agent_id": f"inspector-{transport}", "user_id": "alice"}

    listed = {t["name"]: t for t in list_tools(tools, target)}
    assert set(listed) == TOOLS
    top_k = listed["search_memories"]["inputSchema"]["properties"]["top_k"]
    assert (top_k["minimum"], top_k["maximum"]) == (1, 100)
    assert all(t["description"] and "outputSchema" in t for t in listed.values())

    ids = []
    for content, kind, importance in MEMORIES:
        stored = call_tool(
            tools,
            target,
            "store_memory",
            **who,
            content=content,
            memory_type=kind,
            importance=importance,
        )
        assert stored["isError"] is False, stored
        ids.append(stored["structuredContent"]["id"])

    found = call_tool(tools, target, "search_memories", **who, query=QUERY, top_k=2)
    assert found["isError"] is False
    best = found["structuredContent"]["results"][0]
    assert (best["id"], best["content"]) == (ids[0], MEMORIES[0][0])
    assert {"score", "relevance", "recency", "similarity"} <= best.keys()

    bad = call_tool(tools, target, "search_memories", **who, query=QUERY, top_k=1000)
    assert bad["isError"] is True
    assert "top_k: Input should be less than or equal to 100" in bad["content"][0]["text"]
    if transport == "stdio":
        return  # each Inspector call starts `memexdb mcp` anew: the rest is the same code

    counted = call_tool(tools, target, "count_memories", **who)
    assert counted["structuredContent"]["count"] == 3
    assert call_tool(tools, target, "delete_memory", **who, id=ids[2])["isError"] is False
    gone = call_tool(tools, target, "delete_memory", **who, id=ids[2])
    assert gone["isError"] is True
    assert "memory not found" in gone["content"][0]["text"]
    assert call_tool(tools, target, "count_memories", **who)["structuredContent"]["count"] == 2


def test_inspector_finds_the_tool_schemas_portable(tools: NodeTools, service: Service) -> None:
    """`--strict` reports tool-schema portability problems (and exits 6 on errors)."""
    res = tools.run(
        [
            str(tools.bin_dir / "inspector"),
            "--cli",
            f"{service.base_url}/mcp",
            "--method",
            "tools/list",
            "--strict",
        ]
    )
    assert res.returncode == 0, res.stderr[-3000:]
    assert "portability" not in res.stderr.lower(), res.stderr[-3000:]
