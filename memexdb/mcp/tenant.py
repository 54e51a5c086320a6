"""Whose memories a tool call touches: the seam between MCP tools and authentication.

Today the tenant comes from the tool arguments (`ArgumentTenant`). When the service
authenticates callers, a resolver that reads the caller's credentials replaces it
(e.g. an API key bound to one agent_id): the tools stay the same, only the resolver
passed to `build_mcp_server` changes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True, slots=True)
class Tenant:
    """The (agent_id, user_id) pair that owns memories."""

    agent_id: str
    user_id: str


@dataclass(frozen=True, slots=True)
class Caller:
    """What the transport knows about who is calling: the HTTP request headers (None on
    stdio). Headers are client-supplied: only a credential verified by the resolver
    (or by authentication middleware) identifies anyone."""

    headers: Mapping[str, str] | None = None


class TenantResolver(Protocol):
    """Decide the tenant of one tool call from the requested ids and the caller.

    Raise `PermissionError` to refuse the call; its message reaches the client as a
    tool error.
    """

    async def resolve(self, agent_id: str, user_id: str, caller: Caller) -> Tenant: ...


class ArgumentTenant:
    """The tenant is what the tool arguments say (no authentication yet)."""

    async def resolve(self, agent_id: str, user_id: str, caller: Caller) -> Tenant:
        return Tenant(agent_id, user_id)
