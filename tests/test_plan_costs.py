"""What a request plans and evaluates per statement (issue 36's latency targets): a tenant
in the ANN index without supersession links gets a plan of memex._candidates_ann without
the supersession steps (they were planned with every call, links or not)."""

from __future__ import annotations

import re

import psycopg

from tests.test_supersession_ranking import NEW, OLD, load, search, to_ann
from tests.test_vector_index import index_tenant


def nested_plans(conn: psycopg.Connection, agent: str) -> str:
    """The plans of every statement the default request on `agent` runs (auto_explain of
    nested statements, sent to this session as LOG messages), as one text."""
    plans: list[str] = []

    def collect(diag: psycopg.errors.Diagnostic) -> None:
        if "plan:" in (diag.message_primary or ""):
            plans.append(diag.message_primary or "")

    conn.add_notice_handler(collect)
    with conn.transaction():
        conn.execute("load 'auto_explain'")
        conn.execute("set local auto_explain.log_min_duration = 0")
        conn.execute("set local auto_explain.log_nested_statements = on")
        conn.execute("set local client_min_messages = log")
        search(conn, agent)
    conn.remove_notice_handler(collect)
    return "\n".join(plans)


def test_an_ann_tenant_without_links_plans_no_supersession_step(
    conn: psycopg.Connection,
) -> None:
    load(conn, "linked", [OLD, NEW])
    load(conn, "plain", [OLD, NEW], linked=False)
    to_ann(conn, "linked")
    assert index_tenant(conn, "plain") > 0
    plain = nested_plans(conn, "plain")
    linked = nested_plans(conn, "linked")
    # the candidates' statement was planned in both (its BM25 weights are in it)
    assert "CTE weights" in plain and "CTE weights" in linked
    # with a link the heads are looked up (memex._ann_heads, its own cached plan); without
    # one, neither that call nor the walk's is in the plan at all, not even skipped
    assert not re.search(r"Function Scan on _(ann|supersession)_heads", plain)
    assert "Function Scan on _ann_heads" in linked
    assert search(conn, "linked")[0] == NEW and search(conn, "plain")[0] == OLD
