"""memex.search on a tenant of paragraph-sized memories, before and after the changes for
them, in the same run.

The other benchmarks store short texts. A memory of a paragraph (~400 characters and
up) with its tsvector passes PostgreSQL's 2 kB TOAST threshold, which changes what a
search reads. Configurations, each on its own database with the same data:

- "before": the embedding column with pgvector's default storage (external: the vector is
  the first value moved out of the row) and, with --baseline-sql, that file's
  memex._candidates_exact (e.g. the one before BM25 skipped non-matching memories);
- "+ storage main" (with --baseline-sql only): storage main, the baseline function;
- "now": the schema and functions as migrated.

    mkdir -p /tmp/old && git show 13029bc:sql/040_candidates_exact.sql > /tmp/old/040.sql
    python bench/content_size_bench.py --baseline-sql /tmp/old/040.sql

Each search is timed at the client (wall) and by the backend's CPU (log_statement_stats).
"""

from __future__ import annotations

import argparse
import re
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import psycopg
from harness import (
    Latency,
    create_database,
    embedded_server,
    log,
    print_header,
    run_main,
    unit_vectors,
    write_json,
)
from machine import machine_facts
from pgvector import HalfVector
from pgvector.psycopg import register_vector

VOCABULARY = 3000  # distinct words of the synthetic texts
COPY = (
    "copy memex.memories (agent_id, user_id, content, embedding, embedding_model)"
    " from stdin (format binary)"
)
VECTOR_SEARCH = (
    "select id from memex.search(p_agent_id => 'bench', p_user_id => 'u',"
    " p_query_embedding => %s, p_top_k => 10, p_alpha => %s)"
)
HYBRID_SEARCH = (
    "select id from memex.search(p_agent_id => 'bench', p_user_id => 'u',"
    " p_query_embedding => %s, p_top_k => 10, p_alpha => 1, p_mode => 'hybrid',"
    " p_query_text => %s)"
)
# what a client that sends only the query (and top_k) gets: its text goes along, no ranking
# options (hybrid with context since "Recall by default")
DEFAULT_SEARCH = (
    "select id from memex.search(p_agent_id => 'bench', p_user_id => 'u',"
    " p_query_embedding => %s, p_top_k => 10, p_query_text => %s)"
)


