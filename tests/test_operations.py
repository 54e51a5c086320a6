"""The operation table (memexdb.operation_table) against every surface built from it or
written beside it: the Python methods, the SQL functions, the REST app, the MCP tools."""

from __future__ import annotations

import inspect
import re
from typing import Any

import psycopg
import pytest
from pydantic import BaseModel

from memexdb import queries
from memexdb.client import AsyncMemex, Memex
from memexdb.mcp.server import build_mcp_server
from memexdb.operation import Operation
from memexdb.operation_table import OPERATIONS
from memexdb.rest.app import ENDPOINTS

IDS = [op.name for op in OPERATIONS]

# Python parameters that are not request fields, and why
PYTHON_ONLY = {
    ("update", "clear_expires_at"),  # None means "unchanged" in Python; this clears expires_at
    ("store_many", "items"),  # the batch's memories, already validated NewMemory items
}
# request fields the Python method does not take, and why
NOT_IN_PYTHON = {
    ("store_many", "memories"),  # taken as `items`
    ("search", "memory_type"),  # memex's single-type filter: Python takes memory_types
}


def _fields(model: type[BaseModel]) -> dict[str, Any]:
    return dict(model.model_fields)


@pytest.mark.parametrize("op", OPERATIONS, ids=IDS)
def test_the_python_methods_take_the_request_fields(op: Operation[Any, Any]) -> None:
    method = getattr(AsyncMemex, op.name)
    assert getattr(Memex, op.name).__doc__ == method.__doc__
    parameters = dict(inspect.signature(method).parameters)
    parameters.pop("self")
    fields = _fields(op.request)
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
    if op.embeds is not None:
        assert op.embeds.split("[")[0] in fields
    if op.pages is not None:
        assert op.pages.cursor in fields
        assert op.response is not None and op.pages.next in _fields(op.response)
    if op.tool is not None:
        assert set(op.tool.renames.values()) <= set(fields)


@pytest.mark.parametrize("op", OPERATIONS, ids=IDS)
def test_the_sql_function_is_the_one_called_with_the_declared_access(
    conn: psycopg.Connection, op: Operation[Any, Any]
) -> None:
    # the statements the operation runs name its function
    used = re.findall(r"queries\.([A-Z_]+)", inspect.getsource(op.run))
    assert any(op.sql + "(" in getattr(queries, name) for name in used), (op.name, used)
    schema, name = op.sql.split(".")
    row = conn.execute(
        "select bool_or(has_function_privilege('memex_tenant', p.oid, 'EXECUTE'))"
        " from pg_proc p join pg_namespace n on n.oid = p.pronamespace"
        " where n.nspname = %s and p.proname = %s",
        (schema, name),
    ).fetchone()
    assert row is not None and row[0] is not None, f"no function {op.sql}"
    # tenants' operations are functions a tenant role may call; the operator's are not
    assert row[0] == (op.access != "operator"), (op.sql, op.access)


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
