"""Consolidation ticks of the service's scheduler (where pg_cron does not run them): old
memories condensed (memex.consolidate_due), then files tidied (memex.dream_due).

Without an LLM condensing is one SQL call, memex.consolidate_due: extractive summaries,
archiving, lineage and locking all happen there. With an LLM (MEMEX_LLM_URL) the summary
of each due batch is abstractive: the tick asks SQL for the plan (a dry run: the batches
and their sources), has the model summarize each batch, and hands the summary back to
memex.consolidate_tenant together with the batch it summarizes, so the bookkeeping is the
same SQL; a batch that changed meanwhile (MX409) waits for the next tick, and a model
that fails leaves that batch to the extractive summary.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from memexdb.errors import Conflict
from memexdb.llm import ChatModel, LLMError

if TYPE_CHECKING:
    from memexdb.client import AsyncMemex
    from memexdb.types import ConsolidationRun

log = logging.getLogger("memexdb.jobs")

SUMMARY_SYSTEM = """\
You condense an AI agent's old memories about one user into one summary that replaces
them in its memory. Keep every durable fact (people, places, dates, preferences,
decisions, plans, commitments, procedures) with its date as "(YYYY-MM-DD)"; when two
memories contradict each other keep the later one; drop small talk and repetition.
Write a plain list, one fact per line starting with "- ". Write nothing else."""


async def tick(memex: AsyncMemex) -> list[ConsolidationRun]:
    """One consolidation tick over every tenant: condensing, then dreaming over files;
    the runs that did something."""
    condensed = await condense(memex)
    return condensed + await memex.dream_due()


async def condense(memex: AsyncMemex) -> list[ConsolidationRun]:
    """Condense every due tenant's oldest batch (abstractive with an LLM)."""
    if memex.llm is None:
        return await memex.consolidate_due()
    runs = []
    for plan in await memex.consolidate_due(dry_run=True):
        if plan.status != "dry_run":
            runs.append(plan)  # a failed tenant, recorded by SQL
            continue
        summary = await _abstract(memex.llm, plan.details["sources"])
        try:
            run = await memex.consolidate(
                plan.agent_id,
                plan.user_id,
                summary=summary,
                source_ids=plan.details["source_ids"],
            )
        except Conflict:
            log.info(
                "consolidation: a batch of %s/%s changed; next tick", plan.agent_id, plan.user_id
            )
            continue
        if run is not None:
            runs.append(run)
    return runs


async def _abstract(llm: ChatModel, sources: list[dict[str, Any]]) -> str | None:
    """The model's summary of a batch, or None (the extractive one) if it fails."""
    memories = "\n".join(f"({s['created_at'][:10]}) {s['content']}" for s in sources)
    try:
        reply = await llm.chat(
            [
                {"role": "system", "content": SUMMARY_SYSTEM},
                {"role": "user", "content": f"Memories, oldest first:\n{memories}"},
            ]
        )
    except LLMError as exc:
        log.warning("consolidation: the LLM failed (%s); extractive summary", exc)
        return None
    text = (reply.content or "").strip()
    if not text or len(text) > 32768:
        log.warning("consolidation: the LLM's summary is empty or too long; extractive summary")
        return None
    return text
