"""Consolidation with an LLM, over AsyncMemex: the ticks of the service's scheduler (where
pg_cron does not run them; memexdb.runtime.consolidation) and "run now" (`run_now`, whoever
asks: REST's POST /v1/admin/dream/run and the console, through
memexdb.agentic.operations.RUN_NOW): old memories condensed (memex.consolidate_due),
then files tidied (memex.dream_due).

Without an LLM condensing is SQL's, memex.consolidate_due: extractive summaries,
archiving, lineage and locking all happen there; the service's tick runs its batches one
transaction each (memex.consolidate_tenant), so that a client's write never waits for a
whole tick. With an LLM (MEMEX_LLM_URL) the summary
of each due batch is abstractive: the tick asks SQL for the plan (a dry run: the batches
and their sources), has the model summarize each batch, and hands the summary back to
memex.consolidate_tenant together with the batch it summarizes, so the bookkeeping is the
same SQL; a batch that changed meanwhile (MX409) waits for the next tick, and a model
that fails leaves that batch to the extractive summary.

Dreaming with an LLM also merges duplicate or paraphrased facts and rewrites fragmented
sections (memexdb.agentic.dream_changes: checked, one revision each, applied first), and
resolves contradictions: the tick asks SQL which tenants the next
dream takes and their files (memex.dream_plan: those written since the last dream first,
then the older ones they may contradict), shows them to the model, and hands the
edits it proposes (replace one exact text, as a memory_patch does) to memex.dream_due,
which applies them in the same run and revision as its tidying, as dream-agent. Each
proposal is untrusted: it is validated like a request, must name a file the model was
shown (at the revision shown), and is bounded in number and size; refused ones are
recorded in the run's details. A model that fails leaves the files to the tidying alone.
"""

from __future__ import annotations

import logging
from typing import Any

from pydantic import ValidationError

from memexdb.agentic import dream_changes
from memexdb.agentic.models import DREAM_LLM_CONTEXT_CHARS, DREAM_MAX_EDITS, ProposedEdit
from memexdb.client import AsyncMemex
from memexdb.error_models import field_errors
from memexdb.errors import Conflict
from memexdb.fields import CONTENT_MAX_CHARS
from memexdb.llm import ChatModel, LLMError, ToolCall, function_tool
from memexdb.types import ConsolidationRun, DreamPlan

log = logging.getLogger("memexdb.jobs")

SUMMARY_SYSTEM = """\
You condense an AI agent's old memories about one user into one summary that replaces
them in its memory. Keep every durable fact (people, places, dates, preferences,
decisions, plans, commitments, procedures) with its date as "(YYYY-MM-DD)"; when two
memories contradict each other keep the later one; drop small talk and repetition.
Write a plain list, one fact per line starting with "- ". Write nothing else."""

DREAM_SYSTEM = f"""\
You review the memory files an AI agent keeps about one user, to keep them accurate and
readable for the next conversation. Change only what needs it, with these tools:
- resolve_contradiction: two statements that cannot both be true now (an old address and
  a new one, a job that changed, a preference reversed). When the files show which is
  current (a date, "now", "moved", "no longer", a later dated entry), fix the outdated
  statement: old_text copied exactly from the file (a whole line or sentence, occurring
  once in it), new_text the corrected statement, kept as history when that is useful
  ("Lived in Berlin until 2026-03"), or empty to remove it. When you cannot tell which
  statement is current, leave both.
- merge_facts: the same fact stated more than once in one file, in other words: the
  facts copied exactly, and one statement that says all they say (every name, date and
  number kept), no longer than they are together.
- rewrite_section: a section whose facts are scattered in fragments: old_text copied
  exactly, new_text the same facts in fewer, clearer lines (every name, date and number
  kept), no longer than old_text.
Give each call a short reason. Add no facts. At most {DREAM_MAX_EDITS} calls in
all; none when the files are fine."""


async def tick(memex: AsyncMemex) -> list[ConsolidationRun]:
    """One consolidation tick over every tenant: condensing, then dreaming over files;
    the runs that did something."""
    condensed = await condense(memex)
    return condensed + await dream(memex)


# Why a tenant's step did not run: memex.consolidate_tenant and memex.dream_tenant return
# nothing while another runner (the scheduler's tick, another "run now") holds the
# tenant's consolidation lock.
LOCKED = (
    "another runner (the scheduler's tick or another run) holds this tenant's"
    " consolidation lock; run it again once that one has finished"
)


