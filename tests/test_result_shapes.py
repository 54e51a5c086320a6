"""Result shapes: the SQL function's result is the truth, the Python row type follows it.

Every statement AsyncMemex reads into a row type (`fetch(RowType, <domain>_sql.X, ...)`)
is prepared on a migrated database and its result columns, as PostgreSQL describes them,
are compared with the dataclass psycopg's `class_row` builds from them: every column is a
field, every field without a default is a column, and each column's type is the one the
field's annotation names. A column added, renamed or retyped in SQL without the Python
side (or the reverse) fails here, not at the first call that returns a row.
"""

from __future__ import annotations

import dataclasses
import enum
import inspect
import re
import typing

import psycopg
import pytest

from memexdb import client, moving
from memexdb import types as row_types
from memexdb.consolidation import operations as consolidation
from memexdb.embeddings import operations as embeddings
from memexdb.files import operations as files
from memexdb.health import operations as health
from memexdb.keys import operations as keys
from memexdb.memories import operations as memories
from tests.slices import MODELS, STATEMENT_REFERENCE, STATEMENTS

# the modules whose statements read rows
SOURCES = (client, moving, memories, files, keys, consolidation, embeddings, health)

# fetch(RowType, <domain>_sql.NAME, ...) as written in the client and the operations,
# over one or several lines, and the one-statement runs fetch_rows / fetch_first(RowType, ...)
FETCHES = sorted(
    {
        (row_type, query)
        for row_type, query in re.findall(
            r"fetch(?:_rows|_first)?\(\s*([A-Z][A-Za-z]+),\s*" + STATEMENT_REFERENCE,
            "".join(inspect.getsource(module) for module in SOURCES),
        )
        # scalar rows, and rows read straight into an answer model
        if row_type != "None" and row_type not in MODELS
    }
    # read through a helper or a cursor of their own
    | {("Memory", "FORGET"), ("Memory", "GET_MEMORY"), ("QueuedMemory", "EMBED_QUEUE_TAKE")}
)

# PostgreSQL type -> the word a field's annotation must contain
ANNOTATION_OF = {
    "int2": "int",
    "int4": "int",
    "int8": "int",
    "float4": "float",
    "float8": "float",
    "numeric": "float",
    "text": "str",
    "bool": "bool",
    "timestamptz": "datetime",
    "uuid": "UUID",
    "_uuid": "list[UUID]",
    "_text": "list[str]",
    "memory_type": "MemoryType",
}


def _prepared(sql: str) -> str:
    """The statement with psycopg's %(name)s placeholders as $n."""
    numbers: dict[str, int] = {}

    def number(match: re.Match[str]) -> str:
        return f"${numbers.setdefault(match.group(1), len(numbers) + 1)}"

    return re.sub(r"%\((\w+)\)s", number, sql)


def test_every_fetch_is_found() -> None:
    # the regular expression above still reads the client
    assert len(FETCHES) >= 40
    assert {"SearchHit", "Memory", "File", "ConsolidationRun"} <= {t for t, _ in FETCHES}


@pytest.fixture
def conn(rolled_back_conn: psycopg.Connection) -> psycopg.Connection:
    """The cases only prepare and describe statements: one database for the module, each
    case in a transaction rolled back (conftest's rolled_back_conn), not a clone a case."""
    return rolled_back_conn


@pytest.mark.parametrize(("row_type", "query"), FETCHES, ids=[q for _, q in FETCHES])
def test_the_row_type_follows_the_sql_result(
    conn: psycopg.Connection, row_type: str, query: str
) -> None:

    # a result type, or a row type internal to one domain (memex.check_memorize_fact's)
    cls = getattr(row_types, row_type, None) or next(
        getattr(module, row_type) for module in SOURCES if hasattr(module, row_type)
    )
    sql = _prepared(STATEMENTS[query])
    name = f"shape_{query.lower()}".encode()
    prepared = conn.pgconn.prepare(name, sql.encode())
    assert prepared.status == psycopg.pq.ExecStatus.COMMAND_OK, prepared.error_message
    described = conn.pgconn.describe_prepared(name)
    columns = [described.fname(i).decode() for i in range(described.nfields)]
    types = {}
    for i, column in enumerate(columns):
        oid = described.ftype(i)
        row = conn.execute("select typname from pg_type where oid = %s", (oid,)).fetchone()
        assert row is not None
        types[column] = row[0]
    fields = {f.name: f for f in dataclasses.fields(cls)}
    required = {
        n
        for n, f in fields.items()
        if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
    }
    assert set(columns) <= set(fields), f"{query}: columns {set(columns) - set(fields)}"
    assert required <= set(columns), f"{query}: fields {required - set(columns)} not returned"
    for column, typname in types.items():
        expected = ANNOTATION_OF.get(typname)
        if expected is None:
            continue  # jsonb, vector and composites: any shape the field documents
        annotation = str(fields[column].type)
        if typname == "text" and annotation.startswith("Literal["):
            continue  # text narrowed to the values its SQL function returns
        assert expected in annotation, f"{query}.{column}: {typname} but {annotation}"


# Each answer model of REST and MCP (the domain models) and the row type it is built from
# (memexdb.types, itself checked against SQL above): the SQL result is the one shape, and
# an answer model may only leave columns out (never rename or retype one).
WIRE_MODELS = [
    ("MemoryOut", "Memory"),
    ("SearchResult", "SearchHit"),
    ("KeyCreatedOut", "CreatedKey"),
    ("KeyOut", "ApiKey"),
    ("KeyRevokedOut", "RevokedKey"),
    ("AuditEventOut", "AuditEvent"),
    ("FileOut", "File"),
    ("FileEntryOut", "FileEntry"),
    ("RevisionOut", "FileRevision"),
    ("SmartReadOut", "SmartRead"),
    ("AccessEventOut", "AccessEvent"),
    ("PassageOut", "Passage"),
    ("RunOut", "ConsolidationRun"),
    ("DreamUserOut", "DreamUser"),
]
# answer fields that are no column of the row type, and why
NOT_COLUMNS = {
    ("MemoryOut", "score"),  # null outside search: one model for stored and ranked memories
}


def _plain(annotation: object) -> object:
    """`X | None` as X (an answer model may default a column to null), and a string
    enum as str (it names the values a text column holds)."""
    members = typing.get_args(annotation)
    if type(None) in members and len(members) == 2:
        annotation = next(a for a in members if a is not type(None))
    if isinstance(annotation, type) and issubclass(annotation, enum.StrEnum):
        return str
    return annotation


@pytest.mark.parametrize(("wire", "row"), WIRE_MODELS, ids=[w for w, _ in WIRE_MODELS])
def test_each_answer_model_is_its_row_type_s_columns(wire: str, row: str) -> None:
    model = MODELS[wire]
    columns = typing.get_type_hints(getattr(row_types, row))
    for name, info in model.model_fields.items():
        if (wire, name) in NOT_COLUMNS:
            continue
        assert name in columns, f"{wire}.{name} is no column of {row}"
        assert _plain(info.annotation) == _plain(columns[name]), (wire, name)
