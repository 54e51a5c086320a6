"""One declaration per operation: the table every surface is built from.

An Operation states what a caller may ask (its request model, validated once, wherever
the request comes from), what runs (`run`: a function of a Session and that request,
which embeds at most one field and calls one `memex.*` SQL function), what the caller
gets back (`response` and `answer`), the access it needs, and how it pages. From it:

- `AsyncMemex.call(op, **arguments)` / `AsyncMemex.run(op, request)`: the typed methods of
  memexdb.client are one line each over these (a test checks each method's parameters
  against its request model);
- the REST endpoint and its OpenAPI entry (memexdb.rest.operation_routes, from `rest`);
- the MCP tool and its input and output schemas (memexdb.mcp.operation_tools, from `tool`).

The CLI's commands (memexdb.cli) call the typed methods, so they run these too.

The HTTP clients (Python and TypeScript) are generated from the OpenAPI document, which
comes from here too.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, Literal, TypeVar

from pydantic import BaseModel, ValidationError

from memexdb.error_models import invalid_argument
from memexdb.session import Session

Req = TypeVar("Req", bound=BaseModel)
Res = TypeVar("Res")
Row = TypeVar("Row")

# What the caller's key needs (SQL checks it: memex._authorize; this is what the docs
# and the tests read): read or write within its tenants, admin (keys, audit,
# consolidation controls), or the operator (the database's own credentials).
Access = Literal["read", "write", "admin", "operator"]

# The domain an operation belongs to: its OpenAPI tag (memexdb.rest.docs.TAGS describes
# each). Declared on each operation, not derived from its package: run_now lives in
# memexdb.agentic (it asks the LLM) but is a consolidation control to a reader of the API.
# A required field of a Literal type: an operation cannot be declared without one, nor
# with one the document does not describe (mypy and tests/test_openapi.py check).
Domain = Literal[
    "memories", "files", "agentic", "embeddings", "keys", "consolidation", "operations"
]


@dataclass(frozen=True)
class Reply:
    """A documented response: status, description and body model (None: no body, or a
    string if `media_type` is not JSON, e.g. text/plain; for an error status, 400 and up,
    the service's JSON error, ErrorResponse), as `media_type` (for application/x-ndjson:
    the model of each line)."""

    status: int
    description: str
    model: type[BaseModel] | None = None
    media_type: str = "application/json"


# The JSON schema of a path parameter by its Starlette convertor.
_CONVERTOR_SCHEMAS: Mapping[str, Mapping[str, str]] = {
    "str": {"type": "string"},
    "int": {"type": "integer"},
    "uuid": {"type": "string", "format": "uuid"},
}


@dataclass(frozen=True)
class Route:
    """Where the operation is served over REST. The request is read from `source` (the
    JSON body or the query string) together with the path's parameters, as one request
    model, or from the path's parameters alone (`path`: no body or query string is read);
    `wire` is what the body or query string documents when the request model has path
    fields too (default: the request model); the path's parameters are typed by their
    convertors (`path_params`)."""

    method: str
    path: str  # Starlette's, with convertors: /v1/memories/{memory_id:uuid}
    description: str  # of the success reply
    status: int = 200
    source: Literal["body", "query", "path"] = "body"
    wire: type[BaseModel] | None = None
    errors: tuple[Reply, ...] = ()
    no_body: bool = False  # the success reply has no body (204)

    @property
    def path_params(self) -> dict[str, dict[str, str]]:
        """Each parameter of the path and its JSON schema, from its convertor."""
        return {
            name: dict(_CONVERTOR_SCHEMAS[convertor or "str"])
            for name, convertor in re.findall(r"\{(\w+)(?::(\w+))?\}", self.path)
        }


@dataclass(frozen=True)
class Tool:
    """The operation as an MCP tool. `description` is what the model reads; `renames`
    maps a tool argument to the request field it fills (`id` -> `memory_id`); an argument
    of `omit_null` sent as null is left out (its field may be left out but not null); a
    tool that answers otherwise than REST gives its own `response` and `answer`."""

    name: str
    title: str
    description: str
    read_only: bool = False
    destructive: bool = False
    idempotent: bool = False
    renames: Mapping[str, str] = field(default_factory=dict)
    omit_null: frozenset[str] = frozenset()
    response: type[BaseModel] | None = None
    answer: Callable[[Any, Any], BaseModel] | None = None


@dataclass(frozen=True)
class Paging:
    """A paged operation: the request field that takes the next page's key, and the
    response field that gives it (null: the last page)."""

    cursor: str
    next: str


@dataclass(frozen=True, eq=False)  # hashed by identity
class Operation(Generic[Req, Res]):
    """One operation of memexdb (see the module's docstring)."""

    name: str  # the AsyncMemex method
    summary: str
    request: type[Req]
    run: Callable[[Session, Req], Awaitable[Res]]
    sql: tuple[str, ...]  # the memex.* functions it calls
    access: Access
    domain: Domain  # the OpenAPI tag
    response: type[BaseModel] | None = None  # what REST and MCP answer (None: nothing)
    # the answer from the request and the result (None: the result as `response`)
    answer: Callable[[Req, Res], BaseModel | None] | None = None
    embeds: str | None = None  # the request field that is embedded
    pages: Paging | None = None
    rest: Route | None = None
    tool: Tool | None = None
    # a read that writes nothing (not even the access log): a read replica may answer it
    # (MEMEX_READ_DATABASE_URLS; memexdb.replicas)
    replica: bool = False

    def validate(self, values: Mapping[str, Any]) -> Req:
        """The request from Python values; the first bad field as InvalidArgument."""
        try:
            return self.request.model_validate(values)
        except ValidationError as exc:
            raise invalid_argument(exc) from None

    async def call(self, session: Session, **values: Any) -> Res:
        """Run on `session` with the request from Python values (`validate`)."""
        return await self.perform(session, self.validate(values))

    async def perform(self, session: Session, request: Req) -> Res:
        """`run` on `session`, on a read replica if it is a replica read (`replica`)."""
        return await self.run(session.reading(self.name) if self.replica else session, request)

    def reply(self, request: Req, result: Res) -> BaseModel | None:
        """What REST and MCP answer: `answer`'s, else the result validated as `response`
        (None when there is none)."""
        if self.answer is not None:
            return self.answer(request, result)
        return None if self.response is None else self.response.model_validate(result)

    def tool_response(self) -> type[BaseModel] | None:
        return self.tool.response if self.tool and self.tool.response else self.response

    def tool_answer(self, request: Req, result: Res) -> BaseModel | None:
        if self.tool is not None and self.tool.answer is not None:
            return self.tool.answer(request, result)
        return self.reply(request, result)


def declared(namespace: Mapping[str, object]) -> tuple[Operation[Any, Any], ...]:
    """The operations a module declares (`vars(module)`), in the order it declares them:
    what memexdb.operation_table lists of a domain, so that an operation is listed by being
    written (the order the REST document's paths and the MCP tools keep)."""
    found: dict[int, Operation[Any, Any]] = {}
    for name, value in namespace.items():
        if isinstance(value, Operation) and not name.startswith("_"):
            found.setdefault(id(value), value)
    return tuple(found.values())


def fetch_rows(
    row: type[Row], call: str, *, enter: bool = True
) -> Callable[[Session, BaseModel], Awaitable[list[Row]]]:
    """The `run` of an operation that is one statement: `call` (a generated call) with the
    request's fields as its values, answering its rows as `row`s (`enter`: Session.fetch's)."""

    async def run(session: Session, request: BaseModel) -> list[Row]:
        rows: list[Row] = await session.fetch(row, call, request.model_dump() or None, enter=enter)
        return rows

    return run


def fetch_first(
    row: type[Row], call: str, *, enter: bool = True
) -> Callable[[Session, BaseModel], Awaitable[Row]]:
    """As fetch_rows, answering the first row (the statement's one)."""
    rows = fetch_rows(row, call, enter=enter)

    async def run(session: Session, request: BaseModel) -> Row:
        return (await rows(session, request))[0]

    return run
