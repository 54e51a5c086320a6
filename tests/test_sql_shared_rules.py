"""The rules several SQL functions share live in one internal helper each (issue 35): a
listing's page size (memex._check_page_limit), a file's revision number
(memex._check_revision, tests/test_sql_files.py), the prologue of the history imports
(memex._authorize_import, tests/test_moving.py), the start of a condense or dream run
(memex._start_run, tests/test_sql_consolidation.py and tests/test_sql_dream.py), the
tenants a condensing tick takes (memex._consolidate_due_tenants). Every
function that takes the rule answers as it did with its own copy: the same SQLSTATE, field
and message. The helpers are internal: a tenant's role cannot execute them
(tests/golden/privileges.txt)."""

from __future__ import annotations

import psycopg
import pytest

LISTINGS = [
    "memex.list_files('a', 'u', p_limit => %(limit)s)",
    "memex.list_revisions('a', 'u', 'user/p.md', p_limit => %(limit)s)",
    "memex.access_events('a', 'u', p_limit => %(limit)s)",
    "memex.audit_events(p_limit => %(limit)s)",
    "memex.consolidation_history('a', 'u', p_limit => %(limit)s)",
    "memex.dream_users('a', p_limit => %(limit)s)",
    "memex.agent_stats('a', p_limit => %(limit)s)",
    "memex.user_stats('a', p_limit => %(limit)s)",
    "memex.stale_embeddings('m', p_limit => %(limit)s)",
]


@pytest.mark.parametrize("call", LISTINGS)
@pytest.mark.parametrize("limit", [None, 0, 1001])
def test_a_page_is_1_to_1000_rows(conn: psycopg.Connection, call: str, limit: int | None) -> None:
    with pytest.raises(psycopg.Error) as invalid:
        conn.execute(f"select * from {call}", {"limit": limit})
    assert (invalid.value.sqlstate, invalid.value.diag.column_name) == ("MX422", "limit")
    assert invalid.value.diag.message_primary == "limit: must be 1 to 1000"


@pytest.mark.parametrize("call", LISTINGS)
def test_the_bounds_are_pages(conn: psycopg.Connection, call: str) -> None:
    for limit in (1, 1000):
        conn.execute(f"select * from {call}", {"limit": limit}).fetchall()


@pytest.mark.parametrize(
    "helper",
    [
        "_check_page_limit(integer)",
        "_check_revision(integer,text)",
        "_authorize_import(jsonb,text)",
        "_start_run(text,text,text,timestamptz)",
        "_consolidate_due_tenants(jsonb)",
    ],
)
def test_the_shared_helpers_are_internal(conn: psycopg.Connection, helper: str) -> None:
    """A tenant's role reaches them only through the functions that call them."""
    row = conn.execute(
        "select has_function_privilege('memex_tenant', %(f)s, 'execute'),"
        " has_function_privilege('memex_app', %(f)s, 'execute')",
        {"f": f"memex.{helper}"},
    ).fetchone()
    assert row == (False, True)


def test_a_condensing_tick_takes_the_largest_unpaused_tenants_over_the_threshold(
    conn: psycopg.Connection,
) -> None:
    """memex._consolidate_due_tenants: the one list of memex.consolidate_due and of
    memex.consolidate_due_tick (the procedure pg_cron calls)."""
    conn.execute(
        "insert into memex.tenants (agent_id, user_id, memory_count, dream_paused) values"
        " ('a', 'small', 3, false), ('a', 'big', 9, false), ('b', 'big', 9, false),"
        " ('a', 'paused', 20, true), ('c', 'mid', 5, false)"
    )
    due = conn.execute(
        "select d.agent_id, d.user_id"
        " from memex._consolidate_due_tenants(%s::jsonb) with ordinality d(agent_id, user_id, n)"
        " order by d.n",
        ('{"threshold": 3, "concurrency": 3}',),
    ).fetchall()
    assert due == [("a", "big"), ("b", "big"), ("c", "mid")]
