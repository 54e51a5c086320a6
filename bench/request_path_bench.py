"""The Postgres side of memex's workload alone (issue 39 item 1): backend CPU per request
when the SQL is sent as the service sends it, with no service and no HTTP.

Each request is the service's pipeline on one connection as memex_app, keyless:
`memex._enter(null)` and the call, in the pipeline's implicit transaction (one Sync):
3 searches (top_k 5, alpha 0.7, a reference query) to 1 store (a reference text,
episodic or semantic, importance 0.5-1.5), on a random one of the 20 x 10 tenants of
bench/load_workload.py, seeded with its 1,000 memories. Vectors are MiniLM's for the
reference texts, embedded once.

Two (or more) databases on one embedded server, each migrated by the tree of a git ref
(`--refs`, `.` = the working tree as it is; extracted as bench/load_ab_refs.py does),
rounds interleaved between them, the order rotating. Per ref: the backend's CPU (utime +
stime from /proc) per request, search and store apart, over each round; with
`--function-stats`, memex.* functions' self and total time per request (track_functions).
With `--interleave`, every request runs on each ref in turn (the order rotating request by
request) and is timed by /proc/<pid>/schedstat (nanoseconds, not clock ticks): on a
shared machine the refs then see the same load at the same moment, where whole rounds of
thousands of requests moved 10-20 % between rounds.

    python bench/request_path_bench.py --refs integ,.                 # ~2 min
    python bench/request_path_bench.py --refs 37a7040,integ,. --requests 4000 --rounds 5
    python bench/request_path_bench.py --refs integ,. --requests 1500 --rounds 4 --interleave
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import psycopg
from harness import embedded_server, log, print_header, run_main, write_json
from load_ab_refs import Tree, extract, migrate, resolve
from load_workload import (
    AGENTS,
    ALPHA,
    REFERENCE_MEMORIES,
    REFERENCE_QUERIES,
    TOP_K,
    USERS_PER_AGENT,
    seed_memories,
)
from machine import machine_facts
from pgvector.psycopg import register_vector
from psycopg.conninfo import make_conninfo

ENTER = "select memex._enter(p_token => %(key)s, p_require_key => %(require_key)s)"
# the calls as memexdb/memories/calls.py sends them for these requests (the parameters
# the workload's requests give; the others take their SQL defaults)
SEARCH = (
    "select * from memex.search(p_agent_id => %(agent_id)s, p_user_id => %(user_id)s,"
    " p_query_embedding => %(query_embedding)s, p_top_k => %(top_k)s,"
    " p_alpha => %(alpha)s, p_query_text => %(query_text)s)"
)
STORE = (
    "select * from memex.store(p_agent_id => %(agent_id)s, p_user_id => %(user_id)s,"
    " p_content => %(content)s, p_embedding => %(embedding)s,"
    " p_embedding_model => %(embedding_model)s,"
    " p_memory_type => %(memory_type)s::text::memex.memory_type,"
    " p_importance => %(importance)s, p_metadata => %(metadata)s)"
)
MODEL = "minilm"


def _cpu_s(pid: int) -> float:
    """utime + stime of a process, in seconds."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _schedstat_s(pid: int) -> float:
    """The time a process has run on a CPU, in seconds (nanosecond resolution)."""
    return int(Path(f"/proc/{pid}/schedstat").read_text().split()[0]) / 1e9


def _app(dsn: str) -> psycopg.Connection[Any]:
    """A connection as the service's: autocommit, acting as memex_app, prepared at once."""
    conn = psycopg.connect(dsn, autocommit=True, prepare_threshold=0)
    register_vector(conn)
    conn.execute("select set_config('role', 'memex_app', false)")
    return conn


def _request(conn: psycopg.Connection[Any], sql: str, values: dict[str, Any]) -> int:
    """The service's request: the entry and the call in one pipeline (one transaction)."""
    with conn.pipeline():
        conn.execute(ENTER, {"key": None, "require_key": False})
        cur = conn.execute(sql, values)
    return len(cur.fetchall())


def _embed(texts: tuple[str, ...]) -> dict[str, np.ndarray]:
    from memexdb.embedding import build_embedder

    embedder = build_embedder(MODEL)
    return {
        t: np.asarray(v, dtype=np.float32)
        for t, v in zip(texts, embedder.embed(list(texts)), strict=True)
    }


