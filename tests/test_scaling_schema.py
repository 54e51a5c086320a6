"""The schema read for Citus (docs/scaling.md), from the catalog of a migrated database.

Citus distributes a table by one column; memexdb's would be `agent_id`, which every tenant
table has and every tenant call takes (`p_agent_id`, the distribution argument of a
distributed function). Citus needs the distribution column in every primary key and unique
constraint of a distributed table, and in foreign keys between them. This checks which
tables comply today; those that do not are the exact list docs/scaling.md gives, with what a
Citus deployment must change (no Citus runs here: none is packaged on PyPI or Debian).
A new table, constraint or public function fails here until it is classified.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import psycopg
from psycopg.rows import dict_row

ROOT = Path(__file__).resolve().parent.parent
DOC = (ROOT / "docs" / "scaling.md").read_text()
DISTRIBUTION_COLUMN = "agent_id"

# distributed by agent_id, co-located with memex.memories
TENANT_TABLES = {
    "memories",
    "tenants",
    "term_stats",
    "file_revisions",
    "access_log",
    "consolidation_runs",
    "embed_queue",
    "rate_limits",
    "rate_limit_reservations",
    "history_ids",
    "memory_revisions",
}
# small, read by every call, written by operators: a copy on every node
REFERENCE_TABLES = {"settings", "api_keys", "sql_roles", "lock_secret"}
# on the coordinator only
COORDINATOR_TABLES = {"alembic_version", "audit_log", "sql_layer_state"}

# Constraints of tenant tables without the distribution column (or tables without it):
# what a Citus deployment changes, each explained in docs/scaling.md.
EXCEPTIONS = {
    ("memories", "memories_pkey", "PRIMARY KEY (id)"),
    ("embed_queue", "embed_queue_pkey", "PRIMARY KEY (memory_id)"),
    (
        "embed_queue",
        "embed_queue_memory_id_fkey",
        "FOREIGN KEY (memory_id) REFERENCES memex.memories(id) ON DELETE CASCADE",
    ),
    ("embed_queue", "(table)", "no agent_id column"),
    (
        "memory_revisions",
        "memory_revisions_memory_id_fkey",
        "FOREIGN KEY (memory_id) REFERENCES memex.memories(id) ON DELETE CASCADE",
    ),
    (
        "memory_revisions",
        "memory_revisions_memory_id_revision_key",
        "UNIQUE (memory_id, revision)",
    ),
    ("rate_limits", "rate_limits_pkey", "PRIMARY KEY (key)"),
    ("rate_limits", "(table)", "no agent_id column"),
}

# Public memex.* functions without a p_agent_id argument: they cannot be routed to one
# tenant's node; docs/scaling.md says how each runs on Citus.
GLOBAL_FUNCTIONS = {
    "allow_keyless",
    "audit_events",
    "configure_vector_index",
    "consolidate_due",
    "dream_config",
    "dream_due",
    "embed_queue_depth",
    "embed_queue_failed",
    "embed_queue_take",
    "embedding_dims",
    "embedding_models",
    "import_memories",
    "import_file_revisions",
    "import_access_log",
    "import_consolidation_runs",
    "import_memory_revisions",
    "missing_memory_ids",
    "maintenance",
    "metrics_snapshot",
    "overview_stats",
    "rate_limit_hit",
    "reserve_rate_limit",
    "revoke_key",
    "schema_state",
    "lock_waits",
    "set_dream_config",
    "set_embeddings",
    "set_setting",
    "has_live_keys",
    "tenant_stats",
    "memory_cursor",
    "memory_cursor_key",
    "tenant_cursor_key",
    "stale_embeddings",
    "store_many",
    "store_queued",
    "unbind_sql_role",
}
# Functions with p_agent_id that still stay on the coordinator (docs/scaling.md says why).
NOT_DELEGATED = {
    "bind_sql_role",
    "create_key",
    "list_keys",
    "erase_user",
    "set_dream_paused",
    "dream_users",
    "dream_plan",
    "agent_stats",
    "user_stats",
    "tenant_cursor",
    "restore_consolidation",  # p_agent_id is optional: the caller's agent when null
}

CONSTRAINTS = """
select c.relname as table_name, k.conname as name, k.contype as kind,
       pg_get_constraintdef(k.oid) as definition,
       array(select a.attname from unnest(k.conkey) as u(n)
             join pg_attribute a on a.attrelid = k.conrelid and a.attnum = u.n)::text[] as columns,
       f.relname as references_table,
       array(select a.attname from unnest(k.confkey) as u(n)
             join pg_attribute a on a.attrelid = k.confrelid and a.attnum = u.n)::text[]
         as references_columns
