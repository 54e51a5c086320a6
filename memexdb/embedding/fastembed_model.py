"""Any fastembed text model as an Embedder.

fastembed downloads the model from its hub on first use unless ``specific_model_path``
points at a folder that already holds it; this machine reaches no hub, so only the
bundled MiniLM (see local_minilm.py) works offline.
"""

import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from fastembed import TextEmbedding

from memexdb.embedding.errors import EmbeddingError
from memexdb.embedding.long_text import TokenizerWindow
from memexdb.embedding.paths import cache_root
from memexdb.embedding.protocol import Vectors, no_vectors, unit_rows, validate_texts

DEFAULT_THREADS = 2
# Batch 256 peaked at 3 GB RSS with MiniLM; with 32 the process stays near 450 MB.
DEFAULT_BATCH_SIZE = 32
# What one model call costs beyond its tokens, in tokens of one text (length_groups).
CALL_OVERHEAD_TOKENS = 64


@dataclass(frozen=True)
class _LoadedModel:
    model: TextEmbedding
    dim: int
    # what one model call reads (None: the tokenizer is not one we can read)
    window: TokenizerWindow | None
    # One inference at a time per session, however many wrappers share it, so memory
    # and cores stay bounded at one batch.
    lock: threading.Lock


_load_lock = threading.Lock()
# what a model is loaded with: its name, threads, cache dir, model path, local files only
_LoadArguments = tuple[str, int, Path, Path | None, bool]
_loaded: dict[_LoadArguments, _LoadedModel] = {}


def load_text_embedding(
    model_name: str,
    *,
    threads: int,
    cache_dir: Path,
    specific_model_path: Path | None,
    local_files_only: bool,
) -> _LoadedModel:
    """Load a fastembed model once per process and argument set."""
    key = (model_name, threads, cache_dir, specific_model_path, local_files_only)
    with _load_lock:  # a second caller waits for the first load instead of loading again
        if key not in _loaded:
            _loaded[key] = _load(key)
        return _loaded[key]


def _load(arguments: _LoadArguments) -> _LoadedModel:
    model_name, threads, cache_dir, specific_model_path, local_files_only = arguments
    try:
        model = TextEmbedding(
            model_name=model_name,
            cache_dir=str(cache_dir),
            threads=threads,
            local_files_only=local_files_only,
            specific_model_path=None if specific_model_path is None else str(specific_model_path),
        )
    except Exception as exc:
        if specific_model_path is not None:
            where = f"from {specific_model_path}"
        else:
            where = f"from its hub via {cache_dir}" + (" (local only)" if local_files_only else "")
        raise EmbeddingError(f"cannot load fastembed model {model_name!r} {where}: {exc}") from exc
    return _LoadedModel(
        model=model, dim=int(model.embedding_size), window=_window(model), lock=threading.Lock()
    )


def _window(model: TextEmbedding) -> TokenizerWindow | None:
    # fastembed truncates every text to its tokenizer's max_length: that is the window.
    # (Its tokenizer sits on the inner ONNX model; other kinds of models have none.)
    tokenizer = getattr(getattr(model, "model", None), "tokenizer", None)
    if tokenizer is None:
        return None
    try:
        return TokenizerWindow.truncating(tokenizer)
    except (AttributeError, TypeError, ValueError):
        return None


def length_groups(lengths: Sequence[int], overhead: int = CALL_OVERHEAD_TOKENS) -> list[list[int]]:
    """Indexes of texts split into model calls that waste little on padding.

    A model call pads every text to its longest one, so a batch of short queries with
    one long text costs as much as a batch of long texts. The texts are sorted by
    (estimated) length and cut where the padding saved outweighs ``overhead``, the
    fixed cost of a call in tokens: the cuts minimise the sum over calls of
    ``texts * longest + overhead`` (dynamic programming over the sorted order).
    """
    order = sorted(range(len(lengths)), key=lengths.__getitem__)
    n = len(order)
    best = [0] + [0] * n  # best[i]: cost of the first i sorted texts
    cut = [0] * (n + 1)
    for end in range(1, n + 1):
        longest = lengths[order[end - 1]]
        best[end], cut[end] = min(
            (best[start] + (end - start) * longest + overhead, start) for start in range(end)
        )
    groups: list[list[int]] = []
    end = n
    while end > 0:
        groups.append(order[cut[end] : end])
        end = cut[end]
    return groups[::-1]


def estimated_tokens(text: str, window: TokenizerWindow | None) -> int:
    """A token count from the length (about 4 characters a token), capped at the window."""
    tokens = len(text) // 4 + 2
    return tokens if window is None else min(tokens, window.capacity + 2)


class FastEmbedModel:
    """A fastembed text model, e.g. ``FastEmbedModel("BAAI/bge-small-en-v1.5")``.

    Texts are embedded as passages (fastembed's ``embed``); texts longer than the
    model's context are truncated by its tokenizer (``token_window`` says how long that
    is; memexdb.embedding.long_text embeds long texts whole).
    """

    def __init__(
        self,
        model_name: str,
        *,
        threads: int = DEFAULT_THREADS,
        batch_size: int = DEFAULT_BATCH_SIZE,
        cache_dir: Path | None = None,
        specific_model_path: Path | None = None,
        local_files_only: bool = False,
        group_by_length: bool = True,
    ) -> None:
        if batch_size < 1:
            raise ValueError("batch_size must be >= 1")
        self._model_name = model_name
        self._batch_size = batch_size
        # Model calls of texts of similar length (length_groups); False: as they come.
        self.group_by_length = group_by_length
        self._loaded = load_text_embedding(
            model_name,
            threads=threads,
            cache_dir=(cache_dir or cache_root() / "fastembed"),
            specific_model_path=specific_model_path,
            local_files_only=local_files_only,
        )

    @property
    def model_id(self) -> str:
        return self._model_name

    @property
    def dim(self) -> int:
        return self._loaded.dim

    @property
    def token_window(self) -> TokenizerWindow | None:
        return self._loaded.window

    def embed(self, texts: Sequence[str]) -> Vectors:
        batch = validate_texts(texts)
        if not batch:
            return no_vectors(self.dim)
        groups = [list(range(len(batch)))]
        if self.group_by_length and len(batch) > 1:
            window = self._loaded.window
            groups = length_groups([estimated_tokens(t, window) for t in batch])
        if len(groups) == 1:
            with self._loaded.lock:
                rows = list(self._loaded.model.embed(batch, batch_size=self._batch_size))
            return unit_rows(np.stack(rows), expected_rows=len(batch), dim=self.dim)
        out = np.empty((len(batch), self.dim), dtype=np.float32)
        for group in groups:
            for lo in range(0, len(group), self._batch_size):
                part = group[lo : lo + self._batch_size]
                texts = [batch[i] for i in part]
                with self._loaded.lock:
                    rows = list(self._loaded.model.embed(texts, batch_size=len(part)))
                out[part] = unit_rows(np.stack(rows), expected_rows=len(part), dim=self.dim)
        return out

    def __repr__(self) -> str:
        return f"FastEmbedModel({self._model_name!r}, dim={self.dim})"