def search_values(
    agent: str, user: str, query: str, vectors: dict[str, np.ndarray]
) -> dict[str, Any]:
    """SEARCH's values for memex's request (top_k 5, alpha 0.7) of `query`."""
    return {
        "agent_id": agent,
        "user_id": user,
        "query_embedding": vectors[query],
        "top_k": TOP_K,
        "alpha": ALPHA,
        "query_text": query,
    }


def _workload(
    rng: random.Random, n: int, vectors: dict[str, np.ndarray]
) -> list[tuple[str, str, dict[str, Any]]]:
    out = []
    for _ in range(n):
        agent, user = f"agent-{rng.randrange(AGENTS)}", f"user-{rng.randrange(USERS_PER_AGENT)}"
        if rng.randrange(4) < 3:
            q = rng.choice(REFERENCE_QUERIES)
            values = search_values(agent, user, q, vectors)
            out.append(("search", SEARCH, values))
        else:
            text = rng.choice(REFERENCE_MEMORIES)
            values = {
                "agent_id": agent,
                "user_id": user,
                "content": text,
                "embedding": vectors[text],
                "embedding_model": MODEL,
                "memory_type": rng.choice(("episodic", "semantic")),
                "importance": round(rng.uniform(0.5, 1.5), 3),
                "metadata": "{}",
            }
            out.append(("store", STORE, values))
    return out


