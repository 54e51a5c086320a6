"""The package's import structure (tools/import_graph.py, read from the source): no import
cycle, and no module imports a module of a higher layer (fields/errors/config -> session
-> domain slices -> client -> agentic and the operation table -> runtime -> frontends)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parent.parent


def _tool() -> ModuleType:
    spec = importlib.util.spec_from_file_location("import_graph", ROOT / "tools/import_graph.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


graph = _tool()


def test_the_package_has_no_import_cycle() -> None:
    assert graph.cycles(graph.graph()) == []


def test_no_module_imports_a_higher_layer() -> None:
    assert graph.upward(graph.graph()) == []


def test_every_module_is_in_a_layer() -> None:
    for name in graph.graph():
        graph.layer(name)  # raises SystemExit for a module no layer names


def test_the_checks_see_a_cycle_and_an_upward_import() -> None:
    # the detector itself: a cycle through a function-level import, and a session module
    # that reads the client, are both found
    edges = {
        "memexdb.client": {"memexdb.moving"},
        "memexdb.moving": {"memexdb.client"},
        "memexdb.session": {"memexdb.client"},
        "memexdb.fields": set(),
    }
    assert graph.cycles(edges) == [["memexdb.client", "memexdb.moving"]]
    assert ("memexdb.session", "memexdb.client") in graph.upward(edges)


def test_imports_inside_functions_and_under_type_checking_count(tmp_path: Path) -> None:
    source = tmp_path / "memexdb" / "moving.py"
    source.parent.mkdir()
    source.write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from memexdb.client import AsyncMemex\n"
        "def f():\n    from memexdb import session\n"
    )
    known = {"memexdb.moving", "memexdb.client", "memexdb.session", "memexdb"}
    found = graph.imports("memexdb.moving", source, known)
    assert found == {"memexdb.client", "memexdb.session"}
