"""The OpenAPI document, built from the endpoint table and the pydantic models; the UI
that renders it is memexdb.rest.ui."""

from __future__ import annotations

import copy
import functools
from typing import Any

from pydantic import BaseModel
from pydantic.json_schema import JsonSchemaMode, models_json_schema
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from memexdb import __version__
from memexdb.embeddings.models import served_model
from memexdb.error_models import ErrorResponse, OpenAIErrorResponse
from memexdb.operation import Domain
from memexdb.replicas import LSN_PATTERN
from memexdb.rest import ui
from memexdb.rest.endpoint import MIN_LSN_HEADER, WRITE_LSN_HEADER, Endpoint, Reply
from memexdb.rest.errors import OPENAI_PATHS

_REF = "#/components/schemas/{model}"

# The OpenAPI tags, one per domain (Operation.domain, Endpoint.tag), in the order /docs
# shows them. Keyed by the Domain type: a domain without a description fails mypy here.
TAGS: dict[Domain, str] = {
    "memories": "Memories: store (one or a batch), search, list, get, update, delete,"
    " count, erase a user, export (memexdb.memories)",
    "files": "Files of an agent's memory (paths under user/ and agent/): list, read, write,"
    " patch, smart-read, revisions, diff, restore, the access log (memexdb.files)",
    "agentic": "Memory search (passages of files and memories, with an LLM answer) and"
    " memorize (the LLM keeps what is durable in raw text) (memexdb.agentic)",
    "embeddings": "The service's embedding model as an OpenAI-compatible endpoint"
    " (memexdb.embedding)",
    "keys": "API keys and the audit log; admin keys only (memexdb.keys)",
    "consolidation": "Consolidation (dreaming): settings, per-user status and pause, runs,"
    " run now, restore a run's sources; admin keys only (memexdb.dreaming)",
    "operations": "Health, liveness, readiness and Prometheus metrics of the service",
}

# Answers every operation may give (host and origin checks, validation, limits, outages).
COMMON_ERRORS = (
    Reply(
        401,
        "No API key where one is required, or not a valid one (checked before the input:"
        " a 422 goes only to a caller with valid credentials)",
        ErrorResponse,
    ),
    Reply(
        403,
        "The key may not do this (another agent or user, too little access), or a"
        " browser Origin not allowed (MEMEX_ALLOWED_ORIGINS)",
        ErrorResponse,
    ),
    Reply(421, "Host not allowed (MEMEX_ALLOWED_HOSTS)", ErrorResponse),
    Reply(422, "Invalid input; `error.fields` names each bad field", ErrorResponse),
    Reply(429, "Rate limited; see the Retry-After header", ErrorResponse),
    Reply(503, "Database unavailable", ErrorResponse),
)


def _content(model: type[BaseModel], media_type: str = "application/json") -> dict[str, Any]:
    return {media_type: {"schema": {"$ref": _REF.format(model=model.__name__)}}}


_MISSING = object()


def example(schema: dict[str, Any]) -> Any:
    """An example value of a field's JSON schema: its first `examples` entry (the
    pydantic field's, memexdb.fields), else its default, else the first of an enum, else
    false for a boolean; in a union, the first branch that has one. _MISSING if none: the
    field needs an example (tests/test_openapi.py fails)."""
    if schema.get("examples"):
        return schema["examples"][0]
    if schema.get("default") is not None:
        return schema["default"]
    if "const" in schema:
        return schema["const"]
    if schema.get("enum"):
        return schema["enum"][0]
    if schema.get("type") == "boolean":
        return False
    for branch in schema.get("anyOf", ()):
        found = example(branch)
        if found is not _MISSING:
            return found
    return _MISSING


def body_example(schema: dict[str, Any]) -> dict[str, Any] | None:
    """The example of a request body: the model's own (its `examples`), else its required
    fields' examples (what a request needs; "Try it out" sends it as it is). None if a
    required field has none."""
    if schema.get("examples"):
        own: dict[str, Any] = schema["examples"][0]
        return own
    values = {name: example(schema["properties"][name]) for name in schema.get("required", [])}
    return None if _MISSING in values.values() else values


