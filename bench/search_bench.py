"""Search benchmark: memex.search latency and recall@10 against an exact brute-force
ranking, and the REST service's search latency next to the raw embedder's.

    python bench/search_bench.py [--sizes 10000,100000] [--tenants 100] [--queries 200]
                                 [--out bench/out] [--seed 42]

Everything runs against a private embedded PostgreSQL started (and removed) here. See
bench/README.md for what is measured and bench/RESULTS.md for the latest figures.
"""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import platform
import re
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime, timedelta
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

import httpx
import numpy as np
import psycopg
from harness import (
    Latency,
    create_database,
    embedded_server,
    free_port,
    log,
    print_header,  # bench/harness.py: the script's folder is on sys.path
    run_main,
    run_maintenance,
    stop_process,
    wait_healthy,
    write_json,
)
from machine import machine_facts
from pgvector.psycopg import register_vector
from psycopg.rows import dict_row

from memexdb.embedded import EmbeddedPostgres
from memexdb.embedding import Embedder, build_embedder

T = TypeVar("T")
REPO = Path(__file__).resolve().parents[1]
AGENT = "bench"  # every tenant is (AGENT, user_id)
DIM = 384
NOW = datetime(2026, 6, 1, tzinfo=UTC)  # p_now: ages are exact, not "now"-dependent
TYPES = ("episodic", "semantic", "procedural")
CLUSTERS = 64  # shared by all tenants, so a tenant filter really filters the HNSW graph
NOISE = 0.6
TOP_K = 10
ALPHA = 0.7
HALF_LIFE_DAYS = 30.0
LOAD_BATCH = 2000  # 500 to 5000 load at the same speed
INDEX_BUILD_MEMORY = "1GB"  # the graph of 130k 384-d rows fits, so the build stays fast
PRODUCT_DIRS = ("sql", "alembic", "memexdb")
HNSW_INDEXES = (
    "select indexname, indexdef from pg_indexes where schemaname = 'memex'"
    " and tablename = 'memories' and indexdef ~ 'USING hnsw'"
)
WARMUP = 20
CASE_BUDGET_S = 120.0  # a timed loop stops early (and says so) after this long
STATEMENT_TIMEOUT_MS = 60_000
INDEX_BUILD_TIMEOUT_MS = 900_000  # 130k rows: ~35 s on 2 idle cores, ~1 min when busy
LARGE_TENANTS = (10_000, 20_000)
MAX_SIZE = 1_000_000
SERVICE_MEMORIES = 1000
SERVICE_BATCH = 250
SERVICE_QUERIES = 200
SERVICE_ROUNDS = 4
BLOCK_WARMUP = 5
HTTP_TIMEOUT_S = 120.0


# --- statistics --------------------------------------------------------------------


def timed(fn: Callable[..., T], *args: Any) -> tuple[float, T]:
    """Seconds taken by fn(*args), and its result."""
    start = time.perf_counter()
    result = fn(*args)
    return time.perf_counter() - start, result


# --- synthetic data ----------------------------------------------------------------


