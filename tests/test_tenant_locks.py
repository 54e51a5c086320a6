"""No tenant role can stop the others (issue 34, item 1), tried against a real server.

A role bound to one tenant holds no privilege on any table: it reads and writes through
the tenant API (security definer functions, row-level security still applied to its
real caller), so LOCK TABLE in every mode and EXPLAIN over a tenant table are refused.
`memexdb migrate` never waits without bound: re-applying an unchanged SQL layer locks no
table, and a migration that must lock a table held by an idle transaction gives up after
its lock timeout and retries, naming who holds it, while the other tenants' requests keep
answering; GET /health/ready reports who waits for whom meanwhile.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import AsyncIterator, Iterator

import httpx
import psycopg
import pytest

from memexdb import AsyncMemex, Memex, migrate
from memexdb.embedded import EmbeddedPostgres
from memexdb.embedding import BatchingEmbedder, Embedder
from memexdb.errors import Busy
from memexdb.migrations import head_revision
from memexdb.rest.app import create_app
from tests.conftest import drop_database, new_database

MODES = (
    "access share",
    "row share",
    "row exclusive",
    "share update exclusive",
    "share",
    "share row exclusive",
    "exclusive",
    "access exclusive",
)


def _with_user(dsn: str, user: str) -> str:
    info = psycopg.conninfo.conninfo_to_dict(dsn)
    info["user"] = user
    info.pop("password", None)
    return psycopg.conninfo.make_conninfo(**{k: v for k, v in info.items() if v is not None})


@contextlib.contextmanager
def _bound_role(dsn: str, suffix: str, agent: str, access: str) -> Iterator[str]:
    """A login role bound to (agent, bob) with `access`; its DSN."""
    name = f"lk_{psycopg.conninfo.conninfo_to_dict(dsn)['dbname']}_{suffix}"[:60]
    with psycopg.connect(dsn, autocommit=True) as conn:
        if not conn.execute("select from pg_roles where rolname = %s", (name,)).fetchone():
            conn.execute(f'create role "{name}" login')
        conn.execute("select memex.bind_sql_role(%s, %s, array['bob'], %s)", (name, agent, access))
    try:
        yield _with_user(dsn, name)
    finally:
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute("select memex.unbind_sql_role(%s)", (name,))


def _tables(dsn: str) -> list[str]:
    with psycopg.connect(dsn) as conn:
        rows = conn.execute(
            "select c.relname from pg_class c where c.relnamespace = 'memex'::regnamespace"
            " and c.relkind in ('r', 'p') order by 1"
        ).fetchall()
    return [r[0] for r in rows]


def test_a_bound_role_can_lock_no_table_in_any_mode(dsn: str, memex: Memex) -> None:
    memex.store("A", "alice", "SECRETA alice event 11")
    tables = _tables(dsn)
    assert {"memories", "tenants", "term_stats", "access_log", "settings"} <= set(tables)
    for access in ("read", "write"):
        with (
            _bound_role(dsn, access, "B", access) as role_dsn,
            psycopg.connect(role_dsn) as conn,
        ):
            for table in tables:
                for mode in MODES:
                    with pytest.raises(psycopg.errors.InsufficientPrivilege):
                        conn.execute(f"lock table memex.{table} in {mode} mode")
                    conn.rollback()
            # and the tenant API still works for its own tenant
            assert conn.execute("select memex.count('B', 'bob')").fetchone() == (0,)


def test_a_bound_role_reads_no_planner_estimate_of_a_tenant_table(dsn: str, memex: Memex) -> None:
    for i in range(5):
        memex.store("A", "alice", f"SECRETA alice event {i}")
    with (
        _bound_role(dsn, "x", "B", "read") as role_dsn,
        psycopg.connect(role_dsn, autocommit=True) as conn,
    ):
        for table in _tables(dsn):
            for statement in (
                f"explain select 1 from memex.{table}",
                f"explain (format json) select * from memex.{table} where true",
            ):
                with pytest.raises(psycopg.errors.InsufficientPrivilege):
                    conn.execute(statement)
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute(
                "explain select 1 from memex.memories"
                " where agent_id = 'A' and content like 'SECRETA alice event 1%'"
            )


@pytest.fixture
def own_db(pg_server: EmbeddedPostgres, template_db: str) -> Iterator[str]:
    dsn = new_database(pg_server)
    try:
        yield dsn
    finally:
        drop_database(pg_server, dsn)


@contextlib.contextmanager
def _idle_service_transaction(dsn: str, *, writer: bool = False) -> Iterator[int]:
    """The service's role (memex_app) with a transaction left open after a plain select of
    memex.memories (or, as a `writer`, holding the lock a write takes): what an idle client
    of the service's credentials holds. Its pid."""
    conn = psycopg.connect(dsn)
    try:
        conn.execute("set role memex_app")
        conn.execute("select 1 from memex.memories limit 1").fetchall()
        if writer:
            conn.execute("lock table memex.memories in row exclusive mode")
        row = conn.execute("select pg_backend_pid()").fetchone()
        assert row is not None
        yield row[0]
    finally:
        conn.close()


def _in_thread(target: object, timeout: float) -> tuple[float, object]:
    """Run target() in a thread; (seconds it took, its result or exception). A thread that
    is still running after `timeout` is reported as such."""
    out: dict[str, object] = {}

    def run() -> None:
        try:
            out["value"] = target()  # type: ignore[operator]
        except BaseException as exc:
            out["value"] = exc

    start = time.monotonic()
    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(timeout)
    return time.monotonic() - start, out.get("value", "still waiting")


