"""GET /metrics, /health/live, /health/ready and the JSON access log, on real `memexdb
serve` processes (real PostgreSQL, the real model): counters and histograms move with
the right labels after real requests, every worker's figures add up in one scrape, the
endpoint is protected like the admin API once keys exist, and a dead database leaves
scrapes fast with memex_up 0 and readiness at 503."""

from __future__ import annotations

import json
import os
import shutil
import signal
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import httpx
import psutil
import psycopg
import pytest
from prometheus_client.parser import text_string_to_metric_families

from memexdb import AsyncMemex, Memex, metrics, migrate
from memexdb.embedded import EmbeddedPostgres
from memexdb.errors import Forbidden
from memexdb.metrics import LATENCY_BUCKETS
from tests.conftest import drop_database, new_database, scratch_dir
from tests.live_service import (
    Service,
    cli_args,
    free_port,
    kill_postgres,
    service_env,
    wait_until,
)
from tests.slices import STATEMENTS
from tests.test_mcp_support import serve
from tests.test_recovery import kill_postmaster, start_blocked

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]

SECRET = "Zephyrine keeps her spare key under the blue ceramic frog"
SPEC_NAMES = {
    "memex_http_requests_total": {"route", "method", "status"},
    "memex_http_request_duration_seconds_bucket": {"route", "method", "le"},
    "memex_embedding_duration_seconds_bucket": {"operation", "le"},
    "memex_embedding_batch_size_bucket": {"le"},
    "memex_embedding_queue_wait_seconds_bucket": {"le"},
    "memex_sql_call_duration_seconds_bucket": {"function", "le"},
    "memex_db_pool_connections": {"state"},
    "memex_memories_stored_total": {"type"},
    "memex_memories_searched_total": {"type"},
    "memex_memories_deleted_total": {"type"},
    "memex_file_writes_total": {"operation"},
    "memex_rate_limit_rejections_total": {"kind"},
    "memex_consolidation_runs": {"kind", "status"},
    "memex_consolidation_memories_condensed": set(),
    "memex_embed_queue_depth": set(),
    "memex_ann_index_memories": set(),
    "memex_ann_index_tenants": set(),
    "memex_up": set(),
    # the process's own (prometheus_client's ProcessCollector), as the memex service has
    "process_cpu_seconds_total": set(),
    "process_resident_memory_bytes": set(),
    "process_open_fds": set(),
}


def parse(text: str) -> Samples:
    found: Samples = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            found[(s.name, frozenset(s.labels.items()))] = s.value
    return found


def value(samples: Samples, name: str, **labels: str) -> float:
    return samples.get((name, frozenset(labels.items())), 0.0)


def total(samples: Samples, name: str, **labels: str) -> float:
    """The sum over every series of `name` whose labels include `labels`."""
    want = set(labels.items())
    return sum(v for (n, ls), v in samples.items() if n == name and want <= ls)


def scrape(http: httpx.Client, **headers: str) -> Samples:
    r = http.get("/metrics", headers=headers)
    assert r.status_code == 200, r.text
    assert r.headers["content-type"].startswith("text/plain"), r.headers
    return parse(r.text)


@dataclass
class Live:
    """A service process (the metrics of a real process and its log lines)."""

    service: Service
    http: httpx.Client
    dsn: str


@pytest.fixture(scope="module")
def live(pg_server: EmbeddedPostgres, template_db: str) -> Iterator[Live]:
    """`memexdb serve` (one worker, JSON logs) on a fresh database of its own."""
    dsn = new_database(pg_server)
    root = scratch_dir("memexdb-metrics-")
    try:
        with (
            serve(root, dsn=dsn, MEMEX_LOG_FORMAT="json") as service,
            httpx.Client(base_url=service.base_url, timeout=60) as http,
        ):
            yield Live(service, http, dsn)
            assert service.stop() == 0, service.output()[-4000:]
    finally:
        drop_database(pg_server, dsn)
        shutil.rmtree(root, ignore_errors=True)


