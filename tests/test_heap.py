"""A service worker's garbage collector (memexdb.heap): the heap its startup made frozen
and the young generation's threshold raised while it serves, both undone when it stops."""

from __future__ import annotations

import gc
import weakref

from memexdb import heap
from tests.live_service import in_process_service


def test_the_startup_heap_is_frozen_while_the_service_runs(dsn: str) -> None:
    before = gc.get_threshold()
    with in_process_service(dsn) as http:
        assert gc.get_freeze_count() > 10_000  # the model, the modules, the app
        assert gc.get_threshold() == (heap.YOUNG_THRESHOLD, *before[1:])
        assert http.get("/health/live").status_code == 200
    assert gc.get_freeze_count() == 0
    assert gc.get_threshold() == before


def test_garbage_made_while_serving_is_still_collected() -> None:
    class Node:
        def __init__(self) -> None:
            self.me = self

    with heap.settled():
        cycle = Node()
        ref = weakref.ref(cycle)
        del cycle
        gc.collect()
        assert ref() is None
