"""Migrations: idempotent, safe when run concurrently, frozen once released; every SQL
function follows the conventions (comment, explicit search_path, volatility)."""

from __future__ import annotations

import ast
import hashlib
import threading
from pathlib import Path

import psycopg
import pytest
from alembic.script import ScriptDirectory
from sqlalchemy import create_engine, text
from sqlalchemy.pool import NullPool

from alembic import command
from memexdb import migrate
from memexdb.embedded import EmbeddedPostgres
from memexdb.errors import SetupError
from memexdb.migrations import (
    _alembic_config,
    function_privileges,
    head_revision,
    pgvector_problem,
    read_manifest,
    sql_files,
)
from tests.conftest import db_dsn, drop_database, janitor

ROOT = Path(__file__).resolve().parent.parent


def _empty_database(server: EmbeddedPostgres) -> str:
    name = f"m_{threading.get_ident() % 10**9}_{id(server) % 10**6}"
    janitor(server, name).drop()
    janitor(server, name).init()
    return db_dsn(server, name)


def _at_revision(dsn: str, revision: str, *statements: tuple[str, dict[str, object]]) -> None:
    """Bring an empty database to alembic `revision` alone (no SQL layer) and run
    `statements` (SQL, parameters) there: the state an upgrade from it starts from."""
    engine = create_engine(
        "postgresql+psycopg://", poolclass=NullPool, creator=lambda: psycopg.connect(dsn)
    )
    with engine.connect() as c, c.begin():
        c.execute(text("create schema memex"))
        cfg = _alembic_config()
        cfg.attributes["connection"] = c
        command.upgrade(cfg, revision)
        for sql, params in statements:
            c.execute(text(sql), params)
    engine.dispose()


def _schema_fingerprint(dsn: str) -> list[tuple[str, ...]]:
    with psycopg.connect(dsn) as conn:
        return conn.execute(
            "select p.proname, pg_get_function_identity_arguments(p.oid), md5(p.prosrc)"
            " from pg_proc p where p.pronamespace = 'memex'::regnamespace order by 1, 2"
        ).fetchall()


def test_migrate_twice_is_a_no_op(pg_server: EmbeddedPostgres) -> None:
    dsn = _empty_database(pg_server)
    try:
        assert migrate(dsn) == head_revision()
        before = _schema_fingerprint(dsn)
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute("insert into memex.settings values ('custom', '1')")
        assert migrate(dsn) == head_revision()
        assert _schema_fingerprint(dsn) == before
        with psycopg.connect(dsn) as conn:
            assert conn.execute(
                "select value from memex.settings where name = 'custom'"
            ).fetchone() == (1,)
    finally:
        drop_database(pg_server, dsn)


def test_concurrent_migrations(pg_server: EmbeddedPostgres) -> None:
    dsn = _empty_database(pg_server)
    results: list[str] = []
    errors: list[BaseException] = []
    start = threading.Barrier(4)

    def run() -> None:
        try:
            start.wait(timeout=30)
            results.append(migrate(dsn))
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=run) for _ in range(4)]
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=120)
        assert errors == []
        assert results == [head_revision()] * 4
        with psycopg.connect(dsn) as conn:
            assert conn.execute("select count(*) from memex.alembic_version").fetchone() == (1,)
    finally:
        drop_database(pg_server, dsn)


