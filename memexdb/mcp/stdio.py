"""`memexdb mcp`: the MCP server over stdio, for Claude Desktop / Claude Code style configs.

stdout carries protocol messages only. Until the server speaks, fd 1 points at stderr
(and fd 0 at /dev/null), so nothing printed while PostgreSQL starts, the schema migrates
or the model loads (by Python code, C libraries or child processes, which inherit these
descriptors) can corrupt the stream; the MCP SDK's stdio transport then takes the real
descriptors over and keeps the same diversion while it serves.

Desktop clients start one `memexdb mcp` per window or session, and a `memexdb serve` may
already run on the same data dir: then this process uses that embedded server, and takes
it over (starts it itself) if the process running it ends first.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass

import anyio
import psycopg

from memexdb.client import AsyncMemex
from memexdb.config import Settings
from memexdb.embedded import (
    DataDirInUseError,
    EmbeddedPostgres,
    EmbeddedPostgresError,
    ServerOwner,
    install_signal_handlers,
)
from memexdb.embedding import build_embedder
from memexdb.errors import DatabaseUnavailable
from memexdb.mcp.server import build_mcp_server
from memexdb.migrations import migrate
from memexdb.runtime import apply_settings, database, embedded_server

log = logging.getLogger("memexdb.mcp")

SHARED_SERVER_WAIT_SECONDS = 60.0
TAKEOVER_CHECK_SECONDS = 1.0


@contextlib.contextmanager
def protocol_streams_reserved() -> Iterator[None]:
    """Point fd 0 at /dev/null and fd 1 at stderr for the body; restore them afterwards."""
    saved_in, saved_out = os.dup(0), os.dup(1)
    devnull = os.open(os.devnull, os.O_RDONLY)
    try:
        os.dup2(devnull, 0)
        os.dup2(2, 1)
        yield
    finally:
        with contextlib.suppress(ValueError, OSError):
            sys.stdout.flush()  # whatever Python buffered still goes to stderr
        os.dup2(saved_in, 0)
        os.dup2(saved_out, 1)
        for fd in (devnull, saved_in, saved_out):
            os.close(fd)


def _wait_until_accepting(dsn: str, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            with psycopg.connect(dsn, connect_timeout=3):
                return
        except psycopg.OperationalError as exc:
            if time.monotonic() > deadline:
                raise DatabaseUnavailable(f"the embedded PostgreSQL did not answer: {exc}") from exc
            time.sleep(0.2)


@dataclass
class SharedServer:
    """The embedded server of another live process, used until that process ends."""

    server: EmbeddedPostgres
    owner: ServerOwner
    taken_over: bool = False

    async def take_over_when_orphaned(self) -> None:
        """Start the server here once its owner has exited (it stops the server on the
        way out); the connection pool reconnects by itself."""
        while not self.taken_over:
            await asyncio.sleep(TAKEOVER_CHECK_SECONDS)
            if self.owner.alive():
                continue
            # The pool reconnects as soon as the server accepts, before start() returns, so
            # a client may finish and leave (cancelling this task) mid-start. The start
            # runs on in its thread regardless: wait for it, so the server it launches is
            # recorded and stopped on exit instead of left running.
            attempt = asyncio.ensure_future(self._start())
            try:
                await asyncio.shield(attempt)
            except asyncio.CancelledError:
                while not attempt.done():
                    with contextlib.suppress(asyncio.CancelledError):
                        await asyncio.shield(attempt)
                raise

    async def _start(self) -> None:
        try:
            await asyncio.to_thread(self.server.start)
        except DataDirInUseError as exc:  # another client's `memexdb mcp` was first
            self.owner = exc.owner
            return
        except EmbeddedPostgresError:
            log.warning("could not start the embedded PostgreSQL; retrying", exc_info=True)
            return
        self.taken_over = True
        log.info("pid %s ended: now running the embedded PostgreSQL", self.owner.pid)


@contextlib.contextmanager
def stdio_database(settings: Settings) -> Iterator[tuple[str, SharedServer | None]]:
    """Like memexdb.runtime.database() (whose embedded server is stopped on exit and on
    SIGTERM), but a data dir served by another live memexdb process is used, not refused.
    Yields the DSN and, in that case, the shared server."""
    with contextlib.ExitStack() as stack:
        shared = None
        try:
            # The SDK's stdin reader thread cannot be joined while the client keeps stdin
            # open: on a signal, stop the server and end the process at once.
            dsn = stack.enter_context(database(settings, exit_at_once_on_signal=True))
            if settings.database_url and threading.current_thread() is threading.main_thread():
                install_signal_handlers(None, exit_at_once=True)  # no server of ours to stop
        except DataDirInUseError as exc:
            shared = SharedServer(embedded_server(settings), exc.owner)
            # A signal stops a server this process has taken over, as above; during a
            # takeover's start() the stop waits for that start to finish.
            if threading.current_thread() is threading.main_thread():
                install_signal_handlers(shared.server, exit_at_once=True)
            dsn = shared.server.dsn
            log.info("using the embedded PostgreSQL of pid %s in %s", exc.pid, dsn)
            _wait_until_accepting(dsn, SHARED_SERVER_WAIT_SECONDS)
            migrate(dsn)
            apply_settings(dsn, settings)
        try:
            yield dsn, shared
        finally:
            if shared is not None and shared.taken_over:
                shared.server.stop()


async def _serve(
    dsn: str, shared: SharedServer | None, settings: Settings, restore: contextlib.ExitStack
) -> None:
    embedder = build_embedder(
        settings.embedder, url=settings.embedding_url, api_key=settings.embedding_api_key
    )
    async with await AsyncMemex.connect(dsn, embedder=embedder, max_size=4) as memex:
        server = build_mcp_server(lambda: memex)
        restore.close()  # give the protocol its stdin/stdout back, then speak
        log.info("memexdb MCP server ready on stdio")
        if shared is None:
            await server.run_stdio_async()
            return
        watcher = asyncio.create_task(shared.take_over_when_orphaned())
        try:
            await server.run_stdio_async()
        finally:
            watcher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await watcher


def run_stdio(settings: Settings) -> int:
    """Serve MCP on stdin/stdout until the client closes stdin; 0 on a clean exit."""
    with contextlib.ExitStack() as restore:
        restore.enter_context(protocol_streams_reserved())
        with stdio_database(settings) as (dsn, shared):
            anyio.run(_serve, dsn, shared, settings, restore)
    return 0
