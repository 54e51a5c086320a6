"""Write memexdb_client/_routes.py from the operation table (memexdb.operation_table): the
HTTP mapping of every REST operation, so that the client cannot drift from the server.

    .venv/bin/python clients/python/tools/generate_routes.py

tests/test_python_client.py regenerates it and fails on a difference.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

TARGET = Path(__file__).resolve().parents[1] / "memexdb_client" / "_routes.py"

HEADER = '''"""The HTTP mapping of every REST operation of memexdb. Generated from the operation
table (memexdb.operation_table) by clients/python/tools/generate_routes.py: do not edit."""

from __future__ import annotations

from typing import Literal, NamedTuple


class HttpRoute(NamedTuple):
    """`path` with {name} placeholders for `path_params`; the other arguments go in the
    JSON body or the query string (`source`); `paging`: the request field that takes the
    next page's key and the response field that gives it."""

    method: str
    path: str
    source: Literal["body", "query", "path"]
    status: int
    no_body: bool
    path_params: tuple[str, ...]
    paging: tuple[str, str] | None
    access: Literal["read", "write", "admin", "operator"]


ROUTES: dict[str, HttpRoute] = {
'''


def _py(value: object) -> str:
    """A Python literal as ruff format writes it (double quotes)."""
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, tuple):
        inner = ", ".join(_py(v) for v in value)
        return f"({inner},)" if len(value) == 1 else f"({inner})"
    return repr(value)


def render() -> str:
    from memexdb.operation_table import OPERATIONS

    lines = [HEADER]
    for op in OPERATIONS:
        route = op.rest
        if route is None:
            continue
        path = re.sub(r"\{(\w+):\w+\}", r"{\1}", route.path)
        params = tuple(re.findall(r"\{(\w+)\}", path))
        paging = (op.pages.cursor, op.pages.next) if op.pages else None
        values = (
            route.method,
            path,
            route.source,
            route.status,
            route.no_body,
            params,
            paging,
            op.access,
        )
        lines.append(f"    {_py(op.name)}: HttpRoute(\n")
        lines.extend(f"        {_py(value)},\n" for value in values)
        lines.append("    ),\n")
    lines.append("}\n")
    return "".join(lines)


def main() -> None:
    TARGET.write_text(render())
    print(f"wrote {TARGET}", file=sys.stderr)


if __name__ == "__main__":
    main()