def test_every_metric_of_the_contract_is_exported_with_its_labels(live: Live) -> None:
    who = {"agent_id": "metrics", "user_id": f"u-{uuid.uuid4().hex[:8]}"}
    for content in ("Dana moved to Lisbon in May", "Dana's team switched to Linear"):
        r = live.http.post("/v1/memories", json={**who, "content": content})
        assert r.status_code == 201, r.text
    # a consolidation run (a summary needs two memories): memex_consolidation_runs has one
    r = live.http.post("/v1/admin/dream/run", json={**who, "force": True})
    assert r.status_code == 200, r.text
    samples = scrape(live.http)
    for name, labels in SPEC_NAMES.items():
        series = [set(dict(ls)) for n, ls in samples if n == name]
        assert series, f"{name} is not exported"
        assert all(s == labels for s in series), (name, series)
    assert value(samples, "memex_up") == 1
    assert total(samples, "memex_consolidation_runs", kind="condense") >= 1
    assert value(samples, "memex_consolidation_memories_condensed") >= 2
    # the latency buckets resolve 0.1 ms to 10 s
    les = {
        dict(ls)["le"]
        for n, ls in samples
        if n == "memex_sql_call_duration_seconds_bucket" and ("function", "memex.store") in ls
    }
    assert les == {*(f"{b:g}" if b < 1 else f"{b:.1f}" for b in LATENCY_BUCKETS), "+Inf"}, les
    batch = {dict(ls)["le"] for n, ls in samples if n == "memex_embedding_batch_size_bucket"}
    assert batch == {f"{b:.1f}" for b in (1, 2, 4, 8, 16, 32, 64, 128, 256)} | {"+Inf"}


def test_counters_and_histograms_move_with_real_requests(live: Live) -> None:
    who = {"agent_id": "metrics", "user_id": f"u-{uuid.uuid4().hex[:8]}"}
    before = scrape(live.http)
    r = live.http.post("/v1/memories", json={**who, "content": SECRET, "memory_type": "semantic"})
    assert r.status_code == 201, r.text
    memory_id = r.json()["id"]
    r = live.http.post("/v1/memories/search", json={**who, "query": "where is the spare key?"})
    assert r.status_code == 200 and r.json()["results"], r.text
    r = live.http.delete(f"/v1/memories/{memory_id}", params=who)
    assert r.status_code == 204, r.text
    assert live.http.get("/v1/nothing-here").status_code == 404
    after = scrape(live.http)

    def moved(name: str, **labels: str) -> float:
        return total(after, name, **labels) - total(before, name, **labels)

    route = "/v1/memories/{memory_id}"
    assert moved("memex_http_requests_total", route="/v1/memories", method="POST", status="201")
    assert moved("memex_http_requests_total", route=route, method="DELETE", status="204") == 1
    assert moved("memex_http_requests_total", route="other", method="GET", status="404") == 1
    # never a raw path: no memory id in any label
    assert not [ls for _, ls in after if any(memory_id in v for _, v in ls)]
    assert (
        moved(
            "memex_http_request_duration_seconds_count", route="/v1/memories/search", method="POST"
        )
        == 1
    )
    # the request histogram has its sub-millisecond buckets
    assert (
        "memex_http_request_duration_seconds_bucket",
        frozenset({("route", "/v1/memories/search"), ("method", "POST"), ("le", "0.0001")}),
    ) in after
    for function in ("memex.store", "memex.search", "memex.forget"):
        assert moved("memex_sql_call_duration_seconds_count", function=function) == 1, function
    # the store's and the search's texts: one model call each (no cache hit: new texts)
    assert moved("memex_embedding_duration_seconds_count") >= 2
    assert moved("memex_embedding_batch_size_count") >= 2
    assert moved("memex_embedding_queue_wait_seconds_count") >= 2
    assert moved("memex_memories_stored_total", type="semantic") == 1
    assert moved("memex_memories_searched_total", type="semantic") >= 1
    assert moved("memex_memories_deleted_total", type="semantic") == 1
    pool = {s: value(after, "memex_db_pool_connections", state=s) for s in ("in_use", "idle")}
    assert pool["in_use"] + pool["idle"] >= 1, pool


SET_LIMIT = (
    "insert into memex.settings(name, value) values (%(name)s, %(value)s::jsonb)"
    " on conflict (name) do update set value = excluded.value"
)


