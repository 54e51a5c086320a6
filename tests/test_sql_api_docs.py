"""docs/sql-api.md tells the truth about the catalog: every function it documents (in a `### `
heading, as `memex.name(arguments) → result`) exists in a migrated database with those
arguments in that order (a list that ends with `...` names the first ones: the rest all
have defaults, and docs/sql-reference.md lists them), those defaults (every default the
catalog has, and no other), the argument types it writes, and that result (its type, or its
table's columns and the types written); every public function (no leading `_`) that
memex_app or memex_tenant may execute is documented; and every composite type the Types
section lists has exactly the columns, in order, with the types it writes.
docs/sql-reference.md, the reference written from the catalog (tests/sql_reference.py), is
current."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import psycopg
import pytest

from memexdb.embedded import EmbeddedPostgres
from tests import sql_reference
from tests.conftest import drop_database, new_database

PAGE = Path(__file__).resolve().parents[1] / "docs" / "sql-api.md"

# How the page spells types, and the catalog's (format_type) names for them.
ALIASES = {
    "float8": "double precision",
    "float4": "real",
    "int": "integer",
    "int4": "integer",
    "int8": "bigint",
    "bool": "boolean",
    "timestamptz": "timestamp with time zone",
}


def canonical_type(spelled: str) -> str:
    spelled = " ".join(spelled.split())
    array = spelled.endswith("[]")
    base = spelled.removesuffix("[]")
    return ALIASES.get(base, base) + ("[]" if array else "")


def canonical_default(spelled: str) -> str:
    """A default as the page writes it (`'episodic'`, `1.0`, `null`) or as
    pg_get_function_arg_default answers it (`'episodic'::memex.memory_type`, `NULL::text`)."""
    value = spelled.strip()
    value = re.sub(r"::[\w. ]+(\[\])?(?=$|\))", "", value)  # casts
    value = value.strip("()") if value.startswith("(") and value.endswith(")") else value
    return "null" if value.lower() == "null" else value


def split_top(text: str) -> list[str]:
    """Split on the commas outside parentheses and quotes."""
    parts, depth, quoted, current = [], 0, False, ""
    for char in text:
        if char == "'":
            quoted = not quoted
        elif not quoted and char == "(":
            depth += 1
        elif not quoted and char == ")":
            depth -= 1
        if char == "," and depth == 0 and not quoted:
            parts.append(current.strip())
            current = ""
        else:
            current += char
    if current.strip():
        parts.append(current.strip())
    return parts


@dataclass
class Argument:
    name: str
    type: str | None  # None: the page does not say
    default: str | None  # None: no default


@dataclass
class Signature:
    name: str
    arguments: list[Argument]
    setof: bool
    type: str | None  # a named result type, or None for a table
    columns: list[Argument]  # a table's columns (type None where the page does not say)
    more: bool = False  # the page's list ends with `...`: further arguments, all defaulted


def parse_argument(text: str) -> Argument:
    match = re.fullmatch(r"(\w+)(?:\s+([^=]+?))?(?:\s*=\s*(.+))?", text.strip())
    assert match, f"cannot read the argument {text!r}"
    name, spelled, default = match.groups()
    return Argument(
        name,
        canonical_type(spelled) if spelled else None,
        None if default is None else canonical_default(default),
    )


def parse_signature(text: str) -> Signature:
    match = re.fullmatch(r"memex\.(\w+)\((.*?)\) → (.+)", text.strip())
    assert match, f"cannot read the signature {text!r}"
    name, arguments, result = match.groups()
    setof = result.startswith("setof ")
    result = result.removeprefix("setof ")
    table = re.fullmatch(r"(?:table )?\((.*)\)", result)
    spelled = split_top(arguments)
    more = bool(spelled) and spelled[-1] == "..."
    return Signature(
        name,
        [parse_argument(a) for a in spelled[: len(spelled) - more]],
        setof,
        None if table else canonical_type(result),
        [parse_argument(c) for c in split_top(table.group(1))] if table else [],
        more,
    )


def documented() -> dict[str, Signature]:
    signatures: dict[str, Signature] = {}
    for heading in re.findall(r"^### (.*)$", PAGE.read_text(), flags=re.M):
        for span in re.findall(r"`(memex\.[^`]*)`", heading):
            signature = parse_signature(span)
            assert signature.name not in signatures, f"{signature.name} is documented twice"
            signatures[signature.name] = signature
    return signatures


def documented_types() -> dict[str, list[Argument]]:
    """The Types section: "`memex.name` (what): `column type (a comment), ...`"."""
    section = PAGE.read_text().split("\n## Types\n", 1)[1].split("\n## ", 1)[0]
    types = {}
    for name, body in re.findall(
        r"^`memex\.(\w+)`(?: \([^()]*\))?: `([^`]*)`", section, flags=re.M | re.S
    ):
        body = re.sub(r"\([^()]*\)", "", " ".join(body.split()))  # comments
        types[name] = [parse_argument(c) for c in split_top(body)]
    return types


CATALOG = """
select p.oid, p.proname,
       has_function_privilege('memex_app', p.oid, 'execute')
       or has_function_privilege('memex_tenant', p.oid, 'execute') as granted
