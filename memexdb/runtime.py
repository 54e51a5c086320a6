"""Getting a ready database for the service: the configured Postgres, or the embedded
one; migrated, with the operator settings from the environment applied."""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Iterator

import psycopg
from psycopg.types.json import Jsonb

from memexdb import queries
from memexdb.config import Settings
from memexdb.embedded import EmbeddedPostgres, default_data_dir, install_signal_handlers
from memexdb.migrations import migrate

log = logging.getLogger("memexdb")


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
                conn.execute(queries.SET_SETTING, {"name": name, "value": Jsonb(value)})


@contextlib.contextmanager
def database(settings: Settings, *, exit_at_once_on_signal: bool = False) -> Iterator[str]:
    """Yield the DSN of a migrated database; an embedded server started here is stopped
    on exit (also when the body raises, e.g. KeyboardInterrupt, and on SIGTERM; see
    install_signal_handlers for `exit_at_once_on_signal`)."""
    server = None
    if settings.database_url:
        dsn = settings.database_url
    else:
        server = embedded_server(settings)
        log.info("starting embedded PostgreSQL in %s", server.data_dir)
        dsn = server.start()
        if threading.current_thread() is threading.main_thread():
            # SIGTERM would otherwise kill us without running `finally`; uvicorn restores
            # this handler and re-raises the signal after its graceful shutdown.
            install_signal_handlers(server, exit_at_once=exit_at_once_on_signal)
    try:
        revision = migrate(dsn)
        log.info("database at revision %s", revision)
        apply_settings(dsn, settings)
        yield dsn
    finally:
        if server is not None:
            server.stop()
