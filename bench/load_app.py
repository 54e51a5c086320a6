"""uvicorn factory for bench/load_ab.py: the service app of `memexdb serve`, with the
settings its optimisations changed put back from the environment, to measure each one.

    LOADTEST_ONNX_THREADS   ONNX Runtime threads of the bundled model (service default 1)
    LOADTEST_MAX_WAIT_MS    micro-batching wait (BatchingEmbedder default 0)

Migrates MEMEX_DATABASE_URL first, as `memexdb serve` does before starting uvicorn.
"""

from __future__ import annotations

import os

from starlette.applications import Starlette

import memexdb
from memexdb import service
from memexdb.embedding import batching


def app() -> Starlette:
    memexdb.migrate(os.environ["MEMEX_DATABASE_URL"])
    threads = os.environ.get("LOADTEST_ONNX_THREADS")
    if threads:
        service.EMBEDDER_THREADS = int(threads)
    wait = os.environ.get("LOADTEST_MAX_WAIT_MS")
    if wait:
        defaults = batching.BatchingEmbedder.__init__.__defaults__
        assert defaults is not None and len(defaults) == 2  # (max_batch, max_wait_ms)
        batching.BatchingEmbedder.__init__.__defaults__ = (defaults[0], float(wait))
    return service.app_from_env()
