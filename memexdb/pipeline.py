"""A psycopg pipeline that goes out in one write: what `Session.fetch` sends per request
(memex._enter, the call, the Sync) reaches the server in one packet, and the server
answers everything in one.

psycopg's own pipeline hands each statement to libpq and flushes it as soon as it is
executed, then the Sync, then a flush request ("H") after the Sync: four sends per
request, and the backend woken for each one that arrives after it went back to sleep
(bench/RESULTS.md, "Issue 39 item 1, service side (session 8)"). Here the statements are
queued until the Sync, handed to libpq together (libpq buffers them in pipeline mode),
and the Sync's flush sends them; no flush request follows (after a Sync the server
flushes its answers anyway). Same statements, same order, same implicit transaction:
only the writes change.

It overrides three private generators of psycopg's `AsyncPipeline` (psycopg 3.2-3.3);
tests/test_request_transaction.py runs the service's path through it.
"""

from __future__ import annotations

from typing import Any

import psycopg
from psycopg import generators
from psycopg.abc import PQGen


class OneSendPipeline(psycopg.AsyncPipeline):
    """An AsyncPipeline whose statements go out at its Sync, in one send (see the module).

    Install it with `holding(conn)` before `conn.pipeline()`: psycopg uses the pipeline
    object it finds on the connection."""

    _sync_queued = False
    _sync_handed = False

    def _enqueue_sync(self) -> None:
        super()._enqueue_sync()
        self._sync_queued = True

    def _communicate_gen(self) -> PQGen[None]:
        if not self._sync_queued:
            return  # held: nothing goes out before the Sync
        self._sync_queued = False
        # Into libpq's buffer, in order; PQpipelineSync (the last) flushes them together.
        while self.command_queue:
            self.command_queue.popleft()()
        self._sync_handed = True
        # What did not fit in the socket at once (a batch of stores: libpq writes its
        # buffer beyond 64 KiB while queueing) goes out before any result is awaited:
        # the server answers nothing before it has read the whole statement.
        yield from generators.send(self.pgconn)

    def _exit_gen(self) -> PQGen[None]:
        try:
            self._enqueue_sync()
            yield from self._communicate_gen()
        finally:
            # Once the Sync is sent the server answers all without a flush request
            # (psycopg sends one here: one more message, one more wake-up of the backend).
            yield from self._fetch_gen(flush=not self._sync_handed)


def holding(conn: psycopg.AsyncConnection[Any]) -> None:
    """Make the next `conn.pipeline()` a OneSendPipeline (none may be open on `conn`)."""
    if conn._pipeline is None:
        conn._pipeline = OneSendPipeline(conn)