def test_migrate_with_nothing_to_change_takes_no_table_lock(own_db: str) -> None:
    """An unchanged SQL layer is not re-applied: an idle transaction over memex.memories
    does not hold migrate (before: it waited without end)."""
    with _idle_service_transaction(own_db):
        took, result = _in_thread(lambda: migrate(own_db), timeout=60)
    assert result == head_revision(), result
    assert took < 60
    # nor any lock on a tenant table: a writer's idle transaction does not hold it either
    with psycopg.connect(own_db) as writer:
        writer.execute("set role memex_app")
        for table in ("memories", "tenants", "term_stats", "embed_queue", "settings"):
            writer.execute(f"lock table memex.{table} in row exclusive mode")
        took, result = _in_thread(
            lambda: migrate(own_db, lock_timeout_s=1.0, attempts=1), timeout=60
        )
        writer.rollback()
    assert result == head_revision(), result


def _layer_changed(dsn: str) -> None:
    """As after an upgrade of memexdb: the layer on disk differs from the one applied."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("update memex.sql_layer_state set files_sha256 = 'an older release'")


def test_a_changed_layer_takes_no_access_exclusive_lock(own_db: str) -> None:
    """Re-applying a changed SQL layer re-creates no policy that is in place: an idle
    reader of memex.memories does not hold it."""
    _layer_changed(own_db)
    with _idle_service_transaction(own_db):
        _took, result = _in_thread(
            lambda: migrate(own_db, lock_timeout_s=2.0, attempts=1), timeout=60
        )
    assert result == head_revision(), result
    with psycopg.connect(own_db) as conn:
        row = conn.execute("select files_sha256 from memex.sql_layer_state").fetchone()
        assert row is not None and row[0] != "an older release"


def test_migrate_behind_an_idle_transaction_gives_up_and_names_it(
    own_db: str, embedder: Embedder
) -> None:
    """A changed layer re-creates the triggers of memex.memories (SHARE ROW EXCLUSIVE): an
    idle writer holds that up; migrate gives up in bounded time and names it."""
    _layer_changed(own_db)
    with Memex.connect(own_db, embedder=embedder) as memex:
        memex.store("B", "bob", "a note of another tenant")
        with _idle_service_transaction(own_db, writer=True) as idle_pid:
            outcome: dict[str, object] = {}

            def run() -> None:
                try:
                    outcome["value"] = migrate(own_db, lock_timeout_s=1.0, attempts=3)
                except BaseException as exc:
                    outcome["value"] = exc

            attempt = threading.Thread(target=run, daemon=True)
            start = time.monotonic()
            attempt.start()
            # the other tenants' requests keep answering while migrate waits and retries
            latencies = []
            while attempt.is_alive() and time.monotonic() - start < 60:
                t0 = time.monotonic()
                memex.store("B", "bob", "written while a migration waits")
                assert memex.count("B", "bob") >= 2
                latencies.append(time.monotonic() - t0)
            attempt.join(60)
            took = time.monotonic() - start
        failure = outcome.get("value")
        assert isinstance(failure, Busy), failure
        assert f"pid {idle_pid}" in str(failure), failure
        # 3 attempts of 1 s plus pauses of 0.5 and 1 s, with room for a loaded machine
        assert took < 30, took
        assert latencies and max(latencies) < 5.0, latencies
        # once the idle transaction is gone, the same migration goes through
        assert migrate(own_db, lock_timeout_s=1.0, attempts=3) == head_revision()
        with psycopg.connect(own_db) as conn:
            row = conn.execute("select files_sha256 from memex.sql_layer_state").fetchone()
            assert row is not None and row[0] != "an older release"


async def test_readiness_reports_who_waits_behind_whom(
    own_db: str, batching_embedder: BatchingEmbedder
) -> None:
    @contextlib.asynccontextmanager
    async def connect() -> AsyncIterator[AsyncMemex]:
        async with await AsyncMemex.connect(own_db, embedder=batching_embedder) as memex:
            yield memex

    app = create_app(connect)
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app), base_url="http://localhost"
        ) as http,
    ):
        r = await http.get("/health/ready")
        assert r.status_code == 200 and r.json()["blocked"] == [], r.text
        with psycopg.connect(own_db) as waiter:
            waiter.execute("set lock_timeout = '20s'")
            waiting = threading.Thread(
                target=lambda: waiter.execute("lock table memex.memories in access exclusive mode"),
                daemon=True,
            )
            with _idle_service_transaction(own_db) as idle_pid:
                waiting.start()
                blocked: list[dict[str, object]] = []
                for _ in range(100):
                    r = await http.get("/health/ready")
                    blocked = r.json()["blocked"]
                    if blocked:
                        break
                    await asyncio.sleep(0.1)
                assert r.status_code == 200, r.text
                (entry,) = blocked
                assert entry["relation"] == "memories", entry
                assert entry["mode"] == "AccessExclusiveLock", entry
                assert entry["blocked_by"] == [idle_pid], entry
            # the idle transaction gone, the waiter gets its lock
            waiting.join(30)
            assert not waiting.is_alive()
            waiter.rollback()
        r = await http.get("/health/ready")
        assert r.status_code == 200 and r.json()["blocked"] == [], r.text
