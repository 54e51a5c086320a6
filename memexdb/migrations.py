"""Bring a database to the current memexdb schema: `memexdb migrate` / `memexdb.migrate()`.

One transaction under a lock: alembic revisions up to head, then the SQL layer re-applied:
every `sql/<domain>/*.sql` function file in the order `sql/manifest.txt` gives, then the
access rules (row-level security, grants). Each function file declares who may run its
function (`-- privileges: tenant | tenant-helper | service`); migrate passes those
declarations to the grants file, which grants from them and refuses a memex function
without one. A second or concurrent run waits for the lock, finds head already applied
and re-creates identical functions, so it is a no-op.

The lock is a table lock on memex.alembic_version, which no tenant role may lock (it has
no privilege on the table), so no tenant can hold migrations or readiness hostage; only a
database that has no memexdb schema yet is serialized by an advisory lock (any role could
take that one, but there is nothing of memexdb's there to block).
"""

from __future__ import annotations

import contextlib
import json
import logging
import re
from collections.abc import Iterator
from pathlib import Path

import psycopg
import sqlalchemy.exc
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import create_engine, text
from sqlalchemy.engine import Connection
from sqlalchemy.pool import NullPool

from alembic import command
from memexdb.errors import DatabaseUnavailable, SetupError
from memexdb.resources import alembic_dir, sql_dir

log = logging.getLogger("memexdb")

_BOOTSTRAP_LOCK_KEY = 0x6D656D6578  # "memex": only before memex.alembic_version exists
MIN_SERVER_VERSION = 150000
MIN_PGVECTOR = (0, 7)


def _alembic_config() -> Config:
    cfg = Config()
    cfg.set_main_option("script_location", str(alembic_dir()))
    return cfg


def pgvector_problem(available: str | None) -> str | None:
    """Why the server's pgvector (its default_version, None when absent) won't do."""
    if available is None:
        return (
            "the pgvector extension is not installed on this PostgreSQL server; install "
            "pgvector >= 0.7 (e.g. the postgresql-NN-pgvector package) or unset "
            "MEMEX_DATABASE_URL to use the embedded server"
        )
    version = tuple(int(p) for p in available.split(".")[:2] if p.isdigit())
    if version < MIN_PGVECTOR:
        return f"memexdb needs pgvector >= 0.7; this server offers {available}"
    return None


def _check_prerequisites(conn: Connection) -> None:
    version = int(conn.execute(text("show server_version_num")).scalar_one())
    if version < MIN_SERVER_VERSION:
        raise SetupError(f"memexdb needs PostgreSQL >= 15; this server is {version // 10000}")
    available = conn.execute(
        text("select default_version from pg_available_extensions where name = 'vector'")
    ).scalar_one_or_none()
    problem = pgvector_problem(available)
    if problem:
        raise SetupError(problem)


MANIFEST = "manifest.txt"
PRIVILEGE_CLASSES = ("tenant", "tenant-helper", "service")
_DECLARATION = re.compile(r"^-- privileges:\s*(\S*)\s*$", re.MULTILINE)
_FUNCTION = re.compile(r"create or replace function\s+memex\.(\w+)\s*\(", re.IGNORECASE)


def sql_files(root: Path | None = None) -> list[Path]:
    """The SQL layer's files in load order, as `sql/manifest.txt` lists them.

    A folder entry (`core/`) stands for its `*.sql` files in name order, a file entry
    (`security/999_grants.sql`) for itself, taken out of its folder's turn. An entry that
    names nothing, a file listed twice, or a `.sql` file the manifest does not reach is a
    SetupError: the layer on disk and the order it loads in never disagree.
    """
    root = sql_dir() if root is None else root
    manifest = root / MANIFEST
    if not manifest.is_file():
        raise SetupError(f"the SQL layer has no {MANIFEST} in {root}")
    entries = [
        line.strip()
        for line in manifest.read_text(encoding="utf-8").splitlines()
        if line.strip() and not line.lstrip().startswith("#")
    ]
    explicit = {root / e for e in entries if not e.endswith("/")}
    ordered: list[Path] = []
    for entry in entries:
        path = root / entry
        if entry.endswith("/"):
            if not path.is_dir():
                raise SetupError(f"{MANIFEST} lists {entry}, which is not a folder of {root}")
            found = [p for p in sorted(path.glob("*.sql")) if p not in explicit]
            if not found and not (explicit & set(path.glob("*.sql"))):
                raise SetupError(f"{MANIFEST} lists {entry}, which holds no .sql file")
            ordered.extend(found)
        elif path.suffix != ".sql" or not path.is_file():
            raise SetupError(f"{MANIFEST} lists {entry}, which is not a .sql file of {root}")
        else:
            ordered.append(path)
    duplicates = sorted({str(p.relative_to(root)) for p in ordered if ordered.count(p) > 1})
    if duplicates:
        raise SetupError(f"{MANIFEST} loads {', '.join(duplicates)} more than once")
    unreached = sorted(str(p.relative_to(root)) for p in set(root.rglob("*.sql")) - set(ordered))
    if unreached:
        raise SetupError(f"{MANIFEST} does not reach {', '.join(unreached)}")
    return ordered


