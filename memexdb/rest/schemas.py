"""Request and response bodies of the REST API. Paths and field names follow the memex
reference service, so its clients work unchanged; extra fields are additions."""

from __future__ import annotations

from datetime import datetime
from typing import Any
from uuid import UUID

from pydantic import BaseModel, ConfigDict, Field

from memexdb.types import MemoryType, SearchMode

TenantId = Field(min_length=1, max_length=128)


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


class MemoryCreate(_Body):
    """A memory to store for tenant (agent_id, user_id)."""

    agent_id: str = TenantId
    user_id: str = TenantId
    content: str = Field(min_length=1, max_length=32768)
    memory_type: MemoryType = MemoryType.EPISODIC
    importance: float = Field(default=1.0, ge=0.0, le=2.0, allow_inf_nan=False)
    metadata: dict[str, Any] | None = None
    expires_at: datetime | None = Field(
        default=None, description="The memory disappears from search and count after this."
    )
    created_at: datetime | None = Field(
        default=None, description="Back-date an imported memory (default: now)."
    )


class MemoryBatchCreate(_Body):
    """Many memories in one request, for imports (one statement, all or nothing)."""

    memories: list[MemoryCreate] = Field(min_length=1, max_length=1000)


class MemoryResponse(BaseModel):
    """A stored memory."""

    id: UUID
    agent_id: str
    user_id: str
    content: str
    importance: float
    memory_type: MemoryType
    metadata: dict[str, Any]
    created_at: datetime
    expires_at: datetime | None = None
    score: float | None = None


class MemoryBatchResponse(BaseModel):
    memories: list[MemoryResponse]
    total: int


class MemorySearchRequest(_Body):
    """Search a tenant's memories: score = (alpha*relevance + (1-alpha)*recency)*importance."""

    agent_id: str = TenantId
    user_id: str = TenantId
    query: str = Field(min_length=1, max_length=8000)
    top_k: int = Field(default=10, ge=1, le=100)
    alpha: float = Field(
        default=0.7,
        ge=0.0,
        le=1.0,
        allow_inf_nan=False,
        description="1.0 = pure relevance, 0.0 = pure recency",
    )
    half_life_days: float = Field(default=30.0, gt=0.0, le=36500.0, allow_inf_nan=False)
    memory_type: MemoryType | None = Field(default=None, description="Only this type.")
    memory_types: list[MemoryType] | None = Field(
        default=None, min_length=1, description="Only these types (addition to memex)."
    )
    mode: SearchMode = Field(
        default=SearchMode.VECTOR,
        description="vector (cosine) | text (BM25) | hybrid (cosine + BM25)",
    )
    context_weight: float | None = Field(
        default=None,
        ge=0.0,
        le=1.0,
        allow_inf_nan=False,
        description="How much a memory's neighbours in time lend it relevance"
        " (default 0 in vector mode, 0.5 in text and hybrid mode)",
    )


class SearchResult(MemoryResponse):
    """A ranked memory with the parts of its score."""

    score: float
    similarity: float | None
    text_rank: float | None
    relevance: float
    recency: float


class MemorySearchResponse(BaseModel):
    results: list[SearchResult]
    query: str
    total: int


class CountResponse(BaseModel):
    agent_id: str
    user_id: str
    memory_type: MemoryType | None = None
    count: int


class HealthResponse(BaseModel):
    status: str
    db: str
    version: str


class FieldError(BaseModel):
    field: str
    message: str


class ErrorBody(BaseModel):
    code: str = Field(
        description="invalid_argument | not_found | rate_limited | database_unavailable"
        " | payload_too_large | method_not_allowed | internal_error"
    )
    message: str
    fields: list[FieldError] = Field(default_factory=list)
    retry_after_seconds: float | None = None


class ErrorResponse(BaseModel):
    error: ErrorBody
