"""Who may run and read what, as the catalog says after migrate, against a golden record.

Grants come from one declaration per function (the `-- privileges:` line of its sql/
file, see memexdb.migrations.function_privileges); tests/golden/privileges.txt records
their outcome: every memex function and relation with its owner, security definer flag,
row-level security and grantees. A new function, a changed signature or a changed grant
fails here until the record is regenerated and the diff reviewed:

    MEMEX_UPDATE_GOLDEN=1 .venv/bin/pytest -n 0 -q tests/test_sql_privileges.py
"""

from __future__ import annotations

import os
from pathlib import Path

import psycopg
import pytest

from memexdb import migrate
from memexdb.embedded import EmbeddedPostgres
from memexdb.errors import SetupError
from memexdb.migrations import function_privileges, sql_files
from tests.catalog import privileges
from tests.conftest import drop_database, new_database

GOLDEN = Path(__file__).resolve().parent / "golden" / "privileges.txt"
HEADER = (
    "# Generated from the catalog of a migrated database; do not edit by hand.\n"
    "# Regenerate: MEMEX_UPDATE_GOLDEN=1 .venv/bin/pytest -n 0 -q tests/test_sql_privileges.py\n"
)


def test_privileges_match_the_golden_record(conn: psycopg.Connection) -> None:
    lines = privileges(conn)
    if os.environ.get("MEMEX_UPDATE_GOLDEN"):
        GOLDEN.write_text(HEADER + "\n".join(lines) + "\n")
    golden = [line for line in GOLDEN.read_text().splitlines() if line and not line.startswith("#")]
    missing = sorted(set(golden) - set(lines))
    unexpected = sorted(set(lines) - set(golden))
    assert (missing, unexpected) == ([], []), (
        "the catalog's privileges differ from tests/golden/privileges.txt (regenerate it"
        " with MEMEX_UPDATE_GOLDEN=1 once the change is intended):\n"
        + "\n".join([f"- {m}" for m in missing] + [f"+ {u}" for u in unexpected])
    )
    assert lines == golden


def test_the_declarations_are_the_grants(conn: psycopg.Connection) -> None:
    declared = function_privileges(sql_files())
    rows = conn.execute(
        "select p.proname, has_function_privilege('memex_tenant', p.oid, 'execute')"
        " from pg_proc p where p.pronamespace = 'memex'::regnamespace"
    ).fetchall()
    assert {name for name, _ in rows} == set(declared)
    for name, tenant in rows:
        assert tenant == (declared[name] in ("tenant", "tenant-helper")), name
        # a tenant-helper is internal: its name says so; the tenant API's never does
        assert name.startswith("_") == (declared[name] != "tenant") or (
            declared[name] == "service"
        ), name


LOOKUPS = {
    "memex._text_rows(text, text, timestamptz, boolean, memex.search_filters, tsquery,"
    " bigint)": "('a', 'u', now(), false, null, 'x'::tsquery, 10)",
    "memex._ann_neighbour_rows(text, text, public.halfvec, timestamptz, boolean,"
    " memex.search_filters, timestamptz[], uuid[], integer)": (
        "('a', 'u', null, now(), false, null, array[now()], array[gen_random_uuid()], 2)"
    ),
}


@pytest.mark.parametrize("signature", list(LOOKUPS), ids=lambda s: s.split("(")[0])
def test_the_text_lookup_is_memex_owners_alone(conn: psycopg.Connection, signature: str) -> None:
    # memex._text_rows and memex._ann_neighbour_rows (issue 39) skip row-level security
    # (owner memex_text_lookup, BYPASSRLS) and authorize nobody: only memex_owner, that is
    # the security definer functions that authorized their caller, may run them;
    # memex_text_lookup reads memex.memories and nothing else of memex's tables.
    row = conn.execute(
        "select p.proowner::regrole::text, p.prosecdef, r.rolbypassrls, r.rolcanlogin,"
        " r.rolsuper from pg_proc p join pg_roles r on r.oid = p.proowner"
        " where p.oid = %s::regprocedure",
        (signature,),
    ).fetchone()
    assert row == ("memex_text_lookup", True, True, False, False)
    for role, allowed in (
        ("memex_owner", True),
        ("memex_app", False),
        ("memex_tenant", False),
        ("public", False),
    ):
        granted = conn.execute(
            "select coalesce(bool_or(a.grantee = 0 or a.grantee = r.oid), false)"
            " from pg_proc p cross join lateral aclexplode(p.proacl) a"
            " left join pg_roles r on r.rolname = %s"
            " where p.oid = %s::regprocedure and a.privilege_type = 'EXECUTE'",
            (role, signature),
        ).fetchone()
        assert granted == (allowed,), role
    tables = conn.execute(
        "select c.relname::text from pg_class c where c.relnamespace = 'memex'::regnamespace"
        " and has_table_privilege('memex_text_lookup', c.oid, 'select,insert,update,delete')"
        " and c.relkind in ('r', 'p', 'v')"
    ).fetchall()
    assert tables == [("memories",)]
    for role in ("memex_app", "memex_tenant"):
        with conn.transaction():
            conn.execute(f"set local role {role}")
            with pytest.raises(psycopg.errors.InsufficientPrivilege), conn.transaction():
                conn.execute(f"select count(*) from {signature.split('(')[0]}{LOOKUPS[signature]}")


