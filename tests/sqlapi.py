"""Helpers for tests that call the SQL API directly, the way a non-Python client would,
with the generated call text (memexdb/<domain>/calls.py: named parameters; those the
values leave out take their SQL defaults)."""

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

from memexdb.keys.calls import BIND_SQL_ROLE, UNBIND_SQL_ROLE
from memexdb.memories.calls import IMPORT_MEMORIES, SEARCH, STORE

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


# how far a cosine computed by memex.search may be from the float32 one: the vectors are
# stored at float16 (halfvec, revision 0037), ~3 significant digits a component
HALF = 1e-3


def half(vector: np.ndarray) -> np.ndarray:
    """`vector` as memex.memories stores it: rounded to float16 (halfvec, revision 0037)."""
    return np.asarray(vector, dtype=np.float32).astype(np.float16).astype(np.float32)


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
    supersedes: list[Any] | None = None,
    embedding_model: str = "test-model",
) -> dict[str, Any]:
    register_vector(conn)
    values = {
        "agent_id": agent,
        "user_id": user,
        "content": content,
        "embedding": embedding,
        "embedding_model": embedding_model,
        "memory_type": memory_type,
        "importance": importance,
        "metadata": Jsonb(metadata or {}),
        "expires_at": expires_at,
        "created_at": created_at,
        "supersedes": supersedes,
    }
    row = conn.cursor(row_factory=dict_row).execute(STORE.given(values), values).fetchone()
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
    values = {
        "ids": None,
        "agent_ids": [agent],
        "user_ids": [user],
        "contents": [content],
        "embeddings": [embedding],
        "embedding_model": "test-model",
        "expires_at": [expires_at],
    }
    row = (
        conn.cursor(row_factory=dict_row).execute(IMPORT_MEMORIES.given(values), values).fetchone()
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
    values = {
        "agent_id": agent,
        "user_id": user,
        "query_embedding": query,
        "top_k": top_k,
        "alpha": alpha,
        "half_life_days": half_life_days,
        "memory_types": memory_types,
        "query_text": query_text,
        "mode": mode,
        "now": now,
        "context_weight": context_weight,
    }
    return conn.cursor(row_factory=dict_row).execute(SEARCH.given(values), values).fetchall()


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
        values = {"role": name, "agent_id": agent_id, "user_ids": user_ids, "access": access}
        conn.execute(BIND_SQL_ROLE, values)
    try:
        yield make_conninfo("", **{**conninfo_to_dict(dsn), "user": name, "password": password})
    finally:
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute(UNBIND_SQL_ROLE, {"role": name})
            conn.execute(sql.SQL("drop role {}").format(sql.Identifier(name)))
