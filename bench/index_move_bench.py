"""How long a growing tenant's inserts wait while it moves into the ANN index.

Once a tenant passes settings.exact_scan_max_rows, memex.maintenance() moves its rows into
the partial HNSW index. Two ways, same data, same run, each on a fresh database:

- "one statement": memex.index_tenant() moves every row under the tenant's row lock (what
  maintenance did up to revision 0005): the tenant's inserts wait for the whole move.
- "steps": memex.maintenance() as the service calls it (again 1 s after a call that moved
  rows): index_batch_rows rows per step without the lock, which only the last step takes.

Meanwhile one client stores a memory into that tenant every INSERT_PAUSE_S through
memex.store and records each call's latency.

    python bench/index_move_bench.py [--rows 12000] [--batch 1000]
"""

from __future__ import annotations

import argparse
import threading
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

AGENT, USER = "bench", "grower"
INSERT_PAUSE_S = 0.02
FOLLOW_UP_S = 1.0  # memexdb.runtime.maintenance.FOLLOW_UP_SECONDS
MAX_MAINTENANCE_CALLS = 500
COPY = (
    "copy memex.memories (agent_id, user_id, content, embedding, embedding_model)"
    " from stdin (format binary)"
)
STORE = "select id from memex.store(%s, %s, %s, %s, 'synthetic')"


def fresh_database(admin_dsn: str, name: str, rows: int, batch: int) -> str:
    """A migrated database whose tenant (AGENT, USER) has `rows` memories, none indexed."""
    dsn = create_database(admin_dsn, name)
    vectors = unit_vectors(np.random.default_rng(7), rows)
    with psycopg.connect(dsn, autocommit=True) as conn:
        register_vector(conn)
        # The tenant has just grown past the threshold when the move starts.
        for setting, value in (("index_batch_rows", batch), ("exact_scan_max_rows", rows - 1)):
            conn.execute(
                "insert into memex.settings (name, value) values (%s, %s::jsonb)"
                " on conflict (name) do update set value = excluded.value",
                (setting, str(value)),
            )
        with conn.cursor() as cur, cur.copy(COPY) as copy:
            copy.set_types(["text", "text", "text", "halfvec", "text"])
            for i, vector in enumerate(vectors):
                copy.write_row((AGENT, USER, f"memory {i}", HalfVector(vector), "synthetic"))
        conn.execute("vacuum (analyze) memex.memories")
    return dsn


class Inserter(threading.Thread):
    """Stores one memory into the moving tenant every INSERT_PAUSE_S until stopped."""

    def __init__(self, dsn: str) -> None:
        super().__init__(daemon=True)
        self.dsn = dsn
        self.latencies: list[float] = []
        self.stop = threading.Event()

    def run(self) -> None:
        vectors = unit_vectors(np.random.default_rng(11), 100_000)
        with psycopg.connect(self.dsn, autocommit=True, prepare_threshold=0) as conn:
            register_vector(conn)
            for i, vector in enumerate(vectors):
                if self.stop.is_set():
                    return
                started = time.perf_counter()
                conn.execute(STORE, (AGENT, USER, f"new memory {i}", vector))
                self.latencies.append(time.perf_counter() - started)
                time.sleep(INSERT_PAUSE_S)


def move_in_one_statement(conn: psycopg.Connection[Any]) -> int:
    row = conn.execute("select memex.index_tenant(%s, %s)", (AGENT, USER)).fetchone()
    assert row is not None
    return 1


def move_in_steps(conn: psycopg.Connection[Any]) -> int:
    for calls in range(1, MAX_MAINTENANCE_CALLS + 1):
        row = conn.execute(
            "select tenants_indexed, memories_indexed from memex.maintenance()"
        ).fetchone()
        assert row is not None
        if row[0]:
            return calls
        time.sleep(FOLLOW_UP_S)
    raise RuntimeError(f"tenant not indexed after {MAX_MAINTENANCE_CALLS} calls")


def measure(dsn: str, mode: str) -> dict[str, Any]:
    inserter = Inserter(dsn)
    inserter.start()
    time.sleep(1.0)  # the insert latency of a quiet tenant first
    with psycopg.connect(dsn, autocommit=True) as conn:
        started = time.perf_counter()
        calls = move_in_one_statement(conn) if mode == "one statement" else move_in_steps(conn)
        move_s = time.perf_counter() - started
        time.sleep(1.0)
        inserter.stop.set()
        inserter.join(timeout=60)
        row = conn.execute(
            "select t.ann, count(*) filter (where m.ann), count(*) from memex.tenants t"
            " join memex.memories m using (agent_id, user_id)"
            " where t.agent_id = %s and t.user_id = %s group by t.ann",
            (AGENT, USER),
        ).fetchone()
    assert row is not None and row[0] and row[1] == row[2], f"tenant not fully indexed: {row}"
    return {
        "mode": mode,
        "move_seconds": move_s,
        "calls": calls,
        "rows_indexed": row[2],
        "insert_latency": Latency.of(inserter.latencies).__dict__,
    }


def table(results: Sequence[dict[str, Any]]) -> str:
    lines = [
        "| mode | move s | calls | inserts | insert p50 ms | p99 ms | max ms |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for r in results:
        lat = r["insert_latency"]
        lines.append(
            f"| {r['mode']} | {r['move_seconds']:.1f} | {r['calls']} | {lat['n']:,} |"
            f" {lat['p50_ms']:.1f} | {lat['p99_ms']:.1f} | {lat['max_ms']:,.0f} |"
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=12_000, help="tenant size when it moves")
    parser.add_argument("--batch", type=int, default=1000, help="settings.index_batch_rows")
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "out")
    args = parser.parse_args(argv)
    facts = machine_facts()
    command = print_header(facts)
    results = []
    with embedded_server("index-move") as server:
        for n, mode in enumerate(("one statement", "steps")):
            dsn = fresh_database(server.dsn, f"move_{n}", args.rows, args.batch)
            log(f"{mode}: moving {args.rows:,} rows")
            results.append(measure(dsn, mode))
            log(f"{mode}: {results[-1]['move_seconds']:.1f} s")
    print(table(results))
    report = {"command": command, "machine": facts, "args": vars(args)}
    path = write_json(args.out, "index_move", {**report, "results": results})
    log(f"wrote {path}")
    return 0


if __name__ == "__main__":
    run_main(main)