@dataclass
class Tenant:
    """One tenant's synthetic memories, kept here for the brute-force ranking."""

    user_id: str
    vectors: np.ndarray  # (n, DIM) float32, unit rows
    age_us: np.ndarray  # int64 microseconds before NOW (created_at is exact)
    importance: np.ndarray  # float32, as stored in the real column

    @property
    def size(self) -> int:
        return len(self.vectors)

    def content(self, i: int) -> str:
        return f"{self.user_id}-{i}"

    def similarity(self, query: np.ndarray) -> np.ndarray:
        result: np.ndarray = self.vectors.astype(np.float64) @ query.astype(np.float64)
        return result

    def scores(self, query: np.ndarray) -> np.ndarray:
        """(alpha*cos + (1-alpha)*recency)*importance of every memory, in float64."""
        recency = np.exp(-math.log(2) / HALF_LIFE_DAYS * (self.age_us / 86_400e6))
        relevance = ALPHA * self.similarity(query) + (1 - ALPHA) * recency
        result: np.ndarray = relevance * self.importance.astype(np.float64)
        return result

    def exact_top(self, query: np.ndarray, k: int = TOP_K) -> set[str]:
        """The contents of the top k memories by score: the ground truth."""
        return {self.content(int(i)) for i in np.argsort(-self.scores(query), kind="stable")[:k]}

    def candidate_bound(self, query: np.ndarray, depth: int, recent: int) -> float:
        """recall@10 of the ANN path if its stages were exact: the `depth` nearest and
        the `recent` newest memories, ranked by score (mode 'vector' has no text stage)."""
        nearest = np.argsort(-self.similarity(query), kind="stable")[:depth]
        newest = np.argsort(self.age_us, kind="stable")[:recent]
        pool = np.union1d(nearest, newest)
        best = pool[np.argsort(-self.scores(query)[pool], kind="stable")[:TOP_K]]
        return len({self.content(int(i)) for i in best} & self.exact_top(query)) / TOP_K


class Synth:
    """Clustered unit vectors around centres shared by every tenant and every query."""

    def __init__(self, seed: int) -> None:
        self.rng = np.random.default_rng(seed)
        self.centers = self.rng.normal(size=(CLUSTERS, DIM))

    def vectors(self, n: int) -> np.ndarray:
        picks = self.centers[self.rng.integers(0, CLUSTERS, n)]
        points = picks + NOISE * self.rng.normal(size=(n, DIM))
        unit: np.ndarray = points / np.linalg.norm(points, axis=1, keepdims=True)
        return unit.astype(np.float32)

    def tenant(self, user_id: str, n: int) -> Tenant:
        return Tenant(
            user_id=user_id,
            vectors=self.vectors(n),
            age_us=self.rng.integers(0, 365 * 86_400_000_000, n),
            importance=self.rng.uniform(0.5, 1.5, n).astype(np.float32),
        )

    def types(self, n: int) -> list[str]:
        return [str(t) for t in self.rng.choice(TYPES, n)]


# --- database ----------------------------------------------------------------------


def connect(dsn: str) -> psycopg.Connection[Any]:
    """One autocommit connection that prepares every statement from its first run."""
    conn = psycopg.connect(dsn, autocommit=True, prepare_threshold=0)
    register_vector(conn)
    conn.execute(f"set statement_timeout = {STATEMENT_TIMEOUT_MS}")
    return conn


STORE_MANY = """
select count(*) from memex.store_many(
    p_agent_ids => %(agent_ids)s, p_user_ids => %(user_ids)s, p_contents => %(contents)s,
    p_embeddings => %(embeddings)s, p_embedding_model => 'synthetic',
    p_memory_types => %(memory_types)s::memex.memory_type[],
    p_importances => %(importances)s, p_created_at => %(created_at)s::timestamptz[])
"""


def store_batch(
    conn: psycopg.Connection[Any], rows: list[tuple[Tenant, int]], types: list[str]
) -> None:
    conn.execute(
        STORE_MANY,
        {
            "agent_ids": [AGENT] * len(rows),
            "user_ids": [t.user_id for t, _ in rows],
            "contents": [t.content(i) for t, i in rows],
            "embeddings": [t.vectors[i] for t, i in rows],
            "memory_types": types,
            "importances": [float(t.importance[i]) for t, i in rows],
            "created_at": [NOW - timedelta(microseconds=int(t.age_us[i])) for t, i in rows],
        },
    )


