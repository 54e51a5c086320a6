"""Write the field tables of the docs from the operation table's request models.

A table stands between `<!-- fields:NAME:begin (...) -->` and `<!-- fields:NAME:end -->`
in a page of docs/, NAME an operation of memexdb.operation_table: one row a field of the
request its route reads (`Route.wire`, else the operation's request), in the model's
order, with its JSON type and bounds, its default and its description, all as the
OpenAPI document has them (the same JSON Schema). A field added to the request model is
thus documented by running this, not by editing the page; tests/test_field_docs.py fails
while a table differs from its model.

    .venv/bin/python tools/generate_field_docs.py          # rewrite the tables in place
    .venv/bin/python tools/generate_field_docs.py --check  # exit 1 if one is stale
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
_BLOCK = re.compile(
    r"(<!-- fields:(?P<name>\w+):begin[^\n]*-->\n)(?P<table>.*?)(<!-- fields:(?P=name):end -->)",
    re.S,
)
_BEGIN = (
    "<!-- fields:{name}:begin"
    " (written from the request model by tools/generate_field_docs.py) -->\n"
)
_DASH = "\N{EN DASH}"  # a range, as the docs write it


def _kind(schema: dict[str, Any]) -> str:
    """A field's JSON type and bounds, short: `integer 1-100` (an en dash), `string (date-time)`."""
    options = [s for s in schema.get("anyOf", [schema]) if s.get("type") != "null"]
    nullable = len(options) < len(schema.get("anyOf", [schema]))
    parts = []
    for option in options:
        if "enum" in option:
            text = "\\|".join(str(v) for v in option["enum"])
        elif option.get("type") == "array":
            text = f"array of {_kind(option.get('items', {}))}"
        else:
            text = option.get("type", "any")
            if "format" in option:
                text += f" ({option['format']})"
        low = option.get("minimum", option.get("minLength"))
        high = option.get("maximum", option.get("maxLength"))
        if low is not None and high is not None:
            unit = " chars" if "maxLength" in option else ""
            text += f" {low:g}{_DASH}{high:g}{unit}"
        parts.append(text)
    return " or ".join(parts) + (" or null" if nullable else "")


def table(name: str) -> str:
    """The markdown table of operation `name`'s request fields."""
    from memexdb.operation_table import OPERATIONS

    operation = next((op for op in OPERATIONS if op.name == name), None)
    if operation is None:
        raise SystemExit(f"no operation {name!r} in memexdb.operation_table")
    model = operation.rest.wire if operation.rest and operation.rest.wire else operation.request
    schema = model.model_json_schema()
    required = set(schema.get("required", ()))
    rows = ["| field | type | default | meaning |", "| --- | --- | --- | --- |"]
    for field, spec in schema["properties"].items():
        default = "required" if field in required else json.dumps(spec.get("default"))
        description = " ".join(spec.get("description", "").split()).replace("|", "\\|")
        rows.append(f"| `{field}` | {_kind(spec)} | {default} | {description} |")
    return "\n".join(rows) + "\n"


def render(text: str) -> str:
    """The page with every field table written again."""
    return _BLOCK.sub(lambda m: _BEGIN.format(name=m["name"]) + table(m["name"]) + m.group(4), text)


def main(argv: list[str]) -> int:
    stale = []
    for page in sorted(DOCS.glob("*.md")):
        text = page.read_text()
        new = render(text)
        if new != text:
            stale.append(str(page.relative_to(ROOT)))
            if "--check" not in argv:
                page.write_text(new)
    if "--check" in argv and stale:
        print("stale field tables (python tools/generate_field_docs.py):", *stale)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
