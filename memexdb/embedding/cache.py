"""A bounded, thread-safe LRU cache of embeddings by text.

Agents repeat themselves: the memex reference workload sends the same few queries and
contents again and again, and one embedding costs ~3 ms of CPU while a lookup costs
microseconds. Vectors are stored read-only, so a caller cannot change a cached one.
"""

from __future__ import annotations

import threading
from collections import OrderedDict

from memexdb.embedding.protocol import Vectors


class EmbeddingCache:
    """At most `entries` vectors of one model, least recently used evicted first."""

    def __init__(self, entries: int) -> None:
        if entries < 1:
            raise ValueError("entries must be >= 1")
        self.entries = entries
        self._vectors: OrderedDict[str, Vectors] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def get(self, text: str) -> Vectors | None:
        with self._lock:
            vector = self._vectors.get(text)
            if vector is None:
                self.misses += 1
                return None
            self._vectors.move_to_end(text)
            self.hits += 1
            return vector

    def put(self, text: str, vector: Vectors) -> Vectors:
        """Keep a read-only copy of `vector`; returns it."""
        kept = vector.copy()
        kept.flags.writeable = False
        with self._lock:
            self._vectors[text] = kept
            self._vectors.move_to_end(text)
            while len(self._vectors) > self.entries:
                self._vectors.popitem(last=False)
        return kept

    def __len__(self) -> int:
        return len(self._vectors)
