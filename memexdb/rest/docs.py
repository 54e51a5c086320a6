"""OpenAPI document (built from the pydantic schemas) and Swagger UI served locally."""

from __future__ import annotations

import functools
from typing import Any

from pydantic import BaseModel
from pydantic.json_schema import JsonSchemaMode, models_json_schema
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from memexdb import __version__
from memexdb.rest import schemas as s
from memexdb.rest import ui

_REF = "#/components/schemas/{model}"


def _body(model: str) -> dict[str, Any]:
    return {
        "required": True,
        "content": {"application/json": {"schema": {"$ref": _REF.format(model=model)}}},
    }


def _reply(description: str, model: str | None = None) -> dict[str, Any]:
    reply: dict[str, Any] = {"description": description}
    if model:
        reply["content"] = {"application/json": {"schema": {"$ref": _REF.format(model=model)}}}
    return reply


_ERRORS = {
    "403": _reply("Browser Origin not allowed (MEMEX_ALLOWED_ORIGINS)", "ErrorResponse"),
    "421": _reply("Host not allowed (MEMEX_ALLOWED_HOSTS)", "ErrorResponse"),
    "422": _reply("Invalid input; `error.fields` names each bad field", "ErrorResponse"),
    "429": _reply("Rate limited; see the Retry-After header", "ErrorResponse"),
    "503": _reply("Database unavailable", "ErrorResponse"),
}


def _query(name: str, required: bool, schema: dict[str, Any]) -> dict[str, Any]:
    return {"name": name, "in": "query", "required": required, "schema": schema}


_TENANT = [
    _query("agent_id", True, {"type": "string", "minLength": 1, "maxLength": 128}),
    _query("user_id", True, {"type": "string", "minLength": 1, "maxLength": 128}),
]


@functools.cache
def openapi_document() -> dict[str, Any]:
    models: list[type[BaseModel]] = [
        s.MemoryCreate,
        s.MemoryBatchCreate,
        s.MemoryResponse,
        s.MemoryBatchResponse,
        s.MemorySearchRequest,
        s.MemorySearchResponse,
        s.CountResponse,
        s.HealthResponse,
        s.ErrorResponse,
    ]
    modes: list[tuple[type[BaseModel], JsonSchemaMode]] = [
        (m, "validation" if m.__name__.endswith(("Create", "Request")) else "serialization")
        for m in models
    ]
    _, definitions = models_json_schema(
        modes,
        ref_template=_REF,
    )
    paths: dict[str, Any] = {
        "/v1/memories": {
            "post": {
                "summary": "Store a memory",
                "requestBody": _body("MemoryCreate"),
                "responses": {"201": _reply("Stored", "MemoryResponse"), **_ERRORS},
            }
        },
        "/v1/memories/batch": {
            "post": {
                "summary": "Store up to 1000 memories in one statement (imports)",
                "requestBody": _body("MemoryBatchCreate"),
                "responses": {
                    "201": _reply("Stored, in input order", "MemoryBatchResponse"),
                    **_ERRORS,
                },
            }
        },
        "/v1/memories/search": {
            "post": {
                "summary": "Search a tenant's memories (relevance + recency + importance)",
                "requestBody": _body("MemorySearchRequest"),
                "responses": {"200": _reply("Ranked results", "MemorySearchResponse"), **_ERRORS},
            }
        },
        "/v1/memories/count": {
            "get": {
                "summary": "Count a tenant's live memories",
                "parameters": [
                    *_TENANT,
                    _query(
                        "memory_type",
                        False,
                        {"type": "string", "enum": ["episodic", "semantic", "procedural"]},
                    ),
                ],
                "responses": {"200": _reply("Count", "CountResponse"), **_ERRORS},
            }
        },
        "/v1/memories/{memory_id}": {
            "delete": {
                "summary": "Delete one memory of the tenant",
                "parameters": [
                    {
                        "name": "memory_id",
                        "in": "path",
                        "required": True,
                        "schema": {"type": "string", "format": "uuid"},
                    },
                    *_TENANT,
                ],
                "responses": {
                    "204": _reply("Deleted"),
                    "404": _reply("No such memory for this tenant", "ErrorResponse"),
                    **_ERRORS,
                },
            }
        },
        "/health": {
            "get": {
                "summary": "200 when the database answers, 503 otherwise",
                "responses": {
                    "200": _reply("Healthy", "HealthResponse"),
                    "503": _reply("Database unreachable", "HealthResponse"),
                },
            }
        },
    }
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "memexdb",
            "version": __version__,
            "description": "Postgres-native persistent memory for AI agents.",
        },
        "paths": paths,
        "components": {"schemas": definitions.get("$defs", {})},
    }


async def openapi(request: Request) -> Response:
    return JSONResponse(openapi_document())


def routes() -> list[BaseRoute]:
    return [Route("/openapi.json", openapi, methods=["GET"]), *ui.routes()]
