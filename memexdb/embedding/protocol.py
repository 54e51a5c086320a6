"""The contract every embedder fulfils, plus the input/output checks they share.

Vectors are ``numpy.ndarray`` of shape ``(n, dim)`` and dtype float32, one L2-normalised
row per input text in input order; pgvector's psycopg adapter takes them as they are.
Inner product and cosine similarity are therefore the same thing for every embedder.
"""

from collections.abc import Sequence
from typing import Protocol, TypeAlias, runtime_checkable

import numpy as np
import numpy.typing as npt

from memexdb.embedding.errors import EmbeddingError

Vectors: TypeAlias = npt.NDArray[np.float32]


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into unit vectors. ``embed`` blocks; run it off the event loop.

    ``model_id`` is stored next to every vector so that vectors of different models
    are never compared with each other.
    """

    @property
    def model_id(self) -> str: ...

    @property
    def dim(self) -> int: ...

    def embed(self, texts: Sequence[str]) -> Vectors:
        """Embed ``texts`` (non-empty strings) into a float32 array of shape (len(texts), dim)."""
        ...


def validate_texts(texts: Sequence[str]) -> list[str]:
    """Reject inputs that would silently give meaningless vectors.

    A bare ``str`` is a ``Sequence[str]`` too and would be embedded character by
    character, and an empty or blank text embeds to a vector that matches nothing.
    """
    if isinstance(texts, str | bytes):
        raise TypeError("texts must be a sequence of strings, not a single string")
    checked = list(texts)
    for i, text in enumerate(checked):
        validate_text(text, where=f"texts[{i}]")
    return checked


# The whitespace a blank text is made of, for the request models (memexdb.fields, whose
# JSON Schema pattern says the same) and the embedders alike: ASCII's. A text of other
# Unicode spaces (U+0085, U+3000, ...) is not blank; it is embedded as any other.
BLANK = " \t\n\r\f\v"


def validate_text(text: str, *, where: str = "text") -> str:
    if not isinstance(text, str):
        raise TypeError(f"{where} must be str, got {type(text).__name__}")
    if not text.strip(BLANK):
        raise ValueError(f"{where} must be a non-empty, non-blank string")
    return text


def unit_rows(rows: npt.ArrayLike, *, expected_rows: int, dim: int | None) -> Vectors:
    """Return ``rows`` as a C-contiguous float32 (n, dim) array with unit-length rows."""
    vectors = np.ascontiguousarray(rows, dtype=np.float32)
    if vectors.ndim != 2 or vectors.shape[0] != expected_rows:
        raise EmbeddingError(
            f"expected {expected_rows} vectors, got an array of shape {vectors.shape}"
        )
    if dim is not None and vectors.shape[1] != dim:
        raise EmbeddingError(f"expected vectors of dimension {dim}, got {vectors.shape[1]}")
    if not np.isfinite(vectors).all():
        raise EmbeddingError("embedding contains NaN or infinite values")
    # Normalised in float64 so that the float32 rows are unit length to rounding error.
    wide = vectors.astype(np.float64)
    norms = np.linalg.norm(wide, axis=1, keepdims=True)
    if expected_rows and float(norms.min()) == 0.0:
        raise EmbeddingError("embedding contains an all-zero vector")
    return np.ascontiguousarray(wide / norms, dtype=np.float32)


def no_vectors(dim: int) -> Vectors:
    return np.empty((0, dim), dtype=np.float32)
