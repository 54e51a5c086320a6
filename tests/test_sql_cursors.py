"""The page cursors in SQL (memex.memory_cursor, memex.tenant_cursor and their *_key
readers) are the ones REST, MCP and Python hand out: the same strings both ways, so a
SQL caller can continue a listing a REST client began, and back."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

import psycopg
import pytest

from memexdb.consolidation.models import decode_tenant_cursor, encode_tenant_cursor
from memexdb.memories.models import decode_cursor, encode_cursor

TIMES = [
    datetime(2026, 1, 31, 12, 30, 45, 123456, tzinfo=UTC),
    datetime(1970, 1, 1, tzinfo=UTC),
    datetime(1969, 12, 31, 23, 59, 59, 999999, tzinfo=UTC),
    datetime(1900, 3, 1, 0, 0, 0, 1, tzinfo=UTC),
    datetime(2200, 1, 1, tzinfo=UTC) - timedelta(microseconds=1),
]


@pytest.mark.parametrize("at", TIMES)
def test_memory_cursor_as_python(conn: psycopg.Connection, at: datetime) -> None:
    memory_id = uuid.uuid4()
    row = conn.execute("select memex.memory_cursor(%s, %s)", (at, memory_id)).fetchone()
    assert row is not None and row[0] == encode_cursor(at, memory_id)
    back = conn.execute("select * from memex.memory_cursor_key(%s)", (row[0],)).fetchone()
    assert back == (at, memory_id) == decode_cursor(row[0])


TENANTS = [
    ("a", "u"),
    ("assistant", "alice@example.com"),
    ("agent é", "user 名前"),
    ("x" * 128, "y"),
]


@pytest.mark.parametrize(("agent_id", "user_id"), TENANTS)
def test_tenant_cursor_as_python(conn: psycopg.Connection, agent_id: str, user_id: str) -> None:
    row = conn.execute("select memex.tenant_cursor(%s, %s)", (agent_id, user_id)).fetchone()
    assert row is not None and row[0] == encode_tenant_cursor(agent_id, user_id)
    back = conn.execute("select * from memex.tenant_cursor_key(%s)", (row[0],)).fetchone()
    assert back == (agent_id, user_id) == decode_tenant_cursor(row[0])


def test_null_is_the_first_page_and_malformed_is_mx422(conn: psycopg.Connection) -> None:
    assert conn.execute("select * from memex.memory_cursor_key(null)").fetchone() == (None, None)
    assert conn.execute("select * from memex.tenant_cursor_key(null)").fetchone() == (None, None)
    for sql, bad, field in [
        ("select * from memex.memory_cursor_key(%s)", "12.xyz", "cursor"),
        ("select * from memex.memory_cursor_key(%s)", "1" * 17 + "." + "0" * 32, "cursor"),
        ("select * from memex.tenant_cursor_key(%s)", "61.00", "after"),
        ("select * from memex.tenant_cursor_key(%s)", "ff.61", "after"),  # not UTF-8
        ("select * from memex.tenant_cursor_key(%s)", "61" * 1025 + ".61", "after"),
    ]:
        with pytest.raises(psycopg.Error) as caught:
            conn.execute(sql, (bad,))
        assert caught.value.sqlstate == "MX422", bad
        assert caught.value.diag.column_name == field


def test_a_sql_caller_pages_list_memories_with_the_cursor(conn: psycopg.Connection) -> None:
    vector = "[" + ",".join(["1"] + ["0"] * 383) + "]"
    for i in range(5):
        conn.execute(
            "select memex.store('pager', 'u', %s, %s::vector, 'm', p_created_at => %s)",
            (f"m{i}", vector, datetime(2026, 1, 1, tzinfo=UTC) + timedelta(days=i)),
        )
    seen: list[str] = []
    cursor = None
    while True:
        rows = conn.execute(
            """
            select m.content, case when count(*) over () = 2
                   then memex.memory_cursor(last_value(m.created_at) over w,
                                            last_value(m.id) over w) end
            from memex.memory_cursor_key(%s) c,
                 memex.list_memories('pager', 'u', 2, c.created_at, c.id) m
            window w as (rows between unbounded preceding and unbounded following)
            """,
            (cursor,),
        ).fetchall()
        seen += [r[0] for r in rows]
        cursor = rows[-1][1] if rows else None
        if cursor is None:
            break
    assert seen == ["m4", "m3", "m2", "m1", "m0"]
