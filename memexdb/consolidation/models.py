"""The consolidation domain's models (sql/consolidation/: memex.consolidate_*,
memex.dream_*): its settings, runs, tenants and pause flags. Condense and dream are its
two steps."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal
from uuid import UUID

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    Strict,
    model_validator,
)
from pydantic.config import JsonDict

from memexdb.fields import (
    EXAMPLE_AGENT,
    EXAMPLE_USER,
    AgentId,
    OutModel,
    QueryInt,
    QueryIntOrNone,
    RequestModel,
    UserId,
    integral,
    older_than,
    per_page,
    query_integer,
    within,
)

# --- Consolidation ("dreaming"): memex.consolidate_*, memex.dream_* ---

# memex.set_dream_config checks the same bounds (tests/test_params.py keeps them in step).
DREAM_BOUNDS: dict[str, tuple[int, int]] = {
    "interval_seconds": (10, 86400),
    "grace_minutes": (0, 10080),
    "threshold": (10, 100_000),
    "batch_size": (2, 1000),
    "summary_chars": (200, 32000),
    "write_budget": (1, 1000),
    "concurrency": (1, 64),
}
RUNS_LIMIT_MAX = 1000
DEFAULT_RUNS_LIMIT = 100


# A setting to change (null: left as it is): an integer within its DREAM_BOUNDS.
Setting = Annotated[int | None, Strict(), BeforeValidator(integral)]


def _setting(name: str, description: str) -> Any:
    """The field of setting `name`: its DREAM_BOUNDS, said in its description too."""
    return within(*DREAM_BOUNDS[name], None, description + " ({low} to {high}).")


class DreamConfig(RequestModel):
    """Consolidation settings to change (PUT /v1/admin/dream/config): any of them."""

    model_config = ConfigDict(
        extra="forbid", json_schema_extra={"examples": [{"grace_minutes": 60}]}
    )

    enabled: Annotated[
        bool | None,
        Field(
            description="Master switch of every consolidation job (pg_cron's and the service's)."
        ),
        Strict(),
    ] = None
    interval_seconds: Setting = _setting("interval_seconds", "Seconds between the service's ticks")
    grace_minutes: Setting = _setting(
        "grace_minutes",
        "Minutes a batch must be old to be condensed, and a tenant quiet before its files are"
        " dreamed over",
    )
    threshold: Setting = _setting("threshold", "Live episodic memories a tenant must exceed")
    batch_size: Setting = _setting("batch_size", "Oldest episodic memories per summary")
    summary_chars: Setting = _setting("summary_chars", "Longest extractive summary")
    write_budget: Setting = _setting("write_budget", "Most summaries and file rewrites per tick")
    concurrency: Setting = _setting("concurrency", "Most tenants per tick")

    def changes(self) -> dict[str, Any]:
        """The settings given (null: left as they are)."""
        return {k: v for k, v in self.model_dump().items() if v is not None}


# The two consolidation jobs: condensing old episodic memories, dreaming over files.
ConsolidationJob = Literal["condense", "dream"]
# Who runs a consolidation job in this database, as the process answering sees it:
# pg_cron (its job is active here), the service (this process's settings offer it; one
# process per database runs it), nobody here (neither), or nobody because
# dream_config.enabled is false.
JobSchedule = Literal["pg_cron", "service", "not scheduled", "disabled"]


class DreamConfigOut(BaseModel):
    enabled: Annotated[
        bool, Field(description="Master switch of every consolidation job (the database's).")
    ]
    interval_seconds: int
    grace_minutes: int
    threshold: int
    batch_size: int
    summary_chars: int
    write_budget: int
    concurrency: int
    condense: Annotated[
        JobSchedule,
        Field(
            description="Who condenses old episodic memories: pg_cron, the service"
            " (MEMEX_CONDENSE_ENABLED, on by default), not scheduled, or disabled"
            " (enabled is false)."
        ),
    ]
    dream: Annotated[
        JobSchedule,
        Field(
            description="Who dreams over files: pg_cron, the service (MEMEX_DREAM_ENABLED,"
            " off by default), not scheduled, or disabled (enabled is false)."
        ),
    ]


class RunsQuery(RequestModel):
    """Query string of GET /v1/admin/dream/runs."""

    agent_id: Annotated[AgentId | None, Field(description="Only this agent's runs.")] = None
    user_id: Annotated[
        UserId | None,
        Field(description="Only this user's runs (of agent_id; without it, of every agent)."),
    ] = None
    limit: QueryInt = per_page(RUNS_LIMIT_MAX, "Runs", DEFAULT_RUNS_LIMIT)
    before: QueryIntOrNone = older_than("Runs older than this id (the next page).")


class DreamUsersQuery(RequestModel):
    """Query string of GET /v1/admin/dream/users."""

    agent_id: Annotated[AgentId | None, Field(description="Only this agent's users.")] = None
    limit: QueryInt = per_page(RUNS_LIMIT_MAX, "Users", DEFAULT_RUNS_LIMIT)
    after: Annotated[
        str | None,
        Field(
            max_length=4100,
            pattern=TENANT_CURSOR,
            description="next_after of the last page (opaque).",
            examples=["01.01"],  # before every tenant: the first page
        ),
    ] = None

    def after_tenant(self) -> tuple[str, str] | None:
        """The (agent_id, user_id) the page starts after."""
        return None if self.after is None else decode_tenant_cursor(self.after)


class PauseRequest(RequestModel):
    """PUT /v1/admin/dream/users/{user_id}/paused."""

    agent_id: AgentId
    paused: Annotated[bool, Strict()]


class TenantPause(PauseRequest):
    """Pause or resume one tenant: PauseRequest (the body) and the path's user_id."""

    user_id: UserId


