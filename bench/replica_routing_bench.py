"""What routing reads to a read replica costs per request (issue 39, item 3): the same
reads through an AsyncMemex on the primary alone, and through one with
MEMEX_READ_DATABASE_URLS' router (`replicas=[standby]`), rounds alternating in one run.
The standby is a real streaming hot standby of the embedded PostgreSQL on the same
machine (tests/test_read_replica.py's standby_pair), so this is the cost of the routing
and of a second server's cold caches, not a throughput figure: on 2 cores the replica
competes with the primary for the same CPUs.

Three ways per read (search with a cached embedding, get, count):
- `primary`: no replicas configured (today's path);
- `routed`: replicas configured, the reader has not written: the replica answers;
- `routed, own write`: replicas configured, the reader writes before each read: the
  primary answers (read-your-writes), after the router's decision.

    python bench/replica_routing_bench.py     # ~1 min
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

from harness import log, print_header, run_main, write_json
from machine import machine_facts

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from memexdb import NewMemory
from memexdb.client import AsyncMemex
from memexdb.embedding import BatchingEmbedder, build_embedder
from tests.test_read_replica import replayed, standby_pair

A, U = "bench", "u"
QUERIES = [f"what did the user say about topic {i}?" for i in range(20)]
Read = Callable[[AsyncMemex, int], Awaitable[object]]


async def _round(memex: AsyncMemex, read: Read, n: int, write_first: bool) -> list[float]:
    took = []
    for i in range(n):
        if write_first:  # the reader's own write: its next read must see it
            await memex.store(A, "writer", f"written {i}")
        started = time.perf_counter()
        await read(memex, i)
        took.append(time.perf_counter() - started)
    return took


async def _measure(args: argparse.Namespace) -> dict[str, dict[str, list[float]]]:
    embedder = BatchingEmbedder(build_embedder("minilm"), cache_entries=4096)
    with standby_pair() as pair:
        seed = await AsyncMemex.connect(pair.primary, embedder=embedder)
        await seed.store_many(
            [
                NewMemory(agent_id=A, user_id=U, content=f"note {i}: about topic {i % 40}")
                for i in range(args.memories)
            ]
        )
        ids = [m.id for m in (await seed.list_memories(A, U, limit=100)).memories]
        await seed.aclose()
        replayed(pair)
        plain = await AsyncMemex.connect(pair.primary, embedder=embedder)
        routed = await AsyncMemex.connect(pair.primary, embedder=embedder, replicas=[pair.replica])
        reads: dict[str, Read] = {
            "search": lambda m, i: m.search(A, U, QUERIES[i % len(QUERIES)]),
            "get": lambda m, i: m.get(A, U, ids[i % len(ids)]),
            "count": lambda m, i: m.count(A, U),
        }
        ways = {
            "primary": (plain, False),
            "routed": (routed, False),
            "routed, own write": (routed, True),
        }
        times: dict[str, dict[str, list[float]]] = {r: {w: [] for w in ways} for r in reads}
        try:
            for read in reads.values():  # warm every path, the embedding cache included
                for memex, write_first in ways.values():
                    await _round(memex, read, 40, write_first)
            for _ in range(args.rounds):
                for name, read in reads.items():
                    for way, (memex, write_first) in ways.items():
                        took = await _round(memex, read, args.requests, write_first)
                        times[name][way].append(statistics.median(took) * 1000)
            assert routed.router is not None
            log(f"router: {routed.router.stats()}")
            # the decision alone, no I/O: the session for the read and the replica's choice
            router, n = routed.router, 100_000
            started = time.perf_counter()
            for _ in range(n):
                router.pick(routed.reading("search")._caller())
            decision_us = (time.perf_counter() - started) / n * 1e6
            log(f"routing decision: {decision_us:.2f} us per read")
            times["decision"] = {"us": [decision_us]}
        finally:
            await plain.aclose()
            await routed.aclose()
    await embedder.aclose()
    return times


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--memories", type=int, default=2000)
    parser.add_argument("--requests", type=int, default=100, help="reads per round and way")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--out", type=Path, default=Path("bench/out"))
    args = parser.parse_args()
    command = print_header(machine_facts())
    times = asyncio.run(_measure(args))
    report: dict[str, dict[str, float]] = {}
    for read, ways in times.items():
        if read == "decision":
            continue
        medians = {way: statistics.median(values) for way, values in ways.items()}
        base = medians["primary"]
        report[read] = {**medians}
        for way, value in medians.items():
            log(f"{read:>6} {way:>18}: p50 {value:.3f} ms  ({value / base:.3f}x primary)")
    report["decision"] = {"us": times["decision"]["us"][0]}
    write_json(args.out, "replica_routing_bench", {"command": command, "ms_p50": report})
    return 0


if __name__ == "__main__":
    run_main(main)
