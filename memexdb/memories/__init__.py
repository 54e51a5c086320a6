"""Memories: facts, events and procedures of a tenant, ranked by relevance, recency and
importance (memexdb.memories.operations)."""