def _with_example(parameter: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    found = example(schema)
    return parameter if found is _MISSING else {**parameter, "example": found}


def _reply(reply: Reply, errors: type[BaseModel] = ErrorResponse) -> dict[str, Any]:
    """A response of the document. Every error reply has a body: the service's JSON error
    (`errors`: OpenAIErrorResponse on the OpenAI-compatible paths), unless the reply names
    a model of its own (GET /health's 503 answers its HealthResponse)."""
    described: dict[str, Any] = {"description": reply.description}
    model = reply.model
    if reply.status >= 400 and reply.media_type == "application/json" and model is None:
        model = errors
    if model is ErrorResponse:
        model = errors
    if model is not None:
        described["content"] = _content(model, reply.media_type)
    elif reply.media_type != "application/json":
        described["content"] = {reply.media_type: {"schema": {"type": "string"}}}
    return described


def _operation(endpoint: Endpoint, definitions: dict[str, Any]) -> dict[str, Any]:
    operation: dict[str, Any] = {
        "tags": [endpoint.tag],
        "summary": endpoint.summary,
        "operationId": endpoint.operation_id,
    }
    parameters = [
        _with_example({"name": name, "in": "path", "required": True, "schema": schema}, schema)
        for name, schema in endpoint.path_params.items()
    ]
    if endpoint.query is not None:
        schema = definitions[endpoint.query.__name__]
        json_fields: frozenset[str] = getattr(endpoint.query, "json_fields", frozenset())
        for name, prop in schema["properties"].items():
            parameter: dict[str, Any] = {
                "name": name,
                "in": "query",
                "required": name in schema.get("required", []),
            }
            if name in json_fields:
                # a JSON value in the query string (?metadata={"k":1}): content, not schema,
                # and its example in the media type (OpenAPI 3.1 allows a parameter's own
                # `example` only beside `schema`)
                parameter["content"] = {"application/json": _with_example({"schema": prop}, prop)}
                parameters.append(parameter)
            else:
                parameters.append(_with_example({**parameter, "schema": prop}, prop))
    if endpoint.min_lsn:
        parameters.append(
            {
                "name": MIN_LSN_HEADER,
                "in": "header",
                "required": False,
                "description": "Read-your-writes across service processes: the latest"
                f" {WRITE_LSN_HEADER} this client received. The read is answered by a read"
                " replica that has replayed past it, else by the primary (docs/rest.md).",
                "schema": {"type": "string", "pattern": LSN_PATTERN},
                "example": "16B374D848",
            }
        )
    if parameters:
        operation["parameters"] = parameters
    replies = [endpoint.ok, *endpoint.errors]
    if endpoint.body is not None:
        content = _content(endpoint.body)
        found = body_example(definitions[endpoint.body.__name__])
        if found is not None:
            # what /docs "Try it out" fills in (else: random text of each field's pattern)
            content["application/json"]["example"] = found
        operation["requestBody"] = {"required": True, "content": content}
        replies.append(Reply(413, "Request body larger than 16 MiB", ErrorResponse))
    if endpoint.stream is not None:
        media_type, streamed = endpoint.stream
        operation["requestBody"] = {
            "required": True,
            "content": {media_type: {"schema": {"type": "string"}, "example": streamed}},
        }
    if not endpoint.open:
        replies += [e for e in COMMON_ERRORS if e.status not in {r.status for r in replies}]
    errors = OpenAIErrorResponse if endpoint.path in OPENAI_PATHS else ErrorResponse
    operation["responses"] = {str(r.status): _reply(r, errors) for r in replies}
    if endpoint.write_lsn:
        operation["responses"][str(endpoint.ok.status)]["headers"] = {
            WRITE_LSN_HEADER: {
                "description": "With read replicas (MEMEX_READ_DATABASE_URLS): the primary's"
                " WAL position after this call, a session token to send as"
                f" {MIN_LSN_HEADER} on later reads (docs/rest.md)",
                "schema": {"type": "string", "pattern": LSN_PATTERN},
            }
        }
    if not endpoint.open:
        # a key, or none on a loopback service whose database has no keys yet
        operation["security"] = [{"bearer": []}, {}]
    return operation


def _references(value: Any) -> set[str]:
    """The schema names that `value` (a piece of the document) refers to."""
    if isinstance(value, dict):
        found = {str(v).rsplit("/", 1)[-1] for k, v in value.items() if k == "$ref"}
        return found.union(*(_references(v) for v in value.values()))
    if isinstance(value, list):
        return set().union(*(_references(v) for v in value))
    return set()


def _drop_unreferenced(definitions: dict[str, Any], paths: dict[str, Any]) -> None:
    """Keep only the schemas the operations reach. pydantic also writes the definitions
    of types whose schema a model overrides (the recursive MetadataValue, validated but
    described as a plain JSON object: Metadata), which no operation uses."""
    reached: set[str] = set()
    todo = _references(paths)
    while todo:
        name = todo.pop()
        if name not in reached and name in definitions:
            reached.add(name)
            todo |= _references(definitions[name])
    for name in set(definitions) - reached:
        del definitions[name]


@functools.cache
def openapi_document(endpoints: tuple[Endpoint, ...]) -> dict[str, Any]:
    """The OpenAPI 3.1 document of `endpoints`, schemas from their pydantic models."""
    models: dict[type[BaseModel], JsonSchemaMode] = {
        ErrorResponse: "serialization",
        OpenAIErrorResponse: "serialization",
    }
    for e in endpoints:
        for request_model in (e.body, e.query):
            if request_model is not None:
                models[request_model] = "validation"
        for reply in (e.ok, *e.errors):
            if reply.model is not None:
                models.setdefault(reply.model, "serialization")
    _, schema = models_json_schema(list(models.items()), ref_template=_REF)
    definitions: dict[str, Any] = schema.get("$defs", {})
    paths: dict[str, Any] = {}
    for e in endpoints:
        paths.setdefault(e.openapi_path, {})[e.method.lower()] = _operation(e, definitions)
    for e in endpoints:
        if e.query is not None and e.body is None:
            # query-string models appear as parameters, not as schemas of their own
            definitions.pop(e.query.__name__, None)
    _drop_unreferenced(definitions, paths)
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "memexdb",
            "version": __version__,
            "description": "Postgres-native persistent memory for AI agents.",
        },
        "tags": [
            {"name": tag, "description": description}
            for tag, description in TAGS.items()
            if any(e.tag == tag for e in endpoints)
        ],
        "paths": paths,
        "components": {
            "schemas": definitions,
            "securitySchemes": {
                "bearer": {
                    "type": "http",
                    "scheme": "bearer",
                    "description": "An API key from `memexdb keys create` (mxk_...).",
                }
            },
        },
    }


@functools.cache
def served_document(
    endpoints: tuple[Endpoint, ...], model: tuple[str, int] | None
) -> dict[str, Any]:
    """The document as this service answers it: with the embedding model it serves
    (`model`: its id and vector size)."""
    if model is None:
        return openapi_document(endpoints)
    document = copy.deepcopy(openapi_document(endpoints))
    served_model(document["components"]["schemas"], *model)
    return document


def _openapi(endpoints: tuple[Endpoint, ...]) -> Route:
    async def openapi(request: Request) -> Response:
        memex = getattr(request.app.state, "memex", None)  # set by the app's lifespan
        model = (memex.model_id, memex.embedder.dim) if memex is not None else None
        return JSONResponse(served_document(endpoints, model))

    return Route("/openapi.json", openapi, methods=["GET"])


def routes(endpoints: tuple[Endpoint, ...]) -> list[BaseRoute]:
    return [_openapi(endpoints), *ui.routes()]
