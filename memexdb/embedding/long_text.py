"""Embeddings of texts of any length: the mean of the embeddings of the text's chunks.

A model reads a window of tokens (the bundled MiniLM: 256, two of them its [CLS] and
[SEP]) and its tokenizer drops the rest, so a long text embedded as it is would be
represented by its beginning only. `embed_in_full` cuts a text that does not fit into
chunks that do, preferring line and sentence ends, then spaces between words, and cutting
inside a word only when one word is longer than a window; it embeds every chunk and
returns the mean of the chunk vectors weighted by their token counts, normalised (so a
short last chunk weighs what it holds, not as much as a full one). A text that fits the
window is one chunk, and its vector is exactly the model's vector of the text.

The cutting works on one tokenization of the text (token offsets), so no chunk is
tokenized twice. Embedders without a tokenizer (OpenAI-compatible endpoints) are cut by
characters, CHAR_WINDOW per chunk, which fits a 256-token window for English text.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import numpy as np
from tokenizers import Tokenizer

from memexdb.embedding.protocol import (
    Embedder,
    Vectors,
    no_vectors,
    unit_rows,
    validate_texts,
)

# Characters per chunk for embedders whose tokenizer is unknown.
CHAR_WINDOW = 1000

# Where a sentence ends: a line break, or sentence punctuation followed by a space (CJK
# full stops need none).
_STRONG_GAP = re.compile(r"\n")
_SENTENCE_END = re.compile(r"[.!?;:\u2026]['\")\]]*$")
_CJK_END = re.compile(r"[\u3002\uff01\uff1f\uff1b]$")


@runtime_checkable
class TokenWindow(Protocol):
    """How an embedder reads text: the character spans of a text's tokens, and how many
    tokens one call of the model reads (besides its own special tokens)."""

    @property
    def capacity(self) -> int: ...

    def spans(self, texts: Sequence[str]) -> list[list[tuple[int, int]]]:
        """For each text, the (start, end) character offsets of its tokens, in order."""
        ...


class TokenizerWindow:
    """The window of a model with a Hugging Face tokenizer: `max_tokens` per call (the
    tokenizer's truncation length), less the special tokens it adds."""

    def __init__(self, tokenizer: Tokenizer, max_tokens: int) -> None:
        # A copy that neither truncates nor pads: counting must see every token.
        self._tokenizer = Tokenizer.from_str(tokenizer.to_str())
        self._tokenizer.no_truncation()
        self._tokenizer.no_padding()
        specials = len(self._tokenizer.encode("", add_special_tokens=True).ids)
        if max_tokens - specials < 1:
            raise ValueError(f"a window of {max_tokens} tokens holds no text")
        self._capacity = max_tokens - specials

    @classmethod
    def truncating(cls, tokenizer: Tokenizer) -> TokenizerWindow | None:
        """The window a truncating tokenizer (as fastembed loads them) implies; None if it
        does not truncate."""
        truncation = tokenizer.truncation
        if not truncation or not truncation.get("max_length"):
            return None
        return cls(tokenizer, int(truncation["max_length"]))

    @property
    def capacity(self) -> int:
        return self._capacity

    def spans(self, texts: Sequence[str]) -> list[list[tuple[int, int]]]:
        encodings = self._tokenizer.encode_batch(list(texts), add_special_tokens=False)
        return [[(int(s), int(e)) for s, e in enc.offsets] for enc in encodings]


class CharWindow:
    """A window of `capacity` characters (not counting spaces), for embedders whose
    tokenizer is unknown: every other character counts as a token."""

    def __init__(self, capacity: int = CHAR_WINDOW) -> None:
        if capacity < 1:
            raise ValueError("capacity must be >= 1")
        self._capacity = capacity

    @property
    def capacity(self) -> int:
        return self._capacity

    def spans(self, texts: Sequence[str]) -> list[list[tuple[int, int]]]:
        return [[(m.start(), m.end()) for m in re.finditer(r"\S", text)] for text in texts]


def window_of(embedder: Embedder) -> TokenWindow:
    """The embedder's own window (its `token_window`), else CHAR_WINDOW characters."""
    window = getattr(embedder, "token_window", None)
    return window if isinstance(window, TokenWindow) else CharWindow()


@dataclass(frozen=True)
class Chunk:
    text: str
    tokens: int


def _gap_strength(text: str, before: tuple[int, int], after: tuple[int, int]) -> int:
    """How good a cut between two tokens is: 2 at a line or sentence end, 1 between
    words, 0 inside a word."""
    gap = text[before[1] : after[0]]
    if _STRONG_GAP.search(gap):
        return 2
    token = text[before[0] : before[1]]
    if _CJK_END.search(token):
        return 2
    if gap and gap.isspace():
        return 2 if _SENTENCE_END.search(token) else 1
    return 0


def chunks(text: str, spans: list[tuple[int, int]], capacity: int) -> list[Chunk]:
    """`text` (whose tokens are at `spans`) cut into chunks of at most `capacity` tokens:
    each ends at the last sentence end that fits, else the last space between words, else
    at the window's edge."""
    n = len(spans)
    if n <= capacity:
        return [Chunk(text, n)]
    strength = [0] + [_gap_strength(text, spans[k - 1], spans[k]) for k in range(1, n)]
    found: list[Chunk] = []
    start = 0
    while start < n:  # each pass consumes at least one token
        end = min(start + capacity, n)
        if end < n:
            best = max(range(start + 1, end + 1), key=lambda k: (strength[k], k))
            if strength[best] > 0:
                end = best
        found.append(Chunk(text[spans[start][0] : spans[end - 1][1]], end - start))
        start = end
    return found


def mean_vector(vectors: Vectors, weights: Sequence[int]) -> Vectors:
    """The weighted mean of unit row vectors, normalised (shape (dim,))."""
    total = np.average(vectors.astype(np.float64), axis=0, weights=[max(w, 1) for w in weights])
    return unit_rows(total[np.newaxis, :], expected_rows=1, dim=vectors.shape[1]).reshape(-1)


@dataclass(frozen=True)
class Plan:
    """The chunks of some texts: `pieces` to embed, in order, and for each text the
    token count of each of its chunks (one count: the text is its own chunk)."""

    pieces: list[str]
    tokens: list[list[int]]

    @property
    def total_tokens(self) -> int:
        return sum(sum(counts) for counts in self.tokens)

    def combine(self, vectors: Vectors) -> Vectors:
        """The texts' vectors from the vectors of `pieces`."""
        rows = []
        at = 0
        for counts in self.tokens:
            part = vectors[at : at + len(counts)]
            rows.append(part[0] if len(counts) == 1 else mean_vector(part, counts))
            at += len(counts)
        if not rows:
            return no_vectors(vectors.shape[1])
        return np.ascontiguousarray(np.stack(rows), dtype=np.float32)


def plan(texts: Sequence[str], window: TokenWindow) -> Plan:
    """Cut `texts` (non-blank strings) into the chunks `window` reads whole."""
    batch = validate_texts(texts)
    pieces: list[str] = []
    tokens: list[list[int]] = []
    for text, spans in zip(batch, window.spans(batch), strict=True):
        found = chunks(text, spans, window.capacity)
        pieces.extend(c.text for c in found)
        tokens.append([c.tokens for c in found])
    return Plan(pieces, tokens)


def embed_in_full(
    embedder: Embedder,
    texts: Sequence[str],
    embed: Callable[[list[str]], Vectors] | None = None,
) -> Vectors:
    """One vector per text that represents all of it (see the module's docstring);
    `embed` defaults to the embedder's own (blocking) call."""
    cut = plan(texts, window_of(embedder))
    return cut.combine((embed or embedder.embed)(cut.pieces))
