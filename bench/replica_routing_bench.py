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
  primary answers (read-your-writes), after the router's decision;
- `routed, shared table`: as `routed`, with the callers' last writes in a table file
  shared with another process's router (what `memexdb serve --workers N` sets up);
- `routed, token`: as `routed`, each read carrying the session token (REQUIRED_LSN) of a
  write made before the round, which the replica has replayed: the replica answers.

And what read-your-writes across processes adds to a write: a store alone (`store`)
against a store followed by the session token's query (`store + token`: what the REST
answer to a write does with replicas, memexdb.rest.operation_routes), alternating; and
the router's bookkeeping without I/O (the decision, a write's record) with a private
and with a shared table.

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
from memexdb.replicas import REQUIRED_LSN, WriteTable, parse_lsn
from tests.test_read_replica import replayed, standby_pair

A, U = "bench", "u"
QUERIES = [f"what did the user say about topic {i}?" for i in range(20)]
Read = Callable[[AsyncMemex, int], Awaitable[object]]


async def _round(
    memex: AsyncMemex, read: Read, n: int, write_first: bool, token: int = 0
) -> list[float]:
    took = []
    for i in range(n):
        if write_first:  # the reader's own write: its next read must see it
            await memex.store(A, "writer", f"written {i}")
        started = time.perf_counter()
        reset = REQUIRED_LSN.set(token)
        try:
            await read(memex, i)
        finally:
            REQUIRED_LSN.reset(reset)
        took.append(time.perf_counter() - started)
    return took


async def _writes(memex: AsyncMemex, n: int, token: bool) -> tuple[list[float], list[float]]:
    """Each store's time (with the token's query if `token`), and the query's alone."""
    took, queries = [], []
    for i in range(n):
        started = time.perf_counter()
        await memex.store(A, "stores", f"stored {i}")
        if token:
            asked = time.perf_counter()
            await memex.write_position()
            queries.append(time.perf_counter() - asked)
        took.append(time.perf_counter() - started)
    return took, queries


def _per_call_us(call: Callable[[], object], n: int = 100_000) -> float:
    started = time.perf_counter()
    for _ in range(n):
        call()
    return (time.perf_counter() - started) / n * 1e6


async def _measure(args: argparse.Namespace) -> dict[str, dict[str, list[float]]]:
    embedder = BatchingEmbedder(build_embedder("minilm"), cache_entries=4096)
    with standby_pair() as pair:
        log("standby up")
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
        log("seeded")
        plain = await AsyncMemex.connect(pair.primary, embedder=embedder)
        routed = await AsyncMemex.connect(pair.primary, embedder=embedder, replicas=[pair.replica])
        table = WriteTable.create()
        shared = await AsyncMemex.connect(
            pair.primary, embedder=embedder, replicas=[pair.replica], writes_table=table
        )
        reads: dict[str, Read] = {
            "search": lambda m, i: m.search(A, U, QUERIES[i % len(QUERIES)]),
            "get": lambda m, i: m.get(A, U, ids[i % len(ids)]),
            "count": lambda m, i: m.count(A, U),
        }
        ways = {
            "primary": (plain, False, 0),
            "routed": (routed, False, 0),
            "routed, own write": (routed, True, 0),
            "routed, shared table": (shared, False, 0),
            "routed, token": (routed, False, -1),
        }
        times: dict[str, dict[str, list[float]]] = {r: {w: [] for w in ways} for r in reads}
        times["write"] = {"store": [], "store + token": [], "token query": []}
        writer = shared.as_operator("bench-writer")  # its writes hold back no reader
        try:
            # a token the replica has replayed (the reads with it may go there)
            await routed.store(A, "token", "written before the rounds")
            position = await routed.write_position()
            token = parse_lsn(position or "")
            assert token is not None, position
            replayed(pair)
            for read in reads.values():  # warm every path, the embedding cache included
                for memex, write_first, required in ways.values():
                    await _round(memex, read, 40, write_first, token if required else 0)
            await _writes(writer, 40, True)
            log("warm")
            for n in range(args.rounds):
                log(f"round {n + 1}")
                for name, read in reads.items():
                    for way, (memex, write_first, required) in ways.items():
                        required = token if required else 0
                        took = await _round(memex, read, args.requests, write_first, required)
                        times[name][way].append(statistics.median(took) * 1000)
                for way, with_token in (("store", False), ("store + token", True)):
                    took, queries = await _writes(writer, args.requests, with_token)
                    times["write"][way].append(statistics.median(took) * 1000)
                    if queries:
                        times["write"]["token query"].append(statistics.median(queries) * 1000)
            assert routed.router is not None and shared.router is not None
            log(f"router: {routed.router.stats()}")
            log(f"shared: {shared.router.stats()}")
            # the bookkeeping alone, no I/O: the session for the read and the replica's
            # choice; a write's record (the shared table's takes an flock)
            for name, memex in (("private", routed), ("shared", shared)):
                router = memex.router
                assert router is not None
                decision = _per_call_us(
                    lambda m=memex, r=router: r.pick(m.reading("search")._caller())
                )
                record = _per_call_us(
                    lambda r=router: r.used_primary("key:bench", wrote=True, entered=True)
                )
                log(f"{name} table: decision {decision:.2f} us a read, {record:.2f} us a write")
                times[f"{name} table"] = {"decision_us": [decision], "record_us": [record]}
        finally:
            await plain.aclose()
            await routed.aclose()
            await shared.aclose()
            table.unlink()
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
        medians = {way: statistics.median(values) for way, values in ways.items()}
        report[read] = {**medians}
        if read.endswith("table"):
            continue
        basis = "store" if read == "write" else "primary"
        for way, value in medians.items():
            ratio = value / medians[basis]
            log(f"{read:>6} {way:>20}: p50 {value:.3f} ms  ({ratio:.3f}x {basis})")
    write_json(args.out, "replica_routing_bench", {"command": command, "ms_p50": report})
    return 0


if __name__ == "__main__":
    run_main(main)
