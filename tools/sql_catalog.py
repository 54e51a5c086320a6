"""The SQL catalog as the generators read it: a scratch database on the embedded server,
migrated (`scratch_database`), then every `memex.*` function the service (memex_app) or a
tenant role (memex_tenant) may execute, with its parameters as pg_proc has them
(`functions`), and the file under sql/ that defines each (`sources`, `domains`).

Read by tests/sql_reference.py (docs/sql-reference.md) and tools/generate_sql_calls.py
(the SQL call text of memexdb/<domain>/calls.py and clients/typescript/src/generated/sql.ts).
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import psycopg

from memexdb.migrations import sql_files

ROOT = Path(__file__).resolve().parents[1]
SQL = ROOT / "sql"

CREATE = re.compile(r"^create or replace function memex\.(\w+)\s*\(", re.M | re.I)


@dataclass
class Source:
    path: str  # relative to the repository
    domain: str  # the folder under sql/
    header: str  # the comment lines above the first `create`, without `-- privileges:`
    privileges: str


def sources() -> dict[str, Source]:
    """Each function's file under sql/, by name."""
    found: dict[str, Source] = {}
    for path in sql_files(SQL):  # the SQL layer (not the frozen revisions)
        text = path.read_text()
        comments = []
        privileges = ""
        for line in text.split("\n"):
            if not line.startswith("--"):
                if line.strip():
                    break
                continue
            body = line[2:].strip()
            if body.startswith("privileges:"):
                privileges = body.removeprefix("privileges:").strip()
            else:
                comments.append(body)
        for name in CREATE.findall(text):
            found.setdefault(
                name,
                Source(
                    str(path.relative_to(ROOT)),
                    path.parent.name,
                    " ".join(c for c in comments if c),
                    privileges,
                ),
            )
    return found


def domains() -> list[str]:
    """The folders of sql/, in the order sql/manifest.txt loads them."""
    order: list[str] = []
    for line in (SQL / "manifest.txt").read_text().split("\n"):
        entry = line.split("#", 1)[0].strip()
        if entry:
            folder = entry.split("/", 1)[0]
            if folder not in order:
                order.append(folder)
    return order


@dataclass(frozen=True)
class Parameter:
    name: str  # as SQL names it: p_agent_id
    type: str  # format_type: text, uuid[], memex.memory_type, vector, ...
    element_enum: bool  # the type (or its element type) is an enum
    has_default: bool


@dataclass(frozen=True)
class Function:
    name: str
    parameters: tuple[Parameter, ...]
    returns: str  # "set": a set or a row (select * from); "scalar": one value; "void"
    app: bool  # memex_app may execute it
    tenant: bool  # memex_tenant may execute it


# Every memex.* function (overloads too) that memex_app or memex_tenant may execute; the
# private ones (memex._*) only for memex_app, which enters callers through them.
FUNCTIONS = """
select p.proname,
       coalesce(p.proargnames[1:p.pronargs], '{}'),
       array(select format_type(t, null) from unnest(p.proargtypes::oid[]) t),
       array(select coalesce(ty.typtype = 'e'
                             or (select e.typtype = 'e' from pg_type e where e.oid = ty.typelem),
                             false)
             from unnest(p.proargtypes::oid[]) with ordinality t(oid, n)
             join pg_type ty on ty.oid = t.oid order by t.n),
       p.pronargs, p.pronargdefaults, p.proretset, p.prorettype = 'void'::regtype,
       (select r.typtype = 'c' or p.prorettype = 'record'::regtype
        from pg_type r where r.oid = p.prorettype),
       has_function_privilege('memex_app', p.oid, 'execute'),
       has_function_privilege('memex_tenant', p.oid, 'execute')
from pg_proc p join pg_namespace n on n.oid = p.pronamespace
where n.nspname = 'memex' and p.prokind = 'f'
  and (has_function_privilege('memex_app', p.oid, 'execute')
       or has_function_privilege('memex_tenant', p.oid, 'execute'))
order by p.proname, pg_get_function_arguments(p.oid)
"""


def functions(conn: psycopg.Connection) -> list[Function]:
    found = []
    for row in conn.execute(FUNCTIONS).fetchall():
        name, names, types, enums, count, defaults, retset, void, composite, app, tenant = row
        if name.startswith("_") and not app:
            continue
        parameters = tuple(
            Parameter(names[i], types[i], enums[i], i >= count - defaults) for i in range(count)
        )
        returns = "set" if retset or composite else "void" if void else "scalar"
        found.append(Function(name, parameters, returns, app, tenant))
    return found


@contextmanager
def scratch_database(name: str) -> Iterator[str]:
    """A migrated database `name` on a new embedded server; yields its DSN."""
    from memexdb import migrate
    from memexdb.embedded import EmbeddedPostgres
    from tests.conftest import scratch_dir

    root = scratch_dir(f"memexdb-{name}-")
    server = EmbeddedPostgres(root / "pg")
    server.start()
    try:
        with psycopg.connect(server.dsn, autocommit=True) as admin:
            admin.execute(f"create database {name}")
        dsn = psycopg.conninfo.make_conninfo(server.dsn, dbname=name)
        migrate(dsn)
        yield dsn
    finally:
        server.stop()
        shutil.rmtree(root, ignore_errors=True)
