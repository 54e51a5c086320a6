"""memex.search_passages for a validated request: files and memories ranked for a query
(BM25 fused with vectors), each cut to a passage (a file's best paragraph, with its
lines). One embedding, one statement: `AsyncMemex.passages` and memory_search
(memexdb.agentic, which may add an LLM answer) both call it."""

from __future__ import annotations

from memexdb.files import sql
from memexdb.files.models import PassageSearchRequest
from memexdb.session import Session
from memexdb.types import Passage


async def ranked_passages(session: Session, request: PassageSearchRequest) -> list[Passage]:
    """The passages for `request.query` (its `answer` is memexdb.agentic's)."""
    # paid for before the query is embedded: a caller over its limit embeds nothing
    reservation = await session.reserve("search", [(request.agent_id, request.user_id)])
    values = {
        **request.model_dump(exclude={"answer"}),
        "query_embedding": await session.embedder.embed_one(request.query),
        "embedding_model": session.model_id,
    }
    rows: list[Passage] = await session.fetch(
        Passage, sql.SEARCH_PASSAGES, values, reservation=reservation
    )
    return rows