def test_upgrade_moves_tenants_past_the_threshold_into_the_ann_index(
    pg_server: EmbeddedPostgres,
) -> None:
    # A database at 0004 (full ANN index, no memories.ann) with one tenant above
    # exact_scan_max_rows and one below: 0005 moves the first in, rebuilds the index as a
    # partial one, and leaves the small tenant out.
    dsn = _empty_database(pg_server)
    try:
        _at_revision(
            dsn,
            "0004",
            ("update memex.settings set value = '3' where name = 'exact_scan_max_rows'", {}),
            (
                "insert into memex.memories (agent_id, user_id, content, embedding,"
                " embedding_model) select a, 'u', 'm' || i,"
                " array_fill(0.1, array[384])::vector, 'x'"
                " from (values ('big', 5), ('small', 2)) t(a, n), generate_series(1, n) i",
                {},
            ),
            (
                "insert into memex.tenants (agent_id, user_id, memory_count)"
                " values ('big', 'u', 5), ('small', 'u', 2)",
                {},
            ),
        )
        assert migrate(dsn) == head_revision()
        with psycopg.connect(dsn) as conn:
            assert conn.execute(
                "select agent_id, ann from memex.tenants order by 1"
            ).fetchall() == [("big", True), ("small", False)]
            assert conn.execute(
                "select agent_id, count(*) filter (where ann) from memex.memories"
                " group by 1 order by 1"
            ).fetchall() == [("big", 5), ("small", 0)]
            assert conn.execute(
                "select c.relname::text, pg_get_expr(i.indpred, i.indrelid) from pg_index i"
                " join pg_class c on c.oid = i.indexrelid join pg_am a on a.oid = c.relam"
                " where i.indrelid = 'memex.memories'::regclass and a.amname = 'hnsw'"
            ).fetchall() == [("memories_embedding_hnsw_idx", "ann")]
    finally:
        drop_database(pg_server, dsn)


def test_released_revisions_are_frozen() -> None:
    lines = (ROOT / "tests" / "revision_checksums.txt").read_text().splitlines()
    released = dict(reversed(line.split()) for line in lines if line and not line.startswith("#"))
    assert released, "no released revisions listed"
    for name, digest in released.items():
        path = ROOT / name
        assert path.is_file(), f"the released revision {name} was deleted"
        assert hashlib.sha256(path.read_bytes()).hexdigest() == digest, (
            f"{name} was edited after release"
        )
    # each released revision has both its frozen SQL and its wrapper listed
    stems = {Path(name).stem for name in released}
    for stem in stems:
        assert f"sql/revisions/{stem}.sql" in released, stem
        assert f"alembic/versions/{stem}.py" in released, stem


def test_the_manifest_lists_the_revisions_alembic_chains() -> None:
    """sql/manifest.txt's revisions are alembic's, in the order of its chain, each run by a
    thin wrapper of the same name (its upgrade runs the frozen file and nothing else)."""
    revisions = read_manifest(ROOT / "sql").revisions
    scripts = ScriptDirectory.from_config(_alembic_config())
    chain = [s for s in reversed(list(scripts.walk_revisions()))]
    assert [rid for rid, _ in revisions] == [s.revision for s in chain]
    assert len(revisions) >= 34 and revisions[-1][0] == head_revision()
    for (rid, path), script in zip(revisions, chain, strict=True):
        assert script.path is not None
        wrapper = Path(script.path)
        assert wrapper.stem == path.stem, (wrapper.name, path.name)
        upgrade = next(
            node
            for node in ast.parse(wrapper.read_text()).body
            if isinstance(node, ast.FunctionDef) and node.name == "upgrade"
        )
        body = [ast.unparse(statement) for statement in upgrade.body]
        assert body == ["run_revision(op.get_bind(), revision)"], wrapper.name
        assert path.read_text().startswith(f"-- Revision {rid}"), path.name
    assert sorted((ROOT / "sql" / "revisions").glob("*.sql")) == [p for _, p in revisions]


def test_the_manifest_refuses_a_revision_after_the_layer(tmp_path: Path) -> None:
    (tmp_path / "revisions").mkdir()
    (tmp_path / "core").mkdir()
    (tmp_path / "revisions" / "0001_a.sql").write_text("select 1;")
    (tmp_path / "core" / "f.sql").write_text("select 1;")
    (tmp_path / "manifest.txt").write_text("revisions/0001_a.sql\ncore/\n")
    assert read_manifest(tmp_path).revisions == [("0001", tmp_path / "revisions" / "0001_a.sql")]
    assert sql_files(tmp_path) == [tmp_path / "core" / "f.sql"]
    (tmp_path / "manifest.txt").write_text("core/\nrevisions/0001_a.sql\n")
    with pytest.raises(SetupError, match="after the SQL layer"):
        read_manifest(tmp_path)
    (tmp_path / "manifest.txt").write_text("core/\n")
    with pytest.raises(SetupError, match=r"does not reach revisions/0001_a\.sql"):
        read_manifest(tmp_path)


