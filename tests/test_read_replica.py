"""Searches on a read replica (docs/scaling.md, "Read replicas"), for real: the embedded
PostgreSQL 18 as the primary, a hot standby of it made with pg_basebackup and streaming
replication, the memex schema migrated on the primary only. Which calls a replica answers
and which it refuses (they write: the access log, the rate-limit counters, the data) is
checked here, not assumed.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import psycopg
import pytest
from pgvector.psycopg import register_vector
from psycopg.rows import dict_row

from memexdb import migrate
from memexdb.embedded import EmbeddedPostgres
from memexdb.embedded.accounts import ROOT_BASE, service_account
from memexdb.embedded.binaries import bundled_pginstall, pginstall_for
from memexdb.embedded.server import BUNDLE_VERSION
from tests.conftest import scratch_dir
from tests.live_service import kill_postgres, run_as_postgres_user, wait_until
from tests.sqlapi import search, store, unit

REPLAY_WAIT = 30.0
LIMIT = "rate_limit_search_per_minute"


@dataclass
class Pair:
    primary: str  # DSNs of the memex database
    replica: str


@pytest.fixture(scope="module")
def pair() -> Iterator[Pair]:
    with standby_pair() as made:
        yield made


@contextlib.contextmanager
def standby_pair() -> Iterator[Pair]:
    """A migrated embedded primary and a streaming hot standby of it (bench/ uses it too)."""
    root = scratch_dir("memexdb-replica-")
    acct = service_account()
    primary = EmbeddedPostgres(root / "primary")
    standby = root / "standby"
    standby.mkdir()
    if acct.switch:
        os.chown(standby, acct.uid, acct.gid)
    bindir = pginstall_for(acct, bundled_pginstall(), ROOT_BASE / f"pginstall-{BUNDLE_VERSION}")
    bindir = bindir / "bin"
    pgdata = standby / "pgdata"
    started = False
    try:
        primary.start()
        migrate(primary.dsn)
        # -R: standby.signal and primary_conninfo; -X stream: the WAL of the copy too
        run_as_postgres_user([bindir / "pg_basebackup", "-h", primary.socket_dir, "-U", "postgres",
              "-D", pgdata, "-R", "-X", "stream", "-c", "fast"], standby)  # fmt: skip
        with (pgdata / "postgresql.auto.conf").open("a") as conf:
            # its own socket (the copied memexdb.conf names the primary's); read after it
            conf.write(f"unix_socket_directories = '{standby}'\nhot_standby = on\n")
        run_as_postgres_user([bindir / "pg_ctl", "start", "-D", pgdata, "-l", standby / "log", "-w",
              "-t", "60"], standby)  # fmt: skip
        started = True
        replica = primary.dsn.replace(str(primary.socket_dir), str(standby))
        with psycopg.connect(replica) as conn:
            assert conn.execute("select pg_is_in_recovery()").fetchone() == (True,)
        yield Pair(primary.dsn, replica)
    finally:
        if started:
            try:
                run_as_postgres_user(
                    [bindir / "pg_ctl", "stop", "-D", pgdata, "-m", "fast", "-w"], standby
                )
            except (AssertionError, subprocess.TimeoutExpired):
                kill_postgres(pgdata)
        primary.stop()
        shutil.rmtree(root, ignore_errors=True)


def replayed(pair: Pair) -> None:
    """Wait (bounded) until the replica has replayed everything the primary wrote."""
    with psycopg.connect(pair.primary, autocommit=True) as conn:
        row = conn.execute("select pg_current_wal_lsn()::text").fetchone()
    assert row is not None
    target = row[0]

    def caught_up() -> bool:
        with psycopg.connect(pair.replica, autocommit=True) as conn:
            done = conn.execute(
                "select pg_last_wal_replay_lsn() >= %s::pg_lsn", (target,)
            ).fetchone()
        return bool(done and done[0])

    assert wait_until(caught_up, REPLAY_WAIT), f"the replica did not replay up to {target}"


def _call(dsn: str, sql: str, params: tuple[Any, ...] = ()) -> list[dict[str, Any]]:
    with psycopg.connect(dsn, autocommit=True) as conn:
        cur = conn.cursor(row_factory=dict_row).execute(sql, params)
        return cur.fetchall() if cur.description else []


def _refused(dsn: str, sql: str, params: tuple[Any, ...] = ()) -> str:
    """The SQLSTATE of a call the replica refuses."""
    with pytest.raises(psycopg.Error) as caught:
        _call(dsn, sql, params)
    return str(caught.value.sqlstate)


def test_the_replica_answers_searches_and_reads_like_the_primary(pair: Pair) -> None:
    with psycopg.connect(pair.primary, autocommit=True) as conn:
        for i in range(5):
            store(conn, f"memory {i}", unit((i, 1.0)), agent="rep", user="u")
    replayed(pair)
    query = unit((2, 1.0))
    with (
        psycopg.connect(pair.primary, autocommit=True) as primary,
        psycopg.connect(pair.replica, autocommit=True) as replica,
    ):
        now = datetime.now(UTC)  # the same "now": the same recency, the same scores
        on_primary = [
            (r["id"], r["score"]) for r in search(primary, query, agent="rep", user="u", now=now)
        ]
        on_replica = [
            (r["id"], r["score"]) for r in search(replica, query, agent="rep", user="u", now=now)
        ]
        assert on_replica == on_primary and len(on_primary) == 5
        text = search(replica, None, agent="rep", user="u", mode="text", query_text="memory")
        assert len(text) == 5
    reads = {
        "count": "select memex.count('rep', 'u')",
        "list_memories": "select * from memex.list_memories('rep', 'u')",
        "export_memories": "select * from memex.export_memories('rep', 'u')",
        "get_memory": "select * from memex.get_memory('rep', 'u', (select id from"
        " memex.memories where agent_id = 'rep' limit 1))",
        "access_events": "select * from memex.access_events('rep', 'u')",
        "consolidation_history": "select * from memex.consolidation_history('rep', 'u')",
        "dream_users": "select * from memex.dream_users('rep')",
        "embed_queue_depth": "select * from memex.embed_queue_depth()",
    }
    for name, sql in reads.items():
        assert _call(pair.replica, sql) == _call(pair.primary, sql), name


def test_the_replica_refuses_what_writes(pair: Pair) -> None:
    """25006 read_only_sql_transaction: writes, and the reads that log themselves."""
    v = unit((0, 1.0))
    with psycopg.connect(pair.primary, autocommit=True) as conn:
        store(conn, "a file's neighbour", v, agent="rep2", user="u")
        register_vector(conn)
        conn.execute(
            "select * from memex.write_file(p_agent_id => 'rep2', p_user_id => 'u',"
            " p_path => 'user/notes.md', p_content => 'hello', p_embedding => %s,"
            " p_embedding_model => 'test-model')",
            (v,),
        )
    replayed(pair)
    with psycopg.connect(pair.replica, autocommit=True) as conn, pytest.raises(psycopg.Error) as e:
        store(conn, "no", v, agent="rep2", user="u")
    assert e.value.sqlstate == "25006"
    for sql in (
        "select * from memex.read_file('rep2', 'u', 'user/notes.md')",  # the access log
        "select * from memex.list_files('rep2', 'u')",
        "select * from memex.list_revisions('rep2', 'u', 'user/notes.md')",
        "select * from memex.maintenance()",
    ):
        assert _refused(pair.replica, sql) == "25006", sql
    # a search under a rate limit counts the hit: the primary only
    _call(pair.primary, "insert into memex.settings (name, value)"
          " values ('rate_limit_search_per_minute', '1000')"
          " on conflict (name) do update set value = excluded.value")  # fmt: skip
    try:
        replayed(pair)
        sql = "select * from memex.search('rep2', 'u', null, p_query_text => 'x', p_mode => 'text')"
        assert _refused(pair.replica, sql) == "25006"
    finally:
        _call(
            pair.primary, "delete from memex.settings where name = 'rate_limit_search_per_minute'"
        )
        replayed(pair)


def test_an_api_key_searches_on_the_replica(pair: Pair) -> None:
    """The service's way: as memex_app, enter the caller from an API key, then search. A
    key's first use (or its first in a minute) records last_used_at, which only the primary
    can: on a replica memex._enter leaves that to the primary's next use."""
    (key,) = _call(pair.primary, "select * from memex.create_key('read', 'rep3')")
    with psycopg.connect(pair.primary, autocommit=True) as conn:
        store(conn, "keyed", unit((1, 1.0)), agent="rep3", user="u")
    replayed(pair)

    def keyed_search(dsn: str) -> list[Any]:
        with psycopg.connect(dsn) as conn:
            conn.execute("set local role memex_app")
            conn.execute("select memex._enter(p_token => %s, p_require_key => true)",
                         (key["token"],))  # fmt: skip
            rows = conn.execute(
                "select id from memex.search('rep3', 'u', null, p_query_text => 'keyed',"
                " p_mode => 'text')"
            ).fetchall()
            return rows  # committed: a read-only transaction on the replica

    assert len(keyed_search(pair.replica)) == 1
    assert _call(pair.replica, "select last_used_at from memex.api_keys where id = %s",
                 (key["id"],)) == [{"last_used_at": None}]  # fmt: skip
    # on the primary the same call records it, as before
    assert len(keyed_search(pair.primary)) == 1
    used = _call(pair.primary, "select last_used_at from memex.api_keys where id = %s",
                 (key["id"],))  # fmt: skip
    assert used[0]["last_used_at"] is not None