def test_rate_limit_rejections_count_by_kind(live: Live) -> None:
    who = {"agent_id": f"limited-{uuid.uuid4().hex[:6]}", "user_id": "u"}
    before = scrape(live.http)
    with psycopg.connect(live.dsn, autocommit=True) as conn:
        conn.execute(SET_LIMIT, {"name": "rate_limit_store_per_minute", "value": "1"})
        try:
            statuses = [
                live.http.post("/v1/memories", json={**who, "content": f"fact {i}"}).status_code
                for i in range(2)
            ]
        finally:
            conn.execute(SET_LIMIT, {"name": "rate_limit_store_per_minute", "value": "null"})
    assert statuses == [201, 429], statuses
    after = scrape(live.http)

    def moved(kind: str) -> float:
        name = "memex_rate_limit_rejections_total"
        return total(after, name, kind=kind) - total(before, name, kind=kind)

    assert (moved("write"), moved("read")) == (1, 0)


def test_liveness_readiness_and_a_migration_under_way(live: Live) -> None:
    r = live.http.get("/health/live")
    assert r.status_code == 200 and r.json()["status"] == "ok", r.text
    r = live.http.get("/health/ready")
    assert r.status_code == 200 and r.json() == {
        "status": "ok",
        "reason": None,
        "message": None,
        "version": r.json()["version"],
        "blocked": [],
    }, r.text
    # memexdb.migrations holds this lock while it migrates
    with psycopg.connect(live.dsn) as conn:
        conn.execute("lock table memex.alembic_version in share row exclusive mode")
        r = live.http.get("/health/ready")
        assert r.status_code == 503, r.text
        assert r.json()["reason"] == "migrating", r.text
        assert live.http.get("/health/live").status_code == 200
        conn.rollback()
        # the advisory key that used to mean "migrating" means nothing now: any role
        # could take it (issue 21: a tenant role held readiness at 503 with it)
        conn.execute("select pg_advisory_lock(x'6D656D6578'::bigint)")
        assert live.http.get("/health/ready").status_code == 200
    assert live.http.get("/health/ready").status_code == 200


def test_the_openapi_document_describes_the_operations_endpoints(live: Live) -> None:
    paths = live.http.get("/openapi.json").json()["paths"]
    assert "text/plain" in paths["/metrics"]["get"]["responses"]["200"]["content"]
    assert paths["/metrics"]["get"]["security"] == [{"bearer": []}, {}]
    assert "401" in paths["/metrics"]["get"]["responses"]
    for path in ("/health/live", "/health/ready"):
        assert "security" not in paths[path]["get"], path
    assert "503" in paths["/health/ready"]["get"]["responses"]


def test_one_json_log_line_per_request_with_its_id_and_latency_and_no_content(
    live: Live,
) -> None:
    who = {"agent_id": "metrics", "user_id": f"u-{uuid.uuid4().hex[:8]}"}
    request_id = f"test-{uuid.uuid4().hex}"
    r = live.http.post(
        "/v1/memories",
        json={**who, "content": SECRET + " (logged?)"},
        headers={"X-Request-Id": request_id},
    )
    assert r.status_code == 201 and r.headers["x-request-id"] == request_id, r.headers
    r = live.http.post("/v1/memories/search", json={**who, "query": SECRET + " (query?)"})
    generated = r.headers["x-request-id"]
    assert len(generated) == 32, generated  # made by the service: a uuid4 in hex
    # a request id that is not plain text is replaced, not echoed
    r = live.http.get("/health/live", headers={"X-Request-Id": "a b\tc"})
    assert r.headers["x-request-id"] != "a b\tc"

    def logged() -> list[dict[str, object]]:
        lines = [json.loads(x) for x in live.service.output().splitlines() if x.startswith("{")]
        return [e for e in lines if e.get("request_id") in (request_id, generated)]

    entries = wait_until(lambda: len(logged()) == 2 and logged(), timeout=10)
    assert entries, live.service.output()[-3000:]
    stored, searched = sorted(entries, key=lambda e: str(e["route"]) != "/v1/memories")
    assert stored["method"] == "POST" and stored["status"] == 201, stored
    assert stored["route"] == "/v1/memories" and stored["logger"] == "memexdb.access"
    assert isinstance(stored["duration_ms"], float) and 0 < stored["duration_ms"] < 60_000
    assert searched["route"] == "/v1/memories/search" and searched["status"] == 200
    output = live.service.output()
    assert SECRET not in output and "Zephyrine" not in output
    # every line of the service (uvicorn's too) is JSON
    for line in output.splitlines():
        if line.strip():
            assert isinstance(json.loads(line), dict), line


