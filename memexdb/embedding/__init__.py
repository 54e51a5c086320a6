"""Text embeddings for memexdb.

``build_embedder("minilm")`` gives the bundled offline default (all-MiniLM-L6-v2 int8,
384-d); wrap any :class:`Embedder` in :class:`BatchingEmbedder` to use it from async
code. All vectors are float32 numpy arrays with L2-normalised rows; store ``model_id``
with every vector.
"""

from memexdb.embedding.batching import BatchingEmbedder
from memexdb.embedding.errors import EmbeddingError, EmbeddingServiceError, ModelIntegrityError
from memexdb.embedding.factory import DEFAULT_SPEC, build_embedder
from memexdb.embedding.fastembed_model import FastEmbedModel
from memexdb.embedding.local_minilm import LocalMiniLM
from memexdb.embedding.openai_compat import OpenAIEmbeddings
from memexdb.embedding.protocol import Embedder, Vectors

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
