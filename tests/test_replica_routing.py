"""The service's reads on a read replica (MEMEX_READ_DATABASE_URLS, memexdb.replicas), on
a real streaming standby of the embedded server (tests/test_read_replica.py's `pair`):
the same answers as the primary, read-your-writes, rate limits and last_used_at kept on
the primary, and a replica killed under load without a failed request.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from time import monotonic
from typing import Any

import httpx
import psycopg
import pytest

from memexdb.client import AsyncMemex
from memexdb.config import Settings
from memexdb.embedding import BatchingEmbedder
from memexdb.replicas import Replica, WriteTable, parse_lsn
from memexdb.rest import create_app
from memexdb.runtime import Runtime
from tests.conftest import scratch_dir
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
    async with service(pair, read_database_urls=f" {pair.replica} ,") as (http, memex):
        replica = the_replica(memex)
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


@contextlib.asynccontextmanager
async def service(
    servers: Pair, **settings: Any
) -> AsyncIterator[tuple[httpx.AsyncClient, AsyncMemex]]:
    """One service process's REST app (as `memexdb serve` builds a worker's, with the
    replica in MEMEX_READ_DATABASE_URLS and a large lag bound), an HTTP client on it and
    its AsyncMemex."""
    configured = Settings(
        **{
            "database_url": servers.primary,
            "read_database_urls": servers.replica,
            "replica_max_lag_seconds": 60,
            "maintenance_interval_seconds": 0,
            "embed_poll_seconds": 0,
            "condense_enabled": False,
            **settings,
        }
    )
    opened: list[Runtime] = []

    @contextlib.asynccontextmanager
    async def connect() -> AsyncIterator[AsyncMemex]:
        async with Runtime.open(configured, servers.primary, jobs=[]) as runtime:
            opened.append(runtime)
            yield runtime.memex

    app = create_app(connect)
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://x") as http,
    ):
        yield http, opened[0].memex


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


@contextlib.contextmanager
def keys(servers: Pair, *names: str) -> Iterator[list[str]]:
    """Write keys of agent A, one per name (distinct callers), replayed on the standby."""
    with psycopg.connect(servers.primary, autocommit=True) as conn:
        rows = [
            conn.execute("select token, id from memex.create_key('write', %s)", (A,)).fetchone()
            for _ in names
        ]
    assert all(rows)
    replayed(servers)
    try:
        yield [row[0] for row in rows if row]
    finally:
        with psycopg.connect(servers.primary, autocommit=True) as conn:
            for row in rows:
                if row:
                    conn.execute("delete from memex.api_keys where id = %s", (row[1],))
        replayed(servers)


async def count_on_the_replica(
    http: httpx.AsyncClient, memex: AsyncMemex, tenant: dict[str, str], headers: dict[str, str]
) -> int:
    """GET /v1/memories/count until the replica answers it (bounded): its answer."""
    replica = the_replica(memex)
    for _ in range(200):
        served = replica.served
        r = await http.get("/v1/memories/count", params=tenant, headers=headers)
        assert r.status_code == 200, r.text
        if replica.served > served:
            return int(r.json()["count"])
        await asyncio.sleep(0.05)
    raise AssertionError(f"the replica answered no read: {memex.router and memex.router.stats()}")


@contextlib.contextmanager
def replay_paused(servers: Pair) -> Iterator[None]:
    with psycopg.connect(servers.replica, autocommit=True) as conn:
        conn.execute("select pg_wal_replay_pause()")
    try:
        yield
    finally:
        with psycopg.connect(servers.replica, autocommit=True) as conn:
            conn.execute("select pg_wal_replay_resume()")
        replayed(servers)


async def test_a_write_through_one_worker_is_read_through_another(pair: Pair) -> None:  # noqa: F811
    """Two workers of one service (`memexdb serve --workers 2` shares MEMEX_WRITES_TABLE
    between them): a write through worker A, then the same caller's reads through worker
    B, which did not see the write, go to the primary while the replica stands still;
    another caller's reads through B still go to the replica (the lag bound is large)."""
    table = WriteTable.create()
    try:
        with keys(pair, "writer", "other") as (writer, other):
            async with (
                service(pair, writes_table=table) as (a, _),
                service(pair, writes_table=table) as (b, memex_b),
            ):
                tenant = {"agent_id": A, "user_id": "workers"}
                r = await a.post(
                    "/v1/memories",
                    json={**tenant, "content": "before the pause"},
                    headers=bearer(writer),
                )
                assert r.status_code == 201, r.text
                # both callers' reads through B reach the replica first
                assert await count_on_the_replica(b, memex_b, tenant, bearer(writer)) == 1
                assert await count_on_the_replica(b, memex_b, tenant, bearer(other)) == 1
                replica = the_replica(memex_b)
                with replay_paused(pair):
                    r = await a.post(
                        "/v1/memories",
                        json={**tenant, "content": "written while the replica stands still"},
                        headers=bearer(writer),
                    )
                    assert r.status_code == 201, r.text
                    served = replica.served
                    for _ in range(5):  # after several polls of B's monitor too
                        r = await b.get("/v1/memories/count", params=tenant, headers=bearer(writer))
                        assert r.json()["count"] == 2, "worker B's read missed A's write"
                        await asyncio.sleep(0.1)
                    assert replica.served == served  # the primary answered them
                    assert replica.up
                    # another caller: still the replica (behind)
                    assert await count_on_the_replica(b, memex_b, tenant, bearer(other)) == 1
    finally:
        table.unlink(missing_ok=True)