# the agent of a run to undo
RunAgentId = Annotated[
    AgentId | None,
    Field(
        description="The run's agent (run ids are numbers within an agent's runs): needed"
        " by a caller of every agent when several agents have a run of that number."
    ),
]


class RunAgent(RequestModel):
    """The query string of POST /v1/admin/dream/runs/{run_id}/restore."""

    agent_id: RunAgentId = None


class RunRef(RequestModel):
    """A run to undo (POST /v1/admin/dream/runs/{run_id}/restore)."""

    run_id: Annotated[
        int,
        Field(ge=-(2**63), le=2**63 - 1, description="The condense run's id.", examples=[1]),
        Strict(),
        BeforeValidator(query_integer),
    ]
    agent_id: RunAgentId = None


# one tenant (both ids) or a tick (neither); force is for one tenant: said in the schema
_STRING: JsonDict = {"type": "string"}
_DREAM_RUN_RULES: JsonDict = {
    "allOf": [
        {
            "if": {"required": ["agent_id"], "properties": {"agent_id": _STRING}},
            "then": {"required": ["user_id"], "properties": {"user_id": _STRING}},
        },
        {
            "if": {"required": ["user_id"], "properties": {"user_id": _STRING}},
            "then": {"required": ["agent_id"], "properties": {"agent_id": _STRING}},
        },
        {
            "if": {"required": ["force"], "properties": {"force": {"const": True}}},
            "then": {"required": ["agent_id"], "properties": {"agent_id": _STRING}},
        },
    ],
    # the plan of one tenant: "Try it out" shows what would run and writes nothing
    "examples": [{"agent_id": EXAMPLE_AGENT, "user_id": EXAMPLE_USER, "dry_run": True}],
}


class DreamRunRequest(RequestModel):
    """POST /v1/admin/dream/run: a tick now (no tenant), or one tenant's run."""

    model_config = ConfigDict(extra="forbid", json_schema_extra=_DREAM_RUN_RULES)

    agent_id: Annotated[AgentId | None, Field(description="With user_id: run this tenant.")] = None
    user_id: Annotated[UserId | None, Field(description="With agent_id: run this tenant.")] = None
    dry_run: Annotated[bool, Field(description="Return the plan; write nothing."), Strict()] = False
    force: Annotated[
        bool,
        Field(description="A tenant's run: skip the threshold, grace and pause checks."),
        Strict(),
    ] = False

    @model_validator(mode="after")
    def _both_or_neither(self) -> DreamRunRequest:
        if (self.agent_id is None) != (self.user_id is None):
            raise ValueError("give both agent_id and user_id (one tenant) or neither (a tick)")
        if self.force and self.agent_id is None:
            raise ValueError("force is for one tenant's run")
        return self


