"""Bring a database to the current memexdb schema: `memexdb migrate` / `memexdb.migrate()`.

One transaction under a lock: alembic revisions up to head, then the SQL layer re-applied:
every `sql/<domain>/*.sql` function file in the order `sql/manifest.txt` gives, then the
access rules (row-level security, grants). Each function file declares who may run its
function (`-- privileges: tenant | tenant-helper | service | definer-helper`); migrate passes those
declarations to the grants file, which grants from them and refuses a memex function
without one. A second or concurrent run waits for the lock, finds head already applied
and the same SQL layer in place (below), so it is a no-op.

The lock is a table lock on memex.alembic_version, which no tenant role may lock (it has
no privilege on the table), so no tenant can hold migrations or readiness hostage; only a
database that has no memexdb schema yet is serialized by an advisory lock (any role could
take that one, but there is nothing of memexdb's there to block).

Nothing is waited on without bound. Another migration's lock is waited on for at most
`SERIALIZE_TIMEOUT_S`; every other lock (a revision's DDL, the SQL layer's policies) for
`lock_timeout_s`, after which the whole migration is rolled back and tried again, up to
`attempts` times with a growing pause, and then refused with `Busy`, naming the sessions
that hold locks on memexdb's tables (pid, role, state). A migration queued behind an idle
transaction would otherwise make every request of every tenant queue behind it.

Re-applying an unchanged SQL layer changes nothing and locks no table: the sha256 of its
files and a fingerprint of the catalog they produced are kept in memex.sql_layer_state
(revision 0027); when no revision was applied and both match, the layer is not applied
again.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import re
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import psycopg
import sqlalchemy.exc
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import create_engine, text
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.pool import NullPool

from alembic import command
from memexdb.errors import Busy, DatabaseUnavailable, SetupError
from memexdb.migration_roles import (
    first_migrate_refusal,
    first_migrate_steps,
    log_notices,
    missing_roles,
)
from memexdb.resources import alembic_dir, sql_dir

log = logging.getLogger("memexdb")

# How long a migration waits for another one (their lock: no tenant can take it).
SERIALIZE_TIMEOUT_S = 120.0
# How long it waits for any other lock, and how often it tries before giving up: shorter
# than a request's lock timeout (5 s), since requests queue behind a waiting migration.
LOCK_TIMEOUT_S = 2.0
ATTEMPTS = 5
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
PRIVILEGE_CLASSES = ("tenant", "tenant-helper", "service", "definer-helper")
_DECLARATION = re.compile(r"^-- privileges:\s*(\S*)\s*$", re.MULTILINE)
_FUNCTION = re.compile(
    r"create or replace (?:function|procedure)\s+memex\.(\w+)\s*\(", re.IGNORECASE
)


REVISIONS = "revisions"


@dataclass(frozen=True)
class Manifest:
    """What `sql/manifest.txt` lists, in order: the revisions (frozen, each applied once and
    recorded in memex.alembic_version as its id) and the SQL layer (re-applied)."""

    revisions: list[tuple[str, Path]]
    layer: list[Path]


def read_manifest(root: Path | None = None) -> Manifest:
    """The schema's files in load order, as `sql/manifest.txt` lists them.

    An entry under `revisions/` is a revision (`revisions/<id>_<name>.sql`, its id the
    alembic revision's), listed before the layer, each once. In the layer, a folder entry
    (`core/`) stands for its `*.sql` files in name order, a file entry
    (`security/999_grants.sql`) for itself, taken out of its folder's turn. An entry that
    names nothing, a file listed twice, or a `.sql` file the manifest does not reach is a
    SetupError: the files on disk and the order they load in never disagree. The
    TypeScript package reads the same manifest the same way (src/direct/migrate.ts).
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
    revisions: list[tuple[str, Path]] = []
    explicit = {root / e for e in entries if not e.endswith("/")}
    ordered: list[Path] = []
    for entry in entries:
        path = root / entry
        if entry.startswith(f"{REVISIONS}/"):
            if ordered:
                raise SetupError(f"{MANIFEST} lists the revision {entry} after the SQL layer")
            if path.suffix != ".sql" or not path.is_file() or path.parent != root / REVISIONS:
                raise SetupError(f"{MANIFEST} lists {entry}, which is not a revision of {root}")
            revisions.append((path.name.split("_", 1)[0], path))
        elif entry.endswith("/"):
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
    every = ordered + [path for _, path in revisions]
    duplicates = sorted({str(p.relative_to(root)) for p in every if every.count(p) > 1})
    ids = [revision for revision, _ in revisions]
    duplicates += sorted({f"revision {r}" for r in ids if ids.count(r) > 1})
    if duplicates:
        raise SetupError(f"{MANIFEST} loads {', '.join(duplicates)} more than once")
    unreached = sorted(str(p.relative_to(root)) for p in set(root.rglob("*.sql")) - set(every))
    if unreached:
        raise SetupError(f"{MANIFEST} does not reach {', '.join(unreached)}")
    return Manifest(revisions, ordered)


def sql_files(root: Path | None = None) -> list[Path]:
    """The SQL layer's files in load order (`read_manifest`, without the revisions)."""
    return read_manifest(root).layer


def revision_sql(revision: str, root: Path | None = None) -> bytes:
    """The frozen SQL of alembic revision `revision` (sql/revisions/<revision>_*.sql)."""
    found = [path for rid, path in read_manifest(root).revisions if rid == revision]
    if not found:
        raise SetupError(f"{MANIFEST} lists no revision {revision}")
    return found[0].read_bytes()


def run_revision(bind: Connection, revision: str) -> None:
    """Run revision `revision`'s frozen SQL on alembic's connection: what each wrapper in
    alembic/versions/ does. The file goes as one simple query (no parameters), statements
    and all, as the TypeScript package's migrate() sends it."""
    raw = bind.connection.driver_connection
    assert isinstance(raw, psycopg.Connection)
    raw.execute(revision_sql(revision))


def function_privileges(files: list[Path]) -> dict[str, str]:
    """Each memex function's privileges class, read from the one `-- privileges: <class>`
    line of the file that creates it: `tenant` (the tenant API: memex_tenant and
    memex_app), `tenant-helper` (an internal helper tenant functions run with their
    caller's rights: the same grants), `service` (memex_app only) or `definer-helper`
    (memex_owner only: reached through the security definer functions). A function file
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


# What the SQL layer produced in the catalog: functions (body, owner, grants, settings,
# security), tables' grants and row-level security, policies, triggers. Indexes are left
# out (memex.index_tenant makes per-tenant ones as data grows).
_CATALOG_FINGERPRINT = """
select md5(string_agg(line, E'\n' order by line)) from (
    select 'f ' || p.oid::regprocedure::text || ' ' || md5(p.prosrc) || ' '
           || p.proowner::regrole::text || ' ' || coalesce(p.proacl::text, '') || ' '
           || coalesce(array_to_string(p.proconfig, ','), '') || ' ' || p.prosecdef::text
           || ' ' || p.provolatile::text || ' ' || coalesce(obj_description(p.oid, 'pg_proc'), '')
    from pg_proc p where p.pronamespace = 'memex'::regnamespace
    union all
    select 't ' || c.relname || ' ' || c.relowner::regrole::text || ' '
           || coalesce(c.relacl::text, '') || ' ' || c.relrowsecurity::text || ' '
           || c.relforcerowsecurity::text
    from pg_class c where c.relnamespace = 'memex'::regnamespace and c.relkind in ('r', 'p')
    union all
    select 'p ' || pol.polrelid::regclass::text || ' ' || pol.polname || ' '
           || pol.polcmd::text || ' ' || coalesce(pg_get_expr(pol.polqual, pol.polrelid), '')
           || ' ' || coalesce(pg_get_expr(pol.polwithcheck, pol.polrelid), '')
    from pg_policy pol join pg_class c on c.oid = pol.polrelid
    where c.relnamespace = 'memex'::regnamespace
    union all
    select 'g ' || tg.tgrelid::regclass::text || ' ' || tg.tgname || ' '
           || pg_get_triggerdef(tg.oid)
    from pg_trigger tg join pg_class c on c.oid = tg.tgrelid
    where c.relnamespace = 'memex'::regnamespace and not tg.tgisinternal
    union all
    select 'n ' || coalesce(n.nspacl::text, '') from pg_namespace n where n.nspname = 'memex'
    union all
    select 'd ' || pg_get_expr(d.adbin, d.adrelid) from pg_attrdef d
    where d.adrelid = 'memex.memories'::regclass
) lines(line)
"""


def _layer_digest(files: list[Path], declared: dict[str, str]) -> str:
    """The sha256 of the SQL layer: each file's name and content, in load order, and the
    privileges declarations the grants are made from."""
    digest = hashlib.sha256(json.dumps(declared, sort_keys=True).encode())
    for path in files:
        digest.update(f"\0{path.parent.name}/{path.name}\0".encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


def _layer_state_table(raw: psycopg.Connection) -> bool:
    row = raw.execute("select to_regclass('memex.sql_layer_state') is not null").fetchone()
    return bool(row and row[0])


def _apply_sql_functions(conn: Connection, *, revision_changed: bool) -> bool:
    """Apply the SQL layer unless it is applied already (returns whether it was)."""
    raw = conn.connection.driver_connection
    assert isinstance(raw, psycopg.Connection)
    files = sql_files()
    declared = function_privileges(files)
    files_sha256 = _layer_digest(files, declared)
    tracked = _layer_state_table(raw)
    if tracked and not revision_changed:
        stored = raw.execute(
            "select files_sha256, catalog_md5 from memex.sql_layer_state"
        ).fetchone()
        if stored is not None and stored[0] == files_sha256:
            catalog = raw.execute(_CATALOG_FINGERPRINT).fetchone()
            if catalog is not None and catalog[0] == stored[1]:
                return False
    # Read back by the grants file (sql/security/999_grants.sql), for this transaction.
    raw.execute(
        "select set_config('memex.function_privileges', %s, true)",
        (json.dumps(declared, sort_keys=True),),
    )
    for path in files:
        # No parameters: psycopg sends the file as one simple query, statements and all.
        raw.execute(path.read_text(encoding="utf-8").encode())
    if tracked:
        catalog = raw.execute(_CATALOG_FINGERPRINT).fetchone()
        assert catalog is not None
        raw.execute(
            "insert into memex.sql_layer_state (files_sha256, catalog_md5) values (%s, %s)"
            " on conflict (singleton) do update set files_sha256 = excluded.files_sha256,"
            " catalog_md5 = excluded.catalog_md5, applied_at = now()",
            (files_sha256, catalog[0]),
        )
    return True


def _lock(conn: Connection, lock_timeout_s: float) -> None:
    """Serialize migrations (see the module's docstring); memex.schema_state reports the
    table lock as a migration under way. Another migration is waited on for at most
    SERIALIZE_TIMEOUT_S, then every lock for at most `lock_timeout_s`."""
    conn.execute(text(f"set local lock_timeout = '{int(SERIALIZE_TIMEOUT_S * 1000)}ms'"))
    if conn.execute(text("select to_regclass('memex.alembic_version')")).scalar() is None:
        conn.execute(text("select pg_advisory_xact_lock(:key)"), {"key": _BOOTSTRAP_LOCK_KEY})
    if conn.execute(text("select to_regclass('memex.alembic_version')")).scalar() is not None:
        conn.execute(text("lock table memex.alembic_version in share row exclusive mode"))
    conn.execute(text(f"set local lock_timeout = '{max(1, int(lock_timeout_s * 1000))}ms'"))


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


# The sessions holding locks on memexdb's tables (who a migration that timed out waited
# for, most likely the idle transactions), for the message that refuses it.
_LOCK_HOLDERS = """
select a.pid, coalesce(a.usename::text, '?'), coalesce(a.state, '?'),
       string_agg(distinct c.relname || ' ' || l.mode, ', ')
from pg_locks l
join pg_class c on c.oid = l.relation
join pg_stat_activity a on a.pid = l.pid
where l.granted and c.relnamespace = 'memex'::regnamespace and c.relkind in ('r', 'p')
  and l.database = (select d.oid from pg_database d where d.datname = current_database())
  and l.pid <> pg_backend_pid()
group by a.pid, a.usename, a.state, a.xact_start
order by coalesce(a.state, '') like 'idle in transaction%' desc, a.xact_start nulls last
limit 5
"""


def _lock_holders(dsn: str) -> str:
    try:
        with psycopg.connect(dsn, autocommit=True, connect_timeout=5) as conn:
            if conn.execute("select to_regnamespace('memex')").fetchone() == (None,):
                return ""
            rows = conn.execute(_LOCK_HOLDERS).fetchall()
    except psycopg.Error:
        return ""
    return "; ".join(
        f"pid {pid} (role {role}, {state}: {locks})" for pid, role, state, locks in rows
    )


def migrate(
    dsn: str,
    *,
    lock_timeout_s: float = LOCK_TIMEOUT_S,
    attempts: int = ATTEMPTS,
) -> str:
    """Migrate the database at `dsn` to head and (re)apply the SQL functions.

    Returns the alembic revision now current. Safe to run repeatedly and concurrently.
    Waits for a lock at most `lock_timeout_s` and tries `attempts` times (see the module's
    docstring), then raises Busy naming who holds memexdb's tables.
    """
    engine = create_engine(
        # The creator accepts any libpq DSN (URI or key=value); the URL names the dialect.
        "postgresql+psycopg://",
        poolclass=NullPool,
        creator=lambda: psycopg.connect(dsn),
    )
    try:
        for attempt in range(1, attempts + 1):
            try:
                return _migrate_once(engine, lock_timeout_s)
            except (sqlalchemy.exc.OperationalError, psycopg.errors.LockNotAvailable) as exc:
                # (alembic's statements raise through SQLAlchemy, the SQL layer's directly)
                cause = exc.orig if isinstance(exc, sqlalchemy.exc.DBAPIError) else exc
                if not isinstance(cause, psycopg.errors.LockNotAvailable):
                    raise
                holders = _lock_holders(dsn)
                if attempt == attempts:
                    raise Busy(
                        f"memexdb migrate waited {lock_timeout_s:g} s for a lock {attempts}"
                        " times and gave up (nothing was changed); sessions holding"
                        f" memexdb's tables: {holders or 'none found now'}. End them"
                        " (pg_terminate_backend) or let them finish, then migrate again."
                    ) from exc
                pause = min(0.5 * 2 ** (attempt - 1), 5.0)
                log.warning(
                    "migrate: a lock was not granted within %g s (attempt %d of %d; held by"
                    " %s); trying again in %g s",
                    lock_timeout_s,
                    attempt,
                    attempts,
                    holders or "a session gone since",
                    pause,
                )
                time.sleep(pause)
        raise AssertionError("unreachable")  # pragma: no cover
    finally:
        engine.dispose()


def _migrate_once(engine: Engine, lock_timeout_s: float) -> str:
    try:
        conn = engine.connect()
    except sqlalchemy.exc.OperationalError as exc:
        raise DatabaseUnavailable(f"cannot connect to the database: {exc.orig}") from exc
    with conn, conn.begin(), _alembic_quiet():
        log_notices(conn)
        _lock(conn, lock_timeout_s)
        _check_prerequisites(conn)
        conn.execute(text("create schema if not exists memex"))
        before = (
            current_revision(conn)
            if conn.execute(text("select to_regclass('memex.alembic_version')")).scalar()
            else None
        )
        steps = [] if before else first_migrate_steps(conn)
        if steps:
            raise SetupError("memexdb migrate: " + first_migrate_refusal(steps))
        cfg = _alembic_config()
        cfg.attributes["connection"] = conn
        head = head_revision()
        if before != head:
            log.info("migrating the database from revision %s to %s", before or "none", head)
        command.upgrade(cfg, "head")
        after = current_revision(conn)
        _apply_sql_functions(conn, revision_changed=before != after)
        missing_roles(conn)
        return after or "base"


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
