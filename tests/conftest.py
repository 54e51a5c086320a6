"""Shared fixtures: one embedded PostgreSQL (real server, real pgvector) per test session,
a migrated template database, a fresh database per test (both made and dropped by
pytest-postgresql's DatabaseJanitor), and the real embedding model."""

from __future__ import annotations

import shutil
import tempfile
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg.conninfo import conninfo_to_dict, make_conninfo
from pytest_postgresql.janitor import DatabaseJanitor

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


def janitor(server: EmbeddedPostgres, name: str, **options: Any) -> DatabaseJanitor:
    """pytest-postgresql's janitor for database `name` on our embedded server (its own
    `postgresql_proc` refuses to run postgres as root, so the session's server is ours)."""
    params = conninfo_to_dict(server.dsn)
    return DatabaseJanitor(
        user=str(params["user"]),
        host=str(params["host"]),
        port=str(params["port"]),
        password=None,  # the embedded server trusts its own unix socket
        dbname=name,
        maintenance_dbname=str(params["dbname"]),
        connection_timeout=30,
        **options,
    )


@pytest.fixture(scope="session")
def template_db(pg_server: EmbeddedPostgres) -> Iterator[str]:
    """The database every test database is cloned from, migrated once per session."""
    with janitor(pg_server, TEMPLATE, as_template=True):
        migrate(db_dsn(pg_server, TEMPLATE))
        yield TEMPLATE


def new_database(server: EmbeddedPostgres) -> str:
    """A fresh, migrated database cloned from the template; returns its DSN."""
    name = f"t_{uuid.uuid4().hex[:12]}"
    janitor(server, name, template_dbname=TEMPLATE).init()
    return db_dsn(server, name)


def drop_database(server: EmbeddedPostgres, dsn: str) -> None:
    """Drop the database of `dsn` (if it exists), ending any session still using it."""
    janitor(server, str(conninfo_to_dict(dsn)["dbname"])).drop()


@pytest.fixture
def dsn(pg_server: EmbeddedPostgres, template_db: str) -> Iterator[str]:
    """DSN of a fresh migrated database for this test only."""
    name = f"t_{uuid.uuid4().hex[:12]}"
    with janitor(pg_server, name, template_dbname=template_db):
        yield db_dsn(pg_server, name)


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
