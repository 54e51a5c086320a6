"""Text embeddings for memexdb.

``build_embedder("minilm")`` gives the bundled offline default (all-MiniLM-L6-v2 int8,
384-d); wrap any :class:`Embedder` in :class:`BatchingEmbedder` to use it from async
code. All vectors are float32 numpy arrays with L2-normalised rows; store ``model_id``
with every vector.
"""

from typing import TYPE_CHECKING, Any

from memexdb.embedding.batching import BatchingEmbedder
from memexdb.embedding.errors import EmbeddingError, EmbeddingServiceError, ModelIntegrityError
from memexdb.embedding.factory import DEFAULT_SPEC, build_embedder
from memexdb.embedding.openai_compat import OpenAIEmbeddings
from memexdb.embedding.protocol import Embedder, Vectors

if TYPE_CHECKING:
    from memexdb.embedding.fastembed_model import FastEmbedModel
    from memexdb.embedding.local_minilm import LocalMiniLM

# The model backends import fastembed and onnx (about a second of CPU): only when asked for
# (build_embedder loads them itself), so that importing memexdb stays light for commands
# that embed nothing.
_LAZY = {
    "FastEmbedModel": "memexdb.embedding.fastembed_model",
    "LocalMiniLM": "memexdb.embedding.local_minilm",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "DEFAULT_SPEC",
    "BatchingEmbedder",
    "Embedder",
    "EmbeddingError",
    "EmbeddingServiceError",
    "FastEmbedModel",
    "LocalMiniLM",
    "ModelIntegrityError",
    "OpenAIEmbeddings",
    "Vectors",
    "build_embedder",
]
