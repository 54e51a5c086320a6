"""One migration source for Python and Node (issue 38): the TypeScript package's migrate()
runs sql/manifest.txt (the frozen revisions, then the SQL layer) from the copy of sql/ it
ships, and a database it migrates is the database `memexdb migrate` makes.

clients/typescript/test/migrate.test.mjs (`node --test`, against the suite's PostgreSQL)
migrates an empty database, one Python brought to an older revision (with rows), one
Python migrated (a no-op), an empty one four times at once, and meets a held lock; this
module prepares those databases and then compares each one's catalog with that of a
database Python migrated (tests/catalog.py, as tests/test_catalog.py compares fresh and
upgraded ones), and checks that Python's migrate finds Node's SQL layer in place."""

from __future__ import annotations

import contextlib
import re
import shutil
import tarfile
import threading
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from memexdb import migrate
from memexdb.embedded import EmbeddedPostgres
from memexdb.migrations import head_revision, read_manifest
from tests.catalog import catalog
from tests.conftest import db_dsn, drop_database, janitor
from tests.live_service import REPO, required
from tests.sqlapi import bound_login_role
from tests.test_migrations import _at_revision
from tests.test_typescript_client import PACKAGE, libpq_url, npm_env, run

pytestmark = pytest.mark.e2e

OLD_REVISION = "0020"


@pytest.fixture(scope="module")
def built() -> Path:
    """`npm ci` and `npm run build` (which copies sql/ into the package)."""
    npm = required(shutil.which("npm"), "npm is not installed")
    required(shutil.which("node"), "node is not installed")
    run([npm, "ci", "--no-audit", "--no-fund", "--loglevel=error"], PACKAGE)
    run([npm, "run", "build"], PACKAGE)
    return PACKAGE / "dist"


def _empty_database(server: EmbeddedPostgres, name: str) -> str:
    name = f"{name}_{threading.get_ident() % 10**6}"
    janitor(server, name).drop()
    janitor(server, name).init()
    return db_dsn(server, name)


def _layer_state(dsn: str) -> tuple[str, str, object]:
    with psycopg.connect(dsn) as conn:
        row = conn.execute(
            "select (select version_num from memex.alembic_version), files_sha256, applied_at"
            " from memex.sql_layer_state"
        ).fetchone()
    assert row is not None
    return row


@contextlib.contextmanager
def _databases(server: EmbeddedPostgres, *names: str) -> Iterator[list[str]]:
    made = [_empty_database(server, name) for name in names]
    try:
        yield made
    finally:
        for dsn in made:
            drop_database(server, dsn)


def _differences(expected: dict[str, list[str]], found: dict[str, list[str]]) -> list[str]:
    lines = []
    for part in expected:
        lines += [f"{part}: only Python's: {r}" for r in expected[part] if r not in found[part]]
        lines += [f"{part}: only Node's: {r}" for r in found[part] if r not in expected[part]]
    return lines