from pg_constraint k
join pg_class c on c.oid = k.conrelid
join pg_namespace n on n.oid = c.relnamespace
left join pg_class f on f.oid = k.confrelid
where n.nspname = 'memex' and k.contype in ('p', 'u', 'f', 'x')
order by 1, 2
"""

# unique indexes that back no constraint (e.g. the partial one on file paths)
UNIQUE_INDEXES = """
select c.relname as table_name, i.relname as name,
       array(select a.attname from unnest(x.indkey::int2[]) as u(n)
             join pg_attribute a on a.attrelid = x.indrelid and a.attnum = u.n)::text[]
         as columns,
       pg_get_indexdef(x.indexrelid) as definition
from pg_index x
join pg_class c on c.oid = x.indrelid
join pg_class i on i.oid = x.indexrelid
join pg_namespace n on n.oid = c.relnamespace
where n.nspname = 'memex' and x.indisunique
  and not exists (select from pg_constraint k where k.conindid = x.indexrelid)
order by 1, 2
"""

TABLES = """
select c.relname as name, c.relrowsecurity as rls,
       exists (select from pg_attribute a where a.attrelid = c.oid and a.attname = %s
               and not a.attisdropped) as has_column,
       coalesce((select a.attnotnull from pg_attribute a
                 where a.attrelid = c.oid and a.attname = %s), false) as not_null
from pg_class c join pg_namespace n on n.oid = c.relnamespace
where n.nspname = 'memex' and c.relkind in ('r', 'p')
order by 1
"""

FUNCTIONS = """
select p.proname as name, coalesce(p.proargnames, '{}') as args
from pg_proc p join pg_namespace n on n.oid = p.pronamespace
where n.nspname = 'memex' and p.proname !~ '^_' and p.prokind = 'f'
order by 1
"""

IDENTITY_COLUMNS = """
select c.relname as table_name, a.attname as column_name
from pg_attribute a join pg_class c on c.oid = a.attrelid
join pg_namespace n on n.oid = c.relnamespace
where n.nspname = 'memex' and c.relkind = 'r' and a.attnum > 0 and not a.attisdropped
  and (a.attidentity <> '' or
      pg_get_serial_sequence(format('memex.%I', c.relname), a.attname) is not null)
