"""What a user gets, made the way a user makes it: a checkout of the repository's tracked
files only (nothing built, installed or cached in this working tree comes along), fresh
empty virtual environments, and the packaging tools run as commands (bounded)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from collections.abc import Sequence
from pathlib import Path

import pytest

from tests.live_service import REPO, required

PYTHON = "python3.11"  # what the image (python:3.11) and the project's venvs run
STEP_TIMEOUT = 420.0  # one install of memexdb's dependencies on a loaded 2-core box
INSTALL_TIMEOUT = 900  # a test that installs them (pytest's default timeout is 300 s)
# pip byte-compiles every module it installs: some 3,600 with memexdb's dependencies, 12 s
# of CPU per install (measured 2026-12-06, `python -m compileall` of the image's venv). A
# module that does not compile never fails an install (pip logs it at debug level), so the
# tests leave it out (what they run compiles on import).
NO_COMPILE = "--no-compile"


def run(
    args: Sequence[str | Path],
    cwd: Path,
    env: dict[str, str] | None = None,
    timeout: float = STEP_TIMEOUT,
) -> str:
    """Run a command to success (bounded): its output, or a failure that shows it."""
    try:
        res = subprocess.run(
            [str(a) for a in args],
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"{' '.join(map(str, args))} ran over {timeout} s: {exc.stdout!r}")
    output = res.stdout + res.stderr
    assert res.returncode == 0, (
        f"{' '.join(map(str, args))} exited {res.returncode}:\n{output[-8000:]}"
    )
    return output


def tracked_files(under: str = "") -> list[str]:
    """The repository's tracked files (`git ls-files`), under `under` if given."""
    git = required(shutil.which("git"), "git is not installed")
    if not (REPO / ".git").exists():
        pytest.fail(f"{REPO} is not a git checkout: the packaging tests copy its tracked files")
    out = run([git, "ls-files", "-z", "--", under or "."], REPO)
    return [name for name in out.split("\0") if name]


def checkout(dest: Path, under: str = "") -> Path:
    """A clean checkout at `dest`: the tracked files (as the working tree has them, so an
    uncommitted edit is tested, but a file never added is missing, as from a `git clone`),
    with their modes; nothing ignored (no dist/, node_modules/, .venv/)."""
    for name in tracked_files(under):
        source = REPO / name
        if source.is_file():  # a tracked file deleted in the working tree is left out
            target = dest / name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)
    return dest


def fresh_venv(path: Path) -> Path:
    """An empty virtual environment of python3.11 (pip only); its bin/ directory."""
    python = required(shutil.which(PYTHON), f"{PYTHON} is not installed")
    run([python, "-m", "venv", path], path.parent)
    return path / "bin"


def clean_env(**extra: str) -> dict[str, str]:
    """This environment without the caller's MEMEX_*, virtualenv and Python path settings
    (nothing of this venv leaks into the fresh ones), plus `extra`."""
    drop = ("MEMEX_", "VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME", "npm_")
    env = {k: v for k, v in os.environ.items() if not k.startswith(drop)}
    env.update(extra)
    return env


def build_dists(project: Path, out: Path) -> list[Path]:
    """`python -m build` (an sdist, then the wheel built from it) with this venv's `build`."""
    run([sys.executable, "-m", "build", "--outdir", out, project], project, clean_env())
    return sorted(out.iterdir())


def wheel_names(wheel: Path) -> set[str]:
    """The files a wheel installs (its .dist-info aside)."""
    with zipfile.ZipFile(wheel) as zf:
        return {n for n in zf.namelist() if ".dist-info/" not in n}