async def run_now(
    memex: AsyncMemex,
    tenant: tuple[str, str] | None = None,
    *,
    dry_run: bool = False,
    force: bool = False,
    skipped: list[str] | None = None,
) -> list[ConsolidationRun]:
    """ "Run now", whoever asks (REST, the console): condense, then dream over files, for
    `tenant` or (None) every due tenant; with an LLM when one is configured, as the
    scheduled tick does. For a tenant, `skipped` (when given) receives the steps
    ("condense", "dream") that did not run because another runner held the tenant
    (LOCKED)."""
    if tenant is None and not dry_run:
        return await tick(memex)
    condensed = await condense(memex, tenant, dry_run=dry_run, force=force, skipped=skipped)
    return condensed + await dream(memex, tenant, dry_run=dry_run, force=force, skipped=skipped)


async def dream(
    memex: AsyncMemex,
    tenant: tuple[str, str] | None = None,
    *,
    dry_run: bool = False,
    force: bool = False,
    skipped: list[str] | None = None,
) -> list[ConsolidationRun]:
    """Dream over the due tenants' files (or over `tenant`'s): with an LLM, the merges and
    rewrites the model proposes are applied first (one revision each), then the
    contradictions it finds are resolved in the same run as the tidying. A dry run returns
    SQL's plan and asks no model. `skipped` receives "dream" when `tenant`'s run did not
    run because another runner held the tenant."""
    edits = None
    changed: dict[tuple[str, str], list[dict[str, Any]]] = {}
    if memex.llm is not None and not dry_run:
        edits = []
        for plan in await memex.dream_plan(*(tenant or (None, None)), force=force):
            proposed, applied = await _resolutions(memex, plan)
            if applied:
                changed[(plan.agent_id, plan.user_id)] = proposed
            else:
                edits += proposed
    if tenant is None:
        runs = await memex.dream_due(dry_run=dry_run, edits=edits)
        # A tenant whose files the model's merges or rewrites changed is no longer due by
        # SQL's rule (its files' newest writes are dream-agent's): its run, which tidies
        # and records the rest of its proposals, is forced.
        for who, its_edits in changed.items():
            if (run := await memex.dream(*who, force=True, edits=its_edits)) is not None:
                runs.append(run)
        return runs
    if tenant in changed:
        edits = (edits or []) + changed[tenant]
    forced = force or tenant in changed
    run = await memex.dream(*tenant, dry_run=dry_run, force=forced, edits=edits)
    if run is None and skipped is not None:
        skipped.append("dream")
    return [run] if run is not None else []


