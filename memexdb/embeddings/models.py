"""The embeddings domain's models: POST /v1/embeddings (OpenAI's API) and
`memexdb reembed` (sql/embeddings/)."""

from __future__ import annotations

from typing import Annotated, Any, Literal
from uuid import UUID

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    Field,
    Strict,
    TypeAdapter,
    WithJsonSchema,
)

from memexdb.fields import (
    EXAMPLE_CONTENT,
    QUERY_MAX_CHARS,
    NoNul,
    NotBlank,
    RequestModel,
    any_text,
    text_field,
)

# --- Embeddings: POST /v1/embeddings (OpenAI's API) and `memexdb reembed` ---

EMBEDDINGS_MAX_INPUTS = 2048  # texts per request, as OpenAI allows
# Each text: a search query's bound (any query memexdb searches with can be embedded as
# it does). A memory's 32768 would let a list of one item more than allowed pass the
# 16 MiB body limit: a 413 where a 422 names the field.
EMBEDDING_INPUT_MAX_CHARS = QUERY_MAX_CHARS
# All texts of one request: ~240 full windows of the bundled model, tens of seconds of a
# 2-core machine at worst (the schema cannot say this one; the 422 names `input`).
EMBEDDINGS_MAX_TOTAL_CHARS = 262_144
EMBEDDING_USER_MAX_CHARS = 256
DEFAULT_REEMBED_BATCH = 64  # memories per page of memex.stale_embeddings (its default)
REEMBED_BATCH_MAX = 1000

EmbeddingText = Annotated[
    str,
    text_field(
        EMBEDDING_INPUT_MAX_CHARS,
        "A text to embed (not only whitespace). A text longer than the model's window is"
        " embedded in full: the mean of its chunks' vectors.",
        EXAMPLE_CONTENT,
    ),
    NotBlank,
]


def _one_or_many(value: Any) -> Any:
    # OpenAI's `input` is a text or a list of texts; a text is a list of one here, so that
    # a bad text is named input[i] either way.
    return [value] if isinstance(value, str) else value


def _total_chars(value: list[str]) -> list[str]:
    if sum(len(text) for text in value) > EMBEDDINGS_MAX_TOTAL_CHARS:
        raise ValueError(f"must hold at most {EMBEDDINGS_MAX_TOTAL_CHARS} characters in all")
    return value


_EMBEDDING_TEXT_SCHEMA = TypeAdapter(EmbeddingText).json_schema()
_EMBEDDING_INPUT_DESCRIPTION = (
    f"A text, or a list of 1 to {EMBEDDINGS_MAX_INPUTS} texts, each 1 to"
    f" {EMBEDDING_INPUT_MAX_CHARS} characters, at most {EMBEDDINGS_MAX_TOTAL_CHARS} in all"
    " (token arrays are not accepted)."
)


class EmbeddingRequest(RequestModel):
    """OpenAI's embeddings request: one text or a list of texts, embedded by the service's
    model."""

    input: Annotated[
        list[EmbeddingText],
        Field(min_length=1, max_length=EMBEDDINGS_MAX_INPUTS),
        BeforeValidator(_one_or_many),
        AfterValidator(_total_chars),
        WithJsonSchema(
            {
                "anyOf": [
                    _EMBEDDING_TEXT_SCHEMA,
                    {
                        "type": "array",
                        "items": _EMBEDDING_TEXT_SCHEMA,
                        "minItems": 1,
                        "maxItems": EMBEDDINGS_MAX_INPUTS,
                    },
                ],
                "description": _EMBEDDING_INPUT_DESCRIPTION,
            }
        ),
    ]
    model: Annotated[
        str | None,
        Field(
            description="The service's embedding model (MEMEX_EMBEDDER), as `model` of any"
            " answer names it; omit it for the same. Any other model is refused: its"
            " vectors would not be comparable with the stored ones."
        ),
    ] = None
    encoding_format: Annotated[
        Literal["float", "base64"],
        Field(
            description="float: lists of numbers; base64: each vector's float32"
            " little-endian bytes, base64-encoded (what OpenAI's clients ask for by default)."
        ),
    ] = "float"
    user: Annotated[
        str | None,
        any_text(EMBEDDING_USER_MAX_CHARS, "OpenAI's end-user id; accepted and ignored."),
        NoNul,
    ] = None
    dimensions: Annotated[
        int | None,
        Strict(),
        Field(
            ge=1,
            description="The model's own vector size (384 for the bundled model), or left"
            " out: vectors are never shortened, so any other size is refused (a 422 naming"
            " `dimensions`).",
        ),
    ] = None


def served_model(document_schemas: dict[str, Any], model_id: str, dimensions: int) -> None:
    """Say in an OpenAPI document's schemas which `model` and `dimensions`
    EmbeddingRequest accepts: the service's own (known once its embedder is loaded)."""
    schema = document_schemas.get(EmbeddingRequest.__name__)
    if schema is None:
        return
    for name, value in (("model", model_id), ("dimensions", dimensions)):
        described = schema["properties"][name]
        kind = "string" if name == "model" else "integer"
        schema["properties"][name] = {
            "anyOf": [{"type": kind, "enum": [value]}, {"type": "null"}],
            **{k: v for k, v in described.items() if k != "anyOf"},
        }


class EmbeddingOut(BaseModel):
    object: Literal["embedding"] = "embedding"
    index: int = Field(description="The position of the text in `input`.")
    embedding: list[float] | str = Field(
        description="A unit vector: numbers, or base64 of float32 little-endian bytes."
    )


class EmbeddingUsage(BaseModel):
    prompt_tokens: int = Field(description="The texts' tokens, as the model's tokenizer counts.")
    total_tokens: int


class EmbeddingsOut(BaseModel):
    """OpenAI's embeddings answer: one vector per text, in input order."""

    object: Literal["list"] = "list"
    data: list[EmbeddingOut]
    model: str
    usage: EmbeddingUsage


class ReembedQuery(RequestModel):
    """reembed_page: the next `limit` memories after `after` (in id order) whose vector is
    not from the caller's model (1 to REEMBED_BATCH_MAX, checked by the operation)."""

    after: UUID | None = None
    limit: int = DEFAULT_REEMBED_BATCH
