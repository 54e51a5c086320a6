"""memex._unified_diff against Python's difflib.unified_diff, which it ports: the same
text, byte for byte, on hand-picked edge cases and on generated edits (few distinct lines,
so that the matcher's tie-breaking and its "autojunk" heuristic are exercised), and the
work bound: past its step budget the diff is longer than difflib's but still correct."""

from __future__ import annotations

import difflib
import random
import re

import psycopg
import pytest

DIFF = "select memex._unified_diff(%s, %s, 'a', 'b')"


def difflib_diff(old: str, new: str) -> str:
    return "".join(
        difflib.unified_diff(
            old.splitlines(keepends=True), new.splitlines(keepends=True), fromfile="a", tofile="b"
        )
    )


def sql_diff(conn: psycopg.Connection, old: str, new: str, steps: int | None = None) -> str:
    if steps is None:
        row = conn.execute(DIFF, (old, new)).fetchone()
    else:
        row = conn.execute(
            "select memex._unified_diff(%s, %s, 'a', 'b', %s)", (old, new, steps)
        ).fetchone()
    assert row is not None
    return str(row[0])


CASES = [
    ("", ""),
    ("", "one\n"),
    ("one\n", ""),
    ("same\n", "same\n"),
    ("no end", "no end either"),
    ("a\nb\nc", "a\nb\nc\n"),
    (
        "a\r\nb\rc\x0bd\x0ce\x1cf\x85g\u2028h\u2029i\n",
        "a\nb\rc\x0bX\x0ce\x1cf\x85g\u2028h\u2029i\n",
    ),
    ("".join(f"line {i}\n" for i in range(40)), "".join(f"line {i}\n" for i in range(40) if i % 9)),
    ("# Profile\n\n- writes Rust\n- likes tea\n", "# Profile\n\n- writes Go\n- likes tea\n"),
    ("x\n" * 300 + "y\n", "x\n" * 150 + "z\n" + "x\n" * 150 + "y\n"),  # autojunk
    ("\n\n\n", "\n\n"),
    ("é\nü\n", "é\nu\n"),
]


@pytest.mark.parametrize(("old", "new"), CASES)
def test_cases_as_difflib(conn: psycopg.Connection, old: str, new: str) -> None:
    assert sql_diff(conn, old, new) == difflib_diff(old, new)


def _edit(rng: random.Random, lines: list[str], alphabet: list[str]) -> list[str]:
    out = list(lines)
    for _ in range(rng.randint(0, 6)):
        op = rng.choice("idr")
        at = rng.randint(0, len(out))
        if op == "i" or not out:
            out[at:at] = [rng.choice(alphabet) for _ in range(rng.randint(1, 4))]
        elif op == "d":
            del out[at : at + rng.randint(1, 4)]
        else:
            out[at : at + 1] = [rng.choice(alphabet)]
    return out


@pytest.mark.parametrize("seed", range(6))
def test_generated_edits_as_difflib(conn: psycopg.Connection, seed: int) -> None:
    rng = random.Random(seed)
    for _ in range(40):
        alphabet = [f"{w}\n" for w in rng.sample("abcdefghij", rng.randint(1, 10))]
        size = rng.choice([0, 3, 12, 60, 250])
        old = [rng.choice(alphabet) for _ in range(size)]
        new = _edit(rng, old, alphabet)
        a, b = "".join(old), "".join(new)
        if rng.random() < 0.2 and b:
            b = b[:-1]  # a last line without its line end
        assert sql_diff(conn, a, b) == difflib_diff(a, b), (a, b)


def _apply(old: str, diff: str) -> str:
    """Apply a unified diff of line-terminated texts (what the budget test needs)."""
    a = old.splitlines(keepends=True)
    out: list[str] = []
    at = 0
    lines = diff.splitlines(keepends=True)[2:]
    for line in lines:
        hunk = re.match(r"@@ -(\d+)(?:,(\d+))? \+\d+(?:,\d+)? @@", line)
        if hunk:
            start = int(hunk.group(1)) - (0 if hunk.group(2) == "0" else 1)
            out += a[at:start]
            at = start
        elif line[0] in " -":
            assert a[at] == line[1:]
            at += 1
            if line[0] == " ":
                out.append(line[1:])
        else:
            out.append(line[1:])
    return "".join(out + a[at:])


def test_the_work_is_bounded_and_the_diff_stays_correct(conn: psycopg.Connection) -> None:
    rng = random.Random(7)
    alphabet = [f"{i}\n" for i in range(600)]  # each line ~5 times: none is "popular"
    old = "".join(rng.choice(alphabet) for _ in range(3000))
    new = "".join(_edit(rng, old.splitlines(keepends=True), alphabet))
    half = len(new) // 2
    new = new[:half] + "".join(rng.choice(alphabet) for _ in range(200)) + new[half:]
    full = sql_diff(conn, old, new)
    assert full == difflib_diff(old, new)
    cut = sql_diff(conn, old, new, steps=1000)
    assert cut != full and len(cut) > len(full)
    assert _apply(old, cut) == new
    assert _apply(old, full) == new