async def condense(
    memex: AsyncMemex,
    tenant: tuple[str, str] | None = None,
    *,
    dry_run: bool = False,
    force: bool = False,
    skipped: list[str] | None = None,
) -> list[ConsolidationRun]:
    """Condense every due tenant's oldest batch, or `tenant`'s (`force`: even if not due);
    abstractive with an LLM. A dry run returns SQL's plans and asks no model. `skipped`
    receives "condense" when `tenant`'s run did not run because another runner held it."""
    locked = skipped if skipped is not None else []
    if dry_run:
        if tenant is None:
            return await memex.consolidate_due(dry_run=True)
        run = await memex.consolidate(*tenant, dry_run=True, force=force)
        if run is None:
            locked.append("condense")
        return [run] if run is not None else []
    if memex.llm is None:
        if tenant is None:
            return await _condense_due(memex)
        run = await memex.consolidate(*tenant, force=force)
        if run is None:
            locked.append("condense")
        return [run] if run is not None else []
    if tenant is None:
        plans = await memex.consolidate_due(dry_run=True)
    else:
        plan = await memex.consolidate(*tenant, dry_run=True, force=force)
        if plan is None:
            locked.append("condense")
        plans = [plan] if plan is not None and plan.status != "nothing" else []
    runs = []
    for plan in plans:
        if plan.status != "dry_run":
            runs.append(plan)  # a failed tenant, recorded by SQL
            continue
        summary = await _abstract(memex.llm, plan.details["sources"])
        try:
            run = await memex.consolidate(
                plan.agent_id,
                plan.user_id,
                force=force,
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
        elif tenant is not None:
            locked.append("condense")
    return runs


async def _condense_due(memex: AsyncMemex) -> list[ConsolidationRun]:
    """A tick without an LLM: memex.consolidate_due's work, one batch per transaction.
    The due tenants come from its plan (a dry run); each batch is then condensed by its
    own call of memex.consolidate_tenant, which computes the summary before it writes
    and commits right after, so a client's store into the tenant never waits for the
    rest of the tick (a tick in one transaction would hold the tenant's counters from its
    first summary to its last). Within dream_config.write_budget summaries."""
    budget = (await memex.dream_config()).write_budget
    runs: list[ConsolidationRun] = []
    for plan in await memex.consolidate_due(dry_run=True):
        if plan.status != "dry_run":
            runs.append(plan)  # a failed tenant, recorded by SQL
            continue
        while budget > 0:
            run = await memex.consolidate(plan.agent_id, plan.user_id)
            if run is None or run.status != "done":
                break  # another runner holds it, not due any more, or being written
            runs.append(run)
            budget -= 1
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
    if not text or len(text) > CONTENT_MAX_CHARS:
        log.warning("consolidation: the LLM's summary is empty or too long; extractive summary")
        return None
    return text


def _resolve_tool() -> dict[str, Any]:
    schema = ProposedEdit.model_json_schema()
    schema.pop("title", None)
    return function_tool(
        "resolve_contradiction",
        "Replace the one occurrence of old_text in the file at path with new_text.",
        schema,
    )


async def _resolutions(memex: AsyncMemex, plan: DreamPlan) -> tuple[list[dict[str, Any]], bool]:
    """Ask the model about one tenant's files: its merges and rewrites are applied here
    (memexdb.agentic.dream_changes: one revision each), its contradiction edits returned
    for SQL to apply with the tidying, at the revision the files are at then; refused
    proposals of every kind are returned with the reason, for the run's details; nothing if
    the model fails. Also whether a merge or a rewrite was applied."""
    assert memex.llm is not None
    shown: dict[str, dream_changes.Shown] = {}
    parts: list[str] = []
    used = 0
    # the files written since the last dream first, then the others they may contradict
    for file in sorted(plan.files, key=lambda f: not f["new"]):
        if used + len(file["content"]) > DREAM_LLM_CONTEXT_CHARS:
            continue
        used += len(file["content"])
        shown[file["path"]] = dream_changes.Shown(file["revision"], file["content"])
        since = " (written since the last review)" if file["new"] else ""
        parts.append(f"=== {file['path']}{since} ===\n{file['content']}")
    if not parts:
        return [], False
    try:
        reply = await memex.llm.chat(
            [
                {"role": "system", "content": DREAM_SYSTEM},
                {"role": "user", "content": "\n\n".join(parts)},
            ],
            tools=[_resolve_tool(), *dream_changes.tools()],
        )
    except LLMError as exc:
        log.warning(
            "dreaming: the LLM failed for %s/%s (%s); tidying only",
            plan.agent_id,
            plan.user_id,
            exc,
        )
        return [], False
    tenant = (plan.agent_id, plan.user_id)
    edits: list[dict[str, Any]] = []
    applied = False
    for index, call in enumerate(reply.tool_calls):
        over_limit = index >= DREAM_MAX_EDITS
        if call.name in dream_changes.TOOLS and not over_limit:
            try:
                await dream_changes.apply(memex, tenant, shown, call)
                applied = True
            except dream_changes.Refused as exc:
                edits.append({"path": _path_of(call), "refused": str(exc)})
            continue
        edits.append(_checked_edit(call, shown, over_limit=over_limit))
    for edit in edits:  # at the revision this dream's merges and rewrites left
        if "refused" not in edit:
            edit["revision"] = shown[edit["path"]].revision
    return [{"agent_id": tenant[0], "user_id": tenant[1]} | edit for edit in edits], applied


def _path_of(call: ToolCall) -> str:
    """The path a proposal names, for the record of a refusal ("" if it names none)."""
    try:
        path = call.argument_object().get("path", "")
    except ValueError:
        return ""
    return path[:300] if isinstance(path, str) else ""


def _checked_edit(
    call: ToolCall, shown: dict[str, dream_changes.Shown], *, over_limit: bool
) -> dict[str, Any]:
    """One proposal as an edit for SQL, or as a refusal naming the reason."""

    def refused(path: object, reason: str) -> dict[str, Any]:
        # SQL records a refusal under a path; a proposal without a usable one gets ""
        return {"path": path if isinstance(path, str) else "", "refused": reason}

    try:
        arguments = call.argument_object()
    except ValueError as exc:
        return refused("", str(exc))
    path = str(arguments.get("path", ""))[:300]
    if over_limit:
        return refused(path, f"over {DREAM_MAX_EDITS} edits")
    if call.name != "resolve_contradiction":
        return refused(path, f"unknown tool {call.name[:100]!r}")
    try:
        edit = ProposedEdit.model_validate(arguments)
    except ValidationError as exc:
        reasons = "; ".join(f"{e.field}: {e.message}" for e in field_errors(exc))
        return refused(path, reasons[:300])
    if edit.path not in shown:
        return refused(edit.path, "not a file the model was shown")
    return edit.model_dump()
