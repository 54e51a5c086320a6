"""Where the versioned SQL lives: `sql/` and `alembic/` at the project root in a source
checkout, `memexdb/_sql` and `memexdb/_alembic` inside an installed wheel."""

from __future__ import annotations

from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent


def _find(installed: str, source: str) -> Path:
    for candidate in (_PACKAGE / installed, _PACKAGE.parent / source):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError(f"memexdb is missing its {source}/ directory")


def sql_dir() -> Path:
    """Directory of the `create or replace` SQL function files."""
    return _find("_sql", "sql")


def alembic_dir() -> Path:
    """Alembic script location (env.py + versions/)."""
    return _find("_alembic", "alembic")