# --- several workers ----------------------------------------------------------------------


def _workers(service: Service) -> dict[int, psutil.Process]:
    """The live uvicorn workers (multiprocessing spawn children) of `service`."""
    found = {}
    for p in psutil.Process(service.proc.pid).children():
        try:
            if p.status() != psutil.STATUS_ZOMBIE and "spawn_main" in " ".join(p.cmdline()):
                found[p.pid] = p
        except psutil.Error:
            continue
    return found


def _probes(samples: Samples | None) -> float:
    """The GET /health/live answers counted in `samples` (0 without samples)."""
    if samples is None:
        return 0.0
    labels = {"route": "/health/live", "method": "GET", "status": "200"}
    return value(samples, "memex_http_requests_total", **labels)


def test_two_workers_add_up_in_one_scrape(pg_server: EmbeddedPostgres, template_db: str) -> None:
    dsn = new_database(pg_server)
    root = scratch_dir("memexdb-metrics-workers-")
    try:
        with (
            serve(root, workers=2, dsn=dsn, MEMEX_LOG_FORMAT="json") as service,
            httpx.Client(
                base_url=service.base_url,
                timeout=30,
                # a new connection per request: the kernel hands each to either worker
                limits=httpx.Limits(max_keepalive_connections=0),
            ) as http,
        ):
            first = next(iter(_workers(service).values()))
            figures_dir = Path(first.environ()[metrics.MULTIPROC_ENV])

            def live_probe(_: int) -> str:
                r = http.get("/health/live")
                assert r.status_code == 200, r.text
                return str(r.headers["x-memex-worker"])

            # 8 at a time, so that a busy worker leaves the next ones to the other (which
            # may still be loading the model, or be replaced by uvicorn after a slow start
            # on a loaded machine)
            answered: dict[str, int] = {}
            deadline = time.monotonic() + 120
            with ThreadPoolExecutor(8) as pool:
                for _ in range(2000):  # rounds of 16 requests
                    for worker in pool.map(live_probe, range(16)):
                        answered[worker] = answered.get(worker, 0) + 1
                    if len(answered) == 2 or time.monotonic() > deadline:
                        break
                    time.sleep(0.05)
            pids = set(_workers(service))
            assert {int(w) for w in answered} == pids and len(pids) == 2, (answered, pids)
            sent = sum(answered.values())

            # every scrape, whichever worker answers it, counts both workers' requests
            scraped_by: set[str] = set()
            for _ in range(100):
                r = http.get("/metrics")
                assert r.status_code == 200, r.text
                samples = parse(r.text)
                assert _probes(samples) == sent, (answered, r.headers["x-memex-worker"])
                scraped_by.add(r.headers["x-memex-worker"])
                if len(scraped_by) == 2:
                    break
            assert scraped_by == set(answered), scraped_by
            # the workers log as the serve process does: JSON, an access line per request
            lines = service.output().splitlines()
            entries = [json.loads(line) for line in lines if line.startswith("{")]
            assert all(line.startswith("{") for line in lines if line.strip()), lines
            logged_by = {str(e["pid"]) for e in entries if e.get("route") == "/health/live"}
            assert logged_by == set(answered), logged_by
            # each worker's pool (at least its one connection), added up
            assert total(samples, "memex_db_pool_connections") >= 2, samples

            # a worker killed outright: uvicorn starts another; its counts stay, its pool
            # leaves the gauges (its live-gauge file is marked dead at the next scrape)
            victim = min(pids)
            assert list(figures_dir.glob(f"gauge_livesum_{victim}.db"))
            os.kill(victim, signal.SIGKILL)
            # replaced at once, not after a ping's whole timeout (memexdb.supervisor)
            assert wait_until(lambda: len(set(_workers(service)) - {victim}) == 2, 20)

            def scraped() -> Samples | None:
                r = http.get("/metrics")
                return parse(r.text) if r.status_code == 200 else None

            assert _probes(wait_until(scraped, 30)) == sent
            assert not list(figures_dir.glob(f"gauge_live*_{victim}.db"))
            assert service.stop() == 0, service.output()[-4000:]
        # the figures of this start are gone with it
        assert not figures_dir.exists()
    finally:
        drop_database(pg_server, dsn)
        shutil.rmtree(root, ignore_errors=True)