def load(conn: psycopg.Connection[Any], synth: Synth, tenants: list[Tenant]) -> dict[str, float]:
    """Store every memory with memex.store_many in LOAD_BATCH-row calls, run
    memex.maintenance() (tenants past exact_scan_max_rows move into the ANN index, as the
    service does every minute), then ANALYZE.

    The HNSW index is dropped for the load and rebuilt from its own catalog definition
    afterwards, as pgvector advises for bulk loads: inserting into the graph row by row
    runs at ~700 rows/s on 2 cores, 4x slower than insert + build."""
    rows = [(t, i) for t in tenants for i in range(t.size)]
    indexes = conn.execute(HNSW_INDEXES).fetchall()
    for name, _ in indexes:
        conn.execute(f'drop index memex."{name}"')
    insert_s = timed(store_all, conn, synth, rows)[0]
    run_maintenance(conn)
    conn.execute(f"set maintenance_work_mem = '{INDEX_BUILD_MEMORY}'")
    conn.execute(f"set statement_timeout = {INDEX_BUILD_TIMEOUT_MS}")
    index_s = sum(timed(conn.execute, definition)[0] for _, definition in indexes)
    conn.execute(f"set statement_timeout = {STATEMENT_TIMEOUT_MS}")
    conn.execute("reset maintenance_work_mem")
    conn.execute("analyze memex.memories")
    conn.execute("analyze memex.tenants")
    return {"rows": len(rows), "insert_seconds": insert_s, "index_build_seconds": index_s}


def store_all(conn: psycopg.Connection[Any], synth: Synth, rows: list[tuple[Tenant, int]]) -> None:
    for lo in range(0, len(rows), LOAD_BATCH):
        chunk = rows[lo : lo + LOAD_BATCH]
        store_batch(conn, chunk, synth.types(len(chunk)))


def scalar(conn: psycopg.Connection[Any], sql: str, params: Any = None) -> Any:
    row = conn.execute(sql, params).fetchone()
    assert row is not None
    return row[0]


# Named arguments only: optional parameters added to memex.search later keep their defaults.
SEARCH = """
select * from memex.search(
    p_agent_id => %(agent_id)s, p_user_id => %(user_id)s,
    p_query_embedding => %(query_embedding)s, p_top_k => %(top_k)s, p_alpha => %(alpha)s,
    p_half_life_days => %(half_life_days)s, p_embedding_model => %(embedding_model)s,
    p_now => %(now)s)
"""


def search_params(
    user_id: str, query: np.ndarray, model: str | None, now: datetime | None
) -> dict[str, Any]:
    return {
        "agent_id": AGENT,
        "user_id": user_id,
        "query_embedding": query,
        "top_k": TOP_K,
        "alpha": ALPHA,
        "half_life_days": HALF_LIFE_DAYS,
        "embedding_model": model,
        "now": now,
    }


def search(conn: psycopg.Connection[Any], params: dict[str, Any]) -> list[str]:
    """One memex.search call in mode 'vector'; the contents of the hits, best first."""
    cur = conn.cursor(row_factory=dict_row)
    return [r["content"] for r in cur.execute(SEARCH, params).fetchall()]


def within_budget(items: Sequence[Any], budget_s: float = CASE_BUDGET_S) -> Iterator[Any]:
    """Yield items until the budget is spent (the caller reports how many ran)."""
    deadline = time.monotonic() + budget_s
    for item in items:
        if time.monotonic() > deadline:
            return
        yield item


# --- search cases ------------------------------------------------------------------


@dataclass
class SearchCase:
    name: str
    tenants: int
    memories_per_tenant: int
    rows_in_database: int
    path: str
    indexes_used: str
    latency: Latency
    recall_at_10: float
    min_recall_at_10: float
    queries_planned: int
    load_avg_1m: tuple[float, float]  # machine load before and after the timed loop
    ann_candidate_bound: float | None  # ANN path: recall@10 if its stages were exact


