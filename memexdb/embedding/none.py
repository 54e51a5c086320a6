"""An embedder that loads no model, for a client that embeds nothing: the command line's
`memexdb keys` runs the key operations through the same Session as every other caller,
without the seconds (and memory) that loading MiniLM costs."""

from __future__ import annotations

from collections.abc import Sequence

from memexdb.embedding.errors import EmbeddingError
from memexdb.embedding.protocol import Vectors


class NoEmbedder:
    """Takes the schema's vector size when its Session connects (memexdb.session);
    embedding anything raises EmbeddingError."""

    model_id = "none"

    def __init__(self) -> None:
        self.dim = 0  # the schema's, set on connect

    def embed(self, texts: Sequence[str]) -> Vectors:
        raise EmbeddingError("this client loads no embedding model: it embeds nothing")
