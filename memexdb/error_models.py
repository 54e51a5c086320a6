"""The error bodies every surface answers with (REST, the OpenAI-compatible
endpoints) and turning a pydantic ValidationError into memexdb's InvalidArgument."""

from __future__ import annotations

from typing import Any, TypeVar

from memexdb_client.errors import ERRORS
from pydantic import (
    BaseModel,
    Field,
    ValidationError,
)

from memexdb.errors import InvalidArgument


class FieldError(BaseModel):
    field: str
    message: str


class ErrorBody(BaseModel):
    # every code of the error table (memexdb_client.errors.ERRORS), in its order
    code: str = Field(description=" | ".join(kind.code for kind in ERRORS))
    message: str
    fields: list[FieldError] = Field(default_factory=list)
    retry_after_seconds: float | None = None


class ErrorResponse(BaseModel):
    error: ErrorBody


# OpenAI's error object (`type`, `param`) of what the OpenAI-compatible endpoints answer
# (POST /v1/embeddings; memexdb.rest.errors.OpenAIErrors adds both fields to every error
# reply there), beside the service's own fields, which memexdb's clients read.
class OpenAIErrorBody(ErrorBody):
    type: str = Field(
        description="OpenAI's error type: invalid_request_error (400 to 422),"
        " authentication_error (401), permission_error (403), rate_limit_error (429),"
        " server_error (5xx)."
    )
    param: str | None = Field(
        description="The request field at fault (the first of `fields`), as OpenAI's `param`;"
        " null when no one field is."
    )


class OpenAIErrorResponse(BaseModel):
    error: OpenAIErrorBody


def field_name(loc: tuple[int | str, ...]) -> str:
    """A pydantic error location as the API names fields: `memories[3].content`."""
    name = ""
    for part in loc:
        name += f"[{part}]" if isinstance(part, int) else (f".{part}" if name else str(part))
    return name or "body"


_Model = TypeVar("_Model", bound=BaseModel)


def field_errors(exc: ValidationError) -> list[FieldError]:
    """One entry per bad field, named as the API names it, with a readable message."""
    return [
        FieldError(
            field=field_name(tuple(e["loc"])), message=str(e["msg"]).removeprefix("Value error, ")
        )
        for e in exc.errors(include_url=False)
    ]


def invalid_argument(exc: ValidationError) -> InvalidArgument:
    """The first bad field as the Python API's typed error."""
    first = field_errors(exc)[0]
    return InvalidArgument(first.field, first.message)


def validated(model: type[_Model], **values: Any) -> _Model:
    """Build `model` from Python values, raising InvalidArgument for the first bad field
    (the Python API's form of the 422 the frontends answer)."""
    try:
        return model.model_validate(values)
    except ValidationError as exc:
        raise invalid_argument(exc) from None
