"""The public signatures of the Python clients, as data: what tests/test_signatures.py
compares with tests/method_signatures.json (captured from the hand-written methods before
their signatures were generated), so that generating them changes no caller's code.

Keyword-only parameters are compared as a set (their order is no caller's concern);
positional ones in order."""

from __future__ import annotations

import inspect
from typing import Any

import memexdb_client

from memexdb.client import AsyncMemex, Memex

CLASSES: dict[str, type[Any]] = {
    "memexdb.AsyncMemex": AsyncMemex,
    "memexdb.Memex": Memex,
    "memexdb_client.AsyncMemexClient": memexdb_client.AsyncMemexClient,
    "memexdb_client.MemexClient": memexdb_client.MemexClient,
    "memexdb_client.AsyncMemoryAPI": memexdb_client.AsyncMemoryAPI,
}


def _method(function: Any) -> dict[str, Any]:
    signature = inspect.signature(function)
    positional: list[str] = []
    keyword: list[str] = []
    for parameter in signature.parameters.values():
        text = str(parameter)
        if parameter.kind is inspect.Parameter.KEYWORD_ONLY:
            keyword.append(text)
        else:
            positional.append(f"{parameter.kind.name}:{text}")
    returns = signature.return_annotation
    return {
        "positional": positional,
        "keyword": sorted(keyword),
        "return": "" if returns is inspect.Signature.empty else str(returns),
    }


def signatures() -> dict[str, dict[str, Any]]:
    """Every public method of each client class: its parameters and return annotation."""
    out: dict[str, dict[str, Any]] = {}
    for label, cls in CLASSES.items():
        methods: dict[str, Any] = {}
        for name in sorted(dir(cls)):
            if name.startswith("_"):
                continue
            value = inspect.getattr_static(cls, name)
            if isinstance(value, (staticmethod, classmethod)):
                value = value.__func__
            if not callable(value):
                continue
            methods[name] = _method(value)
        out[label] = methods
    return out
