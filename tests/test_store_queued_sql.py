"""memex.store_queued, as a SQL role bound to a tenant calls it (the TypeScript client's
direct mode): memories stored without their vector, queued for the embed worker, found
by text at once and by vector once embedded; another tenant refused; a repeat stores
once and queues nothing."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from pgvector.psycopg import register_vector
from psycopg import sql
from psycopg.conninfo import make_conninfo
from psycopg.rows import dict_row

from tests.sqlapi import unit

STORE_QUEUED = (
    "select * from memex.store_queued(p_agent_ids => %s, p_user_ids => %s, p_contents => %s,"
    " p_ids => %s::uuid[])"
)
SEARCH = (
    "select id, similarity from memex.search(p_agent_id => 'agent', p_user_id => 'alice',"
    " p_query_embedding => %s, p_query_text => %s, p_mode => %s, p_embedding_model => %s)"
)


@pytest.fixture
def alice(conn: psycopg.Connection, dsn: str) -> Iterator[psycopg.Connection]:
    """A login role bound to tenant (agent, alice) with write access, connected."""
    role = f"memex_queued_{uuid.uuid4().hex[:8]}"
    conn.execute(sql.SQL("create role {} login").format(sql.Identifier(role)))
    conn.execute("select memex.bind_sql_role(%s, 'agent', array['alice'], 'write')", (role,))
    try:
        with psycopg.connect(make_conninfo(dsn, user=role), autocommit=True) as bound:
            register_vector(bound)
            yield bound
    finally:
        conn.execute("select memex.unbind_sql_role(%s)", (role,))
        conn.execute(sql.SQL("drop role {}").format(sql.Identifier(role)))


def stored(
    bound: psycopg.Connection, contents: list[str], ids: list[uuid.UUID] | None = None
) -> list[dict[str, Any]]:
    n = len(contents)
    cur = bound.cursor(row_factory=dict_row)
    return cur.execute(STORE_QUEUED, (["agent"] * n, ["alice"] * n, contents, ids)).fetchall()


def queued_ids(conn: psycopg.Connection) -> set[uuid.UUID]:
    return {r[0] for r in conn.execute("select memory_id from memex.embed_queue").fetchall()}


def test_queued_memories_are_found_by_text_at_once_and_by_vector_once_embedded(
    conn: psycopg.Connection, alice: psycopg.Connection
) -> None:
    rows = stored(alice, ["Alice keeps tea in the blue tin", "Alice cycles to work"])
    ids = [r["id"] for r in rows]
    assert [r["embedding_model"] for r in rows] == ["memex:queued"] * 2
    assert queued_ids(conn) == set(ids)

    text = alice.execute(SEARCH, (None, "tea", "text", None)).fetchall()
    assert text[0] == (ids[0], None)  # first, without a similarity (the other: by context)
    real = unit((0, 1.0))
    # a search naming its model skips memories that have no vector of it yet
    assert alice.execute(SEARCH, (real, None, "vector", "test-model")).fetchall() == []

    # the worker's step, as the operator: the vector of each memory's own text
    register_vector(conn)
    conn.execute(
        "select memex.set_embeddings(%s, %s, %s, 'test-model')",
        (ids, [r["content"] for r in rows], [real, unit((1, 1.0))]),
    )
    assert queued_ids(conn) == set()
    hits = alice.execute(SEARCH, (real, None, "vector", "test-model")).fetchall()
    assert hits[0][0] == ids[0] and hits[0][1] == pytest.approx(1.0)


def test_a_repeat_stores_once_and_queues_nothing_once_embedded(
    conn: psycopg.Connection, alice: psycopg.Connection
) -> None:
    memory_id = uuid.uuid4()
    [first] = stored(alice, ["Alice's passport expires in March"], [memory_id])
    register_vector(conn)
    conn.execute(
        "select memex.set_embeddings(%s, %s, %s, 'test-model')",
        ([memory_id], [first["content"]], [unit((0, 1.0))]),
    )
    [again] = stored(alice, ["Alice's passport expires in March"], [memory_id])
    assert (again["id"], again["embedding_model"]) == (memory_id, "test-model")
    assert queued_ids(conn) == set()
    with pytest.raises(psycopg.Error) as info:
        stored(alice, ["something else"], [memory_id])
    assert info.value.sqlstate == "MX409"


def test_a_bound_role_queues_for_its_own_tenant_only(
    conn: psycopg.Connection, alice: psycopg.Connection
) -> None:
    with pytest.raises(psycopg.Error) as info:
        alice.execute(STORE_QUEUED, (["agent"], ["bob"], ["planted"], None))
    assert info.value.sqlstate == "42501"
    with pytest.raises(psycopg.Error) as info:
        alice.execute(STORE_QUEUED, (["agent"], ["alice"], ["  "], None))
    assert (info.value.sqlstate, info.value.diag.column_name) == ("MX422", "memories[0].content")
    assert queued_ids(conn) == set()
    assert conn.execute("select count(*) from memex.memories").fetchone() == (0,)
    # the queue itself stays the service's
    with pytest.raises(psycopg.Error) as info:
        alice.execute("select memex._queue_embedding(gen_random_uuid())")
    assert info.value.sqlstate == "42501"