# --- keys, and a database that goes away ---------------------------------------------------


def test_keys_protect_metrics_and_a_dead_database_leaves_scrapes_fast() -> None:
    root = scratch_dir("memexdb-metrics-auth-")
    pg = EmbeddedPostgres(root / "pg")
    token = f"scrape-{uuid.uuid4().hex}"
    try:
        dsn = pg.start()
        migrate(dsn)
        with (
            serve(root, dsn=dsn, MEMEX_METRICS_TOKEN=token) as service,
            httpx.Client(base_url=service.base_url, timeout=30) as http,
        ):
            # no keys yet, on loopback: open
            assert value(scrape(http), "memex_up") == 1

            pg.stop()
            started = time.monotonic()
            samples = scrape(http)
            assert time.monotonic() - started < 3.0
            assert value(samples, "memex_up") == 0
            assert total(samples, "memex_http_requests_total") >= 1  # the process's own
            r = http.get("/health/ready")
            assert r.status_code == 503 and r.json()["reason"] == "database_unavailable", r.text
            assert http.get("/health/live").status_code == 200

            pg.start()
            assert wait_until(lambda: http.get("/health/ready").status_code == 200, 30)
            assert value(scrape(http), "memex_up") == 1

            # keys: an operator's admin key, an agent's admin key, a write key
            with Memex.connect(dsn) as memex:
                operator = memex.as_operator("test")
                admin = operator.create_key("admin", name="ops").token
                agent_admin = operator.create_key("admin", agent_id="a").token
                writer = operator.create_key("write", agent_id="a").token

            def status(key: str | None, **headers: str) -> int:
                if key is not None:
                    headers["Authorization"] = f"Bearer {key}"
                return http.get("/metrics", headers=headers).status_code

            assert status(None) == 401
            assert status(writer) == 403
            assert status(agent_admin) == 403
            assert status("not-the-token") == 401
            assert status(admin) == 200
            assert status(token) == 200
            # Prometheus names the service by its own name: a key lets it past the Host
            # check, nothing else does
            assert status(token, Host="memexdb:8000") == 200
            assert status(None, Host="memexdb:8000") == 421

            pg.stop()
            started = time.monotonic()
            samples = scrape(http, Authorization=f"Bearer {token}")
            assert time.monotonic() - started < 3.0
            assert value(samples, "memex_up") == 0
            # without the token nothing can check a key (or its absence) now
            assert status(None) == 503
            assert status(admin) == 503
            assert service.stop() == 0, service.output()[-4000:]
    finally:
        pg.stop()
        shutil.rmtree(root, ignore_errors=True)


def test_every_memex_function_call_of_the_client_has_its_label() -> None:
    labels = {
        name: metrics.sql_function(sql)
        for name, sql in STATEMENTS.items()
        if name.isupper() and isinstance(sql, str)
    }
    assert labels["SEARCH"] == "memex.search"
    assert labels["COUNT"] == "memex.count"  # select memex.f(...)
    assert labels["ERASE_USER"] == "memex.erase_user"  # select columns from memex.f(...)
    assert labels["METRICS_SNAPSHOT"] == "memex.metrics_snapshot"
    assert labels["SET_SETTING"] == "memex.set_setting"
    assert labels["TENANT_STATS"] == "memex.tenant_stats"
    assert labels["PING"] is None
    # every statement that selects from a memex.* function is labelled with it
    for name, sql in STATEMENTS.items():
        if (
            name.isupper()
            and isinstance(sql, str)
            and sql.lstrip().startswith("select")
            and "from memex." in sql.split("where")[0]
        ):
            called = labels[name]
            if "(" in sql.split("from memex.", 1)[1].split()[0]:
                assert called is not None and called.startswith("memex."), name