def test_sql_functions_follow_the_conventions(conn: psycopg.Connection) -> None:
    rows = conn.execute(
        """
        select p.proname, p.provolatile, coalesce(array_to_string(p.proconfig, ','), ''),
               obj_description(p.oid, 'pg_proc'), p.prokind
        from pg_proc p where p.pronamespace = 'memex'::regnamespace
        """
    ).fetchall()
    assert len(rows) >= 15
    # Inlined per-row helpers may not carry SET (it blocks inlining); they qualify names.
    inlined = {
        "_recency",
        "_score",
        "_bm25",
        "_held_bm25",
        "_tenant_key",
        "_live_memories",
        "_filtered_memories",
        "_search_filters",
        "_memory_record",
        "_ann_bounded",
        "_ann_nearest",
        "_valid_importance",
        # the caller, evaluated by the policies and the writes of every statement
        # (memex._caller_agent and _caller_users are not: PL/pgSQL, session 9)
        "_caller",
        "_caller_all",
        "_caller_writes",
        "_actor",
        "_on_behalf_of",
    }
    # Procedures that commit may not carry SET either (PostgreSQL refuses the commit); they
    # qualify names, and are no security definers.
    committing = {"consolidate_due_tick"}
    for name, volatility, config, comment, kind in rows:
        assert comment, f"memex.{name} has no comment"
        assert volatility in ("i", "s", "v")
        if kind == "p":
            assert name in committing and config == "", name
        elif name not in inlined:
            assert "search_path=pg_catalog" in config, f"memex.{name} has no explicit search_path"


def test_one_function_per_file() -> None:
    files = sql_files(ROOT / "sql")
    assert files[-2:] == [
        ROOT / "sql" / "security" / "990_row_level_security.sql",
        ROOT / "sql" / "security" / "999_grants.sql",
    ]
    for path in files:
        text = path.read_text()
        assert text.startswith("--"), f"{path.name} needs a header comment"
        # security/ holds the access rules (policies, grants), applied after every function
        functions = 0 if path.parent.name == "security" else 1
        created = text.count("create or replace function")
        created += text.count("create or replace procedure")
        assert created == functions, path.name
        # the re-applied layer only creates: old signatures are dropped by revisions (0015)
        assert "drop function" not in text, path.name
    assert len(function_privileges(files)) == len(files) - 2


def test_pgvector_requirements_are_explained() -> None:
    assert "not installed" in (pgvector_problem(None) or "")
    assert "needs pgvector >= 0.7" in (pgvector_problem("0.6.2") or "")
    assert pgvector_problem("0.7.0") is None
    assert pgvector_problem("0.8.1") is None


def test_this_server_meets_them(conn: psycopg.Connection) -> None:
    row = conn.execute(
        "select default_version from pg_available_extensions where name = 'vector'"
    ).fetchone()
    assert row is not None and pgvector_problem(row[0]) is None


def test_upgrade_keeps_each_importance_as_it_was_sent(pg_server: EmbeddedPostgres) -> None:
    # 0020: importance real -> double precision through the real's shortest text, so a
    # stored 1.2 (a real's 1.2000000476837158) becomes the double 1.2 the client sent
    dsn = _empty_database(pg_server)
    sent = [1.2, 0.1, 0.3333, 2.0, 0.0, 1e-6]
    try:
        _at_revision(
            dsn,
            "0017",
            (
                "insert into memex.memories (agent_id, user_id, content, embedding,"
                " embedding_model, importance) select 'a', 'u', 'm' || i,"
                " array_fill(0.1, array[384])::vector, 'x', v"
                " from unnest(cast(:sent as real[])) with ordinality t(v, i)",
                {"sent": sent},
            ),
        )
        assert migrate(dsn) == head_revision()
        with psycopg.connect(dsn) as conn:
            stored = conn.execute(
                "select importance from memex.memories order by created_at, content"
            ).fetchall()
            assert sorted(v for (v,) in stored) == sorted(sent)
            kind = conn.execute(
                "select format_type(atttypid, atttypmod) from pg_attribute"
                " where attrelid = 'memex.memories'::regclass and attname = 'importance'"
            ).fetchone()
            assert kind == ("double precision",)
    finally:
        drop_database(pg_server, dsn)


