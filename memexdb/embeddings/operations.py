"""POST /v1/embeddings as an operation: OpenAI's embeddings API over the service's own
model, so that OpenAI clients (and tools built on them) embed queries and documents
exactly as memexdb does. A text that fits the model's window gets the vector `store`
gives it; a longer one the mean of its chunks' vectors (memexdb.embedding.long_text).

Its declaration (memexdb.operation) gives AsyncMemex.embed_texts and the REST endpoint.
(This module is not imported by memexdb.embedding itself: the embedders need no Session.)
"""

from __future__ import annotations

import base64
from typing import Any

import numpy as np

from memexdb.embeddings import sql
from memexdb.embeddings.models import EmbeddingOut, EmbeddingRequest, EmbeddingsOut, EmbeddingUsage
from memexdb.error_models import OpenAIErrorResponse
from memexdb.errors import InvalidArgument, ModelNotFound
from memexdb.operation import Operation, Reply, Route
from memexdb.session import Session
from memexdb.types import Embeddings


async def embed(session: Session, request: EmbeddingRequest) -> Embeddings:
    # As OpenAI answers a model it does not serve: 404 model_not_found (not a bad field: a
    # client configured for another model gets what it can act on).
    if request.model is not None and request.model != session.model_id:
        raise ModelNotFound(
            f"the model {request.model!r} is not served here: this service embeds with"
            f" {session.model_id!r} (send that, or leave `model` out)"
        )
    dim = session.embedder.dim
    if request.dimensions is not None and request.dimensions != dim:
        raise InvalidArgument(
            "dimensions",
            f"{session.model_id!r} makes {dim}-dimensional vectors and they are not"
            f" shortened: send {dim} or leave it out",
        )
    await session.fetch(None, sql.AUTHORIZE_EMBEDDING)
    cut = await session.embedder.plan_in_full(request.input)
    vectors = cut.combine(await session.embedder.embed_many(cut.pieces))
    return Embeddings(vectors, session.model_id, cut.total_tokens)


def _embedded(request: EmbeddingRequest, result: Embeddings) -> EmbeddingsOut:
    vectors = np.asarray(result.vectors, dtype="<f4")
    if request.encoding_format == "base64":
        rows: list[Any] = [base64.b64encode(row.tobytes()).decode("ascii") for row in vectors]
    else:
        rows = vectors.tolist()  # each float32 exactly, as a JSON number
    return EmbeddingsOut(
        data=[EmbeddingOut(index=i, embedding=row) for i, row in enumerate(rows)],
        model=result.model,
        usage=EmbeddingUsage(prompt_tokens=result.tokens, total_tokens=result.tokens),
    )


EMBED = Operation(
    name="embed_texts",
    summary="Embed texts with the service's model (OpenAI-compatible; any valid key)",
    request=EmbeddingRequest,
    run=embed,
    response=EmbeddingsOut,
    answer=_embedded,
    sql=("memex._authorize_embedding",),
    access="read",
    domain="embeddings",
    embeds="input",
    rest=Route(
        "POST",
        "/v1/embeddings",
        "One unit vector per text, in input order",
        errors=(
            Reply(
                404,
                "`model` names a model other than the service's (code `model_not_found`,"
                " as OpenAI answers)",
                OpenAIErrorResponse,
            ),
        ),
    ),
)

OPERATIONS: tuple[Operation[Any, Any], ...] = (EMBED,)
