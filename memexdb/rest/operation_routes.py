"""REST endpoints built from the operation table (memexdb.operation): each reads its
request from the path and the body or query string (or from the path alone), validates it
once as the operation's request model, runs the operation as the caller and answers its
response model."""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from memexdb.errors import InvalidArgument, MemexError
from memexdb.operation import Operation
from memexdb.replicas import REQUIRED_LSN, parse_lsn
from memexdb.rest.endpoint import MIN_LSN_HEADER, WRITE_LSN_HEADER, Endpoint, Handler, Reply
from memexdb.rest.parsing import body_of, json_of, memex_of, query_of

log = logging.getLogger("memexdb.rest")

_PATH_KEYWORDS = frozenset(
    {"examples", "minimum", "maximum", "minLength", "maxLength", "pattern", "format"}
)


async def required_lsn(request: Request) -> int:
    """The request's session token (Memex-Min-LSN) as a number, 0 without one;
    InvalidArgument (422) when it is not a pg_lsn, once the caller's credentials are
    checked (a caller without a valid key learns nothing about its input)."""
    token = request.headers.get(MIN_LSN_HEADER)
    if token is None:
        return 0
    required = parse_lsn(token)
    if required is None:
        await memex_of(request).authenticate()
        raise InvalidArgument(
            MIN_LSN_HEADER,
            f"must be a session token as a {WRITE_LSN_HEADER} header gives it"
            " (a WAL position as up to 16 hexadecimal digits, e.g. 16B374D848)",
        )
    return required


def _writes(operation: Operation[Any, Any]) -> bool:
    """Whether `operation` answers a session token: what is not a GET may write (a read
    sent by POST, as search is, counts unless a replica may answer it)."""
    return operation.rest is not None and operation.rest.method != "GET" and not operation.replica


def _handler(operation: Operation[Any, Any]) -> Handler:
    route = operation.rest
    assert route is not None
    writes = _writes(operation)

    async def handle(request: Request) -> Response:
        # a read after the caller's own write elsewhere: a replica that has replayed it
        required = await required_lsn(request) if operation.replica else 0
        # path parameters as text, as the body and query string carry them
        path = {name: str(value) for name, value in request.path_params.items()}
        if route.source == "body":
            parsed = await body_of(request, operation.request, path)
        elif route.source == "query":
            parsed = query_of(request, operation.request, path)
        else:
            parsed = operation.request.model_validate(path)
        memex = memex_of(request)
        if required:
            reset = REQUIRED_LSN.set(required)
            try:
                result = await operation.perform(memex, parsed)
            finally:
                REQUIRED_LSN.reset(reset)
        else:
            result = await operation.perform(memex, parsed)
        answer = operation.reply(parsed, result)
        response = (
            Response(status_code=route.status) if answer is None else json_of(answer, route.status)
        )
        if writes:
            # an operation that writes: the token its caller's reads send back (with read
            # replicas only: without, every read is on the primary)
            try:
                position = await memex.write_position()
            except MemexError as exc:
                # the write is done: its answer stands, without a token (the caller's
                # reads through this host are still covered: memexdb.replicas.WriteTable)
                log.warning("no session token for %s: %s", operation.name, exc)
                position = None
            if position is not None:
                response.headers[WRITE_LSN_HEADER] = position
        return response

    return handle


def endpoint(operation: Operation[Any, Any]) -> Endpoint:
    """The REST endpoint of `operation` (which must have a route)."""
    route = operation.rest
    if route is None:
        raise ValueError(f"operation {operation.name} has no REST route")
    wire = route.wire or operation.request
    # a path parameter's schema with its request field's examples (for the document)
    fields = operation.request.model_json_schema()["properties"]
    # the route's type, with the request field's examples and bounds (a schema-valid
    # path is then one the request model accepts)
    path_params = {
        name: {**schema, **{k: v for k, v in fields[name].items() if k in _PATH_KEYWORDS}}
        for name, schema in route.path_params.items()
    }
    return Endpoint(
        route.method,
        route.path,
        _handler(operation),
        operation.summary,
        Reply(route.status, route.description, None if route.no_body else operation.response),
        body=wire if route.source == "body" else None,
        query=wire if route.source == "query" else None,
        path_params=path_params,
        errors=route.errors,
        operation_id=operation.name,
        tag=operation.domain,
        min_lsn=operation.replica,
        write_lsn=_writes(operation),
    )


def endpoints(operations: Iterable[Operation[Any, Any]]) -> tuple[Endpoint, ...]:
    """The endpoints of those of `operations` served over REST, in their order."""
    return tuple(endpoint(op) for op in operations if op.rest is not None)
