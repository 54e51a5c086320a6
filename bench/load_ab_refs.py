"""The memex reference workload against the service of several git commits, interleaved.

    python bench/load_ab_refs.py --refs 2cfbf88,37a7040,HEAD [--rounds 3] [--duration 20]
                                 [--users 64] [--runs saturation-memex,saturation]
                                 [--workers 2]

Each ref (a commit, a branch, HEAD, or `.` for the working tree as it is, uncommitted
changes included) is extracted with `git archive` into a folder of its own and gets its
own database, migrated by that tree's own code, on one private embedded PostgreSQL. Its
service is that tree's `memexdb serve --workers N` (run with PYTHONPATH=<tree>, on this
virtualenv's installed dependencies), seeded like bench/load_test.py (1,000 memories over
20 agents x 10 users). Then, round after round, every ref in turn (the order rotates each
round, so that no ref always follows the same one) runs the same Locust runs of
bench/locustfile.py (this tree's, for every ref): `saturation-memex` (the reference's
repeated texts without think time: the embedding cache makes embedding near-free, so it
shows the cost of everything else in a request) and `saturation` (unique texts: every
request embeds one). Only one service is loaded at a time; the others sit idle.

Prints, per ref and run, the median over rounds of req/s, p50, p99, failures and the CPU
per request of the service, Postgres and the load generator, each ref's ratio to the
first ref's median, the load average, and the requests per second the machine's cores
would serve at the run's CPU per request (cores / (service + Postgres + load generator
CPU ms per request): derived, not measured, but less at the mercy of what else runs on a
shared machine than req/s); writes every round to bench/out/load_ab_refs-*.json.
With --function-stats, each database times every memex.* function call (track_functions)
and a second table gives, per ref, the transactions and the costliest functions per
request (one request calls memex.search or memex.store once).
On a shared machine only ratios within one run count.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
from harness import (
    embedded_server,
    free_port,
    log,
    print_header,
    run_main,
    stop_process,
    wait_healthy,
    write_json,
)
from load_test import (
    BENCH,
    REPO,
    RunSpec,
    Service,
    postmaster_pid,
    run_locust,
    seed,
    stack_facts,
)
from machine import machine_facts
from psycopg.conninfo import make_conninfo

RUNS = ("saturation-memex", "saturation", "realistic-unique")
# The functions each request of the workload calls once: what per request divides by.
REQUEST_FUNCTIONS = ("search", "store")
FUNCTION_STATS = """
select f.schemaname || '.' || f.funcname, f.calls, f.total_time, f.self_time
from pg_stat_user_functions f where f.schemaname = 'memex'
"""


@dataclass
class Tree:
    ref: str  # as given
    commit: str  # what it resolved to ("." + HEAD's hash for the working tree)
    path: Path
    dsn: str = ""


def resolve(ref: str) -> str:
    if ref == ".":
        head = subprocess.run(
            ["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        return f"{head}+working tree"
    return subprocess.run(
        ["git", "-C", str(REPO), "rev-parse", "--short", f"{ref}^{{commit}}"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()


def extract_trees(refs: list[str], scratch: Path) -> list[Tree]:
    """Each ref resolved and extracted into scratch/tree<i>, in the order given."""
    trees = []
    for i, ref in enumerate(refs):
        tree = Tree(ref, resolve(ref), scratch / f"tree{i}")
        extract(ref, tree.path)
        trees.append(tree)
    return trees


def extract(ref: str, into: Path) -> None:
    """The files of `ref` (git archive; `.`: the working tree's tracked files as they are
    on disk) in `into`."""
    into.mkdir(parents=True)
    if ref == ".":
        files = subprocess.run(
            ["git", "-C", str(REPO), "ls-files", "-z", "-co", "--exclude-standard"],
            capture_output=True,
            check=True,
        ).stdout.split(b"\0")
        for name in filter(None, files):
            src = REPO / name.decode()
            if src.is_file():
                dst = into / name.decode()
                dst.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(src, dst)
        return
    archive = subprocess.run(
        ["git", "-C", str(REPO), "archive", "--format=tar", ref], capture_output=True, check=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)


def tree_env(tree: Tree) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMEX_", "LOADTEST_"))}
    return env | {"PYTHONPATH": str(tree.path), "MEMEX_DATABASE_URL": tree.dsn}


def migrate(tree: Tree) -> None:
    """The tree's own migrations (alembic revisions and SQL functions) on its database."""
    code = "import memexdb, os; memexdb.migrate(os.environ['MEMEX_DATABASE_URL'])"
    subprocess.run(
        [sys.executable, "-c", code], env=tree_env(tree), cwd=tree.path, check=True, timeout=600
    )


