"""Helpers for tests that call the SQL API directly, the way a non-Python client would."""

from __future__ import annotations

import contextlib
import math
import secrets
import uuid
from collections.abc import Iterator
from datetime import datetime
from typing import Any

import numpy as np
import psycopg
from pgvector.psycopg import register_vector
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict, make_conninfo
from psycopg.rows import dict_row
from psycopg.types.json import Jsonb

DIM = 384


def unit(*components: tuple[int, float]) -> np.ndarray:
    """A unit vector from (axis, weight) pairs; cosine similarities are easy to reason about."""
    v = np.zeros(DIM, dtype=np.float32)
    for axis, weight in components:
        v[axis] = weight
    return v / np.linalg.norm(v)


def angled(cos: float) -> np.ndarray:
    """A unit vector whose cosine similarity to unit((0, 1)) is exactly `cos`."""
    return unit((0, cos), (1, math.sqrt(max(0.0, 1 - cos * cos)) or 1e-12))


def store(
    conn: psycopg.Connection,
    content: str,
    embedding: np.ndarray,
    *,
    agent: str = "agent",
    user: str = "user",
    memory_type: str = "episodic",
    importance: float = 1.0,
    created_at: datetime | None = None,
    expires_at: datetime | None = None,
    metadata: dict[str, Any] | None = None,
) -> dict[str, Any]:
    register_vector(conn)
    row = (
        conn.cursor(row_factory=dict_row)
        .execute(
            "select * from memex.store(%s, %s, %s, %s, 'test-model', %s::memex.memory_type, %s,"
            " %s, %s, %s)",
            (
                agent,
                user,
                content,
                embedding,
                memory_type,
                importance,
                Jsonb(metadata or {}),
                expires_at,
                created_at,
            ),
        )
        .fetchone()
    )
    assert row is not None
    return row


def store_expired(
    conn: psycopg.Connection,
    content: str,
    embedding: np.ndarray,
    expires_at: datetime,
    *,
    agent: str = "agent",
    user: str = "user",
) -> dict[str, Any]:
    """A memory whose expiry has passed. memex.store refuses an expiry in the past (MX422);
    memex.import_memories keeps one as exported, so that is how such a memory is made."""
    register_vector(conn)
    row = (
        conn.cursor(row_factory=dict_row)
        .execute(
            "select * from memex.import_memories(p_ids => null, p_agent_ids => array[%s],"
            " p_user_ids => array[%s], p_contents => array[%s], p_embeddings => array[%s],"
            " p_embedding_model => 'test-model', p_expires_at => array[%s::timestamptz])",
            (agent, user, content, embedding, expires_at),
        )
        .fetchone()
    )
    assert row is not None
    return row


def search(
    conn: psycopg.Connection,
    query: np.ndarray | None,
    *,
    agent: str = "agent",
    user: str = "user",
    top_k: int = 10,
    alpha: float | None = 0.7,
    half_life_days: float = 30.0,
    memory_types: list[str] | None = None,
    query_text: str | None = None,
    mode: str | None = "vector",
    now: datetime | None = None,
    context_weight: float | None = None,
) -> list[dict[str, Any]]:
    register_vector(conn)
    return (
        conn.cursor(row_factory=dict_row)
        .execute(
            "select * from memex.search(p_agent_id => %s, p_user_id => %s,"
            " p_query_embedding => %s, p_top_k => %s, p_alpha => %s, p_half_life_days => %s,"
            " p_memory_types => %s::memex.memory_type[], p_query_text => %s, p_mode => %s,"
            " p_now => %s, p_context_weight => %s)",
            (
                agent,
                user,
                query,
                top_k,
                alpha,
                half_life_days,
                memory_types,
                query_text,
                mode,
                now,
                context_weight,
            ),
        )
        .fetchall()
    )


@contextlib.contextmanager
def bound_login_role(
    dsn: str, agent_id: str, user_ids: list[str], access: str = "write"
) -> Iterator[str]:
    """A login role with a password, bound to the tenant with memex.bind_sql_role (as
    docs/sql-api.md tells an operator to), as a connection string to the database `dsn`
    (the operator's). Roles belong to the cluster, not the database: dropped afterwards."""
    name = f"memex_sql_{uuid.uuid4().hex[:12]}"
    password = secrets.token_hex(16)
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(
            sql.SQL("create role {} login password {}").format(
                sql.Identifier(name), sql.Literal(password)
            )
        )
        conn.execute(
            "select memex.bind_sql_role(%s, %s, %s, %s)", (name, agent_id, user_ids, access)
        )
    try:
        yield make_conninfo("", **{**conninfo_to_dict(dsn), "user": name, "password": password})
    finally:
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute("select memex.unbind_sql_role(%s)", (name,))
            conn.execute(sql.SQL("drop role {}").format(sql.Identifier(name)))
