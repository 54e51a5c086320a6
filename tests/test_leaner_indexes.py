"""Fewer bytes per memory in memex.memories' indexes (revision 0038, issue 39): the GIN index
on the tsvector keeps a pending list of at most 256 kB (not 4 MB, whose pages stay in the
index once merged), and the HNSW index is built with m 12 (8 elements of a page instead of 7),
on a fresh database, on an upgraded small one, and by memex.configure_vector_index's
default; a big table's index is left to the operator. The sizes at 200,000 memories are in
bench/RESULTS.md ("Leaner indexes")."""

from __future__ import annotations

from typing import Any

import numpy as np
import psycopg
from pgvector.psycopg import register_vector

from memexdb import migrate
from memexdb.embedded import EmbeddedPostgres
from memexdb.migrations import head_revision
from tests.conftest import drop_database
from tests.sqlapi import DIM
from tests.test_migrations import _at_revision, _empty_database


def _indexes(conn: psycopg.Connection[Any]) -> dict[str, list[str] | None]:
    """reloptions of memex.memories' GIN and ANN indexes, by name."""
    rows = conn.execute(
        "select c.relname::text, c.reloptions from pg_index i"
        " join pg_class c on c.oid = i.indexrelid join pg_am a on a.oid = c.relam"
        " where i.indrelid = 'memex.memories'::regclass and a.amname in ('gin', 'hnsw', 'ivfflat')"
    ).fetchall()
    return {name: options for name, options in rows}


def _vector_index_setting(conn: psycopg.Connection[Any]) -> Any:
    row = conn.execute("select value from memex.settings where name = 'vector_index'").fetchone()
    assert row is not None
    return row[0]


LEAN = {
    "memories_tsv_idx": ["gin_pending_list_limit=256"],
    "memories_embedding_hnsw_idx": ["m=12", "ef_construction=64"],
}


def _insert_at(n: int) -> list[tuple[str, dict[str, object]]]:
    rng = np.random.default_rng(3)
    v = rng.normal(size=(n, DIM))
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    return [
        (
            "insert into memex.memories (agent_id, user_id, content, embedding,"
            " embedding_model, ann) values ('a', 'u', :c, cast(:v as vector), 'x', true)",
            {"c": f"memory {i} of the tenant", "v": "[" + ",".join(map(repr, row)) + "]"},
        )
        for i, row in enumerate(v.tolist())
    ]


def test_a_fresh_database_has_the_lean_indexes(conn: psycopg.Connection[Any]) -> None:
    assert _indexes(conn) == LEAN
    assert _vector_index_setting(conn) == {"kind": "hnsw", "m": 12, "ef_construction": 64}


def test_the_text_index_keeps_a_short_pending_list_and_fewer_bytes(
    conn: psycopg.Connection[Any],
) -> None:
    """2,000 memories of 30 words each: the GIN index of the schema against the same rows'
    tsvectors inserted into a GIN index as PostgreSQL makes it (a 4 MB pending list), both
    vacuumed: the pending list's pages stay in the other index's file."""
    rng = np.random.default_rng(5)
    p = 1 / (np.arange(3000) + 10.0)
    words = rng.choice(3000, size=(2000, 30), p=p / p.sum())
    register_vector(conn)
    with (
        conn.cursor() as cur,
        cur.copy(
            "copy memex.memories (agent_id, user_id, content, embedding, embedding_model)"
            " from stdin"
        ) as copy,
    ):
        for row in words:
            copy.write_row(("a", "u", " ".join(f"w{w}" for w in row), np.ones(DIM), "x"))
    conn.execute("create table public.gin_default (tsv tsvector)")
    conn.execute("create index gin_default_idx on public.gin_default using gin (tsv)")
    conn.execute("insert into public.gin_default select tsv from memex.memories order by ctid")
    conn.execute("vacuum memex.memories")
    conn.execute("vacuum public.gin_default")
    row = conn.execute(
        "select pg_relation_size('memex.memories_tsv_idx'),"
        " pg_relation_size('public.gin_default_idx')"
    ).fetchone()
    assert row is not None
    lean, default = row
    assert lean < 0.6 * default, (lean, default)
    # the same lexemes found either way
    assert (
        conn.execute(
            "select count(*) from memex.memories where tsv @@ 'w0 & w1'::tsquery"
        ).fetchone()
        == conn.execute(
            "select count(*) from public.gin_default where tsv @@ 'w0 & w1'::tsquery"
        ).fetchone()
    )