from pg_proc p join pg_namespace n on n.oid = p.pronamespace
where n.nspname = 'memex' and p.prokind = 'f'
order by p.proname
"""

ARGUMENTS = """
select a.name, format_type(a.type, null), a.mode,
       pg_get_function_arg_default(%(oid)s, a.n::integer)
from pg_proc p,
     unnest(coalesce(p.proallargtypes, p.proargtypes::oid[]),
            coalesce(p.proargmodes, array_fill('i'::"char", array[p.pronargs])),
            p.proargnames) with ordinality as a(type, mode, name, n)
where p.oid = %(oid)s
order by a.n
"""


def catalog_signature(conn: psycopg.Connection, oid: int, name: str) -> Signature:
    rows = conn.execute(ARGUMENTS, {"oid": oid}).fetchall()
    arguments = [Argument(n, t, d and canonical_default(d)) for n, t, m, d in rows if m in "ib"]
    columns = [Argument(n, t, None) for n, t, m, _ in rows if m in "tob"]
    setof, result = conn.execute(
        "select proretset, format_type(prorettype, null) from pg_proc where oid = %s", [oid]
    ).fetchone() or (False, "")
    is_table = bool(columns) and (setof or len(columns) > 1)
    return Signature(name, arguments, setof, None if is_table else result, columns)


@pytest.fixture(scope="module")
def dsn_module(pg_server: EmbeddedPostgres, template_db: str) -> Iterator[str]:
    dsn = new_database(pg_server)
    try:
        yield dsn
    finally:
        drop_database(pg_server, dsn)


@pytest.fixture(scope="module")
def catalog(dsn_module: str) -> dict[str, Signature]:
    with psycopg.connect(dsn_module, autocommit=True) as conn:
        conn.execute("set search_path = pg_catalog, public")
        found: dict[str, Signature] = {}
        for oid, name, granted in conn.execute(CATALOG).fetchall():
            if not granted:
                continue
            assert name not in found, f"memex.{name} is overloaded: the page cannot say which"
            found[name] = catalog_signature(conn, oid, name)
        return found


def describe(arguments: list[Argument]) -> list[str]:
    return [
        f"{a.name} {a.type or '?'}" + ("" if a.default is None else f" = {a.default}")
        for a in arguments
    ]


def mismatches(name: str, doc: Signature, live: Signature) -> list[str]:
    """What the page says of memex.`name` that the catalog does not."""
    wrong = []
    named = live.arguments[: len(doc.arguments)] if doc.more else live.arguments
    if [a.name for a in doc.arguments] != [a.name for a in named]:
        return [
            f"memex.{name}: arguments {[a.name for a in doc.arguments]},"
            f" the catalog's {[a.name for a in named]}"
        ]
    rest = live.arguments[len(doc.arguments) :]
    if doc.more and (not rest or any(a.default is None for a in rest)):
        wrong.append(f"memex.{name}: `...` stands for no argument or one without a default")
    for said, real in zip(doc.arguments, named, strict=True):
        if said.default != real.default:
            wrong.append(f"memex.{name}({said.name}): default {said.default}, is {real.default}")
        if said.type is not None and said.type != real.type:
            wrong.append(f"memex.{name}({said.name}): type {said.type}, is {real.type}")
    if doc.setof != live.setof and live.type is not None:
        wrong.append(f"memex.{name}: setof {doc.setof}, the catalog's {live.setof}")
    if doc.type != live.type:
        wrong.append(f"memex.{name}: returns {doc.type or 'a table'}, is {live.type or 'a table'}")
    elif doc.type is None:
        if [c.name for c in doc.columns] != [c.name for c in live.columns]:
            wrong.append(
                f"memex.{name}: columns {[c.name for c in doc.columns]},"
                f" the catalog's {[c.name for c in live.columns]}"
            )
        else:
            for said, real in zip(doc.columns, live.columns, strict=True):
                if said.type is not None and said.type != real.type:
                    wrong.append(f"memex.{name} → {said.name}: {said.type}, is {real.type}")
    return wrong


def test_every_documented_function_is_the_catalogs(catalog: dict[str, Signature]) -> None:
    wrong = []
    for name, doc in documented().items():
        live = catalog.get(name)
        if live is None:
            wrong.append(f"memex.{name}: documented, not in the catalog")
            continue
        wrong += mismatches(name, doc, live)
    assert not wrong, "\n".join(wrong)


def test_every_public_function_is_documented(catalog: dict[str, Signature]) -> None:
    missing = sorted(
        f"memex.{name}({', '.join(describe(sig.arguments))})"
        for name, sig in catalog.items()
        if not name.startswith("_") and name not in documented()
    )
    assert not missing, "undocumented in docs/sql-api.md:\n" + "\n".join(missing)


def test_every_documented_type_has_the_catalogs_columns(dsn_module: str) -> None:
    types = documented_types()
    named = {s.type for s in documented().values() if s.type and s.type.startswith("memex.")}
    assert named - {"memex.memory_type"} <= {f"memex.{t}" for t in types}, "Types lacks some"
    wrong = []
    with psycopg.connect(dsn_module, autocommit=True) as conn:
        conn.execute("set search_path = pg_catalog, public")
        for name, columns in types.items():
            rows = conn.execute(
                "select a.attname, format_type(a.atttypid, a.atttypmod) from pg_attribute a"
                " where a.attrelid = to_regclass(%s) and a.attnum > 0 and not a.attisdropped"
                " order by a.attnum",
                [f"memex.{name}"],
            ).fetchall()
            if [c.name for c in columns] != [r[0] for r in rows]:
                wrong.append(
                    f"memex.{name}: {[c.name for c in columns]}, is {[r[0] for r in rows]}"
                )
                continue
            for said, (column, real) in zip(columns, rows, strict=True):
                if said.type is not None and said.type != re.sub(r"\(\d+\)$", "", real):
                    wrong.append(f"memex.{name}.{column}: {said.type}, is {real}")
    assert not wrong, "\n".join(wrong)


def test_the_generated_reference_is_current(dsn_module: str) -> None:
    """docs/sql-reference.md is what tests/sql_reference.py writes from this catalog and
    sql/ now (a changed signature, default, grant, volatility or header comment fails
    until the page is written again)."""
    with psycopg.connect(dsn_module, autocommit=True) as conn:
        page = sql_reference.render(conn)
    assert page.split("\n", 1)[0].startswith("<!-- Generated by tests/sql_reference.py")
    assert sql_reference.PAGE.read_text() == page, (
        "docs/sql-reference.md is stale: run .venv/bin/python -m tests.sql_reference"
    )


def test_the_reference_has_every_documented_function(catalog: dict[str, Signature]) -> None:
    """Every public function the service or a tenant may call has its entry, with the
    catalog's volatility and its own file."""
    page = sql_reference.PAGE.read_text()
    public = sorted(name for name in catalog if not name.startswith("_"))
    headed = sorted(re.findall(r"^### memex\.(\w+)$", page, flags=re.M))
    assert headed == public
    assert re.search(
        r"^### memex\.search\n\n```sql\nmemex\.search\(\n    p_agent_id text,.*?\n```\n\n"
        r"stable · security definer · execute: `memex_app`, `memex_tenant`",
        page,
        flags=re.M | re.S,
    )