@contextlib.contextmanager
def service(tree: Tree, workers: int, log_path: Path) -> Iterator[Service]:
    """The tree's `memexdb serve` on a free loopback port; stopped (by pid) on exit."""
    port = free_port()
    args = [sys.executable, "-m", "memexdb.cli", "serve", "--host", "127.0.0.1"]
    args += ["--port", str(port), "--workers", str(workers), "--log-level", "warning"]
    with log_path.open("w") as out:
        proc = subprocess.Popen(
            args,
            env=tree_env(tree),
            cwd=tree.path,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=out,
        )
    svc = Service(f"http://127.0.0.1:{port}", proc, log_path)
    try:
        wait_healthy(svc.url, proc, log_path)
        yield svc
    finally:
        stop_process(proc)


def run_specs(args: argparse.Namespace) -> list[RunSpec]:
    every = {
        "saturation-memex": RunSpec("saturation-memex", args.users, "reference", (0.0, 0.0)),
        "saturation": RunSpec("saturation", args.users, "unique", (0.0, 0.0)),
        "realistic-unique": RunSpec("realistic-unique", 50, "unique", (0.1, 0.3)),
    }
    return [every[name] for name in args.runs]


def function_stats(dsn: str) -> dict[str, Any]:
    """Calls and milliseconds of every memex.* function (track_functions = 'all'), and the
    database's transactions, as this database's statistics hold them now."""
    time.sleep(1.5)  # backends flush their statistics about once a second
    with psycopg.connect(dsn, autocommit=True) as conn:
        funcs = {
            name: (calls, total, own)
            for name, calls, total, own in conn.execute(FUNCTION_STATS).fetchall()
        }
        row = conn.execute(
            "select xact_commit + xact_rollback from pg_stat_database"
            " where datname = current_database()"
        ).fetchone()
    return {"functions": funcs, "transactions": row[0] if row else 0}


def function_table(trees: list[Tree], before: dict[str, Any], after: dict[str, Any]) -> str:
    """Per ref: transactions and the costliest memex.* functions per request (one request
    calls memex.search or memex.store once)."""
    lines = [
        "| ref | requests (search + store calls) | transactions/request | function"
        " | calls/request | total ms/request | own ms/request |",
        "|---|---:|---:|---|---:|---:|---:|",
    ]
    for tree in trees:
        b, a = before[tree.ref], after[tree.ref]
        delta = {
            name: tuple(
                x - y for x, y in zip(v, b["functions"].get(name, (0, 0.0, 0.0)), strict=True)
            )
            for name, v in a["functions"].items()
        }
        requests = sum(delta.get(f"memex.{f}", (0, 0.0, 0.0))[0] for f in REQUEST_FUNCTIONS)
        if not requests:
            continue
        xacts = (a["transactions"] - b["transactions"]) / requests
        top = sorted(delta.items(), key=lambda kv: -kv[1][1])[:10]
        for name, (calls, total, own) in top:
            lines.append(
                f"| {tree.ref} | {requests:,} | {xacts:.2f} | {name} | {calls / requests:.2f}"
                f" | {total / requests:.3f} | {own / requests:.3f} |"
            )
    return "\n".join(lines)


def capacity(cpu_ms: dict[str, float]) -> float:
    """The requests per second this machine's cores would serve if the service, Postgres
    and the load generator had them to themselves: cores / their CPU per request. Derived,
    not measured: on a shared machine it is what the run's own CPU use says."""
    used = sum(cpu_ms.get(label, 0.0) for label in ("service", "postgres", "load generator"))
    return (os.cpu_count() or 1) * 1000 / used if used else float("nan")


