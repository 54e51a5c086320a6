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
from psycopg.rows import class_row

from memexdb import metrics
from memexdb.embeddings import sql
from memexdb.embeddings.models import (
    REEMBED_BATCH_MAX,
    EmbeddingOut,
    EmbeddingRequest,
    EmbeddingsOut,
    EmbeddingUsage,
    ReembedQuery,
)
from memexdb.error_models import OpenAIErrorResponse
from memexdb.errors import InvalidArgument, ModelNotFound
from memexdb.fields import NoArguments
from memexdb.operation import Operation, Reply, Route
from memexdb.paging import next_key
from memexdb.session import Session
from memexdb.types import (
    EmbedBatch,
    Embeddings,
    EmbedQueueDepth,
    ModelCount,
    QueuedMemory,
    ReembedPage,
    StaleEmbedding,
)


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


async def embedding_models(session: Session, _: NoArguments) -> dict[str, int]:
    rows: list[ModelCount] = await session.fetch(ModelCount, sql.EMBEDDING_MODELS)
    return {row.embedding_model: row.memories for row in rows}


async def embed_queue_depth(session: Session, _: NoArguments) -> EmbedQueueDepth:
    rows: list[EmbedQueueDepth] = await session.fetch(EmbedQueueDepth, sql.EMBED_QUEUE_DEPTH)
    return rows[0]


async def reembed_page(session: Session, query: ReembedQuery) -> ReembedPage:
    if not 1 <= query.limit <= REEMBED_BATCH_MAX:
        raise InvalidArgument("limit", f"must be 1 to {REEMBED_BATCH_MAX}")
    rows: list[StaleEmbedding] = await session.fetch(
        StaleEmbedding,
        sql.STALE_EMBEDDINGS,
        {"embedding_model": session.model_id, "after": query.after, "limit": query.limit},
    )
    if not rows:
        return ReembedPage(0, 0, None)
    vectors = await session.embedder.embed_in_full([r.content for r in rows])
    written = await session.fetch(
        None,
        sql.SET_EMBEDDINGS,
        {
            "ids": [r.memory_id for r in rows],
            "contents": [r.content for r in rows],
            "embeddings": list(vectors),
            "embedding_model": session.model_id,
        },
    )
    return ReembedPage(
        len(rows), int(written[0]), next_key(rows, query.limit, lambda row: row.memory_id)
    )


async def embed_queued(session: Session, _: NoArguments) -> EmbedBatch:
    # one transaction over several statements (session.connection): the entries
    # memex.embed_queue_take locks stay locked until their vectors are stored
    async with session.connection() as conn:
        cur = conn.cursor(row_factory=class_row(QueuedMemory))
        with metrics.sql_call(sql.EMBED_QUEUE_TAKE):
            take = sql.EMBED_QUEUE_TAKE.given({})  # (its defaults: a batch's size)
            rows = await (await cur.execute(take)).fetchall()
        if not rows:
            return EmbedBatch(0, 0, 0)
        done, failed = await _embed_each(session, rows)
        written = 0
        if done:
            with metrics.sql_call(sql.SET_EMBEDDINGS):
                result = await conn.execute(
                    sql.SET_EMBEDDINGS,
                    {
                        "ids": [row.memory_id for row, _ in done],
                        "contents": [row.content for row, _ in done],
                        "embeddings": [vector for _, vector in done],
                        "embedding_model": session.model_id,
                    },
                )
                written = int((await result.fetchone() or (0,))[0])
        if failed:
            with metrics.sql_call(sql.EMBED_QUEUE_FAILED):
                backoff = {
                    "ids": [row.memory_id for row, _ in failed],
                    "errors": [e for _, e in failed],
                }  # (the SQL default backoff)
                await conn.execute(sql.EMBED_QUEUE_FAILED.given(backoff), backoff)
        errors = tuple(f"{r.memory_id} (attempt {r.attempts + 1}): {e}" for r, e in failed)
        return EmbedBatch(len(rows), written, len(failed), errors)


async def _embed_each(
    session: Session, rows: list[QueuedMemory]
) -> tuple[list[tuple[QueuedMemory, Any]], list[tuple[QueuedMemory, str]]]:
    """Embed a batch; if that fails, each memory alone, so that one text the model
    cannot take does not hold the others back."""
    try:
        vectors = await session.embedder.embed_in_full([r.content for r in rows])
        return list(zip(rows, vectors, strict=True)), []
    except Exception as exc:
        if len(rows) == 1:
            return [], [(rows[0], f"{type(exc).__name__}: {exc}")]
    done: list[tuple[QueuedMemory, Any]] = []
    failed: list[tuple[QueuedMemory, str]] = []
    for row in rows:
        try:
            done.append((row, (await session.embedder.embed_in_full([row.content]))[0]))
        except Exception as exc:
            failed.append((row, f"{type(exc).__name__}: {exc}"))
    return done, failed


EMBEDDING_MODELS = Operation(
    name="embedding_models",
    summary="How many memories carry vectors of each embedding model, most first",
    request=NoArguments,
    run=embedding_models,
    sql=("memex.embedding_models",),
    access="operator",
    domain="embeddings",
)

EMBED_QUEUE_DEPTH = Operation(
    name="embed_queue_depth",
    summary="The embed queue: entries queued, due, failing; oldest and next due",
    request=NoArguments,
    run=embed_queue_depth,
    sql=("memex.embed_queue_depth",),
    access="operator",
    domain="embeddings",
)

REEMBED_PAGE = Operation(
    name="reembed_page",
    summary="Embed again one page of the memories whose vector is another model's",
    request=ReembedQuery,
    run=reembed_page,
    sql=("memex.stale_embeddings", "memex.set_embeddings"),
    access="operator",
    domain="embeddings",
    embeds="(the stale memories' contents)",
)

EMBED_QUEUED = Operation(
    name="embed_queued",
    summary="Take, embed and store one batch of the embed queue (the embed worker's)",
    request=NoArguments,
    run=embed_queued,
    sql=("memex.embed_queue_take", "memex.set_embeddings", "memex.embed_queue_failed"),
    access="operator",
    domain="embeddings",
    embeds="(the queued memories' contents)",
)
