"""The garbage collector of a service worker: its startup heap frozen, young objects
collected less often.

A worker holds ~220,000 objects once started (the model, pydantic's and Starlette's
tables, the modules), none of which ever becomes garbage; every full collection walked
them all again (~0.1-0.2 s a pass, seven passes in 40 s of memex's workload), and young
collections ran every 700 net allocations. Frozen (`gc.freeze`), a full pass walks only
what was made since; the young generation's threshold is raised so that the short-lived
objects of the requests in flight are mostly freed by reference counting before a
collection looks at them (bench/RESULTS.md, "Issue 39 item 1, service side (session 8)").
Garbage is still collected: cycles made after startup as before, only later.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator

# Net allocations of container objects between young-generation collections (CPython's
# default: 700).
YOUNG_THRESHOLD = 7000


@contextlib.contextmanager
def settled() -> Iterator[None]:
    """While the service runs: what startup made, frozen, and the young threshold raised;
    both undone when it stops (a test's process goes on as it was)."""
    before = gc.get_threshold()
    # No gc.collect() first: over a big heap it blocks the loop for a while (seconds in a
    # loaded test process, where the database watch's first probe then timed out); the
    # little garbage startup left is frozen with the rest.
    gc.freeze()
    gc.set_threshold(YOUNG_THRESHOLD, *before[1:])
    try:
        yield
    finally:
        gc.set_threshold(*before)
        gc.unfreeze()
