"""uvicorn workers whose deaths are noticed at once.

`memexdb serve --workers N` gives each worker WORKER_HEALTHCHECK_SECONDS (120 s) to
answer uvicorn's health ping: a worker loading the model on a busy machine answers late,
and at uvicorn's 5 s it was killed over and over. uvicorn's supervisor pings its workers
in turn and waits on each answer; the pipe it waits on does not close when the worker dies
(the supervisor holds both of its ends), so a worker killed while its ping was in flight
was replaced only when the whole wait ran out, and the others behind it were not checked
meanwhile. Here a ping waits in slices of PING_SLICE_SECONDS and gives up as soon as its
worker has died, so a dead worker is replaced within a second or so; a live but silent
one still has the whole timeout.
"""

from __future__ import annotations

import contextlib
import pickle
import time
from collections.abc import Iterator

from uvicorn.supervisors import multiprocess

WORKER_HEALTHCHECK_SECONDS = 120
PING_SLICE_SECONDS = 0.5


class WatchedWorker(multiprocess.Process):
    """A uvicorn worker process whose health ping stops waiting once the worker is dead."""

    def ping(self, timeout: float = 5) -> bool:
        deadline = time.monotonic() + timeout
        try:
            self.parent_conn.send(b"ping")
            while not self.parent_conn.poll(
                min(PING_SLICE_SECONDS, max(deadline - time.monotonic(), 0.0))
            ):
                if not self.process.is_alive() or time.monotonic() >= deadline:
                    return False
            self.parent_conn.recv()  # the answer (whether its server has started)
        except (OSError, EOFError, pickle.UnpicklingError):
            return False
        return True


@contextlib.contextmanager
def watched_workers() -> Iterator[None]:
    """While serving: uvicorn's supervisor makes its workers as WatchedWorker (it creates
    them from its module's Process class, with no option to pass another)."""
    original = multiprocess.Process
    multiprocess.Process = WatchedWorker  # type: ignore[misc]
    try:
        yield
    finally:
        multiprocess.Process = original  # type: ignore[misc]