def summary(rounds: list[dict[str, Any]], trees: list[Tree], runs: list[str]) -> str:
    def med(values: list[float]) -> float:
        return statistics.median(values) if values else float("nan")

    lines = [
        "| ref | run | rounds | req/s (median) | req/s each round | vs first ref | p50 ms"
        " | p99 ms | service CPU ms/req | postgres CPU ms/req | load gen. CPU ms/req"
        " | CPU-bound req/s (derived) | rest of machine (cores) | load 1m | failures |",
        "|---|---|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|",
    ]
    base: dict[str, float] = {}
    for tree in trees:
        for run in runs:
            rs = [r for r in rounds if r["ref"] == tree.ref and r["run"] == run]
            if not rs:
                continue
            rps = med([r["rps"] for r in rs])
            base.setdefault(run, rps)
            cpu = [r["cpu_ms_per_request"] for r in rs]
            loads = ", ".join(f"{r['loadavg_1m'][0]:.1f}" for r in rs)
            each = ", ".join(f"{r['rps']:.0f}" for r in rs)
            lines.append(
                f"| {tree.ref} (`{tree.commit}`) | {run} | {len(rs)} | {rps:.1f}"
                f" | {each} | {rps / base[run]:.2f}x"
                f" | {med([r['p50_ms'] for r in rs]):.1f} | {med([r['p99_ms'] for r in rs]):.1f}"
                f" | {med([c.get('service', 0.0) for c in cpu]):.2f}"
                f" | {med([c.get('postgres', 0.0) for c in cpu]):.2f}"
                f" | {med([c.get('load generator', 0.0) for c in cpu]):.2f}"
                f" | {med([capacity(c) for c in cpu]):.0f}"
                f" | {med([r['cores']['rest of machine'] for r in rs]):.2f}"
                f" | {loads} | {sum(r['failures'] for r in rs)} |"
            )
    return "\n".join(lines)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--refs",
        required=True,
        help="comma-separated git refs (`.`: the working tree); the first is the baseline",
    )
    parser.add_argument("--rounds", type=int, default=3, help="rounds over all refs")
    parser.add_argument("--duration", type=float, default=20, help="measured seconds per run")
    parser.add_argument("--warmup", type=float, default=5, help="unmeasured seconds per run")
    parser.add_argument("--users", type=int, default=64, help="Locust users of saturation runs")
    parser.add_argument("--workers", type=int, default=2, help="memexdb serve --workers")
    parser.add_argument(
        "--runs", default="saturation-memex,saturation", help=f"subset of {','.join(RUNS)}"
    )
    parser.add_argument(
        "--function-stats",
        action="store_true",
        help="time every memex.* function call (track_functions = 'all') and print the"
        " costliest per request",
    )
    parser.add_argument("--out", type=Path, default=BENCH / "out")
    parser.add_argument("--seed", type=int, default=42)
    args = parser.parse_args(argv)
    args.refs = [r for r in args.refs.split(",") if r]
    args.runs = [r for r in args.runs.split(",") if r]
    if not args.refs or len(set(args.refs)) != len(args.refs):
        parser.error("--refs takes distinct comma-separated refs")
    if not args.runs or any(r not in RUNS for r in args.runs):
        parser.error(f"--runs takes a comma-separated subset of {','.join(RUNS)}")
    if importlib.util.find_spec("locust") is None:
        parser.error('locust is not installed: pip install -e ".[bench]"')
    if not 1 <= args.rounds <= 20 or not 1 <= args.duration <= 600:
        parser.error("--rounds must be 1-20 and --duration 1-600 s")
    if not 1 <= args.users <= 2000 or not 1 <= args.workers <= 16:
        parser.error("--users must be 1-2000 and --workers 1-16")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    started = time.perf_counter()
    facts = {**machine_facts(), **stack_facts(args.workers)}
    facts["loadavg_at_start"] = " ".join(f"{x:.2f}" for x in os.getloadavg())
    command = print_header(facts)
    rng = random.Random(args.seed)
    specs = run_specs(args)
    rounds: list[dict[str, Any]] = []
    stats_before: dict[str, Any] = {}
    stats_after: dict[str, Any] = {}
    scratch = Path(tempfile.mkdtemp(prefix="memexdb-ab-refs-", dir="/var/tmp"))
    try:
        trees = extract_trees(args.refs, scratch)
        for tree in trees:
            log(f"{tree.ref}: {tree.commit} in {tree.path}")
        with embedded_server("ab-refs") as server:
            workdir = server.data_dir.parent
            # every ref's service stays up with its pools (2 workers x 10 connections, and
            # their jobs'): more than the embedded server's 100 connections for 4 refs
            with psycopg.connect(server.dsn, autocommit=True) as conn:
                wanted = max(100, 40 + 16 * args.workers * len(trees))
                conn.execute(f"alter system set max_connections = {wanted}")
            server.stop()
            server.start()
            for i, tree in enumerate(trees):
                with psycopg.connect(server.dsn, autocommit=True) as conn:
                    conn.execute(f"create database ab_{i}")
                    if args.function_stats:  # each function call timed (a small cost)
                        conn.execute(f"alter database ab_{i} set track_functions = 'all'")
                tree.dsn = make_conninfo(server.dsn, dbname=f"ab_{i}")
                migrate(tree)
            with contextlib.ExitStack() as stack:
                services = {}
                for i, tree in enumerate(trees):
                    svc = stack.enter_context(
                        service(tree, args.workers, workdir / f"service-{i}.log")
                    )
                    seconds = seed(svc.url, rng)
                    log(f"{tree.ref}: serving at {svc.url}, seeded in {seconds:.1f} s")
                    services[tree.ref] = svc
                if args.function_stats:
                    stats_before = {tree.ref: function_stats(tree.dsn) for tree in trees}
                for n in range(args.rounds):
                    order = trees[n % len(trees) :] + trees[: n % len(trees)]
                    for tree in order:
                        svc = services[tree.ref]
                        pids = {"service": svc.proc.pid, "postgres": postmaster_pid(server)}
                        for spec in specs:
                            log(f"round {n + 1}/{args.rounds}: {tree.ref} {spec.name}")
                            result = run_locust(spec, svc, pids, args, workdir, 0)
                            total = result.endpoints[-1]
                            rounds.append(
                                {
                                    "round": n + 1,
                                    "ref": tree.ref,
                                    "commit": tree.commit,
                                    "run": spec.name,
                                    "users": spec.users,
                                    "rps": total.rps,
                                    "p50_ms": total.p50_ms,
                                    "p99_ms": total.p99_ms,
                                    "failures": total.failures,
                                    "failure_messages": result.failure_messages,
                                    "cores": result.cores,
                                    "cpu_ms_per_request": {
                                        label: cores * 1000 / total.rps if total.rps else 0.0
                                        for label, cores in result.cores.items()
                                    },
                                    "loadavg_1m": result.loadavg_1m,
                                }
                            )
                if args.function_stats:
                    stats_after = {tree.ref: function_stats(tree.dsn) for tree in trees}
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    print()
    print(summary(rounds, trees, args.runs))
    if args.function_stats:
        print()
        print(function_table(trees, stats_before, stats_after))
    print(
        f"\nmedians over {args.rounds} round(s) of {args.duration:g} s (+{args.warmup:g} s"
        f" warm-up) per run; total runtime {time.perf_counter() - started:.0f} s"
    )
    report = {
        "command": command,
        "machine": facts,
        "refs": {t.ref: t.commit for t in trees},
        "config": {k: v for k, v in vars(args).items() if k != "out"},
        "rounds": rounds,
        "function_stats": {"before": stats_before, "after": stats_after},
    }
    print(f"JSON: {write_json(args.out, 'load_ab_refs', report)}")
    return 0


if __name__ == "__main__":
    run_main(main)
