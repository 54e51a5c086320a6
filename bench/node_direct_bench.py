"""Node direct mode against the Python in-process client (issue 38): the same texts
stored and searched on the same database (Node as a role bound to the tenant, under
row-level security, as direct mode runs; Python as the operator, as the in-process client
runs: its rate limiter reads memex.settings, which a bound role may not), rounds
interleaved (Python, Node, Python, ...) so both see the same machine load. Node:
`@memexdb/client/direct` with `@memexdb/minilm` (embeds in process, stores with the
vector); Python: `memexdb.Memex` with the bundled LocalMiniLM. Per round and side a fresh
user: `store` one memory at a time, `store_many` in batches of 32, `search` (hybrid, the
default) one query at a time, every query a new text, so both run the model
(`--repeated-queries`: drawn from 51 words, so repeats are answered by each client's
embedding cache: Python's memexdb.session, 4,096 texts; @memexdb/minilm's, as many).
Reports p50 latencies, throughputs and Node/Python ratios (issue target: within 1.5x).

    (cd clients/minilm && ONNXRUNTIME_NODE_INSTALL=skip npm ci && npm run build)
    (cd clients/typescript && npm ci && npm run build:dist)
    python bench/node_direct_bench.py            # ~3 min
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from harness import (
    Latency,
    create_database,
    embedded_server,
    log,
    print_header,
    run_main,
    write_json,
)
from machine import machine_facts

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from memexdb import NewMemory
from memexdb.client import Memex
from memexdb.embedding.local_minilm import LocalMiniLM
from tests.sqlapi import bound_login_role
from tests.test_typescript_client import libpq_url

REPO = Path(__file__).resolve().parents[1]
AGENT = "bench-agent"
NOW = datetime(2026, 12, 1, tzinfo=UTC)
WORDS = [
    "Alice",
    "Bob",
    "Carol",
    "the",
    "user",
    "prefers",
    "dark",
    "mode",
    "coffee",
    "tea",
    "Lisbon",
    "Berlin",
    "moved",
    "works",
    "nurse",
    "meeting",
    "Tuesday",
    "dentist",
    "garden",
    "ferns",
    "balcony",
    "project",
    "deadline",
    "budget",
    "quarterly",
    "report",
    "sister",
    "brother",
    "birthday",
    "concert",
    "guitar",
    "hiking",
    "trip",
    "weekend",
    "recipe",
    "pasta",
    "allergy",
    "cat",
    "dog",
    "train",
    "flight",
    "hotel",
    "booked",
    "cancelled",
    "remembers",
    "forgot",
    "likes",
    "dislikes",
    "because",
    "after",
    "before",
]


def sentences(rng: random.Random, n: int) -> list[str]:
    return [
        " ".join(rng.choice(WORDS) for _ in range(rng.randint(8, 40))).capitalize() + "."
        for _ in range(n)
    ]


def python_round(memex: Memex, user: str, round_: dict[str, Any]) -> dict[str, Any]:
    import time

    store, many, search, hits = [], [], [], 0
    for content in round_["texts"]:
        start = time.perf_counter()
        memex.store(AGENT, user, content)
        store.append(time.perf_counter() - start)
    batch = round_["batch"]
    for lo in range(0, len(round_["many"]), batch):
        items = [
            NewMemory(agent_id=AGENT, user_id=user, content=c)
            for c in round_["many"][lo : lo + batch]
        ]
        start = time.perf_counter()
        memex.store_many(items)
        many.append(time.perf_counter() - start)
    for query in round_["queries"]:
        start = time.perf_counter()
        hits += len(memex.search(AGENT, user, query, now=NOW))
        search.append(time.perf_counter() - start)
    return {"store": store, "store_many": many, "search": search, "hits": hits}


def summary(rounds: list[dict[str, Any]], batch: int) -> dict[str, Any]:
    store = [s for r in rounds for s in r["store"]]
    search = [s for r in rounds for s in r["search"]]
    many = [s for r in rounds for s in r["store_many"]]
    return {
        "store": Latency.of(store).__dict__,
        "search": Latency.of(search).__dict__,
        "store_per_s": len(store) / sum(store),
        "search_per_s": len(search) / sum(search),
        "store_many_texts_per_s": batch * len(many) / sum(many),
        "round_medians_ms": {
            k: [statistics.median(r[k]) * 1000 for r in rounds]
            for k in ("store", "search", "store_many")
        },
        "hits": sum(r["hits"] for r in rounds),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--stores", type=int, default=40, help="single stores per round")
    parser.add_argument("--many", type=int, default=64, help="texts per round in batches")
    parser.add_argument("--queries", type=int, default=40, help="searches per round")
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--seed", type=int, default=38)
    parser.add_argument(
        "--repeated-queries",
        action="store_true",
        help="queries drawn from 51 words (they repeat: both clients' caches answer repeats)",
    )
    parser.add_argument("--out", type=Path, default=Path("bench/out"))
    args = parser.parse_args()
    command = print_header(machine_facts())
    log(f"load average (1 min) at start: {os.getloadavg()[0]:.1f}")
    rng = random.Random(args.seed)
    plan = [
        {
            "texts": sentences(rng, args.stores),
            "many": sentences(rng, args.many),
            # by default every query new: each client's embedding cache would answer a
            # repeat without running the model
            "queries": [
                f"what does the user say about {rng.choice(WORDS)}?"
                if args.repeated_queries
                else f"what did {rng.choice(WORDS)} say about {rng.choice(WORDS)} in note {r}-{q}?"
                for q in range(args.queries)
            ],
            "batch": args.batch,
            "now": NOW.isoformat(),
        }
        for r in range(args.rounds + 1)  # round 0 warms both sides up
    ]
    results: dict[str, list[dict[str, Any]]] = {"python": [], "node": []}
    with embedded_server("node-direct-bench") as server:
        dsn = create_database(server.dsn, "node_direct_bench")
        users = [f"u{i}-{side}" for i in range(len(plan)) for side in ("python", "node")]
        with bound_login_role(dsn, AGENT, users) as role:
            embedder = LocalMiniLM()
            node = subprocess.Popen(
                ["node", str(REPO / "bench" / "node_direct_bench.mjs")],
                env={"PATH": "/usr/bin:/bin", "MEMEX_DIRECT_URL": libpq_url(role)},
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                text=True,
            )
            assert node.stdin is not None and node.stdout is not None
            ready = json.loads(node.stdout.readline())
            log(f"node ready (model loaded in {ready['load_s']:.2f} s)")
            try:
                with Memex.connect(dsn, embedder=embedder) as memex:
                    for i, round_ in enumerate(plan):
                        py = python_round(memex, f"u{i}-python", round_)
                        node.stdin.write(
                            json.dumps({**round_, "agent_id": AGENT, "user_id": f"u{i}-node"})
                            + "\n"
                        )
                        node.stdin.flush()
                        nd = json.loads(node.stdout.readline())
                        if i == 0:
                            continue
                        results["python"].append(py)
                        results["node"].append(nd)
                        log(
                            f"round {i}: store p50 py"
                            f" {statistics.median(py['store']) * 1000:.1f} ms"
                            f" / node {statistics.median(nd['store']) * 1000:.1f} ms; search p50 py"
                            f" {statistics.median(py['search']) * 1000:.1f} / node"
                            f" {statistics.median(nd['search']) * 1000:.1f} ms"
                        )
            finally:
                node.stdin.close()
                node.wait(timeout=60)
    log(f"load average (1 min) at end: {os.getloadavg()[0]:.1f}")
    py, nd = summary(results["python"], args.batch), summary(results["node"], args.batch)
    ratios = {
        "store p50 latency (node/python)": nd["store"]["p50_ms"] / py["store"]["p50_ms"],
        "search p50 latency (node/python)": nd["search"]["p50_ms"] / py["search"]["p50_ms"],
        "store throughput (python/node)": py["store_per_s"] / nd["store_per_s"],
        "search throughput (python/node)": py["search_per_s"] / nd["search_per_s"],
        "store_many throughput (python/node)": py["store_many_texts_per_s"]
        / nd["store_many_texts_per_s"],
    }
    print(
        "| side | store p50 ms | store p95 ms | stores/s | store_many texts/s"
        " | search p50 ms | search p95 ms | searches/s |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for name, s in (("Python in-process (Memex)", py), ("Node direct (@memexdb/minilm)", nd)):
        print(
            f"| {name} | {s['store']['p50_ms']:.1f} | {s['store']['p95_ms']:.1f}"
            f" | {s['store_per_s']:.1f}"
            f" | {s['store_many_texts_per_s']:.1f} | {s['search']['p50_ms']:.1f}"
            f" | {s['search']['p95_ms']:.1f} | {s['search_per_s']:.1f} |"
        )
    print("| ratio (1.0 = equal; > 1: Node slower) | value | within 1.5x |")
    print("|---|---:|---|")
    for name, value in ratios.items():
        print(f"| {name} | {value:.2f} | {'yes' if value <= 1.5 else 'no'} |")
    write_json(
        args.out,
        "node_direct_bench",
        {
            "command": command,
            "machine": machine_facts(),
            "python": py,
            "node": nd,
            "ratios": ratios,
            "raw": results,
        },
    )
    return 0


if __name__ == "__main__":
    run_main(main)
