"""REST endpoints built from the operation table (memexdb.operation): each reads its
request from the path and the body or query string (or from the path alone), validates it
once as the operation's request model, runs the operation as the caller and answers its
response model."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from memexdb.operation import Operation
from memexdb.rest.endpoint import Endpoint, Handler, Reply
from memexdb.rest.parsing import body_of, json_of, memex_of, query_of

_PATH_KEYWORDS = frozenset(
    {"examples", "minimum", "maximum", "minLength", "maxLength", "pattern", "format"}
)


def _handler(operation: Operation[Any, Any]) -> Handler:
    route = operation.rest
    assert route is not None

    async def handle(request: Request) -> Response:
        # path parameters as text, as the body and query string carry them
        path = {name: str(value) for name, value in request.path_params.items()}
        if route.source == "body":
            parsed = await body_of(request, operation.request, path)
        elif route.source == "query":
            parsed = query_of(request, operation.request, path)
        else:
            parsed = operation.request.model_validate(path)
        result = await operation.perform(memex_of(request), parsed)
        answer = operation.reply(parsed, result)
        if answer is None:
            return Response(status_code=route.status)
        return json_of(answer, route.status)

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
    )


def endpoints(operations: Iterable[Operation[Any, Any]]) -> tuple[Endpoint, ...]:
    """The endpoints of those of `operations` served over REST, in their order."""
    return tuple(endpoint(op) for op in operations if op.rest is not None)