order by 1, 2
"""


def _rows(conn: psycopg.Connection, sql: str, *params: str) -> list[dict[str, object]]:
    return conn.cursor(row_factory=dict_row).execute(sql, params or None).fetchall()


def test_every_table_is_classified(conn: psycopg.Connection) -> None:
    tables = _rows(conn, TABLES, DISTRIBUTION_COLUMN, DISTRIBUTION_COLUMN)
    names = {str(t["name"]) for t in tables}
    assert names == TENANT_TABLES | REFERENCE_TABLES | COORDINATOR_TABLES
    assert not (TENANT_TABLES & REFERENCE_TABLES) and not (TENANT_TABLES & COORDINATOR_TABLES)
    by_name = {str(t["name"]): t for t in tables}
    # every table under row-level security is a tenant table
    for name, table in by_name.items():
        if table["rls"]:
            assert name in TENANT_TABLES, name
    # audit_log's agent_id may be null (operator actions): it cannot be a distribution column
    assert by_name["audit_log"]["has_column"] and not by_name["audit_log"]["not_null"]


def tenant_table_problems(conn: psycopg.Connection) -> set[tuple[str, str, str]]:
    """Constraints (and tables) that Citus would refuse with agent_id as the distribution
    column of TENANT_TABLES."""
    problems: set[tuple[str, str, str]] = set()
    tables = {
        str(t["name"]): t for t in _rows(conn, TABLES, DISTRIBUTION_COLUMN, DISTRIBUTION_COLUMN)
    }
    for name in sorted(TENANT_TABLES):
        if not tables[name]["has_column"] or not tables[name]["not_null"]:
            problems.add((name, "(table)", f"no {DISTRIBUTION_COLUMN} column"))
    for con in _rows(conn, CONSTRAINTS):
        table, columns = str(con["table_name"]), list(con["columns"])  # type: ignore[call-overload]
        if table not in TENANT_TABLES:
            continue
        if con["kind"] in ("p", "u", "x") and DISTRIBUTION_COLUMN not in columns:
            problems.add((table, str(con["name"]), str(con["definition"])))
        if con["kind"] == "f":
            target = str(con["references_table"])
            refs = list(con["references_columns"])  # type: ignore[call-overload]
            if target in REFERENCE_TABLES:
                continue  # distributed -> reference: allowed
            # distributed -> distributed: both sides carry the distribution column
            if DISTRIBUTION_COLUMN not in columns or DISTRIBUTION_COLUMN not in refs:
                problems.add((table, str(con["name"]), str(con["definition"])))
    for index in _rows(conn, UNIQUE_INDEXES):
        table = str(index["table_name"])
        if table in TENANT_TABLES and DISTRIBUTION_COLUMN not in index["columns"]:  # type: ignore[operator]
            problems.add((table, str(index["name"]), str(index["definition"])))
    return problems


def test_tenant_tables_carry_the_distribution_column_but_for_the_documented_exceptions(
    conn: psycopg.Connection,
) -> None:
    assert tenant_table_problems(conn) == EXCEPTIONS
    for table, name, _ in EXCEPTIONS:
        mention = name if name != "(table)" else f"`{table}`"
        assert mention in DOC, f"docs/scaling.md does not mention {mention}"


def test_the_check_sees_a_constraint_without_the_column(conn: psycopg.Connection) -> None:
    """The check above can fail: a unique constraint without agent_id on a tenant table
    (made and rolled back here) is reported."""
    with conn.transaction(force_rollback=True):
        conn.execute("alter table memex.tenants add constraint scaling_probe unique (user_id)")
        found = tenant_table_problems(conn) - EXCEPTIONS
    assert found == {("tenants", "scaling_probe", "UNIQUE (user_id)")}


def test_the_compliant_constraints_are_those_documented(conn: psycopg.Connection) -> None:
    """What already fits: the tenant tables' keys that include agent_id."""
    fits = {
        (str(c["table_name"]), str(c["name"]))
        for c in _rows(conn, CONSTRAINTS)
        if str(c["table_name"]) in TENANT_TABLES and DISTRIBUTION_COLUMN in list(c["columns"])  # type: ignore[call-overload]
    }
    fits |= {
        (str(i["table_name"]), str(i["name"]))
        for i in _rows(conn, UNIQUE_INDEXES)
        if DISTRIBUTION_COLUMN in list(i["columns"])  # type: ignore[call-overload]
    }
    assert fits == {
        ("tenants", "tenants_pkey"),
        ("term_stats", "term_stats_pkey"),
        ("file_revisions", "file_revisions_agent_id_user_id_path_revision_key"),
        ("memories", "memories_path_idx"),
        ("rate_limit_reservations", "rate_limit_reservations_pkey"),
        ("file_revisions", "file_revisions_pkey"),
        ("access_log", "access_log_pkey"),
        ("consolidation_runs", "consolidation_runs_pkey"),
        ("memory_revisions", "memory_revisions_pkey"),
        ("history_ids", "history_ids_pkey"),
    }
    for _, name in fits:
        assert name in DOC, name


