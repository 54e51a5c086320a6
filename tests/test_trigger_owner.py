"""The triggers on memex.memories owned by memex_trigger_owner (BYPASSRLS, revision 0040:
the store path's statement triggers; the update path's row triggers and the insert's ANN
flag since) write only the tenant whose row fired them: a tenant's every kind of write
leaves the other tenants' counts, term statistics, history counters and revisions as they
were, and its own books exact."""

from __future__ import annotations

from typing import Any

import psycopg
import pytest
from pgvector.psycopg import register_vector

from tests.sqlapi import bound_login_role, store, unit

AGENT = "iso"
MINE = (AGENT, "a")
# the same agent's other user and another agent's user of the same name: a trigger that
# keyed on one column alone would write one of them
OTHERS = [(AGENT, "b"), ("other", "a")]
BOOKS = ("tenants", "term_stats", "history_ids", "memory_revisions")
TRIGGERS = ("_memory_revision", "_term_stats_update", "_ann_on_insert")


def books(conn: psycopg.Connection, tenant: tuple[str, str]) -> dict[str, list[str]]:
    """Every bookkeeping row of `tenant`, as text (read as the superuser: all of them)."""
    return {
        table: [
            r[0]
            for r in conn.execute(
                f"select t::text from memex.{table} t where agent_id = %s and user_id = %s"
                " order by 1",
                tenant,
            ).fetchall()
        ]
        for table in BOOKS
    }


def test_the_update_path_triggers_are_the_trigger_owners(conn: psycopg.Connection) -> None:
    rows = conn.execute(
        "select p.proname::text, p.prosecdef from pg_proc p"
        " where p.pronamespace = 'memex'::regnamespace and p.proname = any(%s)"
        " and p.proowner = 'memex_trigger_owner'::regrole order by 1",
        (list(TRIGGERS),),
    ).fetchall()
    assert rows == [(name, True) for name in sorted(TRIGGERS)]


def test_a_tenants_writes_touch_only_its_own_books(conn: psycopg.Connection, dsn: str) -> None:
    for agent, user in [MINE, *OTHERS]:
        for text in ("herons wait by the reeds", "the reeds sway"):
            store(conn, text, unit((0, 1.0)), agent=agent, user=user)
    theirs = [
        str(store(conn, "a heron in reeds", unit((1, 1.0)), agent=a, user=u)["id"])
        for a, u in OTHERS
    ]
    # the other tenants in the ANN index, mine not: the insert's flag is read per tenant
    conn.execute("update memex.tenants set ann = (agent_id, user_id) <> (%s, %s)", MINE)
    before = {tenant: books(conn, tenant) for tenant in OTHERS}
    with (
        bound_login_role(dsn, AGENT, ["a"]) as role,
        psycopg.connect(role, autocommit=True) as tenant,
    ):
        register_vector(tenant)

        def call(statement: str, *args: Any) -> Any:
            row = tenant.execute(statement, args).fetchone()
            assert row is not None
            return row[0]

        first = call(
            "select id from memex.store(%s, %s, 'herons nest in reeds', %s, 'test-model')",
            *MINE,
            unit((0, 1.0)),
        )
        # a content change (statistics and revision), a field change (revision alone)
        call(
            "select id from memex.update_memory(%s, %s, %s, p_content => 'storks nest high',"
            " p_embedding => %s, p_embedding_model => 'test-model')",
            *MINE,
            first,
            unit((2, 1.0)),
        )
        call("select id from memex.update_memory(%s, %s, %s, p_importance => 2)", *MINE, first)
        # a supersession (the old memory's revision and the new one's)
        later = call(
            "select id from memex.store(%s, %s, 'storks left the reeds', %s, 'test-model',"
            " p_supersedes => array[%s]::uuid[])",
            *MINE,
            unit((3, 1.0)),
            first,
        )
        call("select memex.forget(%s, %s, %s)", *MINE, later)
        # another tenant's memory, by id, through my tenant or theirs: refused, nothing written
        for other, memory in zip(OTHERS, theirs, strict=True):
            for owner in (MINE, other):
                with pytest.raises(psycopg.Error):
                    call(
                        "select id from memex.update_memory(%s, %s, %s, p_content => 'x',"
                        " p_embedding => %s, p_embedding_model => 'test-model')",
                        *owner,
                        memory,
                        unit((4, 1.0)),
                    )
    assert {tenant: books(conn, tenant) for tenant in OTHERS} == before
    for agent, user in [MINE, *OTHERS]:
        assert (
            conn.execute("select * from memex.check_term_stats(%s, %s)", (agent, user)).fetchall()
            == []
        ), (agent, user)
    mine = conn.execute(
        "select m.ann, array_agg(r.operation order by r.revision), array_agg(r.revision"
        " order by r.revision) from memex.memories m join memex.memory_revisions r"
        " on r.memory_id = m.id where m.id = %s group by 1",
        (first,),
    ).fetchone()
    # mine stayed out of the ANN index (its tenant's flag, not another's); its history is
    # whole (forgetting its successor restored it)
    assert mine == (False, ["store", "update", "update", "superseded", "restore"], [1, 2, 3, 4, 5])
