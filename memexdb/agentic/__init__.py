"""The LLM orchestration layer, one layer above the client (memexdb.client): what asks
the optional chat model (memexdb.llm) and then calls AsyncMemex.

- memorize (memory_memorize, POST /v1/memorize): memexdb.agentic.memorizing;
- search_passages with an answer (memory_search, POST /v1/memory-search):
  memexdb.agentic.answering;
- consolidation with LLM summaries and dream edits, the scheduler's ticks and "run now"
  (POST /v1/admin/dream/run, the console): memexdb.agentic.consolidation.

Each is declared as an Operation in memexdb.agentic.operations (OPERATIONS), from which
REST and MCP serve it. memexdb.client and memexdb.session do not import this package.

Python: `await agentic.memorize(amemex, agent_id, user_id, text)` and
`await agentic.search_passages(amemex, agent_id, user_id, query, answer=True)`, or, with
either client (AsyncMemex or the synchronous Memex),
`memex.call(agentic.MEMORIZE, agent_id=..., user_id=..., text=...)`.
"""

from memexdb.agentic.operations import (
    MEMORIZE,
    OPERATIONS,
    RUN_NOW,
    SEARCH_PASSAGES,
    memorize,
    search_passages,
)

__all__ = ["MEMORIZE", "OPERATIONS", "RUN_NOW", "SEARCH_PASSAGES", "memorize", "search_passages"]