def test_not_ready_while_the_embedded_postmaster_is_restarted() -> None:
    root = scratch_dir("memexdb-metrics-heal-")
    data_dir = root / "data"
    port = free_port()
    service = Service(
        cli_args("serve", "--port", str(port)),
        service_env(MEMEX_DATA_DIR=str(data_dir)),
        port,
        root / "serve.log",
    )
    try:
        service.wait_healthy()
        with httpx.Client(base_url=service.base_url, timeout=30) as http:
            assert http.get("/health/ready").status_code == 200
            assert value(scrape(http), "memex_up") == 1

            def ready() -> dict[str, object]:
                r = http.get("/health/ready")
                return {**r.json(), "code": r.status_code}

            # the restart is held back (the data dir's lock) until we let it go
            with start_blocked(data_dir):
                kill_postmaster(data_dir / "pgdata")
                down = wait_until(lambda: ready()["code"] == 503 and ready(), timeout=10)
                assert down and down["reason"] == "database_unavailable", down
                assert http.get("/health/live").status_code == 200
                assert value(scrape(http), "memex_up") == 0
            assert wait_until(lambda: ready()["code"] == 200, timeout=30)
            assert value(scrape(http), "memex_up") == 1
        assert service.stop() == 0, service.output()[-4000:]
    finally:
        service.close()
        kill_postgres(data_dir)  # only after a failure
        shutil.rmtree(root, ignore_errors=True)


async def test_metrics_snapshot_reads_what_the_tables_hold(
    amemex: AsyncMemex, conn: psycopg.Connection
) -> None:
    for user, n in (("big", 3), ("small", 2)):
        for i in range(n):
            await amemex.store("snap", user, f"memory {i} of {user}")
    a_memory = (await amemex.list_memories("snap", "small")).memories[0]
    # as the ANN path would have it: one tenant in the index, one memory queued
    conn.execute("update memex.tenants set ann = true where user_id = 'big'")
    conn.execute("insert into memex.embed_queue (memory_id) values (%s)", (a_memory.id,))
    await amemex.consolidate("snap", "small", force=True)
    rows = await amemex.as_operator("test").metrics_snapshot()
    figures = {(r.metric, r.kind, r.status): r.value for r in rows}
    runs = conn.execute(
        "select kind, status, count(*) from memex.consolidation_runs group by 1, 2"
    ).fetchall()
    assert runs and all(figures[("consolidation_runs", k, s)] == n for k, s, n in runs)
    # the one inserted here, and the consolidation's summary waiting for its own vector
    queued = conn.execute("select count(*) from memex.embed_queue").fetchone()
    assert queued is not None and figures[("embed_queue_depth", None, None)] == queued[0] == 2
    # the small user's two memories, condensed by the one run
    assert figures[("memories_condensed", None, None)] == 2
    assert figures[("ann_index_tenants", None, None)] == 1
    assert figures[("ann_index_memories", None, None)] == 3
    # operator only: a tenant's key may not read the service's figures
    token = (await amemex.as_operator("test").create_key("read", agent_id="snap")).token
    with pytest.raises(Forbidden):
        await amemex.with_key(token).metrics_snapshot()


def test_file_writes_count_by_operation(live: Live) -> None:
    where = {"agent_id": f"files-{uuid.uuid4().hex[:6]}", "user_id": "u", "path": "user/a.md"}
    before = scrape(live.http)
    assert live.http.put("/v1/files", json={**where, "content": "# A\n"}).status_code == 200
    r = live.http.patch("/v1/files", json={**where, "append": "- b", "heading": "# A"})
    assert r.status_code == 200, r.text
    assert live.http.delete("/v1/files", params=where).status_code == 200
    r = live.http.post("/v1/files/restore", json={**where, "revision": 1})
    assert r.status_code == 200, r.text
    # refused writes are not counted
    assert live.http.delete("/v1/files", params={**where, "base_revision": "1"}).status_code == 409
    after = scrape(live.http)

    def moved(operation: str) -> float:
        name = "memex_file_writes_total"
        return total(after, name, operation=operation) - total(before, name, operation=operation)

    assert [moved(op) for op in ("write", "patch", "delete", "restore")] == [1, 1, 1, 1]
