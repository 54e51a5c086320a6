"""The keys domain's models: API keys and the audit log (sql/keys/: memex.create_key,
list_keys, revoke_key, audit_events)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any
from uuid import UUID

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationInfo,
    field_validator,
)
from pydantic.config import JsonDict

from memexdb.fields import (
    EXAMPLE_AGENT,
    AgentId,
    NoNul,
    OutModel,
    QueryInt,
    QueryIntOrNone,
    RequestModel,
    Timestamp,
    UserId,
    any_text,
    enum_field,
    older_than,
    per_page,
)
from memexdb.types import Access

# --- API keys and the audit log (memex.create_key, list_keys, revoke_key, audit_events) ---

KEY_NAME_MAX_CHARS = 200
KEY_USERS_MAX = 1000
AUDIT_LIMIT_MAX = 1000
DEFAULT_AUDIT_LIMIT = 100

KeyAccess = Annotated[Access, enum_field(Access, Access.__doc__ or "")]
CONFIRM_LAST_KEY = Field(
    description="Revoke the key even if it is the last live key of this admin's scope (of "
    "the database for an operator): without it that is a 409. A database that has had keys "
    "stays closed to requests without one once they are all revoked or expired."
)
KeyName = Annotated[
    str, any_text(KEY_NAME_MAX_CHARS, "A label for people (who holds the key)."), NoNul
]


# A key limited to users names their agent (memex.create_key): said in the schema too.
_USERS_NEED_AGENT: JsonDict = {
    "if": {"required": ["user_ids"], "properties": {"user_ids": {"type": "array"}}},
    "then": {"required": ["agent_id"], "properties": {"agent_id": {"type": "string"}}},
}


class KeyCreate(RequestModel):
    """A key to create: its access and scope. The token comes back once."""

    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            **_USERS_NEED_AGENT,
            "examples": [{"access": "write", "agent_id": EXAMPLE_AGENT, "name": "demo app"}],
        },
    )

    access: KeyAccess
    agent_id: Annotated[
        AgentId | None,
        Field(description="The agent the key may act for; omit for every agent (operator keys)."),
    ] = None
    user_ids: Annotated[
        list[UserId] | None,
        Field(
            min_length=1,
            max_length=KEY_USERS_MAX,
            description="Only these users of the agent (default: all of them).",
        ),
    ] = None
    name: KeyName = ""
    expires_at: Annotated[
        Timestamp, Field(description="The key stops working at this time (UTC if naive).")
    ] = None

    @field_validator("user_ids")
    @classmethod
    def _users_need_agent(cls, value: list[str] | None, info: ValidationInfo) -> list[str] | None:
        if value is not None and info.data.get("agent_id") is None:
            raise ValueError("a key limited to users must name its agent")
        return value


class KeysQuery(RequestModel):
    """Query string of GET /v1/admin/keys."""

    agent_id: Annotated[AgentId | None, Field(description="Only this agent's keys.")] = None


class KeyRef(RequestModel):
    """A key to revoke (DELETE /v1/admin/keys/{key})."""

    key: Annotated[
        str,
        Field(
            min_length=1,
            description="The key's id (a UUID) or its prefix: the 12 hex digits after `mxk_`"
            " in its token, as the key list shows them (the example is such a prefix).",
            examples=["0123456789ab"],
        ),
        NoNul,
    ]
    confirm_last: Annotated[bool, CONFIRM_LAST_KEY] = False


class KeyRevokeQuery(RequestModel):
    """Query string of DELETE /v1/admin/keys/{key}."""

    confirm_last: Annotated[bool, CONFIRM_LAST_KEY] = False


class AuditQuery(RequestModel):
    """Query string of GET /v1/admin/audit."""

    limit: QueryInt = per_page(AUDIT_LIMIT_MAX, "Entries", DEFAULT_AUDIT_LIMIT)
    before: QueryIntOrNone = older_than("Entries older than this id (the next page).")


class _KeyScopeOut(OutModel):
    id: UUID
    prefix: str = Field(description="Identifies the key in lists and logs (not a secret).")
    name: str
    agent_id: str | None
    user_ids: list[str] | None
    access: Access
    created_at: datetime
    expires_at: datetime | None


class KeyCreatedOut(_KeyScopeOut):
    """The new key. `token` is the secret, shown this once: store it now."""

    token: str


class KeyOut(_KeyScopeOut):
    """An API key (never its secret)."""

    created_by: str
    revoked_at: datetime | None
    last_used_at: datetime | None


class KeyList(BaseModel):
    keys: list[KeyOut]


class KeyRevokedOut(OutModel):
    id: UUID
    prefix: str
    agent_id: str | None
    access: Access
    revoked_at: datetime


class AuditEventOut(OutModel):
    id: int
    at: datetime
    actor: str
    action: str
    agent_id: str | None
    user_id: str | None
    details: dict[str, Any]


class AuditList(BaseModel):
    events: list[AuditEventOut]
    next_before: int | None = Field(description="Pass as `before` for older entries.")


class AuthenticateRequest(RequestModel):
    """authenticate: the caller's credentials valid (and, with `admin`, an admin of its
    whole scope)."""

    admin: bool = False


class AuthorizeRequest(RequestModel):
    """authorize: the caller may act on the tenant with `need` access (None: every agent
    / every user)."""

    agent_id: str | None
    user_id: str | None
    need: str
