"""Embeddings at half precision (revision 0037, issue 39): the upgrade converts the rows
there (in place on a small table; on a big one only after `memexdb convert-embeddings`,
online, with writes going on), the values are the float16 of what was stored, and the int8
MiniLM's vectors rank the same at float16: a small tenant's exact-path answers are those
of float32 cosine over the vectors sent."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta

import numpy as np
import psycopg
import pytest
from pgvector.psycopg import register_vector

from memexdb import migrate
from memexdb.embedded import EmbeddedPostgres
from memexdb.embedding import Embedder
from memexdb.halfvec import convert_embeddings, half_index_definition
from memexdb.migrations import head_revision
from tests.conftest import drop_database
from tests.live_service import run_cli, service_env
from tests.sqlapi import DIM, search, store
from tests.test_migrations import _at_revision, _empty_database

NOW = datetime(2026, 6, 1, tzinfo=UTC)


def _vectors(rng: np.random.Generator, n: int) -> np.ndarray:
    v = rng.normal(size=(n, DIM))
    return (v / np.linalg.norm(v, axis=1, keepdims=True)).astype(np.float32)


def _stored(conn: psycopg.Connection) -> dict[str, np.ndarray]:
    rows = conn.execute(
        "select id::text, embedding::real[] from memex.memories order by id"
    ).fetchall()
    return {i: np.asarray(v, dtype=np.float32) for i, v in rows}


def _catalog(conn: psycopg.Connection) -> dict[str, object]:
    kind = conn.execute(
        "select format_type(atttypid, atttypmod), attnotnull, attstorage from pg_attribute"
        " where attrelid = 'memex.memories'::regclass and attname = 'embedding'"
    ).fetchone()
    ann = conn.execute(
        "select c.relname::text, o.opcname::text, i.indisvalid, pg_get_expr(i.indpred, i.indrelid)"
        " from pg_index i join pg_class c on c.oid = i.indexrelid"
        " join pg_am a on a.oid = c.relam join pg_opclass o on o.oid = i.indclass[0]"
        " where i.indrelid = 'memex.memories'::regclass and a.amname in ('hnsw', 'ivfflat')"
    ).fetchall()
    leftovers = conn.execute(
        "select (select count(*) from pg_attribute where attrelid = 'memex.memories'::regclass"
        "        and attname = 'embedding_half' and not attisdropped),"
        " (select count(*) from pg_trigger where tgrelid = 'memex.memories'::regclass"
        "        and not tgisinternal and tgname like '%half%'),"
        " (select count(*) from pg_proc where proname = '_embedding_half_fill'),"
        " (select count(*) from pg_constraint where conrelid = 'memex.memories'::regclass"
        "        and conname like '%half%')"
    ).fetchone()
    return {"column": kind, "ann": ann, "leftovers": leftovers}


HALF_CATALOG = {
    "column": ("halfvec(384)", True, "m"),
    "ann": [("memories_embedding_hnsw_idx", "halfvec_cosine_ops", True, "ann")],
    "leftovers": (0, 0, 0, 0),
}


def test_a_fresh_database_stores_halfvec(conn: psycopg.Connection) -> None:
    assert _catalog(conn) == HALF_CATALOG


def test_upgrade_converts_a_small_table_in_place(pg_server: EmbeddedPostgres) -> None:
    rng = np.random.default_rng(7)
    sent = _vectors(rng, 50)
    dsn = _empty_database(pg_server)
    try:
        _at_revision(
            dsn,
            "0036",
            *[
                (
                    "insert into memex.memories (agent_id, user_id, content, embedding,"
                    " embedding_model) values ('a', 'u', :c, cast(:v as vector), 'x')",
                    {"c": f"m{i}", "v": "[" + ",".join(map(repr, v.tolist())) + "]"},
                )
                for i, v in enumerate(sent)
            ],
        )
        assert migrate(dsn) == head_revision()
        with psycopg.connect(dsn) as conn:
            assert _catalog(conn) == HALF_CATALOG
            rows = conn.execute(
                "select content, embedding::real[] from memex.memories order by content"
            ).fetchall()
        got = {c: np.asarray(v, dtype=np.float32) for c, v in rows}
        assert len(got) == len(sent)
        for i, v in enumerate(sent):
            # exactly float16's rounding of each value sent as float32
            assert np.array_equal(got[f"m{i}"], v.astype(np.float16).astype(np.float32))
    finally:
        drop_database(pg_server, dsn)


def test_a_big_table_is_converted_online_while_written(pg_server: EmbeddedPostgres) -> None:
    rng = np.random.default_rng(11)
    dsn = _empty_database(pg_server)
    initial = _vectors(rng, 3000)
    try:
        _at_revision(dsn, "0036")
        with psycopg.connect(dsn, autocommit=True) as conn:
            register_vector(conn)
            conn.execute(
                "update memex.settings set value = '100' where name = 'exact_scan_max_rows'"
            )
            with (
                conn.cursor() as cur,
                cur.copy(
                    "copy memex.memories (agent_id, user_id, content, embedding, embedding_model,"
                    " ann) from stdin"
                ) as copy,
            ):
                for i, v in enumerate(initial):
                    copy.write_row(("big", "u", f"m{i}", v, "x", True))
            dbname = conn.info.dbname
            conn.execute(f"alter database {dbname} set memex.halfvec_rewrite_max_rows = '1000'")
        # too big to rewrite in place: the migration refuses and changes nothing
        with pytest.raises(Exception, match="convert-embeddings"):
            migrate(dsn)
        with psycopg.connect(dsn) as conn:
            assert conn.execute(
                "select format_type(atttypid, atttypmod) from pg_attribute"
                " where attrelid = 'memex.memories'::regclass and attname = 'embedding'"
            ).fetchone() == ("vector(384)",)

        # writes all along the conversion: inserts, and updates of old rows' vectors
        stop = threading.Event()
        errors: list[BaseException] = []
        written = [0]

        def write() -> None:
            wrng = np.random.default_rng(5)
            try:
                with psycopg.connect(dsn, autocommit=True) as w:
                    register_vector(w)
                    while not stop.is_set() or written[0] < 200:
                        k = written[0]
                        w.execute(
                            "insert into memex.memories (agent_id, user_id, content, embedding,"
                            " embedding_model, ann) values ('big', 'u', %s, %s, 'x', true)",
                            (f"new{k}", _vectors(wrng, 1)[0]),
                        )
                        w.execute(
                            "update memex.memories set embedding = %s where content = %s",
                            (_vectors(wrng, 1)[0], f"m{(k * 7) % len(initial)}"),
                        )
                        written[0] = k + 1
            except BaseException as exc:
                errors.append(exc)

        writer = threading.Thread(target=write)
        writer.start()
        try:
            done = convert_embeddings(dsn, batch_size=250)
        finally:
            stop.set()
            writer.join(timeout=120)
        assert errors == []
        assert written[0] >= 200
        assert done.indexes_built == ("memories_embedding_hnsw_idx_half",)
        assert 0 < done.rows_filled <= len(initial)  # rows the writes updated filled themselves

        with psycopg.connect(dsn) as conn:
            before = _stored(conn)  # the float32 vectors as the writes left them
        assert migrate(dsn) == head_revision()
        with psycopg.connect(dsn) as conn:
            assert _catalog(conn) == HALF_CATALOG
            after = _stored(conn)
            assert conn.execute(
                "select count(*) from memex.memories where content like 'new%'"
            ).fetchone() == (written[0],)
        assert after.keys() == before.keys()
        for key, v in before.items():
            assert np.array_equal(after[key], v.astype(np.float16).astype(np.float32)), key
        # a second run, as the command, finds nothing to do
        code, out = run_cli(["convert-embeddings"], service_env(MEMEX_DATABASE_URL=dsn))
        assert code == 0 and "already halfvec: nothing to do" in out, out
    finally:
        drop_database(pg_server, dsn)


def test_half_index_definition() -> None:
    assert half_index_definition(
        "CREATE INDEX memories_embedding_hnsw_idx ON memex.memories USING hnsw"
        " (embedding vector_cosine_ops) WITH (m='16', ef_construction='64') WHERE ann",
        "memories_embedding_hnsw_idx",
    ) == (
        'CREATE INDEX CONCURRENTLY "memories_embedding_hnsw_idx_half" ON memex.memories USING'
        " hnsw (embedding_half halfvec_cosine_ops) WITH (m='16', ef_construction='64')"
        " WHERE ann"
    )


def test_minilm_ranks_the_same_at_half_precision(
    conn: psycopg.Connection, embedder: Embedder
) -> None:
    # A small tenant (exact path) of real MiniLM vectors: memex.search's top 10 (vector
    # mode, similarity alone) is float32 cosine's over the vectors sent, in order.
    sentences = [
        f"{who} {did} {what} in {where}"
        for who in ("Alice", "Bob", "Chen", "Dana")
        for did in ("bought", "lost", "painted", "repaired")
        for what in ("a red bicycle", "the old piano", "a garden fence", "her laptop")
        for where in ("Lisbon", "the village", "March")
    ]
    vectors = np.asarray(embedder.embed(sentences), dtype=np.float32)
    ids = []
    for i, (text, v) in enumerate(zip(sentences, vectors, strict=True)):
        row = store(conn, text, v, created_at=NOW - timedelta(minutes=i))
        ids.append(str(row["id"]))
    queries = [
        "who fixed a piano",
        "a bike that was bought",
        "painting in Lisbon",
        "Dana lost something",
        "laptop repairs in March",
        "fence work in the village",
    ]
    for q, qv in zip(queries, np.asarray(embedder.embed(queries), dtype=np.float32), strict=True):
        got = [str(h["id"]) for h in search(conn, qv, alpha=1.0, top_k=10, now=NOW)]
        cosine = vectors @ qv / (np.linalg.norm(vectors, axis=1) * np.linalg.norm(qv))
        want = [ids[k] for k in np.argsort(-cosine, kind="stable")[:10]]
        assert got == want, q