def run_case(
    conn: psycopg.Connection[Any],
    name: str,
    tenants: list[Tenant],
    synth: Synth,
    n_queries: int,
) -> SearchCase:
    """Warm up, then time n_queries searches (random tenant each) and score recall."""
    picks = [tenants[i] for i in synth.rng.integers(0, len(tenants), WARMUP + n_queries)]
    vectors = synth.vectors(WARMUP + n_queries)
    for tenant, query in zip(picks[:WARMUP], vectors[:WARMUP], strict=True):
        search(conn, search_params(tenant.user_id, query, None, NOW))
    measured = list(zip(picks[WARMUP:], vectors[WARMUP:], strict=True))
    load_before = os.getloadavg()[0]
    seconds, recalls = timed_searches(conn, measured)
    load_after = os.getloadavg()[0]
    size = max(t.size for t in tenants)
    ann = bool(
        scalar(
            conn,
            "select coalesce(bool_or(ann), false) from memex.tenants where user_id = any(%s)",
            ([t.user_id for t in tenants],),
        )
    )
    depth = max(TOP_K, int(scalar(conn, setting_sql("ann_candidates"))))
    recent = max(depth, int(scalar(conn, setting_sql("ann_recent_candidates"))))
    bound = (
        [t.candidate_bound(q, depth, recent) for t, q in measured[: len(seconds)]] if ann else None
    )
    return SearchCase(
        name=name,
        tenants=len(tenants),
        memories_per_tenant=size,
        rows_in_database=int(scalar(conn, "select count(*) from memex.memories")),
        path=f"ANN (depth {depth})" if ann else "exact",
        indexes_used=candidate_indexes(
            conn, search_params(picks[0].user_id, vectors[0], None, NOW)
        ),
        latency=Latency.of(seconds),
        recall_at_10=float(np.mean(recalls)),
        min_recall_at_10=float(np.min(recalls)),
        queries_planned=n_queries,
        load_avg_1m=(load_before, load_after),
        ann_candidate_bound=float(np.mean(bound)) if bound else None,
    )


def timed_searches(
    conn: psycopg.Connection[Any], measured: list[tuple[Tenant, np.ndarray]]
) -> tuple[list[float], list[float]]:
    """Latency (seconds) and recall@10 of each search, within the case budget."""
    seconds: list[float] = []
    recalls: list[float] = []
    for tenant, query in within_budget(measured):
        params = search_params(tenant.user_id, query, None, NOW)
        elapsed, got = timed(search, conn, params)
        seconds.append(elapsed)
        recalls.append(len(tenant.exact_top(query) & set(got)) / TOP_K)
    return seconds, recalls


AUTO_EXPLAIN = (
    "set local auto_explain.log_min_duration = 0",
    "set local auto_explain.log_nested_statements = on",
    "set local auto_explain.log_level = notice",
    "set local auto_explain.log_parameter_max_length = 0",
)
SCAN = re.compile(  # scans of memex.memories (alias m, m_1, ...) in an auto_explain plan
    r"(Seq Scan) on memories |Index (?:Only )?Scan(?: Backward)? using (\w+) on memories "
    r"|Bitmap Index Scan on (memories_\w+)"
)


def candidate_indexes(conn: psycopg.Connection[Any], params: dict[str, Any]) -> str:
    """How one more (untimed) search reads memex.memories, as the plans this session has
    cached run it: auto_explain logs the nested statements of memex.search."""
    notices: list[str] = []

    def collect(diag: psycopg.errors.Diagnostic) -> None:
        notices.append(diag.message_primary or "")

    conn.execute("load 'auto_explain'")
    conn.add_notice_handler(collect)
    try:
        with conn.transaction():
            for statement in AUTO_EXPLAIN:
                conn.execute(statement)
            search(conn, params)
    finally:
        conn.remove_notice_handler(collect)
    scans = {next(g for g in m.groups() if g) for n in notices for m in SCAN.finditer(n)}
    return ", ".join(sorted(scans)) or "unknown"


def setting_sql(name: str) -> str:
    return f"select value #>> '{{}}' from memex.settings where name = '{name}'"


