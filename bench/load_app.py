"""uvicorn factory for bench/load_ab.py: the service app of `memexdb serve`, with the
settings its optimisations changed put back from the environment, to measure each one.

    LOADTEST_ONNX_THREADS   ONNX Runtime threads of the bundled model (service default 1)
    LOADTEST_MAX_WAIT_MS    micro-batching wait (BatchingEmbedder default 0)
    LOADTEST_POOL_CHECK     "always": the pool checks every connection it hands out
                            (default: only those idle for memexdb.db.TRUSTED_FOR_S)

Migrates MEMEX_DATABASE_URL first, as `memexdb serve` does before starting uvicorn.
"""

from __future__ import annotations

import os

from starlette.applications import Starlette

import memexdb
from memexdb import db, service
from memexdb.embedding import batching
from memexdb.runtime import embedder


def app() -> Starlette:
    memexdb.migrate(os.environ["MEMEX_DATABASE_URL"])
    threads = os.environ.get("LOADTEST_ONNX_THREADS")
    if threads:
        embedder.EMBEDDER_THREADS = int(threads)
    wait = os.environ.get("LOADTEST_MAX_WAIT_MS")
    if wait:
        defaults = batching.BatchingEmbedder.__init__.__defaults__
        assert defaults is not None and len(defaults) == 2  # (max_batch, max_wait_ms)
        batching.BatchingEmbedder.__init__.__defaults__ = (defaults[0], float(wait))
    if os.environ.get("LOADTEST_POOL_CHECK") == "always":
        db.TRUSTED_FOR_S = 0.0
    return service.app_from_env()
