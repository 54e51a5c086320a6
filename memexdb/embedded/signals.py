"""Stopping the embedded server when the process is told to stop."""

from __future__ import annotations

import logging
import os
import signal
from types import FrameType

from memexdb.embedded.server import EmbeddedPostgres


def install_signal_handlers(pg: EmbeddedPostgres | None, *, exit_at_once: bool = False) -> None:
    """Stop `pg` (if any) on SIGTERM/SIGHUP, then exit with 128+signum. Python's default for these
    signals kills the process without running atexit, which would orphan the server
    (pg_ctl daemonises it, so it never sees the terminal's signals). SIGINT already
    raises KeyboardInterrupt, so atexit/finally handle it. Main thread only.

    `exit_at_once` (SIGINT too) ends the process right after the stop instead of raising
    SystemExit: for a process with a thread that cannot be joined, such as a stdio
    server's reader blocked on an open stdin, which would otherwise keep it alive."""

    def handler(signum: int, frame: FrameType | None) -> None:
        if pg is not None:
            pg.stop()
        if exit_at_once:
            logging.shutdown()
            os._exit(128 + signum)
        raise SystemExit(128 + signum)

    signals = (signal.SIGTERM, signal.SIGHUP) + ((signal.SIGINT,) if exit_at_once else ())
    for sig in signals:
        signal.signal(sig, handler)
