"""memory_memorize over AsyncMemex: keep what is durable in raw text.

With an LLM configured, the model reads the text next to the tenant's most relevant
files and memories and proposes memory_write / memory_patch calls. Each proposal is
untrusted input: it is parsed and validated like a request (the tenant is always the
caller's; the model only names a virtual path), bounded in number and size, and applied
through the same write and patch path as the raw tools, as `memorize-agent` on behalf of
the caller (SQL records both). Without an LLM, or when it fails, a deterministic fallback
keeps the text as one episodic memory, dated: its one home, so that a search or a
smart_read finds it once (a copy in a log file came back as a second passage and spent
smart_read's budget twice), and condensing summarizes it with the others once it is old;
memex.store, called as memorize-agent, writes its access-log entry (operation memorize)
in the same statement. The result says which path ran.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from pydantic import ValidationError

from memexdb.agentic.models import (
    MEMORIZE_CONTEXT_CHARS,
    MEMORIZE_FILE_LIST,
    MEMORIZE_MAX_PROPOSALS,
    MEMORIZE_PROPOSAL_MAX_CHARS,
    MemorizeChange,
    MemorizeOut,
    MemorizeRefusal,
    MemorizeRequest,
    ProposedPatch,
    ProposedWrite,
)
from memexdb.client import AsyncMemex
from memexdb.error_models import field_errors
from memexdb.errors import Conflict, InvalidArgument, NotFound
from memexdb.fields import QUERY_MAX_CHARS
from memexdb.llm import LLMError, ToolCall, function_tool

MEMORIZE_ACTOR = "memorize-agent"

MEMORIZE_SYSTEM = f"""\
You maintain the long-term memory files of an AI agent about one user. You are given the
user's file names, the memory most relevant to a new text, and the new text. Keep what
will still matter in later conversations (facts about the user, preferences, decisions,
plans, commitments, procedures); ignore small talk and what is already recorded.

Record it with tool calls:
- memory_patch with `append` (and a markdown `heading` such as "## Preferences") to add
  to a file; the heading and the file are created when missing.
- memory_patch with `old_text` and `new_text` to correct something recorded that changed;
  old_text must be copied exactly and occur once in the file.
- memory_write to create a new file with its whole content.
Paths are relative: user/... for what concerns the user (user/profile.md,
user/projects/<name>.md), agent/... for your own notes. Use at most
{MEMORIZE_MAX_PROPOSALS} calls, each under {MEMORIZE_PROPOSAL_MAX_CHARS}
characters. Make no call when nothing is worth keeping."""


def memorize_tools() -> list[dict[str, Any]]:
    """The tools the inner model may call: the schemas the proposals are checked against."""
    return [
        function_tool(
            "memory_write",
            "Create or overwrite a memory file with its whole content.",
            _tool_schema(ProposedWrite),
        ),
        function_tool(
            "memory_patch",
            "Append under a markdown heading (created if absent), or replace one exact text.",
            _tool_schema(ProposedPatch),
        ),
    ]


def _tool_schema(model: type[ProposedWrite] | type[ProposedPatch]) -> dict[str, Any]:
    schema = model.model_json_schema()
    schema.pop("title", None)
    return schema


async def memorize(
    memex: AsyncMemex, request: MemorizeRequest, now: datetime | None = None
) -> MemorizeOut:
    """Keep what is durable in `request.text` (see the module's docstring); `now` (by
    default the time of the call) dates the fallback's memory."""
    now = now or utc_now()
    agent = memex.delegated(MEMORIZE_ACTOR)
    # Refuse a caller without write access before spending a model call on it.
    await agent.authorize(request.agent_id, request.user_id, "write")
    llm = memex.llm
    if llm is None:
        return await _fallback(agent, request, now, None)
    try:
        reply = await llm.chat(
            await _memorize_messages(agent, request, now), tools=memorize_tools()
        )
    except LLMError as exc:
        return await _fallback(agent, request, now, str(exc))
    applied: list[MemorizeChange] = []
    refused: list[MemorizeRefusal] = []
    for index, call in enumerate(reply.tool_calls):
        if index >= MEMORIZE_MAX_PROPOSALS:
            refused.append(_refusal(call, f"over {MEMORIZE_MAX_PROPOSALS} proposals"))
            continue
        try:
            applied.append(await _apply(agent, request, call))
        except _Refused as exc:
            refused.append(_refusal(call, str(exc)))
    return MemorizeOut(mode="llm", applied=applied, refused=refused)


class _Refused(Exception):
    """A proposal that is not applied; the message says why."""


def _refusal(call: ToolCall, reason: str) -> MemorizeRefusal:
    return MemorizeRefusal(tool=call.name[:100], arguments=call.arguments[:500], reason=reason)


async def _apply(agent: AsyncMemex, request: MemorizeRequest, call: ToolCall) -> MemorizeChange:
    try:
        arguments = call.argument_object()
    except ValueError as exc:
        raise _Refused(str(exc)) from None
    who = (request.agent_id, request.user_id)
    try:
        if call.name == "memory_write":
            write = ProposedWrite.model_validate(arguments)
            file = await agent.write_file(*who, write.path, write.content)
        elif call.name == "memory_patch":
            patch = ProposedPatch.model_validate(arguments)
            file = await agent.patch_file(*who, **patch.model_dump())
        else:
            raise _Refused(f"unknown tool {call.name[:100]!r}: memory_write or memory_patch")
    except ValidationError as exc:
        raise _Refused("; ".join(f"{e.field}: {e.message}" for e in field_errors(exc))) from None
    except InvalidArgument as exc:
        raise _Refused(f"{exc.field}: {exc.message}") from None
    except (Conflict, NotFound) as exc:
        raise _Refused(str(exc)) from None
    # Other errors (forbidden, rate limited, database down) are the caller's or the
    # service's, not the proposal's: they fail the call.
    return MemorizeChange(
        tool=call.name, path=file.path, memory_id=file.memory_id, revision=file.revision
    )


async def _memorize_messages(
    agent: AsyncMemex, request: MemorizeRequest, now: datetime
) -> list[dict[str, Any]]:
    files, _ = await agent.list_files(request.agent_id, request.user_id, limit=MEMORIZE_FILE_LIST)
    names = "\n".join(f"- {f.path} ({f.size} chars)" for f in files) or "(none yet)"
    context = await agent.smart_read(
        request.agent_id,
        request.user_id,
        request.text[:QUERY_MAX_CHARS],
        budget=MEMORIZE_CONTEXT_CHARS,
    )
    user = (
        f"Now: {now:%Y-%m-%d %H:%M} UTC\n\nFiles:\n{names}\n\n"
        f"Relevant memory:\n{context.context or '(nothing yet)'}\n\n"
        f"New text:\n{request.text}"
    )
    return [{"role": "system", "content": MEMORIZE_SYSTEM}, {"role": "user", "content": user}]


async def _fallback(
    agent: AsyncMemex, request: MemorizeRequest, now: datetime, llm_error: str | None
) -> MemorizeOut:
    memory = await agent.store(
        request.agent_id,
        request.user_id,
        request.text,
        memory_type="episodic",
        metadata={"source": "memorize"},
        created_at=now,
    )
    return MemorizeOut(
        mode="fallback",
        applied=[
            MemorizeChange(tool="store_memory", path=None, memory_id=memory.id, revision=None)
        ],
        refused=[],
        llm_error=llm_error,
    )


def utc_now() -> datetime:
    return datetime.now(UTC)


__all__ = ["MEMORIZE_ACTOR", "memorize", "memorize_tools", "utc_now"]
