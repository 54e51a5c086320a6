"""What a request plans and evaluates per statement (issue 36's latency targets): a tenant
in the ANN index without supersession links gets a plan of memex._candidates_ann without
the supersession steps (they were planned with every call, links or not), and row-level
security reads the service's caller inline (the policies' InitPlans evaluate the
expression, not a PL/pgSQL call with its own settings, several times a statement)."""

from __future__ import annotations

import re
from typing import Any

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


def test_the_policies_read_the_services_caller_inline(conn: psycopg.Connection) -> None:
    def stored(agent: str) -> Any:
        return conn.execute(
            "select count(*) from memex.store_many(%s, array['u', 'u'], array['a', 'b'],"
            " array[%s, %s]::public.vector[], 'test-model')",
            ([agent] * 2, "[1" + ",0" * 383 + "]", "[0,1" + ",0" * 382 + "]"),
        ).fetchone()

    assert stored("mine") == (2,) and stored("theirs") == (2,)
    with conn.transaction():
        conn.execute("set local role memex_app")
        conn.execute(
            "select set_config('memex.caller', %s, true)",
            ('{"all": false, "agent": "mine", "access": "read", "actor": "key:k"}',),
        )
        plan = "\n".join(
            r[0]
            for r in conn.execute(
                "explain (verbose, costs off) select count(*) from memex.memories"
            ).fetchall()
        )
        # the InitPlans compute the caller from the transaction's setting themselves
        assert "current_setting('memex.caller'::text, true)" in plan
        assert not re.search(r"memex\._caller(_all|_agent)?\(\)", plan)
        # and they still see the entered caller's tenant only
        assert conn.execute("select distinct agent_id from memex.memories").fetchall() == [
            ("mine",)
        ]
