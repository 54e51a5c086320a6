"""What a request's pipeline costs the client and the backend: psycopg's own pipeline
(each statement sent as it is executed, then the Sync, then a flush request) against
memexdb.pipeline's (everything in one send at the Sync), in one process, alternating.

    python bench/pipeline_bench.py [--rounds 6] [--requests 3000] [--concurrency 32]
                                   [--pool 8]

One private embedded PostgreSQL, one database seeded as bench/load_test.py seeds it
(1,000 of the reference's memories over 20 agents x 10 users), one AsyncMemex (no HTTP)
whose pool holds `--pool` connections, `--concurrency` tasks replaying memex's workload
(3 searches, top_k 5, alpha 0.7, to 1 store; the reference's texts, so the embedding
cache makes embedding near-free) until `--requests` calls are done. The rounds alternate
between the two pipelines (the same client: only how the pipeline is written changes);
per round: client CPU (this process, `time.process_time`) and backend CPU (the pool's
backends, /proc/<pid>/stat) per request, and requests per second. On a shared machine
compare the CPU per request, not the rate.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import random
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from harness import create_database, embedded_server, log, print_header, run_main
from load_workload import (
    ALPHA,
    SEARCH_WEIGHT,
    STORE_WEIGHT,
    TOP_K,
    Texts,
    seed_memories,
    tenant,
)

import memexdb
import memexdb.pipeline
import memexdb.session
from memexdb import AsyncMemex

_TICK = os.sysconf("SC_CLK_TCK")


def backend_cpu(pids: list[int]) -> float:
    total = 0.0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += (int(fields[11]) + int(fields[12])) / _TICK
    return total


async def backend_pids(memex: AsyncMemex) -> list[int]:
    pool = memex.pool
    pids: set[int] = set()
    conns = [await pool.getconn() for _ in range(pool.max_size)]
    try:
        pids.update(conn.info.backend_pid for conn in conns)
    finally:
        for conn in conns:
            await pool.putconn(conn)
    return sorted(pids)


async def workload_round(memex: AsyncMemex, requests: int, concurrency: int, seed: int) -> float:
    rng = random.Random(seed)
    texts = Texts("reference", rng)
    plan = [rng.random() < SEARCH_WEIGHT / (SEARCH_WEIGHT + STORE_WEIGHT) for _ in range(requests)]
    queue = iter(plan)

    async def user() -> None:
        for search in queue:
            agent, user_id = tenant(rng)
            if search:
                await memex.search(agent, user_id, texts.query(), top_k=TOP_K, alpha=ALPHA)
            else:
                await memex.store(
                    agent,
                    user_id,
                    texts.memory(),
                    memory_type=rng.choice(("episodic", "semantic")),
                    importance=round(rng.uniform(0.5, 1.5), 3),
                )

    started = time.perf_counter()
    await asyncio.gather(*(user() for _ in range(concurrency)))
    return time.perf_counter() - started


async def _main(args: argparse.Namespace) -> int:
    holding: Callable[[Any], None] = memexdb.pipeline.holding
    # Session._fetch_once calls the `holding` of its module: the variant swaps it
    session_names = vars(memexdb.session)
    variants: dict[str, Callable[[Any], None]] = {
        "psycopg pipeline": lambda conn: None,
        "one send": holding,
    }
    with embedded_server("pipeline") as server:
        dsn = create_database(server.dsn, "pipeline")
        memex = await AsyncMemex.connect(dsn, min_size=args.pool, max_size=args.pool)
        try:
            rng = random.Random(7)
            for body in seed_memories(rng):
                await memex.store(**body)  # type: ignore[arg-type]
            log(f"seeded; backends {await backend_pids(memex)}")
            await workload_round(
                memex, 500, args.concurrency, 0
            )  # warm: caches, prepared statements
            pids = await backend_pids(memex)
            results: dict[str, list[tuple[float, float, float]]] = {v: [] for v in variants}
            for r in range(args.rounds):
                order = list(variants) if r % 2 == 0 else list(reversed(variants))
                for name in order:
                    session_names["holding"] = variants[name]
                    cpu0, back0 = time.process_time(), backend_cpu(pids)
                    wall = await workload_round(memex, args.requests, args.concurrency, r + 1)
                    cpu = (time.process_time() - cpu0) / args.requests * 1000
                    back = (backend_cpu(pids) - back0) / args.requests * 1000
                    results[name].append((cpu, back, args.requests / wall))
                    log(
                        f"round {r + 1} {name}: client {cpu:.3f} ms/req, backend"
                        f" {back:.3f} ms/req, {args.requests / wall:.0f} req/s,"
                        f" load {os.getloadavg()[0]:.1f}"
                    )
        finally:
            session_names["holding"] = holding
            await memex.aclose()
    print()
    print(
        "| pipeline | client CPU ms/req (median; range) | backend CPU ms/req (median; range)"
        " | both | req/s (median) |"
    )
    print("|---|---:|---:|---:|---:|")
    for name, rows in results.items():
        cpu = [c for c, _, _ in rows]
        back = [b for _, b, _ in rows]
        rate = [q for _, _, q in rows]
        print(
            f"| {name} | {statistics.median(cpu):.3f} ({min(cpu):.3f}-{max(cpu):.3f})"
            f" | {statistics.median(back):.3f} ({min(back):.3f}-{max(back):.3f})"
            f" | {statistics.median(cpu) + statistics.median(back):.3f}"
            f" | {statistics.median(rate):.0f} |"
        )
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--requests", type=int, default=3000)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--pool", type=int, default=8)
    args = parser.parse_args()
    print_header(
        {
            "python": platform.python_version(),
            "memexdb": memexdb.__version__,
            "loadavg_at_start": " ".join(f"{x:.2f}" for x in os.getloadavg()),
        }
    )
    return asyncio.run(_main(args))


if __name__ == "__main__":
    run_main(main)