def test_the_bookkeeping_triggers_skip_a_second_row_security_check(
    conn: psycopg.Connection,
) -> None:
    # issue 39 item 1 (revision 0040): the statement triggers on memex.memories that keep
    # the counts, the term statistics and the memory history are owned by
    # memex_trigger_owner (BYPASSRLS), which may do what they do and nothing more: no
    # other function, no history rewritten, of memex.memories only the ANN flag.
    # and since, the update path's row triggers and the insert's ANN flag
    statement = ["_memory_revisions_stored", "_tenant_counts", "_term_stats"]
    triggers = sorted([*statement, "_memory_revision", "_term_stats_update", "_ann_on_insert"])
    rows = conn.execute(
        "select p.proname::text, p.prosecdef, r.rolbypassrls, r.rolcanlogin, r.rolsuper"
        " from pg_proc p join pg_roles r on r.oid = p.proowner"
        " where r.rolname = 'memex_trigger_owner' order by 1"
    ).fetchall()
    assert rows == [(name, True, True, False, False) for name in triggers]
    tables = conn.execute(
        "select c.relname::text, array_agg(x.privilege order by x.privilege)"
        " from pg_class c cross join unnest(array['SELECT', 'INSERT', 'UPDATE', 'DELETE',"
        " 'TRUNCATE', 'REFERENCES', 'TRIGGER']) x(privilege)"
        " where c.relnamespace = 'memex'::regnamespace and c.relkind in ('r', 'p', 'v')"
        " and has_table_privilege('memex_trigger_owner', c.oid, x.privilege)"
        " group by 1 order by 1"
    ).fetchall()
    assert tables == [
        ("history_ids", ["INSERT", "SELECT", "UPDATE"]),
        ("memories", ["SELECT"]),
        ("memory_revisions", ["INSERT"]),
        ("tenants", ["INSERT", "SELECT", "UPDATE"]),
        ("term_stats", ["DELETE", "INSERT", "SELECT", "UPDATE"]),
    ]
    columns = conn.execute(
        "select a.attname::text from pg_attribute a"
        " where a.attrelid = 'memex.memories'::regclass and a.attnum > 0"
        " and not a.attisdropped"
        " and has_column_privilege('memex_trigger_owner', a.attrelid, a.attnum, 'UPDATE')"
    ).fetchall()
    assert columns == [("ann",)]
    # of the history it reads the two columns that number the next revision, nothing else
    read = conn.execute(
        "select a.attname::text from pg_attribute a"
        " where a.attrelid = 'memex.memory_revisions'::regclass and a.attnum > 0"
        " and not a.attisdropped"
        " and has_column_privilege('memex_trigger_owner', a.attrelid, a.attnum, 'SELECT')"
        " order by a.attnum"
    ).fetchall()
    assert read == [("memory_id",), ("revision",)]
    functions = conn.execute(
        "select p.proname::text from pg_proc p where p.pronamespace = 'memex'::regnamespace"
        " and p.proowner <> 'memex_trigger_owner'::regrole"
        " and has_function_privilege('memex_trigger_owner', p.oid, 'execute') order by 1"
    ).fetchall()
    assert functions == [
        ("_actor",),
        ("_binding",),
        ("_bound_caller",),
        ("_caller",),
        ("_on_behalf_of",),
        ("_tenant_key",),
    ]
    # and nobody calls a trigger function: Postgres runs it only as a trigger
    with pytest.raises(psycopg.errors.FeatureNotSupported), conn.transaction():
        conn.execute("select memex._tenant_counts()")


def test_a_function_without_a_declaration_fails_migrate(
    pg_server: EmbeddedPostgres, template_db: str
) -> None:
    dsn = new_database(pg_server)
    try:
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute(
                "create function memex.unclassified() returns int language sql as 'select 1'"
            )
        with pytest.raises(psycopg.errors.ObjectNotInPrerequisiteState, match="unclassified"):
            migrate(dsn)
    finally:
        drop_database(pg_server, dsn)


def _layer(root: Path, manifest: str, files: dict[str, str]) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "manifest.txt").write_text(manifest)
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


FUNCTION = "-- privileges: {}\ncreate or replace function memex.{}() returns int\n"


def test_the_manifest_reaches_every_file_and_names_only_files(tmp_path: Path) -> None:
    files = {"a/1_x.sql": FUNCTION.format("tenant", "x"), "b/1_g.sql": "-- grants\n"}
    root = _layer(tmp_path / "ok", "# order\na/\nb/1_g.sql\n", files)
    assert sql_files(root) == [root / "a/1_x.sql", root / "b/1_g.sql"]
    assert function_privileges(sql_files(root)) == {"x": "tenant"}
    with pytest.raises(SetupError, match=r"does not reach b/1_g\.sql"):
        sql_files(_layer(tmp_path / "unreached", "a/\n", files))
    with pytest.raises(SetupError, match="lists c/, which is not a folder"):
        sql_files(_layer(tmp_path / "folder", "a/\nb/\nc/\n", files))
    with pytest.raises(SetupError, match=r"lists b/2\.sql, which is not a \.sql file"):
        sql_files(_layer(tmp_path / "file", "a/\nb/\nb/2.sql\n", files))
    with pytest.raises(SetupError, match="more than once"):
        sql_files(_layer(tmp_path / "twice", "a/1_x.sql\na/1_x.sql\nb/\n", files))


@pytest.mark.parametrize(
    "text",
    [
        "create or replace function memex.x() returns int\n",
        FUNCTION.format("everyone", "x"),
        FUNCTION.format("tenant", "x") + "-- privileges: service\n",
    ],
    ids=["none", "unknown class", "two"],
)
def test_a_function_file_declares_its_privileges_once(tmp_path: Path, text: str) -> None:
    root = _layer(tmp_path, "a/\n", {"a/1_x.sql": text})
    with pytest.raises(SetupError, match="exactly one line '-- privileges: <class>'"):
        function_privileges(sql_files(root))
