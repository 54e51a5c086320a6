"""The domain slices as tests read them: every module of request and response models
(memexdb.fields, memexdb.error_models, each memexdb/<domain>/models.py) and every module of
SQL call text (memexdb/core/sql.py, each memexdb/<domain>/sql.py), found on disk so that a
new domain is read without being listed here."""

from __future__ import annotations

import importlib
from pathlib import Path
from types import ModuleType
from typing import Any

import memexdb

PACKAGE = Path(memexdb.__file__).parent


def _modules(names: list[str]) -> list[ModuleType]:
    return [importlib.import_module(name) for name in names]


MODEL_MODULES = _modules(
    [
        "memexdb.fields",
        "memexdb.error_models",
        *(f"memexdb.{path.parent.name}.models" for path in sorted(PACKAGE.glob("*/models.py"))),
    ]
)
SQL_MODULES = _modules(
    [f"memexdb.{path.parent.name}.sql" for path in sorted(PACKAGE.glob("*/sql.py"))]
)

# every model, type and constant of the model modules, by name (names are unique)
MODELS: dict[str, Any] = {
    name: value for module in MODEL_MODULES for name, value in vars(module).items()
}
# every SQL statement the package sends, by its constant's name (names are unique)
STATEMENTS: dict[str, str] = {
    name: value
    for module in SQL_MODULES
    for name, value in vars(module).items()
    if name.isupper() and isinstance(value, str)
}
# how a module names a statement: sql.NAME in its own domain, <domain>_sql.NAME elsewhere
STATEMENT_REFERENCE = r"\b(?:[a-z]+_)?sql\.([A-Z_]+)"