class RunOut(OutModel):
    id: int | None = Field(description="null for a plan (dry run) or a tenant not due")
    agent_id: str
    user_id: str
    kind: str = Field(description="condense | dream | restore")
    status: str = Field(description="done | dry_run | nothing | failed | restored | running")
    actor: str | None
    started_at: datetime | None
    finished_at: datetime | None
    memories_in: int | None
    memories_out: int | None
    files_in: int | None
    files_out: int | None
    files_touched: int | None
    summary_id: UUID | None
    restored_by: int | None
    error: str | None
    details: dict[str, Any]


class RunList(BaseModel):
    runs: list[RunOut]
    next_before: int | None


class SkippedStep(BaseModel):
    step: str = Field(description="condense | dream")
    reason: str = Field(description="Why it did not run (e.g. another runner held the tenant).")


class RunNowOut(RunList):
    """POST /v1/admin/dream/run: the runs, and a tenant's steps that did not run."""

    skipped: list[SkippedStep] = Field(
        description="A tenant's steps that did not run, and why: while the scheduler (or"
        " another run) holds the tenant's consolidation lock, its condense or dream step"
        " is skipped, not waited for. Empty for a tick."
    )


class DreamUserOut(OutModel):
    agent_id: str
    user_id: str
    paused: bool
    memory_count: int
    last_dreamed_at: datetime | None
    last_run_id: int | None
    last_run_at: datetime | None
    last_run_kind: str | None
    last_run_status: str | None
    last_error: str | None
    runs_done: int
    runs_failed: int
    runs_restored: int


class DreamUserList(BaseModel):
    """A page of tenants; pass next_after as `after` for the next (null: the last page)."""

    users: list[DreamUserOut]
    next_after: str | None


# a tenant cursor: the UTF-8 bytes of agent_id and user_id in hex, without NUL bytes (ids
# hold none). Any string of this shape is a position in (agent_id, user_id) order, so the
# schema's pattern says exactly what is accepted.
_HEX_TEXT = r"(?:[1-9a-f][0-9a-f]|0[1-9a-f]){1,1024}"
TENANT_CURSOR = rf"^{_HEX_TEXT}\.{_HEX_TEXT}$"


def encode_tenant_cursor(agent_id: str, user_id: str) -> str:
    """An opaque cursor for a page that starts after tenant (agent_id, user_id)."""
    return f"{agent_id.encode().hex()}.{user_id.encode().hex()}"


def decode_tenant_cursor(cursor: str) -> tuple[str, str]:
    agent, user = cursor.split(".")
    # bytes that are not UTF-8 still name a position in the order
    return (
        bytes.fromhex(agent).decode(errors="replace"),
        bytes.fromhex(user).decode(errors="replace"),
    )


class PausedOut(BaseModel):
    agent_id: str
    user_id: str
    paused: bool


class ConsolidateRequest(RequestModel):
    """consolidate: condense one tenant's oldest episodic memories (the tenant checked as
    every tenant field is, by the operation)."""

    agent_id: str
    user_id: str
    dry_run: bool = False
    force: bool = False
    summary: str | None = None
    source_ids: list[UUID | str] | None = None


class DreamTenantRequest(RequestModel):
    """dream: tidy one tenant's files, with the LLM's `edits` over dream_plan."""

    agent_id: str
    user_id: str
    dry_run: bool = False
    force: bool = False
    edits: list[dict[str, Any]] | None = None


class ConsolidateDueRequest(RequestModel):
    """consolidate_due: one consolidation tick over every tenant."""

    dry_run: bool = False


class DreamDueRequest(RequestModel):
    """dream_due: one tick of dreaming over files, every tenant."""

    dry_run: bool = False
    edits: list[dict[str, Any]] | None = None


class DreamPlanQuery(RequestModel):
    """dream_plan: the files the next dream reads, of the due tenants or of one."""

    agent_id: str | None = None
    user_id: str | None = None
    force: bool = False
