"""Keeping a data dir's server up for a process that uses it: a thread that notices a
dead postmaster or a departed owner and starts the server again.

Every process on an embedded data dir runs one (`memexdb serve`, each `memexdb mcp`):
the owner relaunches its own server after a crash (kill -9, the OOM killer); the others
take it over when the owner ends. The data dir's lock and owner.json decide, so exactly
one process starts it. Clients reconnect by themselves once it accepts again.
"""

from __future__ import annotations

import logging
import os
import threading
import time

from memexdb.embedded.errors import EmbeddedPostgresError
from memexdb.embedded.ownership import ServerOwner
from memexdb.embedded.server import EmbeddedPostgres

log = logging.getLogger("memexdb.embedded")

CHECK_SECONDS = 0.5  # a look at two files and /proc: cheap; bounds the outage it adds
JOIN_TIMEOUT = 90.0  # a start() under way finishes first (initdb-free starts take seconds)


class ServerKeeper:
    """A daemon thread calling `server.ensure_running()` every `interval` seconds until
    close(). Close it before stopping the server: close() waits for a start under way, so
    the server it launched is known to stop() rather than left running."""

    def __init__(self, server: EmbeddedPostgres, interval: float = CHECK_SECONDS) -> None:
        self.server = server
        self.interval = interval
        self.restarts = 0
        self._other_owner: ServerOwner | None = server.other_owner()
        self._closing = threading.Event()
        self._thread = threading.Thread(target=self._run, name="memexdb-keeper", daemon=True)

    def start(self) -> ServerKeeper:
        self._thread.start()
        return self

    def close(self) -> None:
        self._closing.set()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(JOIN_TIMEOUT)

    def check(self) -> bool:
        """One look; True when it started the server."""
        owner = self.server.recorded_owner()
        if owner is not None and owner.pid != os.getpid():
            self._other_owner = owner  # an owner that stops cleanly removes its record
        started = time.monotonic()
        launches = self.server.launches
        try:
            restarted = self.server.ensure_running()
        except EmbeddedPostgresError:
            log.warning("could not start the embedded PostgreSQL; retrying", exc_info=True)
            restarted = self.server.launches > launches
        except Exception:
            # Anything else must not end the thread: a keeper that died left the server
            # down for good (a CI run: the server it had just launched was killed again
            # while start() created the database, and the connection error ended it).
            log.exception("the embedded PostgreSQL keeper failed a check; retrying")
            restarted = self.server.launches > launches
        if restarted:
            self.restarts += 1
            took = time.monotonic() - started
            if self._other_owner is not None:
                pid, self._other_owner = self._other_owner.pid, None
                log.info("pid %s ended: now running the embedded PostgreSQL", pid)
            else:
                log.warning(
                    "the embedded PostgreSQL had stopped (crash or kill); restarted it in %.1f s",
                    took,
                )
        return restarted

    def _run(self) -> None:
        while not self._closing.wait(self.interval):
            self.check()