def test_upgrade_totals_each_tenants_length(pg_server: EmbeddedPostgres) -> None:
    # 0023: memex.tenants.length_sum backfilled from the stored memories' tsv_length (the
    # tenants rows exist, as the count triggers of earlier revisions' SQL made them)
    dsn = _empty_database(pg_server)
    try:
        _at_revision(
            dsn,
            "0022",
            (
                "insert into memex.memories (agent_id, user_id, content, embedding,"
                " embedding_model) select a, 'u', c, array_fill(0.1, array[384])::vector, 'x'"
                " from (values ('a', 'one lighthouse'), ('a', 'two lighthouses by the sea'),"
                "              ('b', 'a keeper of three lighthouses and a boat')) v(a, c)",
                {},
            ),
            (
                "insert into memex.tenants (agent_id, user_id, memory_count)"
                " select agent_id, user_id, count(*) from memex.memories group by 1, 2",
                {},
            ),
        )
        assert migrate(dsn) == head_revision()
        with psycopg.connect(dsn) as conn:
            totals = conn.execute(
                "select t.agent_id, t.length_sum, (select sum(m.tsv_length) from memex.memories m"
                " where m.agent_id = t.agent_id and m.user_id = t.user_id)"
                " from memex.tenants t order by 1"
            ).fetchall()
            assert [(a, stored) for a, stored, _ in totals] == [("a", 5), ("b", 4)]
            assert all(stored == actual for _, stored, actual in totals)
    finally:
        drop_database(pg_server, dsn)


def test_upgrade_numbers_history_per_user_in_its_old_order(pg_server: EmbeddedPostgres) -> None:
    # 0029: access-log entries and file revisions numbered per (agent, user) in their old id
    # order, runs per agent (restored_by follows); the counters continue from there
    dsn = _empty_database(pg_server)
    try:
        _at_revision(
            dsn,
            "0028",
            (  # interleaved: global ids 1..6 over (a, u), (a, v), (b, u)
                "insert into memex.access_log (agent_id, user_id, actor, operation, target)"
                " select a, u, 'x', 'read', t from (values ('a', 'u', 't1'), ('a', 'v', 't2'),"
                " ('b', 'u', 't3'), ('a', 'u', 't4'), ('a', 'v', 't5'), ('a', 'u', 't6'))"
                " v(a, u, t)",
                {},
            ),
            (
                "insert into memex.file_revisions (agent_id, user_id, path, revision,"
                " operation, actor) values ('a', 'v', 'p', 1, 'write', 'x'),"
                " ('a', 'u', 'p', 1, 'write', 'x'), ('a', 'u', 'p', 2, 'write', 'x')",
                {},
            ),
            (
                "insert into memex.consolidation_runs (agent_id, user_id, kind, status, actor)"
                " values ('b', 'u', 'condense', 'done', 'x'), ('a', 'u', 'condense', 'done', 'x'),"
                " ('a', 'v', 'condense', 'done', 'x')",
                {},
            ),
        )
        assert migrate(dsn) == head_revision()
        with psycopg.connect(dsn) as conn:
            assert conn.execute(
                "select agent_id, user_id, target, id from memex.access_log order by 1, 2, 4"
            ).fetchall() == [
                ("a", "u", "t1", 1),
                ("a", "u", "t4", 2),
                ("a", "u", "t6", 3),
                ("a", "v", "t2", 1),
                ("a", "v", "t5", 2),
                ("b", "u", "t3", 1),
            ]
            assert conn.execute(
                "select agent_id, user_id, revision, id from memex.file_revisions order by 1, 2, 3"
            ).fetchall() == [("a", "u", 1, 1), ("a", "u", 2, 2), ("a", "v", 1, 1)]
            assert conn.execute(
                "select agent_id, user_id, id from memex.consolidation_runs order by 1, 3"
            ).fetchall() == [("a", "u", 1), ("a", "v", 2), ("b", "u", 1)]
            conn.execute("select memex._log_access('a', 'v', 'read', 'next')")
            assert conn.execute(
                "select id from memex.access_log where target = 'next'"
            ).fetchone() == (3,)
    finally:
        drop_database(pg_server, dsn)
