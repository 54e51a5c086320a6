"""Connecting a process that starts while its database is down.

`memexdb serve --workers N` migrates (so the database was up) before any worker starts,
but uvicorn replaces a worker that dies or stops answering its health check at any time,
also in the middle of an outage. Such a worker waits for the database (which the serving
process restarts, or which comes back at its URL) and then serves, instead of failing its
startup after one pool timeout; a SIGTERM or SIGINT meanwhile ends the process at once
(it has served nothing and holds nothing to clean up).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
from collections.abc import Awaitable, Callable, Iterator
from types import FrameType
from typing import TypeVar

from memexdb.errors import DatabaseUnavailable

log = logging.getLogger("memexdb")

T = TypeVar("T")

# How long one attempt lets the pool try to connect; short, so that a database that is
# back is noticed within seconds (the pool's own retries back off).
ATTEMPT_SECONDS = 5.0
# How long a starting process waits for its database before its startup fails (uvicorn
# then starts another worker, which waits again).
PATIENCE_SECONDS = 300.0


@contextlib.contextmanager
def _stop_signals(stop: asyncio.Event) -> Iterator[None]:
    """Set `stop` on SIGTERM/SIGINT while inside, then hand the signal on to the handler
    that was there (uvicorn's, which starts its shutdown)."""
    loop = asyncio.get_running_loop()
    previous: dict[signal.Signals, object] = {}

    def handler(signum: int, frame: FrameType | None) -> None:
        loop.call_soon_threadsafe(stop.set)
        before = previous.get(signal.Signals(signum))
        if callable(before):
            before(signum, frame)

    try:
        for sig in (signal.SIGTERM, signal.SIGINT):
            previous[sig] = signal.signal(sig, handler)
    except ValueError:  # not the main thread: nobody would see our handler anyway
        pass
    if any(_already_stopping(before) for before in previous.values()):
        stop.set()
    try:
        yield
    finally:
        for sig, before in previous.items():
            signal.signal(sig, before)  # type: ignore[arg-type]


def _already_stopping(handler: object) -> bool:
    """Whether the signal handler we replace has already been asked to stop: a SIGTERM
    that came after uvicorn installed its handler (Server.handle_exit, which sets
    should_exit) but before ours would otherwise go unseen, and the worker would wait for
    the database for minutes while its supervisor waits for it to end."""
    return getattr(getattr(handler, "__self__", None), "should_exit", False) is True


async def when_database_is_up(
    attempt: Callable[[float], Awaitable[T]],
    *,
    patience: float = PATIENCE_SECONDS,
    attempt_seconds: float = ATTEMPT_SECONDS,
) -> T:
    """`attempt(timeout)` until it stops raising DatabaseUnavailable (for up to
    `patience` seconds, or until SIGTERM/SIGINT), logging the wait once."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + patience
    stop = asyncio.Event()
    warned = False
    with _stop_signals(stop):
        while True:
            task = asyncio.ensure_future(attempt(attempt_seconds))
            stopping = asyncio.ensure_future(stop.wait())
            await asyncio.wait({task, stopping}, return_when=asyncio.FIRST_COMPLETED)
            stopping.cancel()
            if not task.done():
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError, DatabaseUnavailable):
                    await task
                # Raising would fail the startup with a traceback in the log, for a stop
                # that was asked for.
                log.info("stopped while waiting for the database")
                logging.shutdown()
                os._exit(0)
            try:
                return task.result()
            except DatabaseUnavailable:
                if loop.time() >= deadline:
                    raise
                if not warned:
                    log.warning(
                        "the database is unavailable; this process starts serving once it"
                        " is back (waiting up to %.0f s)",
                        patience,
                    )
                    warned = True
                await asyncio.sleep(min(0.5, max(deadline - loop.time(), 0)))