def function_privileges(files: list[Path]) -> dict[str, str]:
    """Each memex function's privileges class, read from the one `-- privileges: <class>`
    line of the file that creates it: `tenant` (the tenant API: memex_tenant and
    memex_app), `tenant-helper` (an internal helper tenant functions run with their
    caller's rights: the same grants) or `service` (memex_app only). A function file
    without exactly one valid declaration is a SetupError; so is a file with none.
    """
    declared: dict[str, str] = {}
    for path in files:
        text = path.read_text(encoding="utf-8")
        functions = _FUNCTION.findall(text)
        classes = _DECLARATION.findall(text)
        if not functions:
            if classes:
                raise SetupError(f"{path.name} declares privileges but creates no function")
            continue
        if len(functions) != 1:
            raise SetupError(f"{path.name} creates {len(functions)} functions, not one")
        if len(classes) != 1 or classes[0] not in PRIVILEGE_CLASSES:
            raise SetupError(
                f"{path.name} needs exactly one line '-- privileges: <class>' with a class"
                f" among {', '.join(PRIVILEGE_CLASSES)}"
            )
        if functions[0] in declared:
            raise SetupError(f"memex.{functions[0]} is created by more than one file")
        declared[functions[0]] = classes[0]
    return declared


def _apply_sql_functions(conn: Connection) -> None:
    raw = conn.connection.driver_connection
    assert isinstance(raw, psycopg.Connection)
    files = sql_files()
    # Read back by the grants file (sql/security/999_grants.sql), for this transaction.
    raw.execute(
        "select set_config('memex.function_privileges', %s, true)",
        (json.dumps(function_privileges(files), sort_keys=True),),
    )
    for path in files:
        # No parameters: psycopg sends the file as one simple query, statements and all.
        raw.execute(path.read_text(encoding="utf-8").encode())


def _lock(conn: Connection) -> None:
    """Serialize migrations (see the module's docstring); memex.schema_state reports the
    table lock as a migration under way."""
    if conn.execute(text("select to_regclass('memex.alembic_version')")).scalar() is None:
        conn.execute(text("select pg_advisory_xact_lock(:key)"), {"key": _BOOTSTRAP_LOCK_KEY})
    if conn.execute(text("select to_regclass('memex.alembic_version')")).scalar() is not None:
        conn.execute(text("lock table memex.alembic_version in share row exclusive mode"))


@contextlib.contextmanager
def _alembic_quiet() -> Iterator[None]:
    """alembic logs each revision it applies at INFO, with its whole docstring (60-odd
    lines on a first start); memexdb says in one line what it migrates. At DEBUG (e.g.
    `memexdb -v migrate` with MEMEX_LOG_LEVEL=debug) alembic's lines are kept."""
    alembic_log = logging.getLogger("alembic")
    if alembic_log.isEnabledFor(logging.DEBUG):
        yield
        return
    level = alembic_log.level
    alembic_log.setLevel(logging.WARNING)
    try:
        yield
    finally:
        alembic_log.setLevel(level)


def migrate(dsn: str) -> str:
    """Migrate the database at `dsn` to head and (re)apply the SQL functions.

    Returns the alembic revision now current. Safe to run repeatedly and concurrently.
    """
    engine = create_engine(
        # The creator accepts any libpq DSN (URI or key=value); the URL names the dialect.
        "postgresql+psycopg://",
        poolclass=NullPool,
        creator=lambda: psycopg.connect(dsn),
    )
    try:
        try:
            conn = engine.connect()
        except sqlalchemy.exc.OperationalError as exc:
            raise DatabaseUnavailable(f"cannot connect to the database: {exc.orig}") from exc
        with conn, conn.begin():
            _lock(conn)
            _check_prerequisites(conn)
            conn.execute(text("create schema if not exists memex"))
            cfg = _alembic_config()
            cfg.attributes["connection"] = conn
            with _alembic_quiet():
                before, head = current_revision(conn), head_revision()
                if before != head:
                    log.info(
                        "migrating the database from revision %s to %s", before or "none", head
                    )
                command.upgrade(cfg, "head")
                _apply_sql_functions(conn)
                return current_revision(conn) or "base"
    finally:
        engine.dispose()


def current_revision(conn: Connection) -> str | None:
    """The alembic revision recorded in the database, or None before the first migrate."""
    context = MigrationContext.configure(conn, opts={"version_table_schema": "memex"})
    return context.get_current_revision()


def older_revisions() -> frozenset[str]:
    """The revisions this version ships before its head: a database at one of them is
    not migrated to this version yet."""
    scripts = ScriptDirectory.from_config(_alembic_config())
    head = scripts.get_current_head()
    return frozenset(s.revision for s in scripts.walk_revisions() if s.revision != head)


def head_revision() -> str:
    """The newest revision this version of memexdb ships."""
    head = ScriptDirectory.from_config(_alembic_config()).get_current_head()
    assert head is not None
    return head
