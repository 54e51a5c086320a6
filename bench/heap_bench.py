"""What the garbage collector costs a process serving memex's workload: CPython's
defaults against memexdb.heap's (the startup heap frozen, young collections every 7,000
allocations), in one process, alternating.

    python bench/heap_bench.py [--rounds 6] [--requests 3000] [--concurrency 32] [--pool 8]

The set-up of bench/pipeline_bench.py (one embedded PostgreSQL, 1,000 seeded reference
memories, one AsyncMemex with the model loaded, `--concurrency` tasks replaying 3
searches to 1 store with the reference's texts); the rounds alternate between the two
collector settings. Per round: this process's CPU per request (`time.process_time`), the
time spent in collections per request and the collections per generation
(`gc.callbacks`), and the longest single collection. Only the collector changes: the
backends' CPU is not read.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import os
import platform
import random
import statistics
import time
from collections.abc import Callable, Iterator
from typing import Any

from harness import create_database, embedded_server, log, print_header, run_main
from load_workload import seed_memories
from pipeline_bench import workload_round

import memexdb
from memexdb import AsyncMemex, heap


class _Collections:
    """Time and count of the collections, by generation, while `watching`."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self.longest = 0.0
        self.counts = [0, 0, 0]
        self._started = 0.0

    def __call__(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            self._started = time.perf_counter()
            return
        took = time.perf_counter() - self._started
        self.seconds += took
        self.longest = max(self.longest, took)
        self.counts[info["generation"]] += 1

    @contextlib.contextmanager
    def watching(self) -> Iterator[None]:
        gc.callbacks.append(self)
        try:
            yield
        finally:
            gc.callbacks.remove(self)


async def _main(args: argparse.Namespace) -> int:
    variants: dict[str, Callable[[], contextlib.AbstractContextManager[None]]] = {
        "CPython defaults": contextlib.nullcontext,
        "memexdb.heap": heap.settled,
    }
    rows: dict[str, list[tuple[float, float, float, list[int]]]] = {v: [] for v in variants}
    with embedded_server("heap") as server:
        dsn = create_database(server.dsn, "heap")
        memex = await AsyncMemex.connect(dsn, min_size=args.pool, max_size=args.pool)
        try:
            for body in seed_memories(random.Random(7)):
                await memex.store(**body)  # type: ignore[arg-type]
            await workload_round(memex, 500, args.concurrency, 0)  # warm the caches
            log(f"objects tracked after start: {len(gc.get_objects())}")
            for r in range(args.rounds):
                order = list(variants) if r % 2 == 0 else list(reversed(variants))
                for name in order:
                    seen = _Collections()
                    with variants[name](), seen.watching():
                        cpu0 = time.process_time()
                        wall = await workload_round(memex, args.requests, args.concurrency, r + 1)
                        cpu = (time.process_time() - cpu0) / args.requests * 1000
                    in_gc = seen.seconds / args.requests * 1000
                    rows[name].append((cpu, in_gc, seen.longest * 1000, seen.counts))
                    log(
                        f"round {r + 1} {name}: {cpu:.3f} ms CPU/req, {in_gc:.3f} ms/req in"
                        f" collections {seen.counts}, longest {seen.longest * 1000:.1f} ms,"
                        f" {args.requests / wall:.0f} req/s, load {os.getloadavg()[0]:.1f}"
                    )
        finally:
            await memex.aclose()
    print()
    print(
        "| collector | process CPU ms/req (median; range) | ms/req in collections (median)"
        " | longest collection ms (max) | collections per round, gen 0/1/2 (median) |"
    )
    print("|---|---:|---:|---:|---|")
    for name, got in rows.items():
        cpu = [c for c, _, _, _ in got]
        in_gc = [g for _, g, _, _ in got]
        longest = max(x for _, _, x, _ in got)
        counts = "/".join(f"{statistics.median(c[i] for _, _, _, c in got):.0f}" for i in range(3))
        print(
            f"| {name} | {statistics.median(cpu):.3f} ({min(cpu):.3f}-{max(cpu):.3f})"
            f" | {statistics.median(in_gc):.3f} | {longest:.1f} | {counts} |"
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
            "gc thresholds (default)": gc.get_threshold(),
            "loadavg_at_start": " ".join(f"{x:.2f}" for x in os.getloadavg()),
        }
    )
    return asyncio.run(_main(args))


if __name__ == "__main__":
    run_main(main)
