"""memex.term_stats: each tenant's document frequency of every lexeme, which the ANN path
reads instead of counting through the GIN index. Triggers on memex.memories keep it true
through every write (store, batch store, content update, forget, expiry, consolidation and
its restore, erasure); memex.check_term_stats recounts them and the tenant's totals
(memory_count, length_sum) and lists what differs."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta

import psycopg
import pytest
from pgvector.psycopg import register_vector

from tests.live_service import wait_until
from tests.sqlapi import bound_login_role, store, store_expired, unit

AGENT, USER = "terms", "u"


def drift(conn: psycopg.Connection) -> list[tuple[str, str | None, int, int]]:
    """(statistic, lexeme, stored, recounted) of every BM25 statistic of the tenant that is
    wrong: a lexeme's document frequency ('df'), the tenant's memory_count or length_sum
    (BM25's mean length is length_sum / memory_count)."""
    rows = conn.execute("select * from memex.check_term_stats(%s, %s)", (AGENT, USER))
    return [(str(r[0]), r[1], r[2], r[3]) for r in rows.fetchall()]


def df(conn: psycopg.Connection, lexeme: str) -> int | None:
    row = conn.execute(
        "select df from memex.term_stats where agent_id = %s and user_id = %s and lexeme = %s",
        (AGENT, USER, lexeme),
    ).fetchone()
    return None if row is None else int(row[0])


def remember(conn: psycopg.Connection, content: str, **options: object) -> str:
    row = store(conn, content, unit((0, 1.0)), agent=AGENT, user=USER, **options)  # type: ignore[arg-type]
    return str(row["id"])


def test_stores_single_and_batched_count_each_memory_once_per_lexeme(
    conn: psycopg.Connection,
) -> None:
    remember(conn, "The zebra met another zebra at the zoo")  # two positions, one memory
    conn.execute(
        "select count(*) from memex.store_many(%s, %s, %s, %s, 'test-model')",
        (
            [AGENT] * 3,
            [USER] * 3,
            ["zebra crossing", "zoo keeper", "keeper of keys"],
            [unit((0, 1.0))] * 3,
        ),
    )
    assert (df(conn, "zebra"), df(conn, "zoo"), df(conn, "keeper")) == (2, 2, 2)
    assert drift(conn) == []


def test_a_content_update_moves_the_lexemes_and_forget_drops_them(
    conn: psycopg.Connection,
) -> None:
    kept = remember(conn, "apples and pears")
    changed = remember(conn, "apples and plums")
    conn.execute(
        "select memex.update_memory(%s, %s, %s, p_content => 'cherries, pears and figs',"
        " p_embedding => %s, p_embedding_model => 'test-model')",
        (AGENT, USER, changed, unit((1, 1.0))),
    )
    assert (df(conn, "appl"), df(conn, "plum"), df(conn, "cherri"), df(conn, "pear")) == (
        1,
        None,
        1,
        2,
    )
    conn.execute("select memex.forget(%s, %s, %s)", (AGENT, USER, kept))
    assert (df(conn, "appl"), df(conn, "pear")) == (None, 1)
    assert drift(conn) == []


def test_expiry_deletes_and_the_statistics_follow(conn: psycopg.Connection) -> None:
    remember(conn, "a lasting memory of lighthouses")
    store_expired(
        conn,
        "a fleeting memory of lighthouses",
        unit((0, 1.0)),
        datetime.now(UTC) - timedelta(days=1),
        agent=AGENT,
        user=USER,
    )
    assert df(conn, "lighthous") == 2
    row = conn.execute("select expired_memories_deleted from memex.maintenance()").fetchone()
    assert row is not None and row[0] == 1
    assert (df(conn, "lighthous"), df(conn, "fleet")) == (1, None)
    assert drift(conn) == []


def test_consolidation_and_its_restore_keep_the_statistics_true(
    conn: psycopg.Connection,
) -> None:
    start = datetime(2026, 1, 1, tzinfo=UTC)
    for i in range(12):
        remember(
            conn,
            f"Fact {i}: the locker code of gym bag {i} is {i * 37 % 1000}.",
            created_at=start + timedelta(days=i),
        )
    run = conn.execute(
        "select id, summary_id from memex.consolidate_tenant(%s, %s, p_force => true, p_now => %s)",
        (AGENT, USER, datetime.now(UTC) + timedelta(hours=2)),
    ).fetchone()
    assert run is not None and run[1] is not None
    # the summary is stored, the sources archived: the counted memories are the stored ones
    assert df(conn, "locker") == 13
    assert drift(conn) == []
    conn.execute("select memex.restore_consolidation(%s)", (run[0],))
    assert drift(conn) == []


def test_erasing_a_user_leaves_no_statistics(conn: psycopg.Connection) -> None:
    remember(conn, "a private memory")
    conn.execute("select memex.erase_user(%s, %s, %s)", (AGENT, USER, USER))
    assert conn.execute(
        "select count(*) from memex.term_stats where agent_id = %s", (AGENT,)
    ).fetchone() == (0,)


def test_the_check_reports_a_wrong_statistic(conn: psycopg.Connection) -> None:
    remember(conn, "walruses on ice")
    conn.execute(
        "update memex.term_stats set df = 5 where agent_id = %s and lexeme = 'walrus'", (AGENT,)
    )
    conn.execute("insert into memex.term_stats values (%s, %s, 'phantom', 1)", (AGENT, USER))
    conn.execute(
        "update memex.tenants set memory_count = 3, length_sum = 40 where agent_id = %s",
        (AGENT,),
    )
    assert drift(conn) == [
        ("df", "phantom", 1, None),
        ("df", "walrus", 5, 1),
        ("length_sum", None, 40, 2),
        ("memory_count", None, 3, 1),
    ]


def test_the_check_counts_a_tenant_without_a_row_as_empty(conn: psycopg.Connection) -> None:
    assert drift(conn) == []
    remember(conn, "walruses on ice")
    conn.execute("delete from memex.tenants where agent_id = %s", (AGENT,))
    assert drift(conn) == [("length_sum", None, 0, 2), ("memory_count", None, 0, 1)]


def test_the_ann_path_reads_the_stored_frequency(conn: psycopg.Connection) -> None:
    # a wrong stored frequency changes the ANN path's BM25 score: it is what the path reads
    remember(conn, "a zebra")
    remember(conn, "a zebra and a lion")
    conn.execute("select memex.index_tenant(%s, %s)", (AGENT, USER))

    def text_ranks() -> list[float]:
        rows = conn.execute(
            "select text_rank from memex.search(p_agent_id => %s, p_user_id => %s,"
            " p_query_embedding => null, p_query_text => %s, p_mode => 'text')",
            (AGENT, USER, "zebra"),
        ).fetchall()
        return [float(r[0]) for r in rows]

    before = text_ranks()
    conn.execute(
        "update memex.term_stats set df = 1 where agent_id = %s and lexeme = 'zebra'", (AGENT,)
    )
    after = text_ranks()
    assert len(before) == len(after) == 2 and all(a > b for a, b in zip(after, before, strict=True))


def test_a_tenant_role_keeps_its_statistics_by_writing_memories_only(
    conn: psycopg.Connection, dsn: str
) -> None:
    # the counts and statistics are written by security definer triggers: a bound SQL role
    # stores and forgets through them and can neither read nor write either table (tenant
    # roles hold no table privilege: docs/security.md)
    conn.commit()
    with (
        bound_login_role(dsn, AGENT, [USER]) as role,
        psycopg.connect(role, autocommit=True) as tenant,
    ):
        register_vector(tenant)
        stored = tenant.execute(
            "select id from memex.store(%s, %s, 'narwhals in the fjord', %s, 'test-model')",
            (AGENT, USER, unit((0, 1.0))),
        ).fetchone()
        assert stored is not None
        assert df(conn, "narwhal") == 1
        assert conn.execute(
            "select memory_count from memex.tenants where agent_id = %s and user_id = %s",
            (AGENT, USER),
        ).fetchone() == (1,)
        conn.commit()
        for statement in (
            "select df from memex.term_stats where lexeme = 'narwhal'",
            "select memory_count from memex.tenants",
            "update memex.term_stats set df = 100 where lexeme = 'narwhal'",
            "insert into memex.term_stats values ('terms', 'u', 'phantom', 1)",
            "delete from memex.term_stats",
            "update memex.tenants set ann = false, memory_count = 0",
        ):
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                tenant.execute(statement)
        tenant.execute("select memex.forget(%s, %s, %s)", (AGENT, USER, stored[0]))
    assert df(conn, "narwhal") is None
    assert drift(conn) == []


def test_a_content_change_and_a_store_into_its_tenant_do_not_deadlock(
    conn: psycopg.Connection, dsn: str
) -> None:
    # Transaction B has stored a memory (it holds the tenant's row: the count) and will store
    # another holding "plum"; meanwhile A changes a memory's content to one more lexeme,
    # "plum" among them. Stores take the tenant's row before their term_stats rows; were
    # a content change to take its term_stats rows first, A would hold "plum" waiting for
    # the tenant's row while B waited for "plum": a deadlock. A takes the tenant's row
    # first and waits for B instead.
    changed = remember(conn, "apples and pears")
    with (
        psycopg.connect(dsn) as b,
        psycopg.connect(dsn, autocommit=True) as a,
        ThreadPoolExecutor(1) as pool,
    ):
        for c in (a, b):
            register_vector(c)
            c.execute("set lock_timeout = '20s'")
        remember(b, "a note of no fruit")
        a_pid = a.info.backend_pid
        updated = pool.submit(
            a.execute,
            "select memex.update_memory(%s, %s, %s, p_content => 'plums, pears and figs',"
            " p_embedding => %s, p_embedding_model => 'test-model')",
            (AGENT, USER, changed, unit((1, 1.0))),
        )
        assert wait_until(
            lambda: (
                conn.execute(
                    "select wait_event_type = 'Lock' from pg_stat_activity where pid = %s", (a_pid,)
                ).fetchone()
                == (True,)
            ),
            timeout=20.0,
        ), "A never waited"
        remember(b, "plums in the garden")  # A holds nothing B needs: no deadlock
        b.commit()
        updated.result(timeout=30)
    assert (df(conn, "plum"), df(conn, "fig"), df(conn, "appl")) == (2, 1, None)
    assert drift(conn) == []


@pytest.mark.parametrize("owner", ["memex_trigger_owner", "memex_owner"])
def test_the_books_are_the_same_whichever_role_owns_the_triggers(
    conn: psycopg.Connection, owner: str
) -> None:
    # revision 0040: the triggers are memex_trigger_owner's (BYPASSRLS) where migrate could
    # create that role, else memex_owner's, held to row-level security: either way every
    # write keeps the counts, the term statistics and the revisions exact
    triggers = ("_tenant_counts", "_term_stats", "_memory_revisions_stored")
    triggers += ("_memory_revision", "_term_stats_update", "_ann_on_insert")  # and since
    for function in triggers:
        conn.execute(f"alter function memex.{function}() owner to {owner}")
    first = remember(conn, "The heron waited by the reeds")
    conn.execute(
        "select count(*) from memex.store_many(%s, %s, %s, %s, 'test-model')",
        (
            [AGENT, AGENT, AGENT],
            [USER, USER, "other"],
            ["reeds in the river", "a heron flew", "reeds elsewhere"],
            [unit((0, 1.0))] * 3,
        ),
    )
    conn.execute("select memex.forget(%s, %s, %s)", (AGENT, USER, first))
    assert (df(conn, "heron"), df(conn, "reed"), df(conn, "wait")) == (1, 1, None)
    assert drift(conn) == []
    assert conn.execute(
        "select count(*) from memex.check_term_stats(%s, 'other')", (AGENT,)
    ).fetchone() == (0,)
    counts = conn.execute(
        "select user_id, memory_count from memex.tenants where agent_id = %s order by 1",
        (AGENT,),
    ).fetchall()
    assert counts == [("other", 1), (USER, 2)]
    revisions = conn.execute(
        "select r.user_id, array_agg(r.id order by r.id),"
        " array_agg(r.content || ' ' || r.operation || ' ' || r.revision order by r.content)"
        " from memex.memory_revisions r where r.agent_id = %s group by 1 order by 1",
        (AGENT,),
    ).fetchall()
    # the forgotten memory's revision went with it; ids are numbered per user (the batch's
    # in the order of their memories' ids)
    assert revisions == [
        ("other", [1], ["reeds elsewhere store 1"]),
        (USER, [2, 3], ["a heron flew store 1", "reeds in the river store 1"]),
    ]
    # the update path: a content change's statistics and its revision
    flew = conn.execute("select id from memex.memories where content = 'a heron flew'").fetchone()
    assert flew is not None
    conn.execute(
        "select memex.update_memory(%s, %s, %s, p_content => 'a stork flew',"
        " p_embedding => %s, p_embedding_model => 'test-model')",
        (AGENT, USER, flew[0], unit((1, 1.0))),
    )
    assert (df(conn, "heron"), df(conn, "stork")) == (None, 1)
    assert drift(conn) == []
    # (the update's id: the user's next, after the batch's 2 and 3)
    assert conn.execute(
        "select revision, operation, id > 3 from memex.memory_revisions where memory_id = %s"
        " order by 1",
        (flew[0],),
    ).fetchall() == [(1, "store", False), (2, "update", True)]
