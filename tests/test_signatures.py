"""The generated method signatures of the Python clients (tools/generate_signatures.py):
equal to the hand-written ones they replaced (tests/method_signatures.json, so no caller's
code breaks), and not stale (regenerated in memory, compared with the files)."""

from __future__ import annotations

import importlib.util
import json
import os
import sys
from pathlib import Path
from types import ModuleType

import pytest

from tests.signatures import signatures

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = Path(__file__).with_name("method_signatures.json")


def _generator() -> ModuleType:
    name = "generate_signatures"
    module = sys.modules.get(name)
    if module is None:
        spec = importlib.util.spec_from_file_location(name, ROOT / "tools/generate_signatures.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module  # dataclasses look their module up
        spec.loader.exec_module(module)
    return module


GENERATOR = _generator()


@pytest.mark.parametrize("target", GENERATOR.TARGETS, ids=lambda t: t.cls)
def test_the_generated_signatures_are_not_stale(target: object) -> None:
    source = target.path.read_text()  # type: ignore[attr-defined]
    assert GENERATOR.render(target, source) == source, (
        f"{target.path} is stale: run .venv/bin/python tools/generate_signatures.py"  # type: ignore[attr-defined]
    )


def test_the_signatures_are_the_ones_callers_had() -> None:
    """A changed signature breaks callers' code unless it only adds an optional
    parameter: after such an intended change, MEMEX_UPDATE_GOLDEN=1 rewrites the file."""
    now = signatures()
    if os.environ.get("MEMEX_UPDATE_GOLDEN"):
        GOLDEN.write_text(json.dumps(now, indent=2, sort_keys=True) + "\n")
    golden = json.loads(GOLDEN.read_text())
    changed = [
        (cls, name, now[cls].get(name), signature)
        for cls, methods in golden.items()
        for name, signature in methods.items()
        if now[cls].get(name) != signature
    ]
    assert not changed
    assert {cls: sorted(m) for cls, m in now.items()} == {
        cls: sorted(m) for cls, m in golden.items()
    }


def test_every_marked_method_is_generated() -> None:
    """Each method the generator knows carries the marker, and each marker is known."""
    for target in GENERATOR.TARGETS:
        text = target.path.read_text()
        assert text.count(GENERATOR.MARKER) == len(target.methods), target.path


def test_a_new_optional_field_reaches_every_python_client() -> None:
    """What a new request field does: render the same method over a model with one more
    optional field, and each signature takes it (keyword-only, the model's default; in the
    Protocol, `...`)."""
    from pydantic import create_model

    from memexdb.memories import operations as memories

    original = memories.SEARCH.request
    wider = create_model("Wider", __base__=original, newer_than=(int | None, None))
    object.__setattr__(memories.SEARCH, "request", wider)  # the table's op, for a moment
    try:
        rendered = [GENERATOR.render(t, t.path.read_text()) for t in GENERATOR.TARGETS]
    finally:
        object.__setattr__(memories.SEARCH, "request", original)
    for target, text in zip(GENERATOR.TARGETS, rendered, strict=True):
        search = text.split("    async def search(", 1)[1].split(") -> ", 1)[0]
        assert "        *,\n" in search, target.cls
        default = "..." if target.stub else "None"
        assert search.endswith(f"        newer_than: int | None = {default},\n    "), target.cls