async def test_a_session_token_carries_a_write_to_another_service(pair: Pair) -> None:  # noqa: F811
    """Two service processes that share nothing (several hosts): the answer to a write
    carries Memex-Write-LSN; a read sending it back as Memex-Min-LSN is answered by a
    replica that has replayed past it, else by the primary. Without it the other service
    answers from the replica standing still (what read-your-writes alone cannot see)."""
    with keys(pair, "writer") as (writer,):
        async with service(pair) as (a, _), service(pair) as (b, memex_b):
            tenant = {"agent_id": A, "user_id": "token"}
            r = await a.post(
                "/v1/memories",
                json={**tenant, "content": "before the pause"},
                headers=bearer(writer),
            )
            assert r.status_code == 201, r.text
            assert parse_lsn(r.headers["Memex-Write-LSN"]) is not None
            assert await count_on_the_replica(b, memex_b, tenant, bearer(writer)) == 1
            replica = the_replica(memex_b)
            with replay_paused(pair):
                r = await a.post(
                    "/v1/memories",
                    json={**tenant, "content": "written while the replica stands still"},
                    headers=bearer(writer),
                )
                token = r.headers["Memex-Write-LSN"]
                r = await a.get("/v1/memories/count", params=tenant, headers=bearer(writer))
                assert "Memex-Write-LSN" not in r.headers  # a read answers none
                # B knows nothing of the write: without the token, the replica answers
                assert await count_on_the_replica(b, memex_b, tenant, bearer(writer)) == 1
                with_token = {**bearer(writer), "Memex-Min-LSN": token}
                served = replica.served
                for _ in range(5):
                    r = await b.get("/v1/memories/count", params=tenant, headers=with_token)
                    assert r.json()["count"] == 2, "the read with the token missed the write"
                    r = await b.post(
                        "/v1/memories/search",
                        json={**tenant, "query": "stands still"},
                        headers=with_token,
                    )
                    assert "stands still" in r.json()["results"][0]["content"]
                    await asyncio.sleep(0.1)
                assert replica.served == served
                for bad in ("16/B374D848", "x1", "1" * 17, "0x10", "1 ; drop"):
                    r = await b.get(
                        "/v1/memories/count",
                        params=tenant,
                        headers={**bearer(writer), "Memex-Min-LSN": bad},
                    )
                    assert r.status_code == 422, (bad, r.text)
                    assert r.json()["error"]["fields"][0]["field"] == "Memex-Min-LSN"
            # replayed: the replica answers the token's reads again
            assert await count_on_the_replica(b, memex_b, tenant, with_token) == 2


class Alternating(httpx.AsyncBaseTransport):
    """A load balancer over two services: each request goes to the next one."""

    def __init__(self, *apps: httpx.AsyncClient) -> None:
        self.apps, self.sent = apps, 0
        self.seen: list[str | None] = []

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        app = self.apps[self.sent % len(self.apps)]
        self.sent += 1
        self.seen.append(request.headers.get("Memex-Min-LSN"))
        response = await app.send(
            app.build_request(
                request.method,
                request.url.path,
                params=request.url.params,
                headers=request.headers,
                content=request.content,
            )
        )
        return httpx.Response(
            response.status_code, headers=response.headers, content=response.content
        )


