"""Exceptions raised by the embedding layer."""


class EmbeddingError(RuntimeError):
    """An embedder could not produce vectors."""


class ModelIntegrityError(EmbeddingError):
    """A model file on disk is not the file we pinned (sha256 mismatch or missing)."""


class EmbeddingServiceError(EmbeddingError):
    """A remote embeddings endpoint failed, timed out or answered something unusable."""
