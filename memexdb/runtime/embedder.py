"""The embedder of a memexdb process, built the same way for every frontend."""

from __future__ import annotations

from memexdb.config import Settings
from memexdb.embedding import Embedder, build_embedder

# ONNX Runtime threads per process for the bundled model (more cores: --workers).
# Two intra-op threads that share the cores with Postgres and the event loop spin and
# wait for each other: on 2 cores that cost 2.5x the service CPU of a lone request and
# ~40% more per request under load (bench/RESULTS.md, "Load test").
EMBEDDER_THREADS = 1


def embedder_for(settings: Settings) -> Embedder:
    """The embedder MEMEX_EMBEDDER names (a new one per call: the caller owns it)."""
    if settings.embedder.strip().lower() == "minilm":
        # imported on use: onnx and fastembed cost every command that embeds nothing
        # about a second of CPU to import (memexdb.embedding)
        from memexdb.embedding.local_minilm import LocalMiniLM

        return LocalMiniLM(threads=EMBEDDER_THREADS)
    return build_embedder(
        settings.embedder, url=settings.embedding_url, api_key=settings.embedding_api_key
    )
