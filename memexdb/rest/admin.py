"""Admin endpoints: API keys and the audit log. The caller needs an admin key (or the
open loopback mode of a database without keys); SQL checks it (memex.create_key...)."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from memexdb.client import AsyncMemex
from memexdb.paging import next_key
from memexdb.params import (
    AuditEventOut,
    AuditList,
    AuditQuery,
    KeyCreate,
    KeyCreatedOut,
    KeyList,
    KeyOut,
    KeyRevokedOut,
    KeysQuery,
)
from memexdb.rest.endpoint import Endpoint, Reply
from memexdb.rest.parsing import body_of, json_of, memex_of, query_of


async def create_key(request: Request) -> Response:
    body = await body_of(request, KeyCreate)
    created = await memex_of(request).create_key(**body.model_dump())
    return json_of(KeyCreatedOut.model_validate(created), 201)


async def list_keys(request: Request) -> Response:
    query = query_of(request, KeysQuery)
    keys = await memex_of(request).list_keys(query.agent_id)
    return json_of(KeyList(keys=[KeyOut.model_validate(k) for k in keys]))


async def revoke_key(request: Request) -> Response:
    client: AsyncMemex = memex_of(request)
    revoked = await client.revoke_key(request.path_params["key"])
    return json_of(KeyRevokedOut.model_validate(revoked))


async def audit(request: Request) -> Response:
    query = query_of(request, AuditQuery)
    events = await memex_of(request).audit_events(query.limit, query.before)
    page = [AuditEventOut.model_validate(e) for e in events]
    return json_of(
        AuditList(events=page, next_before=next_key(page, query.limit, lambda event: event.id))
    )


ENDPOINTS = (
    Endpoint(
        "POST",
        "/v1/admin/keys",
        create_key,
        "Create an API key (admin); the token is in this answer only",
        Reply(201, "Created", KeyCreatedOut),
        body=KeyCreate,
    ),
    Endpoint(
        "GET",
        "/v1/admin/keys",
        list_keys,
        "List the API keys this admin may manage (no secrets)",
        Reply(200, "Keys, newest first", KeyList),
        query=KeysQuery,
    ),
    Endpoint(
        "DELETE",
        "/v1/admin/keys/{key}",
        revoke_key,
        "Revoke an API key by id or prefix (effective at once)",
        Reply(200, "Revoked", KeyRevokedOut),
        path_params={"key": {"type": "string"}},
        errors=(Reply(404, "No such key within this admin's scope"),),
    ),
    Endpoint(
        "GET",
        "/v1/admin/audit",
        audit,
        "The audit log (key creation and revocation, erasures, imports...), newest first",
        Reply(200, "Entries", AuditList),
        query=AuditQuery,
    ),
)
