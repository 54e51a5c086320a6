"""What the memex request costs in calls (issue 39 item 1, bench/RESULTS.md "Per-request
cost, third round"): memex's search (mode 'vector' by alpha, an exact tenant) reads no
setting but the rate limit's, copies no hit through memex._successors_first, checks no
metadata it was not given, and walks supersession links only for a tenant that has
them; memex._enter reads its two timeouts without calling memex._setting. Counted in a
transaction of its own with track_functions 'all' (calls of SQL and PL/pgSQL functions
this transaction made). The answers these paths give are the ranking tests' (with
include_superseded, memex._successors_first still orders the versions)."""

from __future__ import annotations

from typing import Any

import psycopg
from psycopg.types.json import Jsonb

from tests.test_supersession_ranking import NEW, OLD, load, search

COUNTED = (
    "memex._setting",
    "memex._successors_first",
    "memex._check_metadata",
    "memex._supersession_heads",
    "memex._duplicates_last",
    "memex._lowered_repeats",
)


def calls(
    conn: psycopg.Connection, statement: str, values: dict[str, Any] | None = None
) -> dict[str, int]:
    """How many times `statement`, run in a transaction of its own, called each function
    of COUNTED."""
    with conn.transaction():
        conn.execute("set local track_functions = 'all'")
        conn.execute(statement, values)
        rows = conn.execute(
            "select f.name, coalesce(pg_stat_get_xact_function_calls(f.name::regproc), 0)"
            " from unnest(%s::text[]) as f(name)",
            (list(COUNTED),),
        ).fetchall()
    return {name: int(n) for name, n in rows}


def memex_search(conn: psycopg.Connection, agent: str, **options: Any) -> dict[str, int]:
    """The calls of memex's request on `agent`: top_k 5, alpha 0.7, a query text."""
    search(conn, agent)  # (registers the vector type; plans cached as in a service)
    names = "".join(f", p_{name} => %({name})s" for name in options)
    return calls(
        conn,
        "select count(*) from memex.search(p_agent_id => %(agent)s, p_user_id => 'u',"
        " p_query_embedding => (select m.embedding::vector from memex.memories m"
        "                       where m.agent_id = %(agent)s limit 1),"
        f" p_query_text => 'What car do I drive?', p_top_k => 5, p_alpha => 0.7{names})",
        {"agent": agent, **options},
    )


def test_the_memex_request_reads_only_the_rate_limit_setting(conn: psycopg.Connection) -> None:
    load(conn, "plain", [OLD, NEW], linked=False)
    counted = memex_search(conn, "plain")
    # one read: memex._enforce_rate_limit's (search read three more of its own before)
    assert counted["memex._setting"] == 1
    assert counted["memex._successors_first"] == 0
    assert counted["memex._check_metadata"] == 0
    assert counted["memex._supersession_heads"] == 0
    # a metadata filter is still checked, and include_superseded still ordered by it
    with_filter = memex_search(conn, "plain", metadata=Jsonb({"a": 1}))
    assert with_filter["memex._check_metadata"] == 1
    assert memex_search(conn, "plain", include_superseded=True)["memex._successors_first"] == 1


def test_the_exact_vector_path_walks_links_only_when_the_tenant_has_them(
    conn: psycopg.Connection,
) -> None:
    load(conn, "linked", [OLD, NEW])
    load(conn, "plain", [OLD, NEW], linked=False)
    assert memex_search(conn, "plain")["memex._supersession_heads"] == 0
    assert memex_search(conn, "linked")["memex._supersession_heads"] == 1


def test_the_vector_path_builds_the_rows_of_its_top_k_only(conn: psycopg.Connection) -> None:
    # memex's request ranks its best hits narrow and applies the near-duplicate rule to
    # their texts and scores (memex._lowered_repeats), not to whole rows through
    # memex._duplicates_last (bench/RESULTS.md, "Issue 39 item 1, Postgres side (session
    # 8)"); the hybrid path still goes through memex._duplicates_last, which applies the
    # same rule
    load(conn, "plain", [OLD, NEW, OLD], linked=False)
    counted = memex_search(conn, "plain")
    assert counted["memex._lowered_repeats"] == 1
    assert counted["memex._duplicates_last"] == 0
    assert memex_search(conn, "plain", mode="hybrid")["memex._duplicates_last"] == 1


def test_entering_reads_the_timeouts_without_memex_setting(conn: psycopg.Connection) -> None:
    # the keyless caller and both request timeouts in one statement each: the timeouts
    # are read from memex.settings directly (and still applied)
    conn.execute(
        "insert into memex.settings (name, value) values"
        " ('request_lock_timeout_ms', '4321'), ('request_statement_timeout_ms', '12345')"
        " on conflict (name) do update set value = excluded.value"
    )
    with conn.transaction():
        conn.execute("set local track_functions = 'all'")
        conn.execute("set local role memex_app")
        conn.execute("select memex._enter(null, false)")
        row = conn.execute(
            "select coalesce(pg_stat_get_xact_function_calls('memex._setting'::regproc), 0),"
            " current_setting('lock_timeout'), current_setting('statement_timeout')"
        ).fetchone()
    # one read: the closed-database check's keyless_allowed_since (it read three before)
    assert row == (1, "4321ms", "12345ms")
