"""POST /v1/embeddings: OpenAI's embeddings API over the service's own model, so that
OpenAI clients (and tools built on them) embed queries and documents exactly as memexdb
does. The vectors are AsyncMemex.embed_texts': a text that fits the model's window gets
the vector `store` gives it; a longer one the mean of its chunks' vectors."""

from __future__ import annotations

import base64

import numpy as np
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from memexdb.params import EmbeddingRequest, EmbeddingsOut
from memexdb.rest.endpoint import Endpoint, Reply
from memexdb.rest.parsing import body_of, memex_of


async def create_embeddings(request: Request) -> Response:
    body = await body_of(request, EmbeddingRequest)
    result = await memex_of(request).embed_request(body)
    vectors = np.asarray(result.vectors, dtype="<f4")
    if body.encoding_format == "base64":
        rows: list[object] = [base64.b64encode(row.tobytes()).decode("ascii") for row in vectors]
    else:
        rows = vectors.tolist()  # each float32 exactly, as a JSON number
    # Built as a plain dict (EmbeddingsOut documents it): thousands of vectors at once.
    return JSONResponse(
        {
            "object": "list",
            "data": [
                {"object": "embedding", "index": i, "embedding": row} for i, row in enumerate(rows)
            ],
            "model": result.model,
            "usage": {"prompt_tokens": result.tokens, "total_tokens": result.tokens},
        }
    )


ENDPOINTS = (
    Endpoint(
        "POST",
        "/v1/embeddings",
        create_embeddings,
        "Embed texts with the service's model (OpenAI-compatible; any valid key)",
        Reply(200, "One unit vector per text, in input order", EmbeddingsOut),
        body=EmbeddingRequest,
    ),
)
