"""The API's defaults and bounds are defined once in Python (memexdb.fields and the domain
models) and once in
SQL (the memex.* functions' argument defaults and checks): these tests hold the two
together, so neither layer can drift. Each bound is tried on both sides of its edge, in
SQL (as a non-Python caller would) and against the pydantic models the frontends use."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg
import pytest
from pgvector.psycopg import register_vector
from psycopg.types.json import Jsonb
from pydantic import BaseModel, ValidationError

from memexdb.consolidation.models import DREAM_BOUNDS, DreamConfig
from memexdb.fields import (
    CONTENT_MAX_CHARS,
    LIST_LIMIT_MAX,
    METADATA_MAX_BYTES,
    METADATA_MAX_DEPTH,
    QUERY_MAX_CHARS,
    TENANT_ID_MAX_CHARS,
)
from memexdb.files.models import (
    LINE_MAX,
    PASSAGE_MAX_CHARS,
    PASSAGE_MIN_CHARS,
    PASSAGES_TOP_K_MAX,
    PATH_MAX_SEGMENTS,
    PATH_SEGMENT_MAX_CHARS,
    SMART_READ_MAX_BUDGET,
    SMART_READ_MIN_BUDGET,
    FileReadQuery,
    FileWrite,
    PassageSearchRequest,
    SmartReadRequest,
)
from memexdb.memories.models import (
    DEFAULT_ALPHA,
    DEFAULT_EXPORT_BATCH,
    DEFAULT_HALF_LIFE_DAYS,
    DEFAULT_IMPORTANCE,
    DEFAULT_LIST_LIMIT,
    DEFAULT_MEMORY_TYPE,
    DEFAULT_MODE,
    DEFAULT_TOP_K,
    HALF_LIFE_DAYS_DEFAULT,
    HALF_LIFE_DAYS_MEMEX,
    HALF_LIFE_MAX_DAYS,
    HALF_LIFE_MIN_DAYS,
    IMPORTANCE_MAX,
    IMPORTANCE_MIN_POSITIVE,
    RECENCY_BOOST,
    TOP_K_MAX,
    ListQuery,
    MemoryCreate,
    MemorySearchRequest,
)
from memexdb.migrations import sql_files
from tests.slices import MODELS
from tests.sqlapi import unit

ROOT = Path(__file__).resolve().parent.parent

VEC = unit((0, 1.0))
WHO = {"agent_id": "a", "user_id": "u"}


@pytest.fixture
def conn(rolled_back_conn: psycopg.Connection) -> psycopg.Connection:
    """This module's cases read the catalog and call functions with boundary values, each
    in a transaction rolled back on one database for the module (conftest's
    rolled_back_conn): 97 cases, one database clone."""
    return rolled_back_conn


def _defaults(conn: psycopg.Connection, function: str) -> dict[str, str]:
    """Argument name -> default expression, as pg_proc declares them."""
    row = conn.execute(
        "select pg_get_function_arguments(p.oid) from pg_proc p where p.oid = %s::regproc",
        (function,),
    ).fetchone()
    assert row is not None
    found = {}
    for arg in row[0].split(", p_"):
        match = re.match(r"(?:p_)?(\w+) .*? DEFAULT (.+)$", arg)
        if match:
            found[match.group(1)] = match.group(2)
    return found


def _sql_literal(expression: str) -> str:
    # '0.7'::double precision -> 0.7, 'vector'::text -> vector
    return re.sub(r"^'?(.*?)'?(::[\w. ]+)?$", r"\1", expression)


def _read_line(conn: psycopg.Connection, line: int) -> None:
    conn.execute("select * from memex.write_file('a', 'u', 'user/lines', 'x', %s, 'm')", (VEC,))
    conn.execute("select * from memex.read_file('a', 'u', 'user/lines', %s)", (line,))


def test_search_defaults_match(conn: psycopg.Connection) -> None:
    declared = _defaults(conn, "memex.search")
    assert float(_sql_literal(declared["top_k"])) == DEFAULT_TOP_K
    # alpha and mode default to null on both sides: no alpha means the default formula
    # (memex._score with RECENCY_BOOST), no mode means hybrid when there is a query text
    assert DEFAULT_ALPHA is None
    assert declared["alpha"] == "NULL::double precision"
    assert DEFAULT_HALF_LIFE_DAYS is None
    assert declared["half_life_days"] == "NULL::double precision"
    body = conn.execute("select prosrc from pg_proc where oid = 'memex.search'::regproc")
    search_source = body.fetchone()
    assert search_source is not None
    assert (
        "coalesce(p_half_life_days, case when p_alpha is null"
        f" then {HALF_LIFE_DAYS_DEFAULT:g} else {HALF_LIFE_DAYS_MEMEX:g} end)"
    ) in search_source[0]
    assert DEFAULT_MODE is None
    assert declared["mode"] == "NULL::text"
    assert declared["context_weight"] == "NULL::double precision"
    body = conn.execute("select prosrc from pg_proc where oid = 'memex._score'::regproc")
    source = body.fetchone()
    assert source is not None
    assert f"p_relevance + {RECENCY_BOOST} * p_recency" in source[0]
    request = MemorySearchRequest(**WHO, query="q")
    assert (request.top_k, request.alpha, request.half_life_days, request.mode) == (
        DEFAULT_TOP_K,
        DEFAULT_ALPHA,
        DEFAULT_HALF_LIFE_DAYS,
        DEFAULT_MODE,
    )


def test_store_defaults_match(conn: psycopg.Connection) -> None:
    declared = _defaults(conn, "memex.store")
    assert _sql_literal(declared["memory_type"]) == DEFAULT_MEMORY_TYPE.value
    assert float(_sql_literal(declared["importance"])) == DEFAULT_IMPORTANCE
    assert _sql_literal(declared["metadata"]) == "{}"
    # store_many's items (inserted by memex.import_memories) default the same way
    body = conn.execute("select prosrc from pg_proc where oid = 'memex.import_memories'::regproc")
    source = body.fetchone()
    assert source is not None
    assert f"coalesce(p_memory_types[it.ord], '{DEFAULT_MEMORY_TYPE.value}')" in source[0]
    assert f"coalesce(p_importances[it.ord], {DEFAULT_IMPORTANCE})" in source[0]
    item = MemoryCreate(**WHO, content="x")
    assert (item.memory_type, item.importance) == (
        DEFAULT_MEMORY_TYPE,
        DEFAULT_IMPORTANCE,
    )


def test_list_and_export_defaults_match(conn: psycopg.Connection) -> None:
    declared = _defaults(conn, "memex.list_memories")
    assert int(declared["limit"]) == DEFAULT_LIST_LIMIT
    assert ListQuery(**WHO).limit == DEFAULT_LIST_LIMIT
    declared = _defaults(conn, "memex.export_memories")
    assert int(declared["limit"]) == DEFAULT_EXPORT_BATCH
    assert DEFAULT_EXPORT_BATCH <= LIST_LIMIT_MAX


# --- bounds: each value is tried in SQL and against the frontends' model -------------------


def _store(conn: psycopg.Connection, **item: Any) -> None:
    values = {**WHO, "content": "x", "importance": 1.0, "metadata": {}, **item}
    conn.execute(
        "select memex.store(%s, %s, %s, %s, 'm', 'episodic', %s, %s)",
        (
            values["agent_id"],
            values["user_id"],
            values["content"],
            VEC,
            values["importance"],
            Jsonb(values["metadata"]),
        ),
    )


def _search(conn: psycopg.Connection, **options: Any) -> None:
    values = {**WHO, "query": "q", "top_k": 10, "half_life_days": 30.0, **options}
    conn.execute(
        "select * from memex.search(%s, %s, %s, p_top_k => %s, p_half_life_days => %s,"
        " p_query_text => %s, p_mode => 'hybrid')",
        (
            values["agent_id"],
            values["user_id"],
            VEC,
            values["top_k"],
            values["half_life_days"],
            values["query"],
        ),
    )


def _list(conn: psycopg.Connection, limit: int) -> None:
    conn.execute("select * from memex.list_memories('a', 'u', %s)", (limit,))
    conn.execute("select * from memex.export_memories('a', 'u', p_limit => %s)", (limit,))


def _metadata_of_size(size: int) -> dict[str, str]:
    # {"k": "xxx…"}: 9 bytes of JSON around the value
    return {"k": "x" * (size - len('{"k": ""}'))}


SqlCall = Callable[[psycopg.Connection], None]
Case = tuple[str, SqlCall, type[BaseModel], dict[str, Any], bool]

CASES: list[Case] = [
    # (name, SQL call, model, model fields, valid?)
    *[
        (
            f"{field} {n} chars",
            lambda c, f=field, n=n: _store(c, **{f: "a" * n}),
            MemoryCreate,
            {**WHO, "content": "x", field: "a" * n},
            ok,
        )
        for field in ("agent_id", "user_id")
        for n, ok in ((TENANT_ID_MAX_CHARS, True), (TENANT_ID_MAX_CHARS + 1, False))
    ],
    *[
        (
            f"content {n} chars",
            lambda c, n=n: _store(c, content="a" * n),
            MemoryCreate,
            {**WHO, "content": "a" * n},
            ok,
        )
        for n, ok in ((CONTENT_MAX_CHARS, True), (CONTENT_MAX_CHARS + 1, False))
    ],
    *[
        (
            f"content {text!r}",
            lambda c, t=text: _store(c, content=t),
            MemoryCreate,
            {**WHO, "content": text},
            ok,
        )
        for text, ok in ((" \t\n\r\f\v", False), ("\u00a0", True), (" x ", True))
    ],
    *[
        (
            f"importance {value}",
            lambda c, v=value: _store(c, importance=v),
            MemoryCreate,
            {**WHO, "content": "x", "importance": value},
            ok,
        )
        for value, ok in (
            (0.0, True),
            (IMPORTANCE_MIN_POSITIVE, True),
            (IMPORTANCE_MIN_POSITIVE / 2, False),
            (1e-155, False),
            (IMPORTANCE_MAX, True),
            (IMPORTANCE_MAX + 1e-9, False),
            (-1e-9, False),
        )
    ],
    *[
        (
            f"metadata of {size} bytes",
            lambda c, s=size: _store(c, metadata=_metadata_of_size(s)),
            MemoryCreate,
            {**WHO, "content": "x", "metadata": _metadata_of_size(size)},
            ok,
        )
        for size, ok in ((METADATA_MAX_BYTES, True), (METADATA_MAX_BYTES + 1, False))
    ],
    *[
        (
            f"top_k {k}",
            lambda c, k=k: _search(c, top_k=k),
            MemorySearchRequest,
            {**WHO, "query": "q", "top_k": k},
            ok,
        )
        for k, ok in (
            (1, True),
            (0, False),
            (TOP_K_MAX, True),
            (TOP_K_MAX + 1, False),
        )
    ],
    *[
        (
            f"half_life_days {days}",
            lambda c, d=days: _search(c, half_life_days=d),
            MemorySearchRequest,
            {**WHO, "query": "q", "half_life_days": days},
            ok,
        )
        for days, ok in (
            (HALF_LIFE_MIN_DAYS, True),
            (HALF_LIFE_MIN_DAYS / 2, False),
            (5e-324, False),
            (HALF_LIFE_MAX_DAYS, True),
            (HALF_LIFE_MAX_DAYS * 1.001, False),
        )
    ],
    *[
        (
            f"query {n} chars",
            lambda c, n=n: _search(c, query="a" * n),
            MemorySearchRequest,
            {**WHO, "query": "a" * n},
            ok,
        )
        for n, ok in ((QUERY_MAX_CHARS, True), (QUERY_MAX_CHARS + 1, False))
    ],
    *[
        (
            f"list limit {n}",
            lambda c, n=n: _list(c, n),
            ListQuery,
            {**WHO, "limit": n},
            ok,
        )
        for n, ok in (
            (1, True),
            (0, False),
            (LIST_LIMIT_MAX, True),
            (LIST_LIMIT_MAX + 1, False),
        )
    ],
    *[
        (
            f"path {path[:40]!r}",
            lambda c, p=path: c.execute(
                "select * from memex.write_file('a', 'u', %s, 'x', %s, 'm')", (p, VEC)
            ),
            FileWrite,
            {**WHO, "path": path, "content": "x"},
            ok,
        )
        for path, ok in (
            ("user/x", True),
            ("agent/x", True),
            ("user/" + "/".join(["d"] * (PATH_MAX_SEGMENTS - 1)), True),
            ("user/" + "/".join(["d"] * PATH_MAX_SEGMENTS), False),
            ("user/" + "s" * PATH_SEGMENT_MAX_CHARS, True),
            ("user/" + "s" * (PATH_SEGMENT_MAX_CHARS + 1), False),
            ("user/" + "/".join(["s" * 100] * 5) + "/" + "t" * 2, True),  # 512 chars
            ("user/" + "/".join(["s" * 100] * 5) + "/" + "t" * 3, False),  # 513 chars
            ("user", False),
            ("user/../x", False),
            ("user/.x", False),
            ("user/x.", True),
            ("user/a_b-c.md", True),
            ("user/a b", False),
            ("user//x", False),
            ("/user/x", False),
            ("users/x", False),
        )
    ],
    *[
        (
            f"smart_read budget {n}",
            lambda c, n=n: c.execute(
                "select * from memex.smart_read('a', 'u', 'q', %s, p_budget => %s)", (VEC, n)
            ),
            SmartReadRequest,
            {**WHO, "query": "q", "budget": n},
            ok,
        )
        for n, ok in (
            (SMART_READ_MIN_BUDGET, True),
            (SMART_READ_MIN_BUDGET - 1, False),
            (SMART_READ_MAX_BUDGET, True),
            (SMART_READ_MAX_BUDGET + 1, False),
        )
    ],
    *[
        (
            f"search_passages {field} {n}",
            lambda c, f=field, n=n: c.execute(
                f"select * from memex.search_passages('a', 'u', 'q', %s, p_{f} => %s)", (VEC, n)
            ),
            PassageSearchRequest,
            {**WHO, "query": "q", field: n},
            ok,
        )
        for field, low, high in (
            ("top_k", 1, PASSAGES_TOP_K_MAX),
            ("passage_chars", PASSAGE_MIN_CHARS, PASSAGE_MAX_CHARS),
        )
        for n, ok in ((low, True), (low - 1, False), (high, True), (high + 1, False))
    ],
    *[
        (
            f"dream {key} {n}",
            lambda c, k=key, n=n: c.execute(
                "select memex.set_dream_config(jsonb_build_object(%s::text, %s::int))", (k, n)
            ),
            DreamConfig,
            {key: n},
            ok,
        )
        for key, (low, high) in DREAM_BOUNDS.items()
        for n, ok in ((low, True), (low - 1, False), (high, True), (high + 1, False))
    ],
    *[
        (
            f"read_file line {n}",
            lambda c, n=n: _read_line(c, n),
            FileReadQuery,
            {**WHO, "path": "user/x", "from_line": n},
            ok,
        )
        for n, ok in ((1, True), (0, False), (LINE_MAX, True), (LINE_MAX + 1, False))
    ],
]


@pytest.mark.parametrize(
    ("sql_call", "model", "fields", "valid"),
    [case[1:] for case in CASES],
    ids=[case[0] for case in CASES],
)
def test_bound_is_the_same_in_sql_and_python(
    conn: psycopg.Connection,
    sql_call: SqlCall,
    model: type[BaseModel],
    fields: dict[str, Any],
    valid: bool,
) -> None:
    register_vector(conn)
    if valid:
        sql_call(conn)
        model.model_validate(fields)
    else:
        with pytest.raises(psycopg.Error) as sql_error:
            sql_call(conn)
        assert sql_error.value.sqlstate == "MX422", sql_error.value
        with pytest.raises(ValidationError):
            model.model_validate(fields)


def test_python_refuses_what_postgres_text_cannot_hold() -> None:
    # NUL never reaches SQL (psycopg refuses it); the models name the field instead.
    for fields in (
        {**WHO, "content": "a\x00b"},
        {**WHO, "agent_id": "a\x00", "content": "x"},
        {**WHO, "content": "x", "metadata": {"k\x00": 1}},
        {**WHO, "content": "x", "metadata": {"k": ["a", {"b": "\x00"}]}},
    ):
        with pytest.raises(ValidationError, match="NUL"):
            MemoryCreate.model_validate(fields)
    deep: Any = "leaf"
    for _ in range(METADATA_MAX_DEPTH + 1):
        deep = {"k": deep}
    with pytest.raises(ValidationError, match="nest deeper"):
        MemoryCreate.model_validate({**WHO, "content": "x", "metadata": deep})


# `<p_x | length(p_x)> not between LOW and HIGH then perform memex._invalid('field'...`
_SQL_BOUND = re.compile(
    r"(length\()?p_(\w+)\)? not between (\d+) and (\d+)\s+then\s+"
    r"perform memex\._invalid\(\s*(?:'(\w+)'|(p_field))",
    re.S,
)


# bounds SQL alone checks: the operator's ivfflat `lists` (memex.configure_vector_index
# has no Python or REST caller; pgvector's own limit), and the days of
# memex.overview_stats and how many tenants it charts (the console asks for fixed
# OVERVIEW_DAYS and OVERVIEW_TENANTS, no request field;
# tests/test_console_overview.py runs it)
_SQL_ONLY = {("lists", 1, 32768), ("days", 1, 90), ("tenants", 1, 50)}


def _python_bounds(field: str, length: bool) -> set[tuple[object, object]]:
    found = set()
    for model in MODELS.values():
        if not (isinstance(model, type) and issubclass(model, BaseModel)):
            continue
        info = model.model_fields.get(field)
        if info is None:
            continue
        low = high = None
        for meta in info.metadata:
            if length:
                low = getattr(meta, "min_length", low)
                high = getattr(meta, "max_length", high)
            else:
                low = getattr(meta, "ge", low)
                high = getattr(meta, "le", high)
        found.add((low, high))
    return found


def test_every_range_sql_checks_is_the_same_in_a_python_model() -> None:
    """Each `not between` bound of the SQL functions (read from sql/) is the bound of a
    field of the same name in the request models: a bound changed on one side only fails."""
    checked = 0
    for path in sql_files(ROOT / "sql"):  # the SQL layer
        for match in _SQL_BOUND.finditer(path.read_text()):
            length, field = bool(match.group(1)), match.group(5) or "path"
            low, high = int(match.group(3)), int(match.group(4))
            if (field, low, high) in _SQL_ONLY:
                continue
            checked += 1
            assert (low, high) in _python_bounds(field, length), (path.name, field, low, high)
    # the pattern still reads the SQL (the listings' page size is one check: _check_page_limit)
    assert checked >= 15
