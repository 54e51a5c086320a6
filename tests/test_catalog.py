"""Fresh equals upgraded: a database migrated one revision at a time from the first, the way
databases in the field got here, ends with exactly the catalog of one migrated fresh.

The upgraded database also gets what older versions of the SQL layer left behind (the
overloads revision 0015 drops) and some rows before the revisions that move data, so a
revision that leaves a stale function, or builds an index or constraint only on one of the
two paths, shows up as a difference. tests/catalog.py says what is compared: functions
(signature, result, body md5, settings, owner, grants), types, tables and columns, indexes,
constraints, policies, triggers, schema grants and ownership, the settings rows.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import psycopg
from alembic.script import ScriptDirectory
from sqlalchemy import create_engine, text
from sqlalchemy.engine import Connection
from sqlalchemy.pool import NullPool

from alembic import command
from memexdb import migrate
from memexdb.embedded import EmbeddedPostgres
from memexdb.migrations import _alembic_config, head_revision, revision_sql
from tests.catalog import catalog
from tests.conftest import db_dsn, drop_database, janitor


def _empty_database(server: EmbeddedPostgres, name: str) -> str:
    janitor(server, name).drop()
    janitor(server, name).init()
    return db_dsn(server, name)


def _seed(c: Connection) -> None:
    """Rows for the revisions that move data (0005 indexes big tenants, 0009 onwards)."""
    c.execute(
        text(
            "insert into memex.memories (agent_id, user_id, content, embedding,"
            " embedding_model) select a, 'u', 'm' || i, array_fill(0.1, array[384])::vector,"
            " 'x' from (values ('big', 3), ('small', 1)) t(a, n), generate_series(1, n) i"
        )
    )
    c.execute(
        text(
            "insert into memex.tenants (agent_id, user_id, memory_count)"
            " values ('big', 'u', 3), ('small', 'u', 1)"
        )
    )


def _old_layer(c: Connection) -> None:
    """What older SQL layers created and a later one replaced: revision 0015 drops them
    (read from its frozen SQL: each `drop function if exists`, and the one whose result
    type changed)."""
    sql = revision_sql("0015").decode()
    for signature in re.findall(r"^drop function if exists (.+);$", sql, flags=re.M):
        c.execute(text(f"create function {signature} returns int language sql as 'select 1'"))
    found = re.search(r"to_regprocedure\('(.+?)'\).*?prorettype = '(.+?)'::regtype", sql, re.S)
    assert found is not None
    signature, result = found.groups()
    c.execute(
        text(
            f"create function {signature} returns setof {result}"
            " language plpgsql as 'begin return; end'"
        )
    )


def _unconfirmed_erase(c: Connection) -> None:
    """The erase of a user without a confirmation, as the SQL layer created it until
    revision 0026, which drops it (issue 33)."""
    c.execute(
        text(
            "create function memex.erase_user(p_agent_id text, p_user_id text)"
            " returns table (table_name text, deleted bigint)"
            " language plpgsql as 'begin return; end'"
        )
    )


# Run on the upgraded database once it has reached the revision named.
BEFORE_NEXT: dict[str, Callable[[Connection], None]] = {
    "0004": _seed,
    "0014": _old_layer,
    "0025": _unconfirmed_erase,
}


def upgrade_step_by_step(dsn: str) -> list[str]:
    """alembic upgrade to each revision in order, one transaction each, then migrate(),
    which finds head applied and re-applies the SQL layer, as after every release."""
    scripts = ScriptDirectory.from_config(_alembic_config())
    revisions = [s.revision for s in reversed(list(scripts.walk_revisions()))]
    engine = create_engine(
        "postgresql+psycopg://", poolclass=NullPool, creator=lambda: psycopg.connect(dsn)
    )
    try:
        with engine.connect() as c, c.begin():
            c.execute(text("create schema memex"))
        for revision in revisions:
            with engine.connect() as c, c.begin():
                cfg = _alembic_config()
                cfg.attributes["connection"] = c
                command.upgrade(cfg, revision)
                if revision in BEFORE_NEXT:
                    BEFORE_NEXT[revision](c)
    finally:
        engine.dispose()
    assert migrate(dsn) == head_revision()
    return revisions


def _differences(fresh: dict[str, list[str]], upgraded: dict[str, list[str]]) -> list[str]:
    lines = []
    for part in fresh:
        lines += [f"{part}: only fresh: {r}" for r in fresh[part] if r not in upgraded[part]]
        lines += [f"{part}: only upgraded: {r}" for r in upgraded[part] if r not in fresh[part]]
    return lines


def test_a_database_upgraded_step_by_step_equals_a_fresh_one(pg_server: EmbeddedPostgres) -> None:
    fresh_dsn = _empty_database(pg_server, "catalog_fresh")
    upgraded_dsn = _empty_database(pg_server, "catalog_upgraded")
    try:
        revisions = upgrade_step_by_step(upgraded_dsn)
        assert revisions[0] == "0001" and revisions[-1] == head_revision()
        assert len(revisions) >= 15
        assert migrate(fresh_dsn) == head_revision()
        with psycopg.connect(fresh_dsn) as f, psycopg.connect(upgraded_dsn) as u:
            fresh, upgraded = catalog(f), catalog(u)
        assert len(fresh["functions"]) > 100 and fresh["policies"] and fresh["indexes"]
        differences = _differences(fresh, upgraded)
        assert differences == [], "\n".join(differences)
        assert fresh == upgraded
    finally:
        drop_database(pg_server, fresh_dsn)
        drop_database(pg_server, upgraded_dsn)