def texts(rng: np.random.Generator, n: int, chars: int) -> list[str]:
    words = [f"word{i}" for i in range(VOCABULARY)]
    return [" ".join(rng.choice(words, size=chars // 5 + 1))[:chars] for _ in range(n)]


def prepare(admin_dsn: str, name: str, storage: str, function_sql: str | None) -> str:
    dsn = create_database(admin_dsn, name)
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f"alter table memex.memories alter column embedding set storage {storage}")
        if function_sql is not None:
            conn.execute(function_sql)
    return dsn


def load(dsn: str, contents: list[str], vectors: np.ndarray) -> dict[str, Any]:
    with psycopg.connect(dsn, autocommit=True) as conn:
        register_vector(conn)
        with conn.cursor() as cur, cur.copy(COPY) as copy:
            copy.set_types(["text", "text", "text", "halfvec", "text"])
            for content, vector in zip(contents, vectors, strict=True):
                copy.write_row(("bench", "u", content, HalfVector(vector), "synthetic"))
        conn.execute("vacuum (analyze) memex.memories")
        row = conn.execute(
            "select pg_relation_size('memex.memories'),"
            " pg_relation_size((select reltoastrelid from pg_class"
            "                   where oid = 'memex.memories'::regclass)),"
            " count(*) filter (where pg_column_toast_chunk_id(embedding) is not null)"
            " from memex.memories"
        ).fetchone()
    assert row is not None
    return {"heap_bytes": row[0], "toast_bytes": row[1], "embeddings_out_of_line": row[2]}


def backend_cpu(conn: psycopg.Connection[Any]) -> list[float]:
    """Turn on log_statement_stats for `conn` (a superuser's, as the embedded server's is);
    the returned list receives each statement's backend CPU seconds (user + system), which
    a busy machine inflates far less than wall time: a query longer than the scheduler's
    slice waits for every other runnable process, so wall-time ratios of long to short
    queries grow with the load."""
    box: list[float] = []

    def collect(diag: psycopg.errors.Diagnostic) -> None:
        match = re.search(r"([\d.]+) s user, ([\d.]+) s system", diag.message_detail or "")
        if match and "EXECUTE" in (diag.message_primary or ""):
            box.append(float(match.group(1)) + float(match.group(2)))

    conn.add_notice_handler(collect)
    conn.execute("set client_min_messages = log")
    conn.execute("set log_statement_stats = on")
    return box


def measure(
    dsns: dict[str, str], queries: np.ndarray, terms: list[str], rounds: int
) -> tuple[dict[str, dict[str, Latency]], dict[str, dict[str, float]]]:
    """Interleaved round by round, so a busy neighbour slows every configuration alike.
    Returns the wall-time latencies and the backend CPU p50 in ms."""
    cases: dict[str, tuple[str, float | None]] = {
        "vector, alpha 0.7": (VECTOR_SEARCH, 0.7),
        "vector, alpha 1": (VECTOR_SEARCH, 1.0),
        "hybrid, alpha 1": (HYBRID_SEARCH, None),
        "default request (no options)": (DEFAULT_SEARCH, None),
    }
    seconds: dict[str, dict[str, list[float]]] = {c: {n: [] for n in dsns} for c in cases}
    cpu: dict[str, dict[str, list[float]]] = {c: {n: [] for n in dsns} for c in cases}
    conns = {n: psycopg.connect(d, autocommit=True, prepare_threshold=0) for n, d in dsns.items()}
    try:
        boxes = {}
        for name, conn in conns.items():
            register_vector(conn)
            conn.execute(VECTOR_SEARCH, (queries[0], 0.7)).fetchall()  # warm the caches
            boxes[name] = backend_cpu(conn)
        for _ in range(rounds):
            for case, (sql, alpha) in cases.items():
                for name, conn in conns.items():
                    for q, text in zip(queries, terms, strict=True):
                        boxes[name].clear()
                        started = time.perf_counter()
                        conn.execute(sql, (q, text if alpha is None else alpha)).fetchall()
                        seconds[case][name].append(time.perf_counter() - started)
                        cpu[case][name].append(sum(boxes[name]))
    finally:
        for conn in conns.values():
            conn.close()
    latencies = {c: {n: Latency.of(s) for n, s in per.items()} for c, per in seconds.items()}
    cpu_p50 = {c: {n: float(np.median(s)) * 1000 for n, s in per.items()} for c, per in cpu.items()}
    return latencies, cpu_p50


def table(
    results: dict[str, dict[str, Latency]], cpu: dict[str, dict[str, float]], baseline: str
) -> str:
    lines = [
        "| search | configuration | n | p50 ms | p99 ms | CPU p50 ms | p50 vs before |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    for case, per in results.items():
        for name, lat in per.items():
            ratio = lat.p50_ms / per[baseline].p50_ms
            lines.append(
                f"| {case} | {name} | {lat.n} | {lat.p50_ms:.2f} | {lat.p99_ms:.2f}"
                f" | {cpu[case][name]:.2f} | {ratio:.2f} |"
            )
    lines.append("")
    vector, default = "vector, alpha 0.7", "default request (no options)"
    for name in results[vector]:
        wall = results[default][name].p50_ms / results[vector][name].p50_ms
        lines.append(
            f"{name}: default request / vector-only (alpha 0.7): {wall:.2f}x wall p50,"
            f" {cpu[default][name] / cpu[vector][name]:.2f}x backend CPU p50"
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=10_000, help="memories of the tenant")
    parser.add_argument("--chars", type=int, default=500, help="characters per memory")
    parser.add_argument("--queries", type=int, default=40, help="queries per case and round")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--baseline-sql",
        type=Path,
        help="older sql/ function files (e.g. 040 and 042 in one file), run on the migrated schema",
    )
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "out")
    args = parser.parse_args(argv)
    facts = machine_facts()
    command = print_header(facts)

    rng = np.random.default_rng(args.seed)
    contents = texts(rng, args.rows, args.chars)
    vectors = unit_vectors(rng, args.rows)
    queries = unit_vectors(rng, args.queries)
    terms = [" ".join(rng.choice([f"word{i}" for i in range(VOCABULARY)], 3)) for _ in queries]
    baseline = args.baseline_sql.read_text() if args.baseline_sql else None
    configs: dict[str, tuple[str, str | None]] = {"before": ("external", baseline)}
    if baseline is not None:
        configs["+ storage main"] = ("main", baseline)
    configs["now"] = ("main", None)
    started = time.perf_counter()
    with embedded_server("content-size") as server:
        dsns, layouts = {}, {}
        for n, (name, (storage, sql)) in enumerate(configs.items()):
            dsns[name] = prepare(server.dsn, f"content_{n}", storage, sql)
            layouts[name] = load(dsns[name], contents, vectors)
            log(f"{name}: loaded {args.rows:,} memories of {args.chars} characters")
        results, cpu = measure(dsns, queries, terms, args.rounds)
    runtime = time.perf_counter() - started
    print()
    print("| configuration | heap MiB | TOAST MiB | embeddings out of line |\n|---|---:|---:|---:|")
    for name, lay in layouts.items():
        print(
            f"| {name} | {lay['heap_bytes'] / 2**20:.1f} | {lay['toast_bytes'] / 2**20:.1f} |"
            f" {lay['embeddings_out_of_line']:,} |"
        )
    print()
    print(table(results, cpu, "before"))
    print(f"\ntotal runtime: {runtime:.0f} s")
    report = {
        "command": command,
        "machine": facts,
        "args": {k: str(v) for k, v in vars(args).items()},
        "layouts": layouts,
        "results": {c: {n: lat.__dict__ for n, lat in per.items()} for c, per in results.items()},
        "backend_cpu_p50_ms": cpu,
    }
    log(f"wrote {write_json(args.out, 'content_size', report)}")
    return 0


if __name__ == "__main__":
    run_main(main)