def test_node_migrates_as_python_does(built: Path, pg_server: EmbeddedPostgres) -> None:
    names = ("nm_python", "nm_empty", "nm_old", "nm_concurrent", "nm_reference")
    with _databases(pg_server, *names) as (python, empty, old, concurrent, reference):
        head = head_revision()
        assert migrate(python) == head
        assert migrate(reference) == head
        _at_revision(
            old,
            OLD_REVISION,
            (
                "insert into memex.memories (agent_id, user_id, content, embedding,"
                " embedding_model, importance) select 'a', 'u', 'm' || i,"
                " array_fill(0.1, array[384])::vector, 'x', i / 4.0"
                " from generate_series(1, 5) i",
                {},
            ),
            (
                "insert into memex.tenants (agent_id, user_id, memory_count) values ('a', 'u', 5)",
                {},
            ),
        )
        python_layer = _layer_state(python)
        with bound_login_role(python, "node-migrate", ["alice"]) as tenant:
            env = npm_env(
                MEMEX_HEAD=head,
                MEMEX_MIGRATE_EMPTY_URL=libpq_url(empty),
                MEMEX_MIGRATE_OLD_URL=libpq_url(old),
                MEMEX_MIGRATE_OLD_REVISION=OLD_REVISION,
                MEMEX_MIGRATE_PYTHON_URL=libpq_url(python),
                MEMEX_MIGRATE_CONCURRENT_URL=libpq_url(concurrent),
                MEMEX_MIGRATE_TENANT_URL=libpq_url(tenant),
            )
            node = required(shutil.which("node"), "node is not installed")
            output = run([node, "--test", "test/migrate.test.mjs"], PACKAGE, env)
        assert re.search(r"^# pass 7$", output, flags=re.M), output[-8000:]
        assert re.search(r"^# fail 0$", output, flags=re.M), output[-8000:]
        assert re.search(r"^# skipped 0$", output, flags=re.M), output[-8000:]

        # the catalogs of what Node migrated are those of what Python migrated
        with psycopg.connect(reference) as conn:
            expected = catalog(conn)
        assert len(expected["functions"]) > 100 and expected["policies"]
        for dsn in (empty, old, concurrent, python):
            with psycopg.connect(dsn) as conn:
                found = catalog(conn)
            differences = _differences(expected, found)
            assert differences == [], "\n".join(differences)

        # each runner finds the other's SQL layer in place: the same digest of the files,
        # the same catalog fingerprint, so nothing is applied again
        node_layer = _layer_state(empty)
        assert node_layer[:2] == python_layer[:2] == (head, _layer_state(reference)[1])
        assert migrate(empty) == head
        assert _layer_state(empty) == node_layer


def test_the_packed_package_carries_the_repositorys_sql(built: Path, tmp_path: Path) -> None:
    """npm pack's tarball holds sql/ as the repository has it: every file of the manifest
    (the revisions and the SQL layer) and the manifest, byte for byte, and nothing else."""
    npm = required(shutil.which("npm"), "npm is not installed")
    run([npm, "pack", "--pack-destination", str(tmp_path), "--loglevel=error"], PACKAGE)
    (tarball,) = tmp_path.glob("memexdb-client-*.tgz")
    root = REPO / "sql"
    expected = {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file()}
    with tarfile.open(tarball) as tar:
        packed = {
            m.name.removeprefix("package/sql/"): tar.extractfile(m).read()  # type: ignore[union-attr]
            for m in tar.getmembers()
            if m.isfile() and m.name.startswith("package/sql/")
        }
    assert sorted(packed) == sorted(expected)
    stale = sorted(name for name in expected if packed[name] != expected[name])
    assert stale == [], f"the package's sql/ differs from the repository's: {stale}"
    manifest = read_manifest(root)
    assert "manifest.txt" in packed and len(manifest.revisions) >= 34
    assert {f"revisions/{p.name}" for _, p in manifest.revisions} <= set(packed)


NODE_MIGRATE = """
import { migrate } from "./dist/direct/index.js";
console.log("node migrated to", await migrate(process.env.MEMEX_MIGRATE_URL));
"""


def test_node_and_python_migrating_at_once(built: Path, pg_server: EmbeddedPostgres) -> None:
    """Node's and Python's migrations of one empty database, started together, wait for
    each other on the same lock: both end at head, one of them made it, the catalog is the
    one Python alone makes."""
    with _databases(pg_server, "nm_mixed", "nm_mixed_reference") as (mixed, reference):
        head = head_revision()
        assert migrate(reference) == head
        node = required(shutil.which("node"), "node is not installed")
        env = npm_env(MEMEX_MIGRATE_URL=libpq_url(mixed))
        results: list[str] = []
        start = threading.Barrier(2)

        def python_migrate() -> None:
            start.wait(timeout=30)
            results.append(migrate(mixed))

        thread = threading.Thread(target=python_migrate)
        thread.start()
        start.wait(timeout=30)
        output = run([node, "--input-type=module", "-e", NODE_MIGRATE], PACKAGE, env)
        thread.join(timeout=120)
        assert results == [head]
        assert output.strip() == f"node migrated to {head}"
        with psycopg.connect(mixed) as conn:
            assert conn.execute("select count(*) from memex.alembic_version").fetchone() == (1,)
            found = catalog(conn)
        with psycopg.connect(reference) as conn:
            expected = catalog(conn)
        differences = _differences(expected, found)
        assert differences == [], "\n".join(differences)
