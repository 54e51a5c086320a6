"""Structured results of the MCP tools (their JSON schemas are the tools' outputSchema)."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal
from uuid import UUID

from pydantic import BaseModel, Field

from memexdb.types import Memory, SearchHit

MemoryTypeName = Literal["episodic", "semantic", "procedural"]


class StoredMemory(BaseModel):
    """A stored memory."""

    id: UUID
    agent_id: str
    user_id: str
    content: str
    memory_type: MemoryTypeName
    importance: float
    metadata: dict[str, Any]
    created_at: datetime
    expires_at: datetime | None = None

    @classmethod
    def of(cls, memory: Memory) -> StoredMemory:
        return cls(
            id=memory.id,
            agent_id=memory.agent_id,
            user_id=memory.user_id,
            content=memory.content,
            memory_type=memory.memory_type.value,
            importance=memory.importance,
            metadata=memory.metadata,
            created_at=memory.created_at,
            expires_at=memory.expires_at,
        )


class Hit(BaseModel):
    """One search result with the parts of its score:
    score = (alpha * relevance + (1 - alpha) * recency) * importance."""

    id: UUID
    content: str
    memory_type: MemoryTypeName
    importance: float
    metadata: dict[str, Any]
    created_at: datetime
    expires_at: datetime | None = None
    score: float
    relevance: float = Field(description="cosine similarity of query and memory (vector mode)")
    similarity: float | None
    recency: float = Field(description="exp(-ln 2 * age_days / half_life_days)")
    text_rank: float | None

    @classmethod
    def of(cls, hit: SearchHit) -> Hit:
        return cls(
            id=hit.id,
            content=hit.content,
            memory_type=hit.memory_type.value,
            importance=hit.importance,
            metadata=hit.metadata,
            created_at=hit.created_at,
            expires_at=hit.expires_at,
            score=hit.score,
            relevance=hit.relevance,
            similarity=hit.similarity,
            recency=hit.recency,
            text_rank=hit.text_rank,
        )


class SearchResults(BaseModel):
    """Ranked memories of one tenant, best first."""

    agent_id: str
    user_id: str
    query: str
    total: int
    results: list[Hit]


class Deleted(BaseModel):
    """The memory that was deleted."""

    deleted: StoredMemory


class Count(BaseModel):
    """Number of live memories of a tenant (of one type, if given)."""

    agent_id: str
    user_id: str
    memory_type: MemoryTypeName | None = None
    count: int
