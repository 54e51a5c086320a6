"""A ready database for a memexdb process: the configured PostgreSQL, or the embedded
one (started here, or shared with the memexdb process already running it); migrated,
with the operator settings from the environment applied.

`memexdb serve` owns the embedded server of its data dir; `memexdb mcp` and `memexdb
migrate` use the one a running service has, else start it; `memexdb status` and `memexdb
dsn` only look. Every process that starts or shares it keeps it running (see
memexdb.embedded.keeper): after a crash the owner relaunches it, and when the owner ends
a process sharing it takes over.
"""

from __future__ import annotations

import contextlib
import enum
import logging
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass

import psycopg
from psycopg.types.json import Jsonb

from memexdb.config import Settings
from memexdb.embedded import (
    DataDirInUseError,
    EmbeddedPostgres,
    ServerKeeper,
    ServerOwner,
    default_data_dir,
    install_signal_handlers,
)
from memexdb.errors import DatabaseUnavailable
from memexdb.health import sql as health_sql
from memexdb.migrations import migrate as migrate_schema

log = logging.getLogger("memexdb")

SHARED_SERVER_WAIT_SECONDS = 60.0  # another process may be starting it right now


class Attach(enum.Enum):
    """How a command uses the embedded server of its data dir."""

    OWN = "own"  # start it; another live process running it is an error (serve)
    SHARE = "share"  # use the one a live process runs, else start it (mcp, migrate)
    LOOK = "look"  # use the one a live process runs, else none (status, dsn)


@dataclass(frozen=True)
class Database:
    """Where a process's database is. `running` is False only for Attach.LOOK when no
    process runs the embedded server."""

    dsn: str
    server: EmbeddedPostgres | None = None  # None: MEMEX_DATABASE_URL
    shared_with: ServerOwner | None = None
    running: bool = True

    @property
    def where(self) -> str:
        """How `memexdb status` names it (never the URL: it may carry a password)."""
        if self.server is None:
            return "MEMEX_DATABASE_URL"
        return f"embedded ({self.server.data_dir})"


def embedded_server(settings: Settings) -> EmbeddedPostgres:
    """The embedded server for MEMEX_DATA_DIR (or the default data dir); not started."""
    return EmbeddedPostgres(settings.data_dir or default_data_dir())


def apply_settings(dsn: str, settings: Settings) -> None:
    """Write the rate limits given in the environment into memex.settings (the database
    stays the source of truth: unset variables leave the stored values alone)."""
    values = {
        "rate_limit_store_per_minute": settings.rate_limit_store_per_minute,
        "rate_limit_search_per_minute": settings.rate_limit_search_per_minute,
    }
    with psycopg.connect(dsn, autocommit=True) as conn:
        for name, value in values.items():
            if value is not None:
                conn.execute(health_sql.SET_SETTING, {"name": name, "value": Jsonb(value)})


def wait_until_accepting(dsn: str, timeout: float) -> None:
    """Wait (bounded) until the server at `dsn` accepts connections."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            with psycopg.connect(dsn, connect_timeout=3):
                return
        except psycopg.OperationalError as exc:
            if time.monotonic() > deadline:
                raise DatabaseUnavailable(f"the embedded PostgreSQL did not answer: {exc}") from exc
            time.sleep(0.2)


def _attach_embedded(server: EmbeddedPostgres, attach: Attach) -> Database:
    owner = server.other_owner()
    if owner is None and attach is not Attach.LOOK:
        log.info("starting embedded PostgreSQL in %s", server.data_dir)
        try:
            server.start()
            return Database(server.dsn, server)
        except DataDirInUseError as exc:  # another process started it meanwhile
            owner = exc.owner
    if owner is None:
        return Database(server.dsn, server, running=False)
    if attach is Attach.OWN:
        raise DataDirInUseError(server.data_dir, owner)
    if attach is Attach.SHARE:
        server.share()
        log.info("using the embedded PostgreSQL of pid %s in %s", owner.pid, server.data_dir)
        wait_until_accepting(server.dsn, SHARED_SERVER_WAIT_SECONDS)
    return Database(server.dsn, server, shared_with=owner)


@contextlib.contextmanager
def open_database(
    settings: Settings,
    attach: Attach,
    *,
    migrate: bool = True,
    keep_running: bool = True,
    exit_at_once_on_signal: bool = False,
) -> Iterator[Database]:
    """The database of `settings`, migrated (`migrate`) and with its settings applied.

    An embedded server this process starts, or takes over, is stopped on exit (also when
    the body raises, e.g. KeyboardInterrupt, and on SIGTERM/SIGHUP; with
    `exit_at_once_on_signal` the process then ends at once, see install_signal_handlers).
    `keep_running` relaunches it after a crash and takes it over from an owner that ends,
    for as long as the body runs."""
    on_main_thread = threading.current_thread() is threading.main_thread()
    if settings.database_url:
        if attach is not Attach.LOOK and on_main_thread:
            # No server of ours to stop; SIGTERM still ends the process through `finally`
            # (and uvicorn's graceful shutdown) rather than killing it outright.
            install_signal_handlers(None, exit_at_once=exit_at_once_on_signal)
        database = Database(settings.database_url)
    else:
        server = embedded_server(settings)
        if attach is not Attach.LOOK and on_main_thread:
            # SIGTERM would otherwise end us without running `finally`; uvicorn restores
            # this handler and re-raises the signal after its graceful shutdown. A stop
            # waits for a relaunch or takeover under way, then stops what it started.
            install_signal_handlers(server, exit_at_once=exit_at_once_on_signal)
        database = _attach_embedded(server, attach)
    keeper = None
    try:
        if database.server is not None and attach is not Attach.LOOK:
            if database.shared_with is None:
                log.info("embedded PostgreSQL ready: %s", database.dsn)
            if keep_running:
                keeper = ServerKeeper(database.server).start()
        if migrate and database.running:
            revision = migrate_schema(database.dsn)
            log.info("database at revision %s", revision)
            apply_settings(database.dsn, settings)
        yield database
    finally:
        if keeper is not None:
            keeper.close()
        if database.server is not None and attach is not Attach.LOOK:
            database.server.stop()