def _functions(dsn: str) -> dict[str, tuple[int, float, float]]:
    with psycopg.connect(dsn, autocommit=True) as conn:
        rows = conn.execute(
            "select funcname, calls, total_time, self_time from pg_stat_user_functions"
            " where schemaname = 'memex'"
        ).fetchall()
    return {r[0]: (int(r[1]), float(r[2]), float(r[3])) for r in rows}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--refs", default="integ,.", help="git refs, `.` the working tree")
    parser.add_argument("--requests", type=int, default=2000, help="per ref and round")
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--function-stats", action="store_true")
    parser.add_argument(
        "--interleave",
        action="store_true",
        help="each request on every ref in turn (the order rotating), timed by the"
        " backend's schedstat: the refs share the machine's state request by request",
    )
    parser.add_argument("--out", type=Path, default=Path("bench/out"))
    args = parser.parse_args()
    if not 1 <= args.rounds <= 20 or not 100 <= args.requests <= 50_000:
        parser.error("--rounds 1-20, --requests 100-50000")
    refs = [r for r in args.refs.split(",") if r]
    command = print_header(machine_facts())
    rng = random.Random(39)
    vectors = _embed(REFERENCE_MEMORIES + REFERENCE_QUERIES)
    kinds = ("search", "store")
    cpu: dict[str, dict[str, list[float]]] = {r: {k: [] for k in ("all", *kinds)} for r in refs}
    wall: dict[str, list[float]] = {r: [] for r in refs}
    scratch = Path(tempfile.mkdtemp(prefix="memexdb-request-path-", dir="/var/tmp"))
    trees = []
    try:
        for i, ref in enumerate(refs):
            tree = Tree(ref, resolve(ref), scratch / f"tree{i}")
            extract(ref, tree.path)
            trees.append(tree)
            log(f"{ref}: {tree.commit}")
        with embedded_server("request-path") as srv:
            conns: dict[str, psycopg.Connection[Any]] = {}
            for i, tree in enumerate(trees):
                with psycopg.connect(srv.dsn, autocommit=True) as admin:
                    admin.execute(f"create database rp_{i}")
                    if args.function_stats:
                        admin.execute(f"alter database rp_{i} set track_functions = 'all'")
                tree.dsn = make_conninfo(srv.dsn, dbname=f"rp_{i}")
                migrate(tree)
                app = _app(tree.dsn)
                for body in seed_memories(random.Random(42)):
                    text = str(body["content"])
                    _request(
                        app,
                        STORE,
                        {
                            **body,
                            "embedding": vectors[text],
                            "embedding_model": MODEL,
                            "metadata": "{}",
                        },
                    )
                with psycopg.connect(tree.dsn, autocommit=True) as admin:
                    admin.execute("vacuum analyze")
                app.close()
                conns[tree.ref] = _app(tree.dsn)
            pids = {r: c.execute("select pg_backend_pid()").fetchone()[0] for r, c in conns.items()}  # type: ignore[index]
            before: dict[str, Any] = {}
            clock = _schedstat_s if args.interleave else _cpu_s
            # this round's CPU, wall time and requests per ref and kind (reset each round)
            spent = {t.ref: dict.fromkeys(kinds, 0.0) for t in trees}
            count = {t.ref: dict.fromkeys(kinds, 0) for t in trees}
            elapsed = dict.fromkeys(spent, 0.0)

            def run(tree: Tree, kind: str, sql: str, values: dict[str, Any]) -> None:
                pid = pids[tree.ref]
                c0, w0 = clock(pid), time.perf_counter()
                _request(conns[tree.ref], sql, values)
                spent[tree.ref][kind] += clock(pid) - c0
                elapsed[tree.ref] += time.perf_counter() - w0
                count[tree.ref][kind] += 1

            for n in range(args.rounds + 1):  # round 0 warms up (plans, caches)
                work = _workload(rng, args.requests, vectors)
                order = trees[n % len(trees) :] + trees[: n % len(trees)]
                for t in trees:
                    spent[t.ref] = dict.fromkeys(kinds, 0.0)
                    count[t.ref] = dict.fromkeys(kinds, 0)
                    elapsed[t.ref] = 0.0
                if args.interleave:  # request by request, the refs' order rotating
                    for i, (kind, sql, values) in enumerate(work):
                        for tree in order[i % len(order) :] + order[: i % len(order)]:
                            run(tree, kind, sql, values)
                else:  # the round's requests on one ref, then on the next
                    for tree in order:
                        for kind, sql, values in work:
                            run(tree, kind, sql, values)
                for tree in order:
                    if n == 0:
                        continue
                    total = sum(spent[tree.ref].values())
                    cpu[tree.ref]["all"].append(total * 1000 / args.requests)
                    for k in kinds:
                        cpu[tree.ref][k].append(
                            spent[tree.ref][k] * 1000 / max(count[tree.ref][k], 1)
                        )
                    wall[tree.ref].append(elapsed[tree.ref] * 1000 / args.requests)
                    log(f"round {n}: {tree.ref} {total * 1000 / args.requests:.3f} ms CPU/request")
                if n == 0 and args.function_stats:
                    for tree in trees:  # flush this backend's stats: a new one from here
                        conns[tree.ref].close()
                        conns[tree.ref] = _app(tree.dsn)
                        pids[tree.ref] = (
                            conns[tree.ref].execute("select pg_backend_pid()").fetchone()[0]
                        )  # type: ignore[index]
                    time.sleep(1.5)
                    before = {t.ref: _functions(t.dsn) for t in trees}
            after: dict[str, Any] = {}
            if args.function_stats:
                for c in conns.values():
                    c.close()
                time.sleep(1.5)
                after = {t.ref: _functions(t.dsn) for t in trees}
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    print()
    print(
        "| ref | backend CPU ms/request (median; each round) | search | store"
        " | client wall ms/request |"
    )
    print("|---|---:|---:|---:|---:|")
    for t in trees:
        c = cpu[t.ref]
        each = ", ".join(f"{x:.3f}" for x in c["all"])
        print(
            f"| {t.ref} (`{t.commit}`) | {statistics.median(c['all']):.3f} ({each})"
            f" | {statistics.median(c['search']):.3f} | {statistics.median(c['store']):.3f}"
            f" | {statistics.median(wall[t.ref]):.3f} |"
        )
    if args.function_stats:
        requests = args.requests * args.rounds
        print("\n| ref | function | calls/request | total ms/request | self ms/request |")
        print("|---|---|---:|---:|---:|")
        for t in trees:
            b, a = before[t.ref], after[t.ref]
            delta = {
                k: tuple(x - y for x, y in zip(v, b.get(k, (0, 0.0, 0.0)), strict=True))
                for k, v in a.items()
            }
            for name, (calls, total, own) in sorted(delta.items(), key=lambda kv: -kv[1][2])[:12]:
                print(
                    f"| {t.ref} | {name} | {calls / requests:.2f} | {total / requests:.4f}"
                    f" | {own / requests:.4f} |"
                )
    print(f"\nload average at end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    report = {
        "command": command,
        "refs": {t.ref: t.commit for t in trees},
        "cpu_ms": cpu,
        "wall_ms": wall,
    }
    print(f"JSON: {write_json(args.out, 'request_path', report)}")
    return 0


if __name__ == "__main__":
    run_main(main)
