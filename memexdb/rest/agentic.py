"""The agentic endpoints (MemexAI's memory_search and memory_memorize): passages of files
and memories with an optional LLM answer, and memorizing raw text (memexdb.agentic)."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from memexdb.params import MemorizeOut, MemorizeRequest, PassageSearchOut, PassageSearchRequest
from memexdb.rest.endpoint import Endpoint, Reply
from memexdb.rest.parsing import body_of, json_of, memex_of


async def memory_search(request: Request) -> Response:
    body = await body_of(request, PassageSearchRequest)
    return json_of(await memex_of(request).search_passages(**body.model_dump()))


async def memorize(request: Request) -> Response:
    body = await body_of(request, MemorizeRequest)
    return json_of(await memex_of(request).memorize(**body.model_dump()))


ENDPOINTS = (
    Endpoint(
        "POST",
        "/v1/memory-search",
        memory_search,
        "Passages of files and memories for a query, BM25 fused with vectors; with `answer`"
        " and an LLM, an answer citing them (memory_search)",
        Reply(200, "Passages best first, and the answer if asked for", PassageSearchOut),
        body=PassageSearchRequest,
    ),
    Endpoint(
        "POST",
        "/v1/memorize",
        memorize,
        "Keep what is durable in raw text: the LLM's validated writes and patches, or the"
        " fallback (an episodic memory and user/log.md) (memory_memorize)",
        Reply(200, "Which path ran, what was written and what was refused", MemorizeOut),
        body=MemorizeRequest,
    ),
)