def tenant_cases(
    server: EmbeddedPostgres, args: argparse.Namespace, synth: Synth
) -> tuple[list[SearchCase], list[dict[str, Any]]]:
    """The multi-tenant sizes, then the large single tenants in the largest database."""
    cases: list[SearchCase] = []
    loads: list[dict[str, Any]] = []
    sizes = sorted(set(args.sizes))
    for size in sizes:
        dsn = create_database(server.dsn, f"bench_n{size}")
        per_tenant = size // args.tenants
        tenants = [synth.tenant(f"t{i:04d}", per_tenant) for i in range(args.tenants)]
        with connect(dsn) as conn:
            loads.append(logged_load(conn, synth, tenants, f"{size:,} over {args.tenants} tenants"))
            name = f"{size:,} / {args.tenants} tenants"
            cases.append(logged_case(conn, name, tenants, synth, args.queries))
            if size == sizes[-1]:
                large = [synth.tenant(f"large{n}", n) for n in LARGE_TENANTS]
                loads.append(logged_load(conn, synth, large, "single tenants"))
                cases += [
                    logged_case(conn, f"1 tenant of {t.size:,}", [t], synth, args.queries)
                    for t in large
                ]
    return cases, loads


def logged_load(
    conn: psycopg.Connection[Any], synth: Synth, tenants: list[Tenant], label: str
) -> dict[str, Any]:
    stats = {"case": label, **load(conn, synth, tenants)}
    log(
        f"loaded {label} ({stats['rows']:,} rows): insert {stats['insert_seconds']:.1f} s,"
        f" HNSW build {stats['index_build_seconds']:.1f} s"
    )
    return stats


def logged_case(
    conn: psycopg.Connection[Any], name: str, tenants: list[Tenant], synth: Synth, n_queries: int
) -> SearchCase:
    case = run_case(conn, name, tenants, synth, n_queries)
    lat = case.latency
    log(
        f"{case.name}: {case.path} via {case.indexes_used}, p50 {lat.p50_ms:.2f} ms,"
        f" p99 {lat.p99_ms:.2f} ms, recall@10 {case.recall_at_10:.4f} (n={lat.n})"
    )
    return case


# --- service vs embedder -----------------------------------------------------------


NAMES = ("Alice", "Bob", "Carol", "Dan", "Erin", "Frank", "Grace", "Heidi", "Ivan", "Judy")
ACTIVITIES = (
    "booked a flight to",
    "had dinner with friends in",
    "gave a talk about databases in",
    "lost a phone somewhere in",
    "started a new job in",
    "went hiking near",
    "bought a bicycle in",
    "visited the dentist in",
    "moved to a flat in",
    "learned to cook pasta in",
)
PLACES = (
    "Berlin",
    "Lisbon",
    "Tokyo",
    "Nairobi",
    "Toronto",
    "Oslo",
    "Lima",
    "Seoul",
    "Cairo",
    "Perth",
)
WHEN = ("last spring", "in March", "on a rainy Monday", "after the conference", "with a colleague")
QUESTIONS = (
    "Where did {n} go in {p}?",
    "What happened to {n} in {p}?",
    "Which city did {n} mention around {p}?",
    "Did {n} travel to {p} recently?",
    "What does {n} remember about {p}?",
    "Tell me about {n} and {p}.",
)


def memory_texts(rng: np.random.Generator) -> list[str]:
    """SERVICE_MEMORIES distinct sentences, a random sample of all combinations."""
    combos = [f"{n} {a} {p} {w}." for n in NAMES for a in ACTIVITIES for p in PLACES for w in WHEN]
    return [combos[i] for i in rng.permutation(len(combos))[:SERVICE_MEMORIES]]


def query_texts(n: int) -> list[str]:
    texts = [q.format(n=name, p=place) for q in QUESTIONS for name in NAMES for place in PLACES]
    assert len(set(texts)) >= n, "not enough unique query texts"
    return texts[:n]


@contextlib.contextmanager
def service(dsn: str, log_path: Path) -> Iterator[httpx.Client]:
    """`memexdb serve` in a subprocess on a free port; stopped (by pid) on exit."""
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMEX_")}
    env["MEMEX_DATABASE_URL"] = dsn
    args = [sys.executable, "-m", "memexdb.cli", "serve", "--port", str(port)]
    with log_path.open("w") as out:
        proc = subprocess.Popen(
            [*args, "--log-level", "warning"],
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=out,
        )
    try:
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=HTTP_TIMEOUT_S) as client:
            wait_healthy(f"http://127.0.0.1:{port}", proc, log_path)
            yield client
    finally:
        stop_process(proc)