def test_the_checks_catch_a_wrong_page() -> None:
    """The parser reads what a mistake would change."""
    sig = parse_signature(
        "memex.f(p_a, p_b text[] = null, p_c = 'x') → table (id uuid, n float8, t)"
    )
    assert describe(sig.arguments) == ["p_a ?", "p_b text[] = null", "p_c ? = 'x'"]
    assert describe(sig.columns) == ["id uuid", "n double precision", "t ?"]
    assert canonical_default("'episodic'::memex.memory_type") == "'episodic'"
    assert canonical_default("NULL::timestamp with time zone") == "null"
    assert canonical_default("'{}'::jsonb") == "'{}'"
    # `...`: the first arguments; the rest must all have defaults
    live = parse_signature("memex.f(p_a, p_b = null, p_c = 1) → integer")
    assert not mismatches("f", parse_signature("memex.f(p_a, ...) → integer"), live)
    assert not mismatches("f", parse_signature("memex.f(p_a, p_b = null, ...) → integer"), live)
    every = parse_signature("memex.f(p_a, p_b = null, p_c = 1, ...) → integer")
    assert mismatches("f", every, live)  # `...` for nothing
    required = parse_signature("memex.f(p_a, p_b) → integer")
    assert mismatches("f", parse_signature("memex.f(p_a, ...) → integer"), required)
