"""Lay out every function header of sql/ the one way (docs/development.md "SQL layout").

After the parameter list and `returns ...`, a function's attributes stand on one line, in
this order: `language`, the volatility, `strict`, `parallel safe`, `security definer`,
`set search_path = ...`; any further `set` (plan_cache_mode, lock_timeout) follows on a
line of its own with the comment that says why above it; then `as $$`.

    returns bigint
    language plpgsql stable security definer set search_path = pg_catalog, pg_temp
    as $$

Only the lines between `returns` and `as $$` change; the body between the dollar quotes is
left byte for byte, and so is the catalog (the attributes' order on a line is not
recorded, the `set` clauses keep theirs). `--check` exits 1 and lists the files that are
not laid out so (tests/test_sql_layout.py runs it).

    python tools/sql_layout.py           # rewrite sql/ in place
    python tools/sql_layout.py --check
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

SQL = Path(__file__).resolve().parent.parent / "sql"


def function_files() -> list[Path]:
    """The SQL layer's files: every .sql under sql/ but the frozen revisions (never
    edited, whatever their layout: tests/revision_checksums.txt)."""
    return [p for p in sorted(SQL.rglob("*.sql")) if p.parent.name != "revisions"]


# one attribute a match; a line may hold several (the laid-out form) or one
_ATTRIBUTE = re.compile(
    r"language \w+|volatile|stable|immutable|strict|parallel (?:safe|restricted|unsafe)"
    r"|security (?:definer|invoker)|rows \d+|cost \d+|set \w+ = [^-]*?(?=\s*(?:--|$))"
)
_ORDER = ("language", "volatility", "strict", "parallel", "security", "rows", "cost")
_HEAD = re.compile(r"^create (?:or replace )?function ")


def _kind(attribute: str) -> str:
    if attribute in ("volatile", "stable", "immutable"):
        return "volatility"
    return attribute.split(" ", 1)[0]


def _depth(line: str) -> int:
    """How many more parentheses the line opens than it closes (its comment left out)."""
    code = line.split("--", 1)[0]
    return code.count("(") - code.count(")")


def _split(line: str) -> tuple[list[str], str] | None:
    """The attributes of a header line and its trailing comment, or None for another line."""
    code, _, comment = line.partition("--")
    code = code.strip()
    if not code:
        return None
    found: list[str] = []
    rest = code
    while rest:
        match = _ATTRIBUTE.match(rest)
        if match is None:
            return None
        found.append(match.group(0).strip())
        rest = rest[match.end() :].strip()
    return found, ("-- " + comment.strip()) if comment else ""


def _layout(block: list[str], where: str) -> list[str]:
    """One function's lines between `returns ...` and `as $$`, laid out."""
    first: list[str] = []  # the attribute line
    above: list[str] = []  # comments about it, above it
    extra: list[str] = []  # further `set` clauses, each after the comments about it
    pending: list[str] = []  # comment lines not yet placed
    seen: set[str] = set()
    for line in block:
        if line.strip().startswith("--"):
            pending.append(line.strip())
            continue
        parts = _split(line)
        if parts is None:
            raise SystemExit(f"{where}: not an attribute line: {line!r}")
        attributes, comment = parts
        for attribute in attributes:
            kind = _kind(attribute)
            if kind != "set" or (attribute.startswith("set search_path") and not extra):
                if kind in seen:
                    raise SystemExit(f"{where}: {kind} given twice")
                seen.add(kind)
                first.append(attribute)
                above.extend(pending)
                above.extend([comment] if comment else [])
            else:
                extra.extend(pending)
                extra.append(attribute + (f"  {comment}" if comment else ""))
            pending, comment = [], ""
    if "language" not in seen:
        raise SystemExit(f"{where}: no language")

    def rank(attribute: str) -> int:
        kind = _kind(attribute)
        return _ORDER.index(kind) if kind in _ORDER else len(_ORDER)

    # sorted() is stable: a `set search_path` stays last
    return [*above, " ".join(sorted(first, key=rank)), *extra, *pending]


def layout(text: str, where: str) -> str:
    """The file's text with every function header laid out."""
    lines = text.split("\n")
    out: list[str] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        out.append(line)
        i += 1
        if not _HEAD.match(line):
            continue
        # the parameter list to its closing parenthesis, then `returns ...` (which may
        # span lines: `returns table (` to its `)`); a function with out parameters may
        # have none
        depth = _depth(line)
        while depth > 0:
            out.append(lines[i])
            depth += _depth(lines[i])
            i += 1
        if lines[i].startswith("returns"):
            depth = _depth(lines[i])
            out.append(lines[i])
            i += 1
            while depth > 0:
                out.append(lines[i])
                depth += _depth(lines[i])
                i += 1
        start = i
        while i < len(lines) and not lines[i].startswith("as $$"):
            i += 1
        if i == len(lines):
            raise SystemExit(f"{where}: no `as $$` after {line!r}")
        out.extend(_layout(lines[start:i], f"{where}:{start + 1}"))
    return "\n".join(out)


def main(argv: list[str]) -> int:
    check = "--check" in argv
    stale: list[str] = []
    for path in function_files():
        text = path.read_text()
        new = layout(text, str(path.relative_to(SQL.parent)))
        if new != text:
            stale.append(str(path.relative_to(SQL.parent)))
            if not check:
                path.write_text(new)
    if check and stale:
        print("not laid out (python tools/sql_layout.py):", *stale, sep="\n  ")
        return 1
    if not check:
        print(f"{len(stale)} files rewritten")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
