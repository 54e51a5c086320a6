"""The admin operations on API keys and the audit log: create_key, list_keys, revoke_key,
audit_events.

Each is a function of a Session and its validated request (one memex.* call) and its
declaration (memexdb.operation), from which the Python methods and the REST endpoints
(/v1/admin/keys, /v1/admin/audit) are built. SQL checks the caller is an admin of the
scope (memex.create_key, ...).
"""

from __future__ import annotations

from datetime import datetime

from memexdb.core import sql as core_sql
from memexdb.fields import NoArguments
from memexdb.keys import sql
from memexdb.keys.models import (
    AuditEventOut,
    AuditList,
    AuditQuery,
    AuthenticateRequest,
    AuthorizeRequest,
    KeyCreate,
    KeyCreatedOut,
    KeyList,
    KeyOut,
    KeyRef,
    KeyRevokedOut,
    KeyRevokeQuery,
    KeysQuery,
)
from memexdb.operation import Operation, Paging, Reply, Route, fetch_first, fetch_rows
from memexdb.paging import next_key
from memexdb.session import Session
from memexdb.types import ApiKey, AuditEvent, CreatedKey, RevokedKey


async def create_key(session: Session, request: KeyCreate) -> CreatedKey:
    values = {**request.model_dump(), "access": str(request.access)}
    rows: list[CreatedKey] = await session.fetch(CreatedKey, sql.CREATE_KEY, values)
    return rows[0]


list_keys = fetch_rows(ApiKey, sql.LIST_KEYS)
revoke_key = fetch_first(RevokedKey, sql.REVOKE_KEY)
audit_events = fetch_rows(AuditEvent, sql.AUDIT_EVENTS)


def _audit_page(query: AuditQuery, events: list[AuditEvent]) -> AuditList:
    page = [AuditEventOut.model_validate(e) for e in events]
    return AuditList(events=page, next_before=next_key(page, query.limit, lambda e: e.id))


CREATE_KEY = Operation(
    name="create_key",
    summary="Create an API key (admin); the token is in this answer only",
    request=KeyCreate,
    run=create_key,
    response=KeyCreatedOut,
    sql=("memex.create_key",),
    access="admin",
    domain="keys",
    rest=Route("POST", "/v1/admin/keys", "Created", status=201),
)

LIST_KEYS = Operation(
    name="list_keys",
    summary="List the API keys this admin may manage (no secrets)",
    request=KeysQuery,
    run=list_keys,
    response=KeyList,
    answer=lambda _, keys: KeyList(keys=[KeyOut.model_validate(k) for k in keys]),
    sql=("memex.list_keys",),
    access="admin",
    domain="keys",
    rest=Route("GET", "/v1/admin/keys", "Keys, newest first", source="query"),
)

REVOKE_KEY = Operation(
    name="revoke_key",
    summary="Revoke an API key by id or prefix (effective at once)",
    request=KeyRef,
    run=revoke_key,
    response=KeyRevokedOut,
    sql=("memex.revoke_key",),
    access="admin",
    domain="keys",
    rest=Route(
        "DELETE",
        "/v1/admin/keys/{key}",
        "Revoked",
        source="query",
        wire=KeyRevokeQuery,
        errors=(
            Reply(404, "No such key within this admin's scope"),
            Reply(409, "The last live key of this admin's scope: confirm_last=true revokes it"),
        ),
    ),
)

AUDIT_EVENTS = Operation(
    name="audit_events",
    summary="The audit log (key creation and revocation, erasures, imports...), newest first",
    request=AuditQuery,
    run=audit_events,
    response=AuditList,
    answer=_audit_page,
    sql=("memex.audit_events",),
    access="admin",
    domain="keys",
    pages=Paging("before", "next_before"),
    rest=Route("GET", "/v1/admin/audit", "Entries", source="query"),
)


async def authenticate(session: Session, request: AuthenticateRequest) -> None:
    # memex._enter, the check every call makes (with `admin`, memex._authorize too)
    await session.fetch(None, core_sql.ADMIN_CALLER if request.admin else core_sql.PING)


async def authorize(session: Session, request: AuthorizeRequest) -> None:
    await session.fetch(None, core_sql.AUTHORIZE, request.model_dump())


async def allow_keyless(session: Session, _: NoArguments) -> datetime:
    rows: list[datetime] = await session.fetch(None, sql.ALLOW_KEYLESS)
    return rows[0]


AUTHENTICATE = Operation(
    name="authenticate",
    summary="Whether the caller's credentials are valid (with admin: an admin of its scope)",
    request=AuthenticateRequest,
    run=authenticate,
    sql=("memex._authorize",),
    access="read",
    domain="keys",
)

AUTHORIZE = Operation(
    name="authorize",
    summary="Whether the caller may act on a tenant with read, write or admin access",
    request=AuthorizeRequest,
    run=authorize,
    sql=("memex._authorize",),
    access="read",
    domain="keys",
)

ALLOW_KEYLESS = Operation(
    name="allow_keyless",
    summary="Let requests without a key in again (no live key left; audited)",
    request=NoArguments,
    run=allow_keyless,
    sql=("memex.allow_keyless",),
    access="operator",
    domain="keys",
)
