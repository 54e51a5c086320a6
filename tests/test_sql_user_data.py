"""A user's data through the SQL API, as any language sees it: memex.list_memories (keyset
pages, filters), memex.get_memory, memex.update_memory, memex.erase_user, the metadata
filter of memex.search and memex.count, memex.export_memories and memex.import_memories."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
import pytest
from pgvector.psycopg import register_vector
from psycopg.rows import dict_row
from psycopg.types.json import Jsonb

from tests.sqlapi import HALF, angled, search, store, store_expired, unit
from tests.test_vector_index import index_tenant

NOW = datetime(2026, 6, 1, tzinfo=UTC)
QUERY = unit((0, 1.0))
WHO = ("agent", "user")


def rows(conn: psycopg.Connection, sql: str, *args: Any) -> list[dict[str, Any]]:
    register_vector(conn)
    return conn.cursor(row_factory=dict_row).execute(sql, args).fetchall()


def page(conn: psycopg.Connection, **options: Any) -> list[dict[str, Any]]:
    named = ", ".join(f"p_{name} => %s" for name in options)
    return rows(
        conn,
        f"select * from memex.list_memories('agent', 'user'{', ' if named else ''}{named})",
        *[Jsonb(v) if isinstance(v, dict) else v for v in options.values()],
    )


def sqlstate(conn: psycopg.Connection, sql: str, *args: Any) -> tuple[str | None, str | None]:
    with pytest.raises(psycopg.Error) as error:
        rows(conn, sql, *args)
    return error.value.sqlstate, error.value.diag.column_name


def test_list_is_newest_first_and_pages_by_cursor(conn: psycopg.Connection) -> None:
    made = [
        store(conn, f"m{i}", angled(0.5), created_at=NOW - timedelta(days=i // 2))
        for i in range(7)  # pairs share a created_at: the id breaks the tie
    ]
    store(conn, "someone else's", angled(0.5), user="other")
    store_expired(conn, "expired", angled(0.5), datetime(2000, 1, 1, tzinfo=UTC))
    seen: list[dict[str, Any]] = []
    cursor: dict[str, Any] = {}
    while True:
        got = page(conn, limit=3, **cursor)
        seen += got
        if len(got) < 3:
            break
        cursor = {"cursor_created_at": got[-1]["created_at"], "cursor_id": got[-1]["id"]}
    expected = sorted(made, key=lambda m: (m["created_at"], m["id"]), reverse=True)
    assert [m["id"] for m in seen] == [m["id"] for m in expected]
    assert set(seen[0]) >= {"content", "updated_at", "embedding_model", "metadata"}


def test_list_filters(conn: psycopg.Connection) -> None:
    store(
        conn,
        "old fact",
        angled(0.5),
        memory_type="semantic",
        created_at=NOW - timedelta(9),
        metadata={"project": "x", "tag": 1},
    )
    store(
        conn,
        "new fact",
        angled(0.5),
        memory_type="semantic",
        created_at=NOW,
        metadata={"project": "y"},
    )
    store(conn, "event", angled(0.5), created_at=NOW - timedelta(1), metadata={"project": "x"})
    contents = lambda got: [m["content"] for m in got]  # noqa: E731
    assert contents(page(conn, memory_type="semantic")) == ["new fact", "old fact"]
    assert contents(page(conn, metadata={"project": "x"})) == ["event", "old fact"]
    assert contents(page(conn, metadata={"project": "x", "tag": 1})) == ["old fact"]
    assert contents(page(conn, metadata={})) == ["new fact", "event", "old fact"]
    # created_after is inclusive, created_before exclusive
    assert contents(page(conn, created_after=NOW - timedelta(1), created_before=NOW)) == ["event"]


@pytest.mark.parametrize(
    ("options", "field"),
    [
        ({"limit": 0}, "limit"),
        ({"limit": 1001}, "limit"),
        ({"limit": None}, "limit"),
        ({"cursor_created_at": NOW}, "cursor"),
        ({"cursor_id": uuid.uuid4()}, "cursor"),
        ({"metadata": Jsonb([1])}, "metadata"),
    ],
)
def test_list_refuses_bad_arguments(
    conn: psycopg.Connection, options: dict[str, Any], field: str
) -> None:
    named = ", ".join(f"p_{name} => %s" for name in options)
    assert sqlstate(
        conn, f"select * from memex.list_memories('agent', 'user', {named})", *options.values()
    ) == ("MX422", field)


def test_get_returns_a_live_memory_of_the_tenant_only(conn: psycopg.Connection) -> None:
    mine = store(conn, "mine", angled(0.5), metadata={"k": "v"})
    other = store(conn, "other's", angled(0.5), agent="other")
    gone = store_expired(conn, "expired", angled(0.5), datetime(2000, 1, 1, tzinfo=UTC))
    got = rows(conn, "select * from memex.get_memory('agent', 'user', %s)", mine["id"])
    assert got == [mine]
    for missing in (other["id"], gone["id"], uuid.uuid4()):
        assert sqlstate(conn, "select * from memex.get_memory('agent', 'user', %s)", missing) == (
            "MX404",
            None,
        )


def update(conn: psycopg.Connection, memory_id: uuid.UUID, **fields: Any) -> dict[str, Any]:
    named = "".join(f", p_{name} => %s" for name in fields)
    got = rows(
        conn,
        f"select * from memex.update_memory('agent', 'user', %s{named})",
        memory_id,
        *[Jsonb(v) if isinstance(v, dict) else v for v in fields.values()],
    )
    return got[0]


def test_update_changes_only_the_given_fields(conn: psycopg.Connection) -> None:
    expiry = datetime(2100, 1, 1, tzinfo=UTC)
    m = store(
        conn,
        "Bob lives in Paris",
        angled(0.9),
        metadata={"a": 1},
        expires_at=expiry,
        created_at=NOW,
    )
    changed = update(conn, m["id"], importance=1.5)
    assert changed["importance"] == 1.5
    assert changed["updated_at"] > m["updated_at"]
    unchanged = (
        "content",
        "metadata",
        "memory_type",
        "expires_at",
        "created_at",
        "embedding_model",
    )
    assert {k: changed[k] for k in unchanged} == {k: m[k] for k in unchanged}

    changed = update(conn, m["id"], metadata={"b": 2}, memory_type="semantic")
    assert (changed["metadata"], changed["memory_type"]) == ({"b": 2}, "semantic")  # replaced
    assert changed["expires_at"] == expiry
    assert update(conn, m["id"], clear_expires_at=True)["expires_at"] is None
    assert update(conn, m["id"], expires_at=expiry)["expires_at"] == expiry

    # a new content comes with its embedding, which search then ranks by
    moved = update(
        conn, m["id"], content="Bob moved to Rome", embedding=angled(0.2), embedding_model="model-2"
    )
    assert (moved["content"], moved["embedding_model"]) == ("Bob moved to Rome", "model-2")
    hit = search(conn, QUERY, query_text="Rome", mode="hybrid", now=NOW)[0]
    assert hit["similarity"] == pytest.approx(0.2, abs=HALF)
    assert hit["text_rank"] is not None and hit["text_rank"] > 0


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({}, "patch"),
        ({"clear_expires_at": False}, "patch"),
        ({"content": "new"}, "embedding"),
        ({"embedding": angled(0.5)}, "embedding_model"),
        ({"content": " \t", "embedding": angled(0.5), "embedding_model": "m"}, "content"),
        ({"importance": 2.5}, "importance"),
        ({"importance": 1e-9}, "importance"),
        ({"metadata": [1]}, "metadata"),
        ({"expires_at": NOW, "clear_expires_at": True}, "expires_at"),
        ({"embedding": unit((0, 1.0))[:10], "embedding_model": "m"}, "embedding"),
    ],
)
def test_update_refuses_what_store_refuses(
    conn: psycopg.Connection, fields: dict[str, Any], field: str
) -> None:
    m = store(conn, "x", angled(0.5))
    named = "".join(f", p_{name} => %s" for name in fields)
    values = [Jsonb(v) if isinstance(v, dict | list) else v for v in fields.values()]
    sql = f"select * from memex.update_memory('agent', 'user', %s{named})"
    assert sqlstate(conn, sql, m["id"], *values) == ("MX422", field)
    assert rows(conn, "select * from memex.get_memory('agent', 'user', %s)", m["id"]) == [m]


def test_update_of_another_tenants_memory_is_not_found(conn: psycopg.Connection) -> None:
    other = store(conn, "other's", angled(0.5), agent="other")
    sql = "select * from memex.update_memory('agent', 'user', %s, p_importance => 2)"
    assert sqlstate(conn, sql, other["id"]) == ("MX404", None)
    assert rows(conn, "select importance from memex.memories")[0]["importance"] == 1.0


def test_erase_user_deletes_every_row_of_the_tenant_and_counts_them(
    conn: psycopg.Connection,
) -> None:
    for i in range(3):
        store(conn, f"m{i}", angled(0.5))
    store_expired(conn, "expired", angled(0.5), datetime(2000, 1, 1, tzinfo=UTC))
    conn.execute("update memex.memories set archived_at = now() where content = 'm0'")
    kept = [
        store(conn, "other user", angled(0.5), user="u2"),
        store(conn, "other agent", angled(0.5), agent="a2"),
    ]
    # asked for by name: p_confirm repeats p_user_id, or nothing is erased
    for unconfirmed in (
        "select * from memex.erase_user('agent', 'user', 'other')",
        "select * from memex.erase_user('agent', 'user', null)",
        "select * from memex.erase_user('agent', 'user', '')",
        "select * from memex.erase_user(p_agent_id => 'agent', p_user_id => 'user',"
        " p_confirm => 'USER')",
    ):
        assert sqlstate(conn, unconfirmed) == ("MX422", "confirm"), unconfirmed
    assert sqlstate(conn, "select * from memex.erase_user('agent', 'user')")[0] == "42883"
    mine = "select count(*) as n from memex.memories where agent_id = 'agent' and user_id = 'user'"
    assert rows(conn, mine) == [{"n": 4}]  # nothing was erased
    erased = rows(conn, "select * from memex.erase_user('agent', 'user', 'user')")
    assert erased == [
        {"table_name": "memories", "deleted": 4},
        {"table_name": "tenants", "deleted": 1},
        {"table_name": "file_revisions", "deleted": 0},
        {"table_name": "access_log", "deleted": 0},
        {"table_name": "consolidation_runs", "deleted": 0},
    ]
    for table in ("memories", "tenants"):
        left = rows(
            conn,
            f"select count(*) as n from memex.{table}"
            " where agent_id = 'agent' and user_id = 'user'",
        )
        assert left == [{"n": 0}]
    assert [r["id"] for r in rows(conn, "select id from memex.memories order by agent_id")] == [
        kept[1]["id"],
        kept[0]["id"],
    ]
    # erasing again finds nothing; a new memory starts the tenant afresh
    assert [
        r["deleted"] for r in rows(conn, "select * from memex.erase_user('agent', 'user', 'user')")
    ] == [0, 0, 0, 0, 0]
    store(conn, "again", angled(0.5))
    assert rows(conn, "select memex.count('agent', 'user') as n") == [{"n": 1}]
    assert sqlstate(conn, "select * from memex.erase_user('', 'user', 'user')") == (
        "MX422",
        "agent_id",
    )


@pytest.mark.parametrize("ann", [False, True], ids=["exact", "ann"])
@pytest.mark.parametrize("mode", ["vector", "hybrid"])
def test_search_filters_by_metadata_before_ranking(
    conn: psycopg.Connection, ann: bool, mode: str
) -> None:
    for i in range(30):  # better matches without the tag
        store(conn, f"untagged note {i}", angled(0.95), agent="agent", user="u", created_at=NOW)
    store(
        conn,
        "tagged note far",
        angled(0.1),
        agent="agent",
        user="u",
        created_at=NOW,
        metadata={"project": "x", "n": 1},
    )
    store(
        conn,
        "tagged note near",
        angled(0.5),
        agent="agent",
        user="u",
        created_at=NOW,
        metadata={"project": "x", "n": 2},
    )
    if ann:
        index_tenant(conn, "agent")
    got = rows(
        conn,
        "select content from memex.search('agent', 'u', %s, p_top_k => 5, p_mode => %s,"
        " p_query_text => 'note', p_now => %s, p_metadata => %s)",
        QUERY,
        mode,
        NOW,
        Jsonb({"project": "x"}),
    )
    assert [r["content"] for r in got] == ["tagged note near", "tagged note far"]
    got = rows(
        conn,
        "select content from memex.search('agent', 'u', %s, p_top_k => 1, p_mode => %s,"
        " p_query_text => 'note', p_now => %s, p_metadata => %s)",
        QUERY,
        mode,
        NOW,
        Jsonb({"n": 1}),
    )
    assert [r["content"] for r in got] == ["tagged note far"]
    count = rows(
        conn, "select memex.count('agent', 'u', p_metadata => %s) as n", Jsonb({"project": "x"})
    )
    assert count == [{"n": 2}]
    assert sqlstate(conn, "select memex.count('agent', 'u', p_metadata => '\"x\"')") == (
        "MX422",
        "metadata",
    )


def test_export_pages_through_every_user_oldest_first(conn: psycopg.Connection) -> None:
    made = [
        store(conn, f"{user} {i}", angled(0.5), user=user, created_at=NOW - timedelta(i))
        for user in ("u1", "u2")
        for i in range(3)
    ]
    store(conn, "other agent", angled(0.5), agent="a2", user="u1")
    sql = "select * from memex.export_memories('agent', %s, %s, %s, %s, %s, p_limit => 2)"
    got: list[dict[str, Any]] = []
    after: tuple[Any, ...] = (None, None, None)
    while True:
        batch = rows(conn, sql, None, True, *after)
        got += batch
        if len(batch) < 2:
            break
        after = (batch[-1]["user_id"], batch[-1]["created_at"], batch[-1]["id"])
    expected = sorted(made, key=lambda m: (m["user_id"], m["created_at"], m["id"]))
    assert [g["id"] for g in got] == [m["id"] for m in expected]
    assert all(g["embedding"] is not None for g in got)
    one = rows(conn, "select * from memex.export_memories('agent', 'u2')")
    assert [g["content"] for g in one] == ["u2 2", "u2 1", "u2 0"]
    assert all(g["embedding"] is None for g in one)
    assert sqlstate(conn, "select * from memex.export_memories('agent', p_limit => 0)") == (
        "MX422",
        "limit",
    )


def _import(conn: psycopg.Connection, items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return rows(
        conn,
        "select * from memex.import_memories(%s::uuid[], %s, %s, %s, %s, 'test-model',"
        " p_metadata => %s::jsonb[], p_created_at => %s::timestamptz[],"
        " p_updated_at => %s::timestamptz[])",
        [i["id"] for i in items],
        [i.get("agent", "agent") for i in items],
        ["user"] * len(items),
        [i["content"] for i in items],
        [angled(0.5)] * len(items),
        [Jsonb(i.get("metadata", {})) for i in items],
        [NOW - timedelta(days=3)] * len(items),
        [NOW - timedelta(days=1)] * len(items),
    )


def test_import_keeps_ids_and_timestamps_and_skips_existing_ids(conn: psycopg.Connection) -> None:
    first, second = uuid.uuid4(), uuid.uuid4()
    got = _import(conn, [{"id": first, "content": "a", "metadata": {"k": [1, {"x": None}]}}])
    assert [(g["id"], g["created_at"], g["updated_at"], g["metadata"]) for g in got] == [
        (first, NOW - timedelta(days=3), NOW - timedelta(days=1), {"k": [1, {"x": None}]})
    ]
    got = _import(
        conn,
        [
            {"id": first, "content": "changed"},
            {"id": second, "content": "b"},
            {"id": second, "content": "b again"},
        ],
    )
    assert [g["id"] for g in got] == [second]  # an existing id is skipped, never overwritten
    contents = rows(conn, "select content from memex.memories order by content")
    assert [c["content"] for c in contents] == ["a", "b"]
    assert rows(conn, "select memory_count from memex.tenants") == [{"memory_count": 2}]
    state = sqlstate(
        conn,
        "select * from memex.import_memories(array[%s]::uuid[],"
        " array['agent'], array['user'], array[' '], array[%s], 'm')",
        uuid.uuid4(),
        angled(0.5),
    )
    assert state == ("MX422", "memories[0].content")