async def test_the_python_client_sends_its_token_back(pair: Pair) -> None:  # noqa: F811
    """memexdb_client over two services that share nothing, its requests alternating
    between them: a read through the service that did not take the write sees it."""
    from memexdb_client import AsyncMemexClient

    with keys(pair, "client") as (key,):
        async with service(pair) as (a, _), service(pair) as (b, memex_b):
            balancer = Alternating(a, b)
            client = AsyncMemexClient("http://x", key, transport=balancer)
            try:
                await client.store(A, "client", "before the pause")  # through A
                assert client.session_token is not None
                assert (
                    await count_on_the_replica(
                        b, memex_b, {"agent_id": A, "user_id": "client"}, bearer(key)
                    )
                    == 1
                )
                with replay_paused(pair):
                    balancer.sent = 0
                    await client.store(A, "client", "written while the replica stands still")
                    token = client.session_token
                    served = the_replica(memex_b).served
                    assert await client.count(A, "client") == 2  # through B
                    assert the_replica(memex_b).served == served
                    assert balancer.seen[-1] == token
            finally:
                await client.aclose()


def test_memexdb_serve_workers_share_the_callers_writes(pair: Pair) -> None:  # noqa: F811
    """`memexdb serve --workers 2` with the standby in MEMEX_READ_DATABASE_URLS: with
    replay paused, a caller's reads answered by the worker that did not take its write
    see the write (the primary answers), while another caller's reads through that
    worker are still the standby's (behind). `X-Memex-Worker` says who answered; each
    request opens its own connection, which the kernel hands to either worker."""
    from tests.test_mcp_support import serve

    root = scratch_dir("memexdb-ryw-workers-")
    tenant = {"agent_id": A, "user_id": "serve"}

    def count(base: str, key: str) -> tuple[str, int]:
        r = httpx.get(f"{base}/v1/memories/count", params=tenant, headers=bearer(key), timeout=30)
        assert r.status_code == 200, r.text
        return r.headers["x-memex-worker"], int(r.json()["count"])

    def by_worker(base: str, key: str, wanted: int) -> dict[str, list[int]]:
        """Counts by the worker that answered, until both answered `wanted` times."""
        seen: dict[str, list[int]] = {}
        for _ in range(400):
            worker, n = count(base, key)
            seen.setdefault(worker, []).append(n)
            if len(seen) == 2 and all(len(v) >= wanted for v in seen.values()):
                return seen
        raise AssertionError(f"not both workers answered: {seen}")

    try:
        with (
            keys(pair, "writer", "other") as (writer, other),
            serve(
                root,
                workers=2,
                dsn=pair.primary,
                MEMEX_READ_DATABASE_URLS=pair.replica,
                MEMEX_REPLICA_MAX_LAG_SECONDS="60",
            ) as running,
        ):
            base = running.base_url
            r = httpx.post(f"{base}/v1/memories", json={**tenant, "content": "before the pause"},
                           headers=bearer(writer), timeout=60)  # fmt: skip
            assert r.status_code == 201, r.text
            replayed(pair)
            # both callers on both workers (a key's first read in a process is the primary's)
            by_worker(base, writer, 2)
            by_worker(base, other, 2)
            with replay_paused(pair):
                r = httpx.post(
                    f"{base}/v1/memories",
                    json={**tenant, "content": "written while the replica stands still"},
                    headers=bearer(writer),
                    timeout=60,
                )
                assert r.status_code == 201, r.text
                took = r.headers["x-memex-worker"]
                seen = by_worker(base, writer, 3)
                assert set(seen) - {took}, seen
                assert all(n == 2 for counts in seen.values() for n in counts), (took, seen)
                # the other caller, through the worker that did not take the write: the
                # standby's answer (so that worker does route to it)
                others = by_worker(base, other, 3)
                (elsewhere,) = set(others) - {took}
                assert 1 in others[elsewhere], others
    finally:
        shutil.rmtree(root, ignore_errors=True)


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
