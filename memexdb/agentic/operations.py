"""The operations that ask an LLM: memorize, search_passages (with an answer) and the
consolidation "run now", declared as the memory operations are (memexdb.operation), from
which their REST endpoints and MCP tools are built.

They orchestrate AsyncMemex's calls (memexdb.client), so they live one layer above it:
the client does not know them. Their Python API is here too: `memorize(memex, ...)` and
`search_passages(memex, ...)` for an AsyncMemex, or `memex.call(MEMORIZE, ...)`
(AsyncMemex or Memex) for any of them.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from memexdb.agentic import answering, consolidation, memorizing
from memexdb.agentic.models import MemorizeOut, MemorizeRequest
from memexdb.client import AsyncMemex
from memexdb.consolidation.models import DreamRunRequest, RunNowOut, RunOut, SkippedStep
from memexdb.files.models import (
    DEFAULT_PASSAGE_CHARS,
    DEFAULT_PASSAGES_TOP_K,
    PassageSearchOut,
    PassageSearchRequest,
)
from memexdb.operation import Operation, Route, Tool
from memexdb.session import Session
from memexdb.types import ConsolidationRun


def client_of(session: Session) -> AsyncMemex:
    """The session as the client these operations call (every frontend runs operations
    with an AsyncMemex)."""
    if not isinstance(session, AsyncMemex):
        raise TypeError(f"memexdb.agentic runs on an AsyncMemex, not a {type(session).__name__}")
    return session


async def memorize_text(session: Session, request: MemorizeRequest) -> MemorizeOut:
    return await memorizing.memorize(client_of(session), request)


@dataclass(frozen=True)
class RunNowResult:
    """What "run now" did: the runs, and the steps of a tenant's run that did not run
    because another runner held the tenant (consolidation.LOCKED)."""

    runs: list[ConsolidationRun]
    skipped: list[str]


async def run_now(session: Session, request: DreamRunRequest) -> RunNowResult:
    tenant = None
    if request.agent_id is not None and request.user_id is not None:
        tenant = (request.agent_id, request.user_id)
    skipped: list[str] = []
    runs = await consolidation.run_now(
        client_of(session), tenant, dry_run=request.dry_run, force=request.force, skipped=skipped
    )
    return RunNowResult(runs, skipped)


def _runs(_: DreamRunRequest, result: RunNowResult) -> RunNowOut:
    return RunNowOut(
        runs=[RunOut.model_validate(r) for r in result.runs],
        next_before=None,
        skipped=[SkippedStep(step=step, reason=consolidation.LOCKED) for step in result.skipped],
    )


MEMORIZE = Operation(
    name="memorize",
    summary="Keep what is durable in raw text: the LLM's validated decisions per fact (add,"
    " supersede, retire, none) and file writes and patches, or the fallback (one episodic"
    " memory) (memory_memorize)",
    request=MemorizeRequest,
    run=memorize_text,
    response=MemorizeOut,
    answer=lambda _, result: result,
    # the LLM's proposals (its decisions per fact: store, with supersedes, or retire; file
    # writes and patches), or the fallback (one episodic memory)
    sql=("memex.write_file", "memex.patch_file", "memex.store", "memex.retire_memories"),
    access="write",
    domain="agentic",
    rest=Route(
        "POST",
        "/v1/memorize",
        "Which path ran, what was written, what was decided per fact and what was refused",
    ),
    tool=Tool(
        "memory_memorize",
        "Memorize",
        "Hand over raw text (a conversation turn, a note) and let memory keep what is"
        " durable: with an LLM configured on the service, it decides per fact against the"
        " most similar memories whether to add it, supersede an older version (which"
        " stays in history, out of the default search), retire a fact that no longer"
        " holds, or do nothing (already known), each with its reason, and writes or"
        " patches the right memory files; without one, the text is stored as one episodic"
        " memory, dated (a search finds it once), and nothing is superseded. The result"
        " says which ran, what changed and what was refused.",
    ),
)

SEARCH_PASSAGES = Operation(
    name="search_passages",
    summary="Passages of files and memories for a query, BM25 fused with vectors; with"
    " `answer` and an LLM, an answer citing them (memory_search)",
    request=PassageSearchRequest,
    run=answering.search_passages,
    response=PassageSearchOut,
    answer=lambda _, result: result,
    sql=("memex.search_passages",),
    access="read",
    domain="agentic",
    embeds="query",
    rest=Route("POST", "/v1/memory-search", "Passages best first, and the answer if asked for"),
    tool=Tool(
        "memory_search",
        "Search memory",
        "Recall what memory says about `query`: passages from memory files (with their"
        " path and line range) and memories, best first, ranked by keywords (BM25) and"
        " meaning. With answer=true and an LLM configured on the service, also an answer"
        " citing the passages it used as [rank].",
        read_only=True,
    ),
)

RUN_NOW = Operation(
    name="run_now",
    summary="Run consolidation now: a tick over every tenant, or one tenant (dry_run: the plan)",
    request=DreamRunRequest,
    run=run_now,
    response=RunNowOut,
    answer=_runs,
    # a tick over every tenant, or one tenant's runs
    sql=(
        "memex.consolidate_due",
        "memex.dream_due",
        "memex.consolidate_tenant",
        "memex.dream_tenant",
    ),
    access="admin",
    domain="consolidation",  # asks the LLM, but a reader of the API looks for it there
    rest=Route(
        "POST",
        "/v1/admin/dream/run",
        "The runs (plans when dry_run), and a tenant's steps skipped while another runner held it",
    ),
)

OPERATIONS: tuple[Operation[Any, Any], ...] = (SEARCH_PASSAGES, MEMORIZE, RUN_NOW)


# --- The Python API (typed, for an AsyncMemex) ---


async def memorize(
    memex: AsyncMemex, agent_id: str, user_id: str, text: str, *, now: datetime | None = None
) -> MemorizeOut:
    """memory_memorize: keep what is durable in `text`, through the LLM's proposals or the
    fallback (one episodic memory); see memexdb.agentic.memorizing. `now` dates the
    memories it stores."""
    request = MEMORIZE.validate({"agent_id": agent_id, "user_id": user_id, "text": text})
    return await memorizing.memorize(memex, request, now)


async def search_passages(
    memex: AsyncMemex,
    agent_id: str,
    user_id: str,
    query: str,
    *,
    top_k: int = DEFAULT_PASSAGES_TOP_K,
    passage_chars: int = DEFAULT_PASSAGE_CHARS,
    answer: bool = False,
) -> PassageSearchOut:
    """memory_search: the passages for `query`, and with `answer` (and an LLM) an answer
    that cites them by rank."""
    values = {"agent_id": agent_id, "user_id": user_id, "query": query}
    return await memex.call(
        SEARCH_PASSAGES, **values, top_k=top_k, passage_chars=passage_chars, answer=answer
    )
