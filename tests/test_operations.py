"""The operation table (memexdb.operation_table) against every surface built from it or
written beside it: the Python methods, the SQL functions, the REST app, the MCP tools."""

from __future__ import annotations

import inspect
import re
from typing import Any

import psycopg
import pytest
from pydantic import BaseModel

from memexdb import agentic
from memexdb.client import AsyncMemex, Memex
from memexdb.mcp.server import build_mcp_server
from memexdb.operation import Operation
from memexdb.operation_table import OPERATIONS
from memexdb.rest.app import ENDPOINTS
from tests.slices import STATEMENT_REFERENCE, STATEMENTS

IDS = [op.name for op in OPERATIONS]

# The Python function of an operation that is no AsyncMemex method: the LLM layer sits
# above the client (memexdb.agentic); run_now is `memex.call(agentic.RUN_NOW, ...)`.
ELSEWHERE: dict[str, Any] = {
    "memorize": agentic.memorize,
    "search_passages": agentic.search_passages,
    "run_now": None,
    # AsyncMemex.dream_config (any caller; dream_config is the admin endpoint's)
    "read_dream_config": None,
    # the console overview's (memexdb.console.overview.overview_figures runs it)
    "overview_stats": None,
    # an export's and an import's pages and batches (memexdb.moving runs them)
    "export_history": None,
    "missing_memory_ids": None,
    "import_history": None,
    "import_memory_batch": None,
    # memorize's rules for a file proposal (memexdb.agentic.memorizing runs it)
    "check_memorize_file": None,
}
# Python parameters that are not request fields, and why
PYTHON_ONLY = {
    ("update", "clear_expires_at"),  # None means "unchanged" in Python; this clears expires_at
    ("update", "clear_valid_to"),  # likewise: this reopens valid_to
    ("store_many", "items"),  # the batch's memories, already validated NewMemory items
    ("embed_texts", "texts"),  # OpenAI's `input`, named for Python
    ("memorize", "memex"),  # the client the layer above calls
    ("memorize", "now"),  # the fallback's date (tests and imports of old conversations)
    ("search_passages", "memex"),
}
# request fields the Python method does not take, and why
NOT_IN_PYTHON = {
    ("store_many", "memories"),  # taken as `items`
    ("search", "memory_type"),  # memex's single-type filter: Python takes memory_types
    ("embed_texts", "input"),  # taken as `texts`
    # OpenAI's wire options: Python gets the vectors themselves; `user` is for logs
    ("embed_texts", "encoding_format"),
    ("embed_texts", "user"),
    # OpenAI's option: only the model's own size is accepted, which Python always gets
    ("embed_texts", "dimensions"),
    # memory_search's LLM answer: one layer above the client (memexdb.agentic)
    ("passages", "answer"),
}


def _fields(model: type[BaseModel]) -> dict[str, Any]:
    return dict(model.model_fields)


@pytest.mark.parametrize("op", OPERATIONS, ids=IDS)
def test_the_python_methods_take_the_request_fields(op: Operation[Any, Any]) -> None:
    if op.name in ELSEWHERE:
        method = ELSEWHERE[op.name]
        if method is None:
            return
    else:
        method = getattr(AsyncMemex, op.name)
        assert getattr(Memex, op.name).__doc__ == method.__doc__
    parameters = dict(inspect.signature(method).parameters)
    parameters.pop("self", None)
    fields = _fields(op.request)
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values()):
        return  # **changes: every field, by name (set_dream_config)
    for name, parameter in parameters.items():
        if (op.name, name) in PYTHON_ONLY:
            continue
        assert name in fields, f"{op.name}({name}) is not a field of {op.request.__name__}"
        info = fields[name]
        if parameter.default is inspect.Parameter.empty:
            continue
        default = None if info.is_required() else info.get_default(call_default_factory=True)
        assert parameter.default == default or (parameter.default is None and info.is_required()), (
            op.name,
            name,
            parameter.default,
            default,
        )
    for name, info in fields.items():
        if (op.name, name) in NOT_IN_PYTHON:
            continue
        assert name in parameters, f"{op.name} has no parameter {name}"
        if info.is_required():
            assert parameters[name].default is inspect.Parameter.empty, (op.name, name)


@pytest.mark.parametrize("op", OPERATIONS, ids=IDS)
def test_the_declared_fields_exist(op: Operation[Any, Any]) -> None:
    fields = _fields(op.request)
    if op.embeds is not None and not op.embeds.startswith("("):  # "(...)": derived text
        assert op.embeds.split("[")[0] in fields
    if op.pages is not None:
        assert op.pages.cursor in fields
        assert op.response is not None and op.pages.next in _fields(op.response)
    if op.tool is not None:
        assert set(op.tool.renames.values()) <= set(fields)


@pytest.mark.parametrize("op", OPERATIONS, ids=IDS)
def test_the_sql_functions_are_the_ones_called_with_the_declared_access(
    conn: psycopg.Connection, op: Operation[Any, Any]
) -> None:
    statements = list(STATEMENTS.values())
    # the statements of the operation's module (the agentic layer calls the client instead)
    own = re.findall(STATEMENT_REFERENCE, inspect.getsource(inspect.getmodule(op.run)))
    for function in op.sql:
        assert any(function + "(" in text for text in statements), f"nothing calls {function}"
        if own:
            assert any(function + "(" in STATEMENTS[name] for name in own), function
        schema, name = function.split(".")
        row = conn.execute(
            "select bool_or(has_function_privilege('memex_app', p.oid, 'EXECUTE')),"
            " bool_or(has_function_privilege('memex_tenant', p.oid, 'EXECUTE'))"
            " from pg_proc p join pg_namespace n on n.oid = p.pronamespace"
            " where n.nspname = %s and p.proname = %s",
            (schema, name),
        ).fetchone()
        assert row is not None and row[0] is not None, f"no function {function}"
        service, tenant = row
        assert service, f"the service (memex_app) may not call {function}"
        if op.access == "operator":  # nothing a tenant role may call on its own
            assert not tenant, function


def test_the_rest_app_serves_each_routed_operation_once() -> None:
    served = {(e.method, e.path): e for e in ENDPOINTS}
    assert len(served) == len(ENDPOINTS)
    for op in OPERATIONS:
        if op.rest is None:
            continue
        endpoint = served[(op.rest.method, op.rest.path)]
        assert endpoint.summary == op.summary
        assert endpoint.ok.status == op.rest.status


async def test_the_mcp_server_lists_each_tool_of_the_table() -> None:
    server = build_mcp_server(lambda: pytest.fail("no call is made"))
    listed = {tool.name for tool in await server.list_tools()}
    declared = {op.tool.name for op in OPERATIONS if op.tool is not None}
    assert declared <= listed
    assert declared == set(server.operation_tools)
