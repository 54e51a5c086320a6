"""MemexStore, LangGraph's long-term memory store on memexdb (`pip install
memexdb[langgraph]`). Defined in memexdb_client.langgraph_store, so that it imports with
only `memexdb-client[langgraph]` installed too; see docs/langgraph.md."""

from memexdb_client.langgraph_store import MemexStore, item_id

__all__ = ["MemexStore", "item_id"]