def test_reference_tables_reference_no_tenant_table(conn: psycopg.Connection) -> None:
    """Citus refuses a foreign key from a reference table to a distributed one."""
    for con in _rows(conn, CONSTRAINTS):
        if con["kind"] == "f" and str(con["table_name"]) in REFERENCE_TABLES:
            assert str(con["references_table"]) in REFERENCE_TABLES, con


def test_tenant_functions_take_the_distribution_argument(conn: psycopg.Connection) -> None:
    functions: dict[str, set[str]] = {}
    for f in _rows(conn, FUNCTIONS):
        functions.setdefault(str(f["name"]), set()).update(f["args"])  # type: ignore[arg-type]
    routed = {name for name, args in functions.items() if "p_agent_id" in args}
    assert set(functions) - routed == GLOBAL_FUNCTIONS
    assert routed >= NOT_DELEGATED
    for name in GLOBAL_FUNCTIONS | NOT_DELEGATED:
        assert f"`memex.{name}`" in DOC, f"docs/scaling.md does not say how memex.{name} runs"
    # the distributed-function statements in the doc name exactly the routed functions
    delegated = set(re.findall(r"create_distributed_function\('memex\.(\w+)\(", DOC))
    assert delegated == routed - NOT_DELEGATED


# the routed functions' full signatures, as create_distributed_function names them
SIGNATURES = """
select p.oid::regprocedure::text as signature
from pg_proc p join pg_namespace n on n.oid = p.pronamespace
where n.nspname = 'memex' and p.proname !~ '^_' and p.prokind = 'f'
  and 'p_agent_id' = any (p.proargnames) and p.proname <> all (%s)
order by p.proname, 1
"""
DISTRIBUTED = re.compile(r"(```sql\n)((?:select create_distributed_function\(.*\n.*\n)+)(```)")


def test_distributed_functions_name_the_current_signatures(conn: psycopg.Connection) -> None:
    """docs/scaling.md's create_distributed_function statements name each routed function
    with its argument types as the catalog has them now (a signature that changed, such as
    memex.store's when it gained supersedes and validity, would not be found by Citus).
    MEMEX_UPDATE_GOLDEN=1 writes them again."""
    with conn.transaction(force_rollback=True):
        conn.execute("set local search_path = pg_catalog, public")
        signatures = [
            str(r["signature"])
            for r in _rows(conn, SIGNATURES, sorted(NOT_DELEGATED))  # type: ignore[arg-type]
        ]
    block = "".join(
        f"select create_distributed_function('{s.replace(', ', ',')}',\n"
        "    'p_agent_id', colocate_with := 'memex.memories');\n"
        for s in signatures
    )
    found = DISTRIBUTED.search(DOC)
    assert found is not None, "docs/scaling.md lost its create_distributed_function block"
    if os.environ.get("MEMEX_UPDATE_GOLDEN") and found.group(2) != block:
        text = DOC[: found.start(2)] + block + DOC[found.end(2) :]
        (ROOT / "docs" / "scaling.md").write_text(text)
        return
    assert found.group(2) == block


def test_identity_columns_are_the_documented_ones(conn: psycopg.Connection) -> None:
    """The tenant history's ids are numbers per user (runs: per agent; revision 0029,
    memex.history_ids; memory revisions: revision 0030), not sequences; the audit log, on
    the coordinator, keeps its identity (docs/scaling.md, "Sequences")."""
    columns = {(str(r["table_name"]), str(r["column_name"])) for r in _rows(conn, IDENTITY_COLUMNS)}
    assert columns == {("audit_log", "id")}
    assert "audit_log.id" in DOC and "history_ids" in DOC