def test_upgrade_rebuilds_a_small_tables_hnsw_index_with_m_12(
    pg_server: EmbeddedPostgres,
) -> None:
    dsn = _empty_database(pg_server)
    try:
        _at_revision(dsn, "0037", *_insert_at(40))
        with psycopg.connect(dsn) as conn:
            assert _indexes(conn) == {
                "memories_tsv_idx": None,
                "memories_embedding_hnsw_idx": ["m=16", "ef_construction=64"],
            }
        assert migrate(dsn) == head_revision()
        with psycopg.connect(dsn) as conn:
            assert _indexes(conn) == LEAN
            assert _vector_index_setting(conn) == {"kind": "hnsw", "m": 12, "ef_construction": 64}
            assert conn.execute("select count(*) from memex.memories where ann").fetchone() == (40,)
    finally:
        drop_database(pg_server, dsn)


def test_upgrade_leaves_a_big_tables_hnsw_index_to_the_operator(
    pg_server: EmbeddedPostgres,
) -> None:
    dsn = _empty_database(pg_server)
    try:
        _at_revision(dsn, "0037", *_insert_at(60))
        with psycopg.connect(dsn, autocommit=True) as conn:
            dbname = conn.info.dbname
            conn.execute(f"alter database {dbname} set memex.hnsw_rebuild_max_rows = '50'")
        assert migrate(dsn) == head_revision()
        with psycopg.connect(dsn, autocommit=True) as conn:
            assert _indexes(conn) == {
                "memories_tsv_idx": ["gin_pending_list_limit=256"],
                "memories_embedding_hnsw_idx": ["m=16", "ef_construction=64"],
            }
            assert _vector_index_setting(conn) == {"kind": "hnsw", "m": 16, "ef_construction": 64}
            # the operator's call rebuilds it with the new default
            row = conn.execute(
                "select rebuilt, parameters from memex.configure_vector_index('hnsw')"
            ).fetchone()
            assert row == (True, {"kind": "hnsw", "m": 12, "ef_construction": 64})
            assert _indexes(conn) == LEAN
    finally:
        drop_database(pg_server, dsn)


def test_a_big_tables_index_is_rebuilt_online_as_the_docs_say(
    pg_server: EmbeddedPostgres,
) -> None:
    """docs/scaling.md: build the m 12 index concurrently, swap the names, and
    memex.configure_vector_index('hnsw') finds it already there and records it."""
    dsn = _empty_database(pg_server)
    try:
        _at_revision(dsn, "0037", *_insert_at(60))
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute(
                f"alter database {conn.info.dbname} set memex.hnsw_rebuild_max_rows = '50'"
            )
        assert migrate(dsn) == head_revision()
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute(
                "create index concurrently memories_embedding_hnsw_idx_m12 on memex.memories"
                " using hnsw (embedding halfvec_cosine_ops) with (m = 12, ef_construction = 64)"
                " where ann"
            )
            with conn.transaction():
                conn.execute("drop index memex.memories_embedding_hnsw_idx")
                conn.execute(
                    "alter index memex.memories_embedding_hnsw_idx_m12"
                    " rename to memories_embedding_hnsw_idx"
                )
            row = conn.execute(
                "select rebuilt, parameters from memex.configure_vector_index('hnsw')"
            ).fetchone()
            assert row == (False, {"kind": "hnsw", "m": 12, "ef_construction": 64})
            assert _indexes(conn) == LEAN
            assert _vector_index_setting(conn) == {"kind": "hnsw", "m": 12, "ef_construction": 64}
    finally:
        drop_database(pg_server, dsn)


def test_upgrade_keeps_an_index_a_dba_chose(pg_server: EmbeddedPostgres) -> None:
    dsn = _empty_database(pg_server)
    try:
        _at_revision(
            dsn,
            "0037",
            ("drop index memex.memories_embedding_hnsw_idx", {}),
            (
                "create index memories_embedding_hnsw_idx on memex.memories using hnsw"
                " (embedding halfvec_cosine_ops) with (m = 24, ef_construction = 64) where ann",
                {},
            ),
            *_insert_at(10),
        )
        assert migrate(dsn) == head_revision()
        with psycopg.connect(dsn) as conn:
            assert _indexes(conn)["memories_embedding_hnsw_idx"] == ["m=24", "ef_construction=64"]
    finally:
        drop_database(pg_server, dsn)
