"""The official MCP conformance suite (`@modelcontextprotocol/conformance`, Node 22)
against `memexdb serve`'s /mcp: every server scenario that applies to a server with our
own tools must pass with no failure and no warning; the others are skipped with the
reason docs/mcp.md gives."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from memexdb.embedded import EmbeddedPostgres
from tests.conftest import drop_database, new_database
from tests.live_service import Service
from tests.test_mcp_support import NodeTools, node_tools, serve

pytestmark = pytest.mark.e2e  # docs/development.md, 'Test tiers'

APPLICABLE = [
    "server-initialize",
    "ping",
    "tools-list",
    # Calls `test_error_handling`, which memexdb does not have; the SDK answers an unknown
    # tool with the `isError: true` result the scenario checks. memexdb's own error paths
    # are covered by tests/test_mcp.py.
    "tools-call-error",
    "dns-rebinding-protection",
    # The SDK declares the resources and prompts capabilities (with nothing listed), so
    # the list endpoints must answer correctly.
    "resources-list",
    "prompts-list",
]

_FIXTURE_TOOL = "calls a fixture tool of the suite that a memory server has no use for"
_FIXTURE_DATA = "reads fixture resources or prompts of the suite; memexdb has none"
_STATELESS = (
    "resumes SSE streams of a session (SEP-1699); /mcp is deliberately stateless, so there "
    "is no session to resume"
)
SKIPPED = {
    "logging-set-level": "memexdb sends no log notifications, so it declares no logging "
    "capability and answers logging/setLevel with 'method not found'",
    "completion-complete": "no prompts or resource templates whose arguments could be completed",
    **dict.fromkeys(
        [
            "tools-call-simple-text",
            "tools-call-image",
            "tools-call-audio",
            "tools-call-embedded-resource",
            "tools-call-mixed-content",
            "tools-call-with-logging",
            "tools-call-with-progress",
            "tools-call-sampling",
            "tools-call-elicitation",
            "json-schema-2020-12",
            "elicitation-sep1034-defaults",
            "elicitation-sep1330-enums",
        ],
        _FIXTURE_TOOL,
    ),
    **dict.fromkeys(
        [
            "resources-read-text",
            "resources-read-binary",
            "resources-templates-read",
            "resources-subscribe",
            "resources-unsubscribe",
            "prompts-get-simple",
            "prompts-get-with-args",
            "prompts-get-embedded-resource",
            "prompts-get-with-image",
        ],
        _FIXTURE_DATA,
    ),
    "server-sse-polling": _STATELESS,
    "server-sse-multiple-streams": _STATELESS,
}


@pytest.fixture(scope="module")
def tools() -> NodeTools:
    return node_tools()


@pytest.fixture(scope="module")
def service(
    pg_server: EmbeddedPostgres, template_db: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Service]:
    dsn = new_database(pg_server)
    try:
        with serve(tmp_path_factory.mktemp("conformance"), dsn=dsn) as running:
            yield running
    finally:
        drop_database(pg_server, dsn)


def test_every_server_scenario_is_run_or_skipped_with_a_reason(tools: NodeTools) -> None:
    """A new suite version's new scenarios are noticed, not silently ignored."""
    res = tools.run([str(tools.bin_dir / "conformance"), "list", "--server"])
    assert res.returncode == 0, res.stderr
    listed = set(re.findall(r"^\s+- (\S+)", res.stdout, flags=re.M))
    assert listed == set(APPLICABLE) | set(SKIPPED)
    assert not set(APPLICABLE) & set(SKIPPED)


@pytest.mark.parametrize(
    "scenario",
    [
        *APPLICABLE,
        *(pytest.param(s, marks=pytest.mark.skip(reason=why)) for s, why in SKIPPED.items()),
    ],
)
def test_conformance_scenario(
    tools: NodeTools, service: Service, scenario: str, tmp_path: Path
) -> None:
    res = tools.run(
        [
            str(tools.bin_dir / "conformance"),
            "server",
            "--url",
            f"{service.base_url}/mcp",
            "--scenario",
            scenario,
            "--output-dir",
            str(tmp_path),
        ]
    )
    report = res.stdout[-4000:] + res.stderr[-2000:]
    assert res.returncode == 0, report
    (result,) = tmp_path.glob(f"server-{scenario}-*/checks.json")
    checks = json.loads(result.read_text())
    assert checks, report
    bad = [c for c in checks if c["status"] not in ("SUCCESS", "INFO")]
    assert bad == [], report
    assert any(c["status"] == "SUCCESS" for c in checks), report
