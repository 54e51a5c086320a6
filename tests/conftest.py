"""Shared fixtures: one embedded PostgreSQL (real server, real pgvector) per test session,
a migrated template database, a fresh database per test, and the real embedding model."""

from __future__ import annotations

import shutil
import tempfile
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import psycopg
import pytest
from psycopg.conninfo import make_conninfo

from memexdb import AsyncMemex, Memex, migrate
from memexdb.embedded import EmbeddedPostgres
from memexdb.embedding import BatchingEmbedder, Embedder, build_embedder

TEMPLATE = "memex_template"


def scratch_dir(prefix: str) -> Path:
    # /var/tmp is world-traversable, so the embedded server's service user can use it
    # when tests run as root (pytest's tmp_path may sit under a 0700 folder).
    path = Path(tempfile.mkdtemp(prefix=prefix, dir="/var/tmp"))
    path.chmod(0o755)  # our own new folder; mkdtemp makes it 0700
    return path


@pytest.fixture(scope="session")
def pg_server() -> Iterator[EmbeddedPostgres]:
    root = scratch_dir("memexdb-test-")
    server = EmbeddedPostgres(root / "pg")
    server.start()
    try:
        yield server
    finally:
        server.stop()
        shutil.rmtree(root, ignore_errors=True)


def db_dsn(server: EmbeddedPostgres, name: str) -> str:
    return make_conninfo(server.dsn, dbname=name)


@pytest.fixture(scope="session")
def template_db(pg_server: EmbeddedPostgres) -> str:
    with psycopg.connect(pg_server.dsn, autocommit=True) as conn:
        conn.execute(f"create database {TEMPLATE}")
    migrate(db_dsn(pg_server, TEMPLATE))
    return TEMPLATE


def new_database(server: EmbeddedPostgres) -> str:
    """A fresh, migrated database cloned from the template; returns its DSN."""
    name = f"t_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(server.dsn, autocommit=True) as conn:
        conn.execute(f"create database {name} template {TEMPLATE}")
    return db_dsn(server, name)


def drop_database(server: EmbeddedPostgres, dsn: str) -> None:
    name = psycopg.conninfo.conninfo_to_dict(dsn)["dbname"]
    with psycopg.connect(server.dsn, autocommit=True) as conn:
        conn.execute(f"drop database if exists {name} with (force)")


@pytest.fixture
def dsn(pg_server: EmbeddedPostgres, template_db: str) -> Iterator[str]:
    """DSN of a fresh migrated database for this test only."""
    url = new_database(pg_server)
    yield url
    drop_database(pg_server, url)


@pytest.fixture
def conn(dsn: str) -> Iterator[psycopg.Connection]:
    """A plain autocommit connection, as any non-Python client of the SQL API has."""
    with psycopg.connect(dsn, autocommit=True) as connection:
        yield connection


@pytest.fixture(scope="session")
def embedder() -> Embedder:
    return build_embedder("minilm")


@pytest.fixture(scope="session")
def batching_embedder(embedder: Embedder) -> Iterator[BatchingEmbedder]:
    batching = BatchingEmbedder(embedder)
    yield batching
    batching.close()


@pytest.fixture
async def amemex(dsn: str, batching_embedder: BatchingEmbedder) -> AsyncIterator[AsyncMemex]:
    client = await AsyncMemex.connect(dsn, embedder=batching_embedder)
    yield client
    await client.aclose()


@pytest.fixture
def memex(dsn: str, embedder: Embedder) -> Iterator[Memex]:
    with Memex.connect(dsn, embedder=embedder) as client:
        yield client
