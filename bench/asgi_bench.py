"""What the service's app costs per request in Python, without uvicorn, Locust or the
network: the app `memexdb serve` runs (memexdb.service.app_from_env: every middleware,
both routers, the operation) driven by ASGI calls, trees of several git refs alternating.

    python bench/asgi_bench.py --refs integ,. [--rounds 6] [--requests 3000]
                               [--concurrency 32]

Each ref (`.`: the working tree as it is) is extracted as bench/load_ab_refs.py does and
gets its own database on one private embedded PostgreSQL, migrated by that tree and
seeded as bench/load_test.py seeds it (1,000 reference memories over 20 agents x 10
users). Each round runs, for every ref in turn (the order rotating), a fresh process with
that tree on PYTHONPATH: it opens the app (its lifespan: pool, model, jobs), sends 300
requests to warm it, then `--requests` more from `--concurrency` tasks: memex's workload
(3 searches, top_k 5, alpha 0.7, to 1 store, the reference's texts: the embedding cache
answers nearly every one), each request a scope as uvicorn makes it (Host, Content-Type,
Content-Length, User-Agent, Accept) with a JSON body. Per round: that process's CPU per
request (`time.process_time`), its rate, and the answers that were not 200/201 (failures).
What uvicorn adds (HTTP parsing, the socket) is not in it; Postgres's CPU is not read.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from harness import embedded_server, log, print_header, run_main
from load_ab_refs import Tree, extract_trees, migrate, tree_env
from load_workload import SEARCH_WEIGHT, STORE_WEIGHT, Texts, search_body, seed_memories, tenant
from machine import machine_facts
from psycopg.conninfo import make_conninfo

HERE = Path(__file__).resolve().parent
WARM_REQUESTS = 300


def _scope(path: str, body: bytes) -> dict[str, Any]:
    return {
        "type": "http",
        "asgi": {"version": "3.0", "spec_version": "2.4"},
        "http_version": "1.1",
        "server": ("127.0.0.1", 8000),
        "client": ("127.0.0.1", 50000),
        "scheme": "http",
        "method": "POST",
        "root_path": "",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "headers": [
            (b"host", b"127.0.0.1:8000"),
            (b"user-agent", b"asgi-bench"),
            (b"accept-encoding", b"gzip, deflate"),
            (b"accept", b"*/*"),
            (b"content-type", b"application/json"),
            (b"content-length", str(len(body)).encode()),
        ],
        "state": {},
    }


async def _request(app: Any, path: str, payload: dict[str, object]) -> int:
    body = json.dumps(payload).encode()
    status = 0
    delivered = False

    async def receive() -> dict[str, Any]:
        nonlocal delivered
        if not delivered:
            delivered = True
            return {"type": "http.request", "body": body, "more_body": False}
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        nonlocal status
        if message["type"] == "http.response.start":
            status = message["status"]

    await app(_scope(path, body), receive, send)
    return status


async def _workload(app: Any, requests: int, concurrency: int, seed: int) -> tuple[float, int]:
    rng = random.Random(seed)
    texts = Texts("reference", rng)
    searches = SEARCH_WEIGHT / (SEARCH_WEIGHT + STORE_WEIGHT)
    plan = iter([rng.random() < searches for _ in range(requests)])
    failures = 0

    async def user() -> None:
        nonlocal failures
        for search in plan:
            agent, user_id = tenant(rng)
            if search:
                status = await _request(
                    app, "/v1/memories/search", search_body(texts, agent, user_id)
                )
            else:
                body = {
                    "agent_id": agent,
                    "user_id": user_id,
                    "content": texts.memory(),
                    "memory_type": rng.choice(("episodic", "semantic")),
                    "importance": round(rng.uniform(0.5, 1.5), 3),
                }
                status = await _request(app, "/v1/memories", body)
            failures += status not in (200, 201)

    started = time.perf_counter()
    await asyncio.gather(*(user() for _ in range(concurrency)))
    return time.perf_counter() - started, failures


async def _drive(args: argparse.Namespace) -> dict[str, Any]:
    """In the tree's process: the service's app, warmed, then measured."""
    from memexdb.service import app_from_env

    app = app_from_env()
    async with app.router.lifespan_context(app):
        if args.seed:
            for body in seed_memories(random.Random(7)):
                status = await _request(app, "/v1/memories", body)
                assert status in (200, 201), status
            return {}
        await _workload(app, WARM_REQUESTS, args.concurrency, 0)
        spy = _profiler(args.profile)
        cpu = time.process_time()
        wall, failures = await _workload(app, args.requests, args.concurrency, args.round)
        cpu = time.process_time() - cpu
        if spy is not None:
            spy.send_signal(signal.SIGINT)  # py-spy writes its profile when interrupted
            spy.wait(timeout=60)
    return {
        "cpu_ms_per_request": cpu * 1000 / args.requests,
        "rps": args.requests / wall,
        "failures": failures,
    }


def _profiler(out: str | None) -> subprocess.Popen[bytes] | None:
    """py-spy sampling this process into `out` (raw folded stacks), if asked for."""
    if not out:
        return None
    spy = shutil.which("py-spy", path=str(Path(sys.executable).parent)) or "py-spy"
    command = [spy, "record", "--pid", str(os.getpid()), "--rate", "250", "--format", "raw"]
    return subprocess.Popen([*command, "--output", out], stdout=subprocess.DEVNULL)


def _run_tree(tree: Tree, args: argparse.Namespace, *extra: str) -> dict[str, Any]:
    env = tree_env(tree) | {"MEMEX_HOST": "127.0.0.1", "MEMEX_LOG_LEVEL": "warning"}
    command = [sys.executable, str(HERE / "asgi_bench.py"), "--drive", *extra]
    command += ["--requests", str(args.requests), "--concurrency", str(args.concurrency)]
    done = subprocess.run(
        command, env=env, cwd=tree.path, capture_output=True, text=True, timeout=900
    )
    if done.returncode != 0:
        raise RuntimeError(f"{tree.ref}: {done.stderr[-3000:]}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def _compare(args: argparse.Namespace) -> int:
    facts = machine_facts()
    facts["loadavg_at_start"] = " ".join(f"{x:.2f}" for x in os.getloadavg())
    print_header(facts)
    scratch = Path(tempfile.mkdtemp(prefix="memexdb-asgi-", dir="/var/tmp"))
    results: dict[str, list[dict[str, Any]]] = {}
    try:
        trees = extract_trees(args.refs, scratch)
        for tree in trees:
            results[tree.ref] = []
            log(f"{tree.ref}: {tree.commit}")
        with embedded_server("asgi") as server:
            for i, tree in enumerate(trees):
                with embedded_connection(server.dsn) as conn:
                    conn.execute(f"create database asgi_{i}")
                tree.dsn = make_conninfo(server.dsn, dbname=f"asgi_{i}")
                migrate(tree)
                _run_tree(tree, args, "--seed")
            for n in range(args.rounds):
                for tree in trees[n % len(trees) :] + trees[: n % len(trees)]:
                    extra = ["--round", str(n + 1)]
                    if args.profile:  # py-spy's folded stacks of each measured window
                        name = f"{trees.index(tree)}-{n + 1}.txt"
                        extra += ["--profile", str(Path(args.profile).resolve() / name)]
                    r = _run_tree(tree, args, *extra)
                    r["load"] = os.getloadavg()[0]
                    results[tree.ref].append(r)
                    log(
                        f"round {n + 1} {tree.ref}: {r['cpu_ms_per_request']:.3f} ms/req,"
                        f" {r['rps']:.0f} req/s, {r['failures']} failures, load {r['load']:.1f}"
                    )
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    first = statistics.median(r["cpu_ms_per_request"] for r in results[args.refs[0]])
    print()
    print("| ref | CPU ms/req (median) | each round | vs first | req/s (median) | failures |")
    print("|---|---:|---|---:|---:|---:|")
    for tree in trees:
        rows = results[tree.ref]
        cpu = [r["cpu_ms_per_request"] for r in rows]
        print(
            f"| {tree.ref} `{tree.commit}` | {statistics.median(cpu):.3f}"
            f" | {', '.join(f'{c:.3f}' for c in cpu)}"
            f" | {statistics.median(cpu) / first:.3f}"
            f" | {statistics.median(r['rps'] for r in rows):.0f}"
            f" | {sum(r['failures'] for r in rows)} |"
        )
    return 0


def embedded_connection(dsn: str) -> Any:
    import psycopg

    return psycopg.connect(dsn, autocommit=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--refs", type=lambda s: s.split(","), default=["integ", "."])
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--requests", type=int, default=3000)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--profile", help="a folder for py-spy's folded stacks of each window")
    parser.add_argument("--drive", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--seed", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--round", type=int, default=1, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.drive:
        print(json.dumps(asyncio.run(_drive(args))))
        return 0
    return _compare(args)


if __name__ == "__main__":
    run_main(main)
