"""Where the embedding layer may write model files."""

import atexit
import functools
import shutil
import tempfile
from pathlib import Path

import platformdirs


@functools.cache
def cache_root() -> Path:
    """The per-user cache folder for model files, created on first use.

    Falls back to a private temporary folder (removed at exit) when the user cache is
    not writable, e.g. a read-only home in a container.
    """
    root = Path(platformdirs.user_cache_dir("memexdb")) / "models"
    try:
        root.mkdir(parents=True, exist_ok=True)
        probe = tempfile.NamedTemporaryFile(dir=root, prefix=".probe-")  # noqa: SIM115
        probe.close()
    except OSError:
        root = Path(tempfile.mkdtemp(prefix="memexdb-models-"))
        atexit.register(shutil.rmtree, root, ignore_errors=True)
    return root
