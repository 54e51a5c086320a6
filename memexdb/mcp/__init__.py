"""MCP frontend: the memexdb tools over streamable HTTP, SSE and stdio."""

from memexdb.mcp.server import build_mcp_server
from memexdb.mcp.tenant import ArgumentTenant, Caller, Tenant, TenantResolver

__all__ = ["ArgumentTenant", "Caller", "Tenant", "TenantResolver", "build_mcp_server"]
