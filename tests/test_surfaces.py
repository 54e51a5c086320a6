"""The REST OpenAPI document and the MCP tools/list answer are contracts with clients:
each is compared with its golden copy (tests/golden/openapi.json, mcp_tools.json), so a
change to either is deliberate, reviewed in the diff and explained in CHANGELOG.md.

Regenerate after an intended change: `MEMEX_UPDATE_GOLDEN=1 pytest tests/test_surfaces.py`,
then review `git diff tests/golden/`."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from memexdb.mcp.server import build_mcp_server
from memexdb.rest.app import ENDPOINTS
from memexdb.rest.docs import openapi_document

GOLDEN = Path(__file__).parent / "golden"


def _check(name: str, document: Any) -> None:
    text = json.dumps(document, indent=1, sort_keys=True) + "\n"
    path = GOLDEN / name
    if os.environ.get("MEMEX_UPDATE_GOLDEN"):
        path.write_text(text)
    assert text == path.read_text(), (
        f"{name} changed: if that is intended, regenerate it (MEMEX_UPDATE_GOLDEN=1) and say"
        " what changed for clients in CHANGELOG.md"
    )


def test_the_openapi_document_is_the_golden_one() -> None:
    _check("openapi.json", openapi_document(ENDPOINTS))


async def test_the_mcp_tools_are_the_golden_ones() -> None:
    # the tools are listed without a database: no tool is called
    server = build_mcp_server(lambda: None)  # type: ignore[arg-type,return-value]
    tools = [t.model_dump(mode="json", exclude_none=True) for t in await server.list_tools()]
    _check("mcp_tools.json", tools)
