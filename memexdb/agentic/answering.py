"""memory_search: memex.search_passages ranks files and memories (BM25 fused with
vectors) and cuts each to a passage (memexdb.files.operations.ranked_passages); with
`answer` and an LLM, the model answers from the numbered passages and the ranks it
cites come back with it."""

from __future__ import annotations

import re
from collections.abc import Sequence

from memexdb.files.models import PassageOut, PassageSearchOut, PassageSearchRequest
from memexdb.files.operations import ranked_passages
from memexdb.llm import ChatModel, LLMError
from memexdb.session import Session

ANSWER_SYSTEM = """\
Answer the question from the numbered memory passages only. Cite each passage you use by
its number in brackets, e.g. [1] or [2][3]. If the passages do not answer the question,
say that the memory does not say. Be brief."""

_CITATION = re.compile(r"\[(\d{1,3})\]")


async def search_passages(session: Session, request: PassageSearchRequest) -> PassageSearchOut:
    """Passages for `request.query`; with `answer`, the LLM's answer citing them."""
    rows = await ranked_passages(session, request)
    passages = [PassageOut.model_validate(row) for row in rows]
    if not request.answer:
        return PassageSearchOut(passages=passages, answer=None, cited=[], llm="not_asked")
    if session.llm is None:
        return PassageSearchOut(passages=passages, answer=None, cited=[], llm="not_configured")
    try:
        answer = await _answer(session.llm, request.query, passages)
    except LLMError as exc:
        return PassageSearchOut(
            passages=passages, answer=None, cited=[], llm="failed", llm_error=str(exc)
        )
    cited = sorted({int(n) for n in _CITATION.findall(answer) if 1 <= int(n) <= len(passages)})
    return PassageSearchOut(passages=passages, answer=answer, cited=cited, llm="answered")


async def _answer(llm: ChatModel, query: str, passages: Sequence[PassageOut]) -> str:
    numbered = "\n\n".join(
        f"[{p.rank}] ({p.path or f'memory {p.memory_id}'})\n{p.passage}" for p in passages
    )
    reply = await llm.chat(
        [
            {"role": "system", "content": ANSWER_SYSTEM},
            {
                "role": "user",
                "content": f"Passages:\n{numbered or '(none)'}\n\nQuestion: {query}",
            },
        ]
    )
    if not reply.content:
        raise LLMError("the model sent no answer")
    return reply.content
