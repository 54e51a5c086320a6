"""The operations domain's response models (the `operations` REST tag, sql/operations/):
GET /health, /health/live and /health/ready."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from typing import Any, Literal

from pydantic import (
    BaseModel,
    Field,
)

from memexdb.fields import RequestModel

# agents or users per page of agent_stats / user_stats (the console's)
DEFAULT_STATS_LIMIT = 100


class HealthResponse(BaseModel):
    status: str
    db: str
    version: str


class LiveResponse(BaseModel):
    """GET /health/live: the process serves requests (nothing else is checked)."""

    status: Literal["ok"]
    version: str
    pid: int


# database_unavailable (down, or its embedded server being restarted), migrating (a
# migration holds its lock), schema_behind (not migrated to this release yet)
NotReady = Literal["database_unavailable", "migrating", "schema_behind"]


class BlockedLock(BaseModel):
    """A session waiting now for a lock on one of memexdb's tables (memex.lock_waits)."""

    pid: int
    role: str | None = Field(None, description="its role (null when not visible)")
    relation: str = Field(description="the memex table it waits for")
    mode: str = Field(description="the lock mode it asked for, e.g. AccessExclusiveLock")
    waiting_seconds: float | None = None
    blocked_by: list[int] = Field(description="the pids holding or ahead of the lock")
    blocker_roles: list[str]


class ReadyResponse(BaseModel):
    """GET /health/ready: whether this process should get traffic, and if not why;
    `blocked` lists the sessions waiting for a lock on a memex table (a migration behind
    an idle transaction, requests behind a migration) and who blocks them."""

    status: Literal["ok", "unavailable"]
    reason: NotReady | None = None
    message: str | None = None
    version: str
    blocked: list[BlockedLock] = Field(default_factory=list)


class SettingWrite(RequestModel):
    """set_setting: one operator setting of memex.settings and its JSON value."""

    name: str
    value: Any


class AgentStatsQuery(RequestModel):
    """agent_stats: agents in agent_id order after `after` (`agent_id`: that one only)."""

    agent_id: str | None = None
    limit: int = DEFAULT_STATS_LIMIT
    after: str | None = None


class UserStatsQuery(RequestModel):
    """user_stats: the users of an agent in user_id order after `after`."""

    agent_id: str
    limit: int = DEFAULT_STATS_LIMIT
    after: str | None = None


class OverviewQuery(RequestModel):
    """overview_stats: the console's figures over the last `days` days, of the largest
    `tenants` tenants."""

    days: int
    tenants: int


@dataclass(frozen=True, slots=True)
class OverviewFigure:
    """A row of memex.overview_stats."""

    metric: str
    agent_id: str | None
    user_id: str | None
    day: date | None
    kind: str | None
    value: int