def load_service_tenant(client: httpx.Client, synth: Synth, user_id: str) -> float:
    """POST /v1/memories/batch in SERVICE_BATCH chunks (real model vectors); seconds taken."""
    texts = memory_texts(synth.rng)
    ages = synth.rng.uniform(0, 365, len(texts))
    importance = synth.rng.uniform(0.5, 1.5, len(texts))
    types = synth.types(len(texts))
    memories = [
        {
            "agent_id": AGENT,
            "user_id": user_id,
            "content": text,
            "memory_type": types[i],
            "importance": float(importance[i]),
            "created_at": (datetime.now(UTC) - timedelta(days=float(ages[i]))).isoformat(),
        }
        for i, text in enumerate(texts)
    ]
    start = time.perf_counter()
    for lo in range(0, len(memories), SERVICE_BATCH):
        resp = client.post(
            "/v1/memories/batch", json={"memories": memories[lo : lo + SERVICE_BATCH]}
        )
        resp.raise_for_status()
    return time.perf_counter() - start


def service_search(client: httpx.Client, user_id: str, text: str) -> None:
    body = {"agent_id": AGENT, "user_id": user_id, "query": text, "top_k": TOP_K, "alpha": ALPHA}
    resp = client.post("/v1/memories/search", json=body)
    resp.raise_for_status()
    assert resp.json()["total"] == TOP_K, resp.text


@dataclass
class ServiceResult:
    memories: int
    load_seconds: float
    service: Latency
    embedder: Latency
    sql: Latency
    embedder_plus_sql: Latency
    load_avg_1m: tuple[float, float]  # machine load before and after the timed rounds
    ratios: dict[str, float] = field(default_factory=dict)


def service_case(server: EmbeddedPostgres, synth: Synth, log_path: Path) -> ServiceResult:
    """Service search vs raw embedder vs memex.search SQL for the same texts: SERVICE_ROUNDS
    rounds of three back-to-back blocks, so a busy neighbour on the machine, whenever it
    runs, slows all three alike, while each block keeps its own caches warm."""
    dsn = create_database(server.dsn, "bench_service")
    user_id = "service"
    per_round = BLOCK_WARMUP + SERVICE_QUERIES // SERVICE_ROUNDS
    texts = query_texts(per_round * SERVICE_ROUNDS)
    rounds = [texts[i : i + per_round] for i in range(0, len(texts), per_round)]
    embedder = build_embedder("minilm")
    timings: dict[str, list[float]] = {"service": [], "embedder": [], "sql": []}
    with service(dsn, log_path) as client, connect(dsn) as conn:
        load_seconds = load_service_tenant(client, synth, user_id)
        log(f"loaded {SERVICE_MEMORIES} memories through REST: {load_seconds:.1f} s")
        load_before = os.getloadavg()[0]
        for chunk in within_budget(rounds):
            for name, seconds in service_round(client, conn, embedder, user_id, chunk).items():
                timings[name] += seconds
    return service_result(load_seconds, timings, (load_before, os.getloadavg()[0]))


def service_round(
    client: httpx.Client,
    conn: psycopg.Connection[Any],
    embedder: Embedder,
    user_id: str,
    texts: Sequence[str],
) -> dict[str, list[float]]:
    """One block each of service searches, raw embeddings and SQL searches of `texts`."""
    vectors: dict[str, np.ndarray] = {}

    def embed(text: str) -> None:
        vectors[text] = embedder.embed([text])[0]

    def sql(text: str) -> None:
        search(conn, search_params(user_id, vectors[text], embedder.model_id, None))

    return {
        "service": block(texts, partial(service_search, client, user_id)),
        "embedder": block(texts, embed),
        "sql": block(texts, sql),
    }


def block(texts: Sequence[str], fn: Callable[[str], Any]) -> list[float]:
    """Run fn on BLOCK_WARMUP texts untimed, then time it on each of the others."""
    for text in texts[:BLOCK_WARMUP]:
        fn(text)
    return [timed(fn, text)[0] for text in texts[BLOCK_WARMUP:]]


