"""Reading requests and writing answers, for every REST module: the caller's client,
bodies and query strings validated by the domains' models (memexdb.<domain>.models),
JSON answers."""

from __future__ import annotations

import json
from typing import TypeVar

from pydantic import BaseModel
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response

from memexdb.bearer import raw_bearer_key
from memexdb.client import AsyncMemex

Model = TypeVar("Model", bound=BaseModel)
MAX_BODY_BYTES = 16 * 1024 * 1024


def memex_of(request: Request) -> AsyncMemex:
    """The client acting for this request's caller: its API key, checked in SQL."""
    memex: AsyncMemex = request.app.state.memex
    return memex.with_key(raw_bearer_key(request.scope["headers"]))


async def body_of(
    request: Request, model: type[Model], path: dict[str, str] | None = None
) -> Model:
    if int(request.headers.get("content-length") or 0) > MAX_BODY_BYTES:
        raise HTTPException(413, f"request body larger than {MAX_BODY_BYTES} bytes")
    raw = await request.body()
    if len(raw) > MAX_BODY_BYTES:
        raise HTTPException(413, f"request body larger than {MAX_BODY_BYTES} bytes")
    # JSON mode: strict JSON types (a date is a string, not a number), and malformed or
    # too deeply nested JSON is a validation error of the field "body".
    return model.model_validate_json(_with_path(raw, path) if path else raw)


def _with_path(raw: bytes, path: dict[str, str]) -> bytes | str:
    """The body with the URL path's fields of the request added (a PATCH's memory_id), so
    that the request is validated once, as a whole, in JSON mode. A body that is not a
    JSON object is left for the model to refuse."""
    try:
        data = json.loads(raw)
    except (ValueError, RecursionError):
        return raw
    return json.dumps({**data, **path}) if isinstance(data, dict) else raw


def query_of(request: Request, model: type[Model], path: dict[str, str] | None = None) -> Model:
    # Query parameters are validated like bodies: the same 422 naming each bad field.
    return model.model_validate({**request.query_params, **(path or {})})


def json_of(model: BaseModel, status: int = 200) -> Response:
    """`model` as a JSON answer, encoded by pydantic itself (model_dump_json): the document
    model_dump(mode="json") and json.dumps made, without building it as Python objects
    first (a search's answer: ~0.1 ms less per request; bench/RESULTS.md, "Per-request
    cost"). Floats are written in their shortest form either way; an exponent may be
    spelled differently (1e-7, not 1e-07), the same number."""
    return Response(model.model_dump_json(), status_code=status, media_type="application/json")
