"""The service's reads on a read replica (MEMEX_READ_DATABASE_URLS, memexdb.replicas), on
a real streaming standby of the embedded server (tests/test_read_replica.py's `pair`):
the same answers as the primary, read-your-writes, rate limits and last_used_at kept on
the primary, and a replica killed under load without a failed request.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from collections.abc import AsyncIterator
from pathlib import Path
from time import monotonic

import httpx
import psycopg
import pytest

from memexdb.client import AsyncMemex
from memexdb.config import Settings
from memexdb.embedding import BatchingEmbedder
from memexdb.replicas import Replica
from memexdb.rest import create_app
from memexdb.runtime import Runtime
from tests.test_read_replica import Pair, pair, replayed  # noqa: F401 (the fixture)

A, U = "route", "u"


@pytest.fixture
async def routed(pair: Pair, batching_embedder: BatchingEmbedder) -> AsyncIterator[AsyncMemex]:  # noqa: F811
    client = await AsyncMemex.connect(
        pair.primary, embedder=batching_embedder, replicas=[pair.replica], replica_max_lag=60.0
    )
    yield client
    await client.aclose()


def the_replica(client: AsyncMemex) -> Replica:
    assert client.router is not None
    return client.router.replicas[0]


async def served_by_replica(client: AsyncMemex, read: object) -> None:
    """Repeat `read` (bounded) until the replica answers it."""
    replica = the_replica(client)
    deadline = monotonic() + 10
    while monotonic() < deadline:
        before = replica.served
        await read()  # type: ignore[operator]
        if replica.served > before:
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"the replica answered no read: {client.router and client.router.stats()}")


async def test_reads_on_the_replica_answer_as_the_primary(
    routed: AsyncMemex,
    pair: Pair,  # noqa: F811
    batching_embedder: BatchingEmbedder,
) -> None:
    for i in range(5):
        await routed.store(A, U, f"the replica keeps fact number {i}")
    await served_by_replica(routed, lambda: routed.count(A, U))
    assert the_replica(routed).up
    primary = await AsyncMemex.connect(pair.primary, embedder=batching_embedder)
    try:
        for name, read in {
            "count": lambda m: m.count(A, U),
            "search": lambda m: m.search(A, U, "fact number 3"),
            "list": lambda m: m.list_memories(A, U),
        }.items():
            served = the_replica(routed).served
            on_replica, on_primary = await read(routed), await read(primary)
            assert the_replica(routed).served == served + 1, name
            if name == "search":  # scores move with the clock: the same hits, in order
                on_replica = [h.id for h in on_replica]
                on_primary = [h.id for h in on_primary]
            assert on_replica == on_primary, name
        hits = await primary.search(A, U, "fact number 3")
        got = await routed.get(A, U, hits[0].id)
        assert got == await primary.get(A, U, hits[0].id)
    finally:
        await primary.aclose()


async def test_the_service_routes_rest_reads_by_its_settings(pair: Pair) -> None:  # noqa: F811
    """MEMEX_READ_DATABASE_URLS, as `memexdb serve` reads it: the REST reads go to the
    replica, the writes to the primary, and a read after a write sees it."""
    settings = Settings(
        database_url=pair.primary,
        read_database_urls=f" {pair.replica} ,",
        replica_max_lag_seconds=60,
        maintenance_interval_seconds=0,
        embed_poll_seconds=0,
        condense_enabled=False,
    )
    opened: list[Runtime] = []

    @contextlib.asynccontextmanager
    async def connect() -> AsyncIterator[AsyncMemex]:
        async with Runtime.open(settings, pair.primary, jobs=[]) as runtime:
            opened.append(runtime)
            yield runtime.memex

    app = create_app(connect)
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://x") as http,
    ):
        replica = the_replica(opened[0].memex)
        tenant = {"agent_id": A, "user_id": "rest"}
        r = await http.post("/v1/memories", json={**tenant, "content": "served by REST"})
        assert r.status_code == 201, r.text
        memory_id = r.json()["id"]
        # read-your-writes at once, then (once replayed) from the replica
        assert (await http.get("/v1/memories/count", params=tenant)).json()["count"] == 1
        served = replica.served
        for _ in range(100):
            if replica.served > served:
                break
            r = await http.get("/v1/memories/count", params=tenant)
            assert r.json()["count"] == 1
            await asyncio.sleep(0.05)
        served = replica.served
        assert served > 0
        r = await http.post("/v1/memories/search", json={**tenant, "query": "REST"})
        assert [h["id"] for h in r.json()["results"]] == [memory_id], r.text
        r = await http.get(f"/v1/memories/{memory_id}", params=tenant)
        assert r.json()["content"] == "served by REST"
        r = await http.get("/v1/memories", params=tenant)
        assert [m["id"] for m in r.json()["memories"]] == [memory_id]
        assert replica.served == served + 3


async def test_a_caller_reads_its_own_writes(routed: AsyncMemex, pair: Pair) -> None:  # noqa: F811
    """With replay paused the replica misses every later write: the writer's reads go to
    the primary and see its write, while another caller's reads still go to the replica
    (within the lag bound) and do not see it."""
    await routed.store(A, "ryw", "written before the pause")
    await served_by_replica(routed, lambda: routed.count(A, "ryw"))
    with psycopg.connect(pair.replica, autocommit=True) as conn:
        conn.execute("select pg_wal_replay_pause()")
    try:
        await routed.store(A, "ryw", "written while the replica stands still")
        for _ in range(5):  # later reads too, after several polls of the monitor
            assert await routed.count(A, "ryw") == 2
            hits = await routed.search(A, "ryw", "stands still")
            assert "stands still" in hits[0].content
            await asyncio.sleep(0.1)
        # a write in a caller's transaction too (another caller, whose reads went to the
        # primary only because it had not been there yet)
        writer = routed.as_operator("tx-writer")
        assert await writer.count(A, "ryw") == 2
        async with writer.transaction() as tx:
            await tx.store(A, "ryw", "written in a transaction")
        assert await writer.count(A, "ryw") == 3
        other = routed.as_operator("another-caller")
        await served_by_replica(other, lambda: other.count(A, "ryw"))
        assert await other.count(A, "ryw") == 1  # the replica's answer: behind
    finally:
        with psycopg.connect(pair.replica, autocommit=True) as conn:
            conn.execute("select pg_wal_replay_resume()")
        replayed(pair)


async def test_a_replica_past_the_lag_bound_is_skipped(
    pair: Pair,  # noqa: F811
    batching_embedder: BatchingEmbedder,
) -> None:
    client = await AsyncMemex.connect(
        pair.primary, embedder=batching_embedder, replicas=[pair.replica], replica_max_lag=0.5
    )
    try:
        await client.store(A, "lag", "before the pause")
        await served_by_replica(client, lambda: client.count(A, "lag"))
        with psycopg.connect(pair.replica, autocommit=True) as conn:
            conn.execute("select pg_wal_replay_pause()")
        try:
            other = client.as_operator("lag-reader")
            await client.store(A, "lag", "after the pause")  # the primary moves on
            await asyncio.sleep(1.0)
            served = the_replica(client).served
            for _ in range(5):
                assert await other.count(A, "lag") == 2  # the primary's answer
            assert the_replica(client).served == served
        finally:
            with psycopg.connect(pair.replica, autocommit=True) as conn:
                conn.execute("select pg_wal_replay_resume()")
            replayed(pair)
    finally:
        await client.aclose()


async def test_rate_limits_and_last_used_at_stay_on_the_primary(
    routed: AsyncMemex,
    pair: Pair,  # noqa: F811
) -> None:
    with psycopg.connect(pair.primary, autocommit=True) as conn:
        row = conn.execute("select token, id from memex.create_key('write', %s)", (A,)).fetchone()
    assert row is not None
    token, key_id = row
    keyed = routed.with_key(token)
    try:
        await routed.as_operator("setup").store(A, "rl", "a keyed memory")
        replayed(pair)
        # a key that only reads: its first read goes to the primary, which records its use
        assert await keyed.count(A, "rl") == 1
        with psycopg.connect(pair.primary, autocommit=True) as conn:
            used = conn.execute(
                "select last_used_at from memex.api_keys where id = %s", (key_id,)
            ).fetchone()
            assert used is not None and used[0] is not None
        await served_by_replica(keyed, lambda: keyed.count(A, "rl"))
        with psycopg.connect(pair.primary, autocommit=True) as conn:
            conn.execute(
                "insert into memex.settings (name, value)"
                " values ('rate_limit_search_per_minute', '1000')"
                " on conflict (name) do update set value = excluded.value"
            )
        await asyncio.sleep(2.5)  # past LIMITS_TRUSTED_FOR_S
        replica = the_replica(routed)
        served, fell_back = replica.served, replica.fell_back
        for _ in range(3):
            assert len(await keyed.search(A, "rl", "keyed")) == 1
            assert len(await keyed.search(A, "rl", "keyed", mode="text")) == 1
        # limited searches count on the primary, without a try on the replica first
        assert (replica.served, replica.fell_back) == (served, fell_back)
        with psycopg.connect(pair.primary, autocommit=True) as conn:
            hits = conn.execute(
                "select coalesce(sum(cardinality(admitted_at)), 0) from memex.rate_limits"
            ).fetchone()
        assert hits is not None and hits[0] >= 6
    finally:
        with psycopg.connect(pair.primary, autocommit=True) as conn:
            conn.execute("delete from memex.settings where name = 'rate_limit_search_per_minute'")
            conn.execute("delete from memex.api_keys where id = %s", (key_id,))
        replayed(pair)


async def test_a_replica_killed_under_load_fails_no_request(
    routed: AsyncMemex,
    pair: Pair,  # noqa: F811
) -> None:
    """Last in this module: the standby stays down (the fixture's teardown copes)."""
    for i in range(20):
        await routed.store(A, "load", f"load memory {i}")
    await served_by_replica(routed, lambda: routed.count(A, "load"))
    with psycopg.connect(pair.replica, autocommit=True) as conn:
        row = conn.execute("show data_directory").fetchone()
    assert row is not None
    postmaster = int((Path(row[0]) / "postmaster.pid").read_text().split()[0])
    done: list[float] = []
    failures: list[BaseException] = []
    start = monotonic()

    async def reader(n: int) -> None:
        for i in range(60):
            try:
                if i % 3 == 0:
                    assert len(await routed.search(A, "load", f"load memory {i}")) == 10
                elif i % 3 == 1:
                    assert await routed.count(A, "load") == 20
                else:
                    assert len((await routed.list_memories(A, "load")).memories) == 20
                done.append(monotonic() - start)
            except BaseException as exc:  # every failure, counted
                failures.append(exc)

    async def killer() -> None:
        await asyncio.sleep(0.5)
        os.kill(postmaster, signal.SIGQUIT)  # immediate shutdown: connections die

    served_before = the_replica(routed).served
    await asyncio.gather(*(reader(n) for n in range(4)), killer())
    elapsed = monotonic() - start
    assert failures == [], failures[:3]
    assert len(done) == 240
    replica = the_replica(routed)
    assert replica.served > served_before  # it served part of the load...
    for _ in range(100):  # ...then was taken out (the monitor's probes fail)
        if not replica.up:
            break
        await asyncio.sleep(0.05)
    assert not replica.up
    print(f"240 reads in {elapsed:.2f} s, {replica.served - served_before} on the replica,"
          f" {replica.fell_back} fell back")  # fmt: skip