def service_result(
    load_seconds: float, timings: dict[str, list[float]], load_avg: tuple[float, float]
) -> ServiceResult:
    both = [e + s for e, s in zip(timings["embedder"], timings["sql"], strict=True)]
    result = ServiceResult(
        memories=SERVICE_MEMORIES,
        load_seconds=load_seconds,
        service=Latency.of(timings["service"]),
        embedder=Latency.of(timings["embedder"]),
        sql=Latency.of(timings["sql"]),
        embedder_plus_sql=Latency.of(both),
        load_avg_1m=load_avg,
    )
    for pct in ("p50_ms", "p99_ms"):
        svc = getattr(result.service, pct)
        result.ratios[f"service/embedder {pct[:3]}"] = svc / getattr(result.embedder, pct)
        result.ratios[f"service/(embedder+sql) {pct[:3]}"] = svc / getattr(
            result.embedder_plus_sql, pct
        )
    return result


# --- reporting ---------------------------------------------------------------------


def run_facts(dsn: str) -> dict[str, Any]:
    """bench/machine.py's facts plus the server's versions and the working tree's state."""
    with psycopg.connect(dsn) as conn:
        pg = scalar(conn, "show server_version")
        pgvector = scalar(
            conn, "select default_version from pg_available_extensions where name = 'vector'"
        )
    return {
        **machine_facts(),
        "os": platform.platform(),
        "postgresql": pg,
        "pgvector": pgvector,
        "changed_since_commit": changed_product_files(),
        "load_avg_1m_at_start": round(os.getloadavg()[0], 2),
    }


def git(*args: str) -> str | None:
    """Output of a read-only git command in the repository, None without git."""
    with contextlib.suppress(OSError, subprocess.SubprocessError):
        res = subprocess.run(
            ["git", *args], cwd=REPO, capture_output=True, text=True, timeout=30, check=True
        )
        return res.stdout.strip()
    return None


def changed_product_files() -> list[str] | None:
    """Files under PRODUCT_DIRS whose content differs from HEAD (new, edited or deleted):
    the figures describe the working tree, which may be ahead of the commit."""
    tree = git("ls-tree", "-r", "HEAD", "--", *PRODUCT_DIRS)
    if tree is None:
        return None
    committed = {line.split("\t")[1]: line.split()[2] for line in tree.splitlines()}
    present = sorted(
        str(f.relative_to(REPO))
        for d in PRODUCT_DIRS
        for f in (REPO / d).rglob("*")
        if f.is_file() and "__pycache__" not in f.parts
    )
    hashes = (git("hash-object", "--", *present) or "").splitlines()
    edited = {path for path, sha in zip(present, hashes, strict=True) if committed.get(path) != sha}
    return sorted(edited | (committed.keys() - set(present)))


