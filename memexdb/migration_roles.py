"""What a migration did without the roles it may not create: `memexdb migrate` says it on
every run, not only in the NOTICE of the revision that first tried.

Revisions 0039 and 0040 create two NOLOGIN BYPASSRLS roles, memex_text_lookup and
memex_trigger_owner, when the migrating role may (a superuser, or CREATEROLE and BYPASSRLS
on PostgreSQL 16+); a managed database's owner usually may not. The database then works
the same, slower where each role would own functions, and the SQL layer gives those
functions to memex_owner instead. That NOTICE is sent once, by a revision run once, and
psycopg drops notices unless asked: migrate logs the database's own `memex:` notices and,
after the SQL layer, warns once per role whose functions it could not give that role.
"""

from __future__ import annotations

import json
import logging
from typing import Any

import psycopg
from sqlalchemy import text
from sqlalchemy.engine import Connection

from memexdb.resources import sql_dir

log = logging.getLogger("memexdb")

# sql/migration_roles.json: the roles and what a migration without them means, read by
# Node's migrate() too (clients/typescript/src/direct/roles.ts), so both say the same.
_ROLES: dict[str, Any] = json.loads((sql_dir() / "migration_roles.json").read_text())

# role -> (a function the SQL layer gives it when it can, what runs without it, where the
# operator reads how to add it)
OPTIONAL_ROLES: dict[str, tuple[str, str, str]] = {
    role: (entry["function"], entry["without"], entry["where"])
    for role, entry in _ROLES["optional_roles"].items()
}

# Roles revisions 0008 and 0013 create (cluster-wide, NOLOGIN) and make the migrating
# role a member of: they have no fallback, so their absence stops a first migrate.
BASE_ROLES: dict[str, str] = dict(_ROLES["base_roles"])
MEMBER_OF: tuple[str, ...] = tuple(_ROLES["member_of"])
# what a first migrate that may not create them says, and the warning for an optional one
MESSAGES: dict[str, str] = dict(_ROLES["messages"])


def log_notices(conn: Connection) -> None:
    """Log the database's `memex:` notices on this migration's connection (a revision's
    word on a role it could not create, and why) at INFO: `missing_roles` warns of the
    outcome on every run; others stay unlogged, as before."""
    raw = conn.connection.driver_connection
    assert isinstance(raw, psycopg.Connection)

    def handler(notice: psycopg.errors.Diagnostic) -> None:
        message = notice.message_primary or ""
        if message.startswith("memex:"):
            hint = f" ({notice.message_hint})" if notice.message_hint else ""
            log.info("migrate: the database says: %s%s", message, hint)

    raw.add_notice_handler(handler)


def missing_roles(conn: Connection) -> list[str]:
    """The optional roles whose functions are not theirs after this migration: each logged
    as a WARNING saying what runs without it and where to read how to add it."""
    owners: dict[str, str] = dict(
        conn.execute(
            text(
                "select p.proname::text, pg_get_userbyid(p.proowner)::text from pg_proc p"
                " where p.pronamespace = 'memex'::regnamespace and p.proname = any(:names)"
            ),
            {"names": [function for function, _, _ in OPTIONAL_ROLES.values()]},
        ).all()
    )
    missing = []
    for role, (function, without, where) in OPTIONAL_ROLES.items():
        if owners.get(function) != role:
            missing.append(role)
            log.warning(
                "migrate: %s",
                MESSAGES["missing_role"].format(role=role, without=without, where=where),
            )
    return missing


def first_migrate_refusal(steps: list[str]) -> str:
    """The refusal of a first migrate that may not create what the schema needs."""
    return MESSAGES["first_migrate"].format(steps="\n  ".join(steps))


def first_migrate_steps(conn: Connection) -> list[str]:
    """What an administrator must run once before the migrating role can create memexdb's
    schema (empty when it may do it all): a role that is neither a superuser nor has
    CREATEROLE, such as a managed database's owner, cannot create the `vector` extension
    (not a trusted extension) nor the base roles, and a revision would stop on
    `permission denied` halfway through the first migration (rolled back)."""
    me = conn.execute(
        text(
            "select current_user::text, rolsuper, rolcreaterole from pg_roles"
            " where rolname = current_user"
        )
    ).one()
    if me.rolsuper:
        return []
    steps = []
    vector = conn.execute(
        text(
            "select exists (select from pg_extension where extname = 'vector'),"
            " coalesce((select bool_or(trusted) from pg_available_extension_versions"
            " where name = 'vector'), false)"
        )
    ).one()
    if not vector[0] and not vector[1]:
        steps.append(f"create extension vector;  -- connected to database {_database(conn)}")
    if me.rolcreaterole:
        return steps
    for role, options in BASE_ROLES.items():
        if conn.execute(text("select to_regrole(:r) is null"), {"r": role}).scalar():
            steps.append(f"create role {role} {options};")
    for role in MEMBER_OF:
        member = conn.execute(
            text("select to_regrole(:r) is not null and pg_has_role(current_user, :r, 'member')"),
            {"r": role},
        ).scalar()
        if not member:
            steps.append(f'grant {role} to "{me.current_user}";')
    return steps


def _database(conn: Connection) -> str:
    return str(conn.execute(text("select current_database()")).scalar_one())
