"""Dreaming with an LLM, beyond contradictions: merging duplicate or paraphrased facts
(merge_facts) and rewriting a fragmented section (rewrite_section), as MemexAI's
consolidation agent does.

Each proposal is untrusted input, checked like the contradiction edits
(memexdb.agentic.consolidation): validated like a request (extra fields, such as a
tenant, refused; paths follow the file rule), against a file the model was shown and the
content it was shown, bounded in size (a merge or a rewrite never makes the text longer)
and in number (DREAM_MAX_EDITS with the other edits). A change that would drop a
name or a number of the text it replaces is refused: the model may reword, not forget.

Each applied change is one revision by dream-agent on behalf of the caller, written
through the files' one write path based on the revision shown (a file written since is
refused as stale, never clobbered; restore_revision undoes it), and one line with its
reason in user/dream-log.md.
"""

from __future__ import annotations

import itertools
import logging
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from pydantic import BaseModel, ValidationError

from memexdb.agentic.models import ProposedMerge, ProposedRewrite
from memexdb.client import AsyncMemex
from memexdb.error_models import field_errors
from memexdb.errors import Conflict, InvalidArgument, NotFound
from memexdb.llm import ToolCall, function_tool

log = logging.getLogger("memexdb.jobs")

DREAM_ACTOR = "dream-agent"
DREAM_LOG = "user/dream-log.md"

_PROPOSALS: dict[str, type[ProposedMerge] | type[ProposedRewrite]] = {
    "merge_facts": ProposedMerge,
    "rewrite_section": ProposedRewrite,
}
TOOLS = tuple(_PROPOSALS)


@dataclass(frozen=True)
class Shown:
    """A file as the model was shown it (and as this dream's changes left it)."""

    revision: int
    content: str


class Refused(Exception):
    """A proposal that is not applied; the message says why."""


def tools() -> list[dict[str, Any]]:
    """The tools' schemas, which proposals are checked against."""

    def schema(model: type[BaseModel]) -> dict[str, Any]:
        found = model.model_json_schema()
        found.pop("title", None)
        return found

    return [
        function_tool(
            "merge_facts",
            "Merge duplicate or paraphrased facts of one file into one statement: each fact"
            " (copied exactly, once in the file) goes and `merged` takes the last one's place.",
            schema(ProposedMerge),
        ),
        function_tool(
            "rewrite_section",
            "Rewrite a fragmented section of one file (old_text, copied exactly, once in the"
            " file) as new_text: no longer, every fact kept.",
            schema(ProposedRewrite),
        ),
    ]


async def apply(
    memex: AsyncMemex, tenant: tuple[str, str], shown: dict[str, Shown], call: ToolCall
) -> None:
    """Apply one merge_facts or rewrite_section proposal for `tenant` (Refused saying why
    it is not); `shown` follows the files this dream changed."""
    try:
        arguments = call.argument_object()
        proposal = _PROPOSALS[call.name].model_validate(arguments)
    except ValueError as exc:  # not JSON (ValidationError is a ValueError too)
        if isinstance(exc, ValidationError):
            reasons = "; ".join(f"{e.field}: {e.message}" for e in field_errors(exc))
            raise Refused(reasons[:300]) from None
        raise Refused(str(exc)) from None
    file = shown.get(proposal.path)
    if file is None:
        raise Refused("not a file the model was shown")
    if isinstance(proposal, ProposedMerge):
        content, said = _merged(file.content, proposal), f"{len(proposal.facts)} facts merged"
    else:
        content, said = _rewritten(file.content, proposal), "a fragmented section rewritten"
    writer = memex.delegated(DREAM_ACTOR)
    try:
        saved = await writer.write_file(
            *tenant, proposal.path, content, base_revision=file.revision
        )
    except (Conflict, NotFound):
        raise Refused(f"stale: written since revision {file.revision} was shown") from None
    except InvalidArgument as exc:
        raise Refused(f"{exc.field}: {exc.message}") from None
    shown[proposal.path] = Shown(saved.revision, content)
    reason = f" ({proposal.reason})" if proposal.reason else ""
    await _log(writer, tenant, f"{proposal.path}: {said}{reason}")


def _once(content: str, text: str, what: str) -> int:
    at = content.find(text)
    if at < 0 or content.find(text, at + 1) >= 0:
        raise Refused(f"{what} does not occur exactly once in the file as shown")
    return at


def _merged(content: str, merge: ProposedMerge) -> str:
    spans = sorted(
        (_once(content, fact, f"fact {i + 1}"), fact) for i, fact in enumerate(merge.facts)
    )
    for (start, fact), (after, _) in itertools.pairwise(spans):
        if start + len(fact) > after:
            raise Refused("the facts overlap")
    if len(merge.merged) > sum(len(fact) for fact in merge.facts):
        raise Refused("merged is longer than the facts it merges")
    _keeps_facts("\n".join(merge.facts), merge.merged)
    *gone, (last, last_fact) = spans
    merged = content[:last] + merge.merged + content[last + len(last_fact) :]
    for start, fact in reversed(gone):  # from the end: the earlier positions stay right
        end = start + len(fact)
        if merged[end : end + 1] == "\n" and (start == 0 or merged[start - 1] == "\n"):
            end += 1  # a whole line goes with its newline
        merged = merged[:start] + merged[end:]
    return merged


def _rewritten(content: str, rewrite: ProposedRewrite) -> str:
    at = _once(content, rewrite.old_text, "old_text")
    if len(rewrite.new_text) > len(rewrite.old_text):
        raise Refused("new_text is longer than old_text: a rewrite tidies, it does not grow")
    _keeps_facts(rewrite.old_text, rewrite.new_text)
    return content[:at] + rewrite.new_text + content[at + len(rewrite.old_text) :]


# a list marker, and a word: letters, digits and the marks inside dates, times and names
_MARKER = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+")
_WORD = re.compile(r"\w[\w'./:-]*")


def _keeps_facts(before: str, after: str) -> None:
    """Refused if `after` lacks a name or a number of `before`: a word with a digit, or a
    capitalized word that does not start its sentence (case ignored where it is found)."""
    kept = after.casefold()
    missing: list[str] = []
    for sentence in re.split(r"(?<=[.!?])\s+|\n+", before):
        for index, word in enumerate(_WORD.findall(_MARKER.sub("", sentence))):
            word = word.rstrip("./:-'")
            names = any(c.isdigit() for c in word) or (index > 0 and word[:1].isupper())
            if names and word.casefold() not in kept and word not in missing:
                missing.append(word)
    if missing:
        raise Refused(f"drops facts: {', '.join(missing)[:200]}")


async def _log(writer: AsyncMemex, tenant: tuple[str, str], line: str) -> None:
    """One line under today's heading of the dream log, as memex._dream_log writes them."""
    now = datetime.now(UTC)
    try:
        await writer.patch_file(
            *tenant, DREAM_LOG, heading=f"## {now:%Y-%m-%d}", append=f"- {now:%H:%M} {line}"
        )
    except (Conflict, InvalidArgument) as exc:  # a full log: the revision still says it
        log.warning("dreaming: could not log %r in %s (%s)", line, DREAM_LOG, exc)