def search_table(cases: Sequence[SearchCase]) -> str:
    lines = [
        "| case | memories/tenant | rows in db | path | scans (auto_explain) | n | p50 ms"
        " | p95 ms | p99 ms | mean ms | recall@10 | min recall@10 | recall@10 if ANN stages"
        " were exact | load 1m |",
        "|---|---:|---:|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for c in cases:
        lat = c.latency
        bound = "-" if c.ann_candidate_bound is None else f"{c.ann_candidate_bound:.4f}"
        lines.append(
            f"| {c.name} | {c.memories_per_tenant:,} | {c.rows_in_database:,} | {c.path}"
            f" | {c.indexes_used} | {lat.n} | {lat.p50_ms:.2f} | {lat.p95_ms:.2f}"
            f" | {lat.p99_ms:.2f} | {lat.mean_ms:.2f} | {c.recall_at_10:.4f}"
            f" | {c.min_recall_at_10:.2f} | {bound}"
            f" | {c.load_avg_1m[0]:.1f} to {c.load_avg_1m[1]:.1f} |"
        )
    return "\n".join(lines)


def service_table(result: ServiceResult) -> str:
    rows = [
        ("POST /v1/memories/search (service)", result.service),
        ("embedder.embed([text]) (raw, in-process)", result.embedder),
        ("memex.search SQL (prepared)", result.sql),
        ("embedder + SQL (per text)", result.embedder_plus_sql),
    ]
    lines = [
        "| measurement | n | p50 ms | p95 ms | p99 ms | mean ms |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for label, lat in rows:
        lines.append(
            f"| {label} | {lat.n} | {lat.p50_ms:.2f} | {lat.p95_ms:.2f} | {lat.p99_ms:.2f}"
            f" | {lat.mean_ms:.2f} |"
        )
    lines += ["", "| ratio | value |", "|---|---:|"]
    lines += [f"| {name} | {value:.2f} |" for name, value in result.ratios.items()]
    before, after = result.load_avg_1m
    lines += ["", f"Machine load (1 min) during these rounds: {before:.1f} to {after:.1f}."]
    return "\n".join(lines)


def load_table(loads: Sequence[dict[str, Any]]) -> str:
    lines = [
        "| load (memex.store_many, HNSW rebuilt after) | rows | insert s | HNSW build s |",
        "|---|---:|---:|---:|",
    ]
    for stats in loads:
        lines.append(
            f"| {stats['case']} | {stats['rows']:,} | {stats['insert_seconds']:.1f}"
            f" | {stats['index_build_seconds']:.1f} |"
        )
    return "\n".join(lines)


def claim_line(cases: Sequence[SearchCase]) -> str:
    case = next((c for c in cases if c.name == f"1 tenant of {LARGE_TENANTS[0]:,}"), None)
    if case is None:
        return "claim not checked"
    verdict = "holds" if case.recall_at_10 == 1.0 else "DOES NOT hold"
    return (
        f"Claim 'recall@10 = 1.0 vs exact at {LARGE_TENANTS[0]:,} memories per tenant': "
        f"{verdict} (measured {case.recall_at_10:.4f} over {case.latency.n} queries, {case.path})."
    )


# --- main --------------------------------------------------------------------------


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--sizes",
        type=lambda s: [int(x) for x in s.split(",")],
        default=[10_000, 100_000],
        help="total memories per run, comma separated (default 10000,100000)",
    )
    parser.add_argument("--tenants", type=int, default=100, help="tenants per size (default 100)")
    parser.add_argument("--queries", type=int, default=200, help="timed searches per case")
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "out", help="JSON folder")
    parser.add_argument("--seed", type=int, default=42, help="random seed (default 42)")
    args = parser.parse_args(argv)
    if not 1 <= args.tenants <= 10_000:
        parser.error("--tenants must be between 1 and 10000")
    if any(not 0 < s <= MAX_SIZE or s % args.tenants for s in args.sizes):
        parser.error(f"every size must be a multiple of --tenants, at most {MAX_SIZE:,}")
    if not 1 <= args.queries <= 100_000:
        parser.error("--queries must be between 1 and 100000")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    started = time.perf_counter()
    synth = Synth(args.seed)
    with embedded_server("bench") as server:
        facts = run_facts(server.dsn)
        command = print_header(facts)
        cases, loads = tenant_cases(server, args, synth)
        svc = service_case(server, synth, server.data_dir.parent / "service.log")
    runtime = time.perf_counter() - started
    tables = [search_table(cases), claim_line(cases), service_table(svc), load_table(loads)]
    print("\n" + "\n\n".join(tables) + f"\n\ntotal runtime: {runtime:.0f} s")
    report = {
        "command": command,
        "machine": facts,
        "config": {**vars(args), "top_k": TOP_K, "alpha": ALPHA, "half_life_days": HALF_LIFE_DAYS},
        "loads": loads,
        "search_cases": [asdict(c) for c in cases],
        "service": asdict(svc),
        "runtime_seconds": runtime,
    }
    print(f"JSON: {write_json(args.out, 'search_bench', report)}")
    return 0


if __name__ == "__main__":
    run_main(main)
