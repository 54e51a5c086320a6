"""Before/after of the service optimisations made for the load test, one step at a time.

    python bench/load_ab.py [--rounds 2] [--duration 20] [--users 50] [--saturation-users 64]

Same database, workload and measurements as bench/load_test.py (one user without think
time, the realistic-unique and the saturation run, the raw embedder's batch-32 rate
before and after each configuration),
for each service configuration below, interleaved round by round so that a neighbour
loading the machine for a while hits every configuration alike:

  key        configuration
  before     asyncio + h11, 2 ONNX threads, 2 ms batching wait (the first defaults)
  uvloop     + uvloop/httptools
  nowait     + no batching wait
  1thread    + 1 ONNX thread
  ann-all    2 workers, every tenant in the ANN index (revision 0004: each store also
             inserts into HNSW), the pool checks every connection it hands out
  ann-large  + only tenants past exact_scan_max_rows in the ANN index (revision 0005)
  now        + the pool checks only connections idle for 2 s (the service as it ships)

--configs picks some (default: all). The old settings are put back by bench/load_app.py
and, for ann-all, by moving every tenant into the ANN index (memex.index_tenant) before
the service starts. Prints medians over the rounds and writes every round to
bench/out/load_ab-*.json.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import os
import random
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
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
    EMBED_BATCH,
    RunSpec,
    Service,
    embedder_rate,
    postmaster_pid,
    run_locust,
    seed,
    stack_facts,
)
from machine import machine_facts

from memexdb.embedded import EmbeddedPostgres

ASYNCIO = ("--loop", "asyncio", "--http", "h11")
UVLOOP = ("--loop", "uvloop", "--http", "httptools")


@dataclass(frozen=True)
class Config:
    key: str
    name: str
    uvicorn: tuple[str, ...]
    env: dict[str, str] = field(default_factory=dict)
    workers: int = 1
    ann_all: bool = False  # every tenant in the ANN index, as before revision 0005


OLD_POOL = {"LOADTEST_POOL_CHECK": "always"}
CONFIGS = (
    Config(
        "before",
        "before",
        ASYNCIO,
        {"LOADTEST_ONNX_THREADS": "2", "LOADTEST_MAX_WAIT_MS": "2", **OLD_POOL},
        ann_all=True,
    ),
    Config(
        "uvloop",
        "+ uvloop/httptools",
        UVLOOP,
        {"LOADTEST_ONNX_THREADS": "2", "LOADTEST_MAX_WAIT_MS": "2", **OLD_POOL},
        ann_all=True,
    ),
    Config(
        "nowait",
        "+ no batching wait",
        UVLOOP,
        {"LOADTEST_ONNX_THREADS": "2", **OLD_POOL},
        ann_all=True,
    ),
    Config("1thread", "+ 1 ONNX thread", UVLOOP, OLD_POOL, ann_all=True),
    Config("ann-all", "2 workers, all tenants in the ANN index", UVLOOP, OLD_POOL, 2, True),
    Config("ann-large", "+ only large tenants in the ANN index", UVLOOP, OLD_POOL, 2),
    Config("now", "+ pool checks idle connections only (now)", UVLOOP, workers=2),
)


def set_ann_tenants(server: EmbeddedPostgres, everyone: bool) -> None:
    """Every tenant in the ANN index (memex.index_tenant), or only those memex.maintenance
    would move in (none here: the workload's tenants stay far below the threshold)."""
    with psycopg.connect(server.dsn, autocommit=True) as conn:
        if everyone:
            conn.execute("select memex.index_tenant(agent_id, user_id) from memex.tenants")
        else:
            conn.execute("update memex.tenants set ann = false where ann")
            conn.execute("update memex.memories set ann = false where ann")
            conn.execute("select memex.maintenance()")
        conn.execute("vacuum analyze memex.memories")


@contextlib.contextmanager
def service(server: EmbeddedPostgres, config: Config, log_path: Path) -> Iterator[Service]:
    """bench/load_app.py under uvicorn, as `memexdb serve` runs the service app."""
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMEX_", "LOADTEST_"))}
    env |= {"MEMEX_DATABASE_URL": server.dsn, "PYTHONPATH": str(BENCH), **config.env}
    args = [sys.executable, "-m", "uvicorn", "load_app:app", "--factory", "--app-dir", str(BENCH)]
    args += ["--host", "127.0.0.1", "--port", str(port), "--workers", str(config.workers)]
    args += ["--log-level", "warning", "--timeout-keep-alive", "65", *config.uvicorn]
    with log_path.open("w") as out:
        proc = subprocess.Popen(args, env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=out)
    svc = Service(f"http://127.0.0.1:{port}", proc, log_path)
    try:
        wait_healthy(svc.url, proc, log_path)
        yield svc
    finally:
        stop_process(proc)


def one_round(
    server: EmbeddedPostgres, config: Config, args: argparse.Namespace, rng: random.Random
) -> dict[str, Any]:
    workdir = server.data_dir.parent
    set_ann_tenants(server, config.ann_all)
    with service(server, config, workdir / "service.log") as svc:
        before = embedder_rate(EMBED_BATCH, args.embedder_seconds, rng)
        pids = {"service": svc.proc.pid, "postgres": postmaster_pid(server)}
        runs: dict[str, dict[str, Any]] = {}
        for spec in (
            RunSpec("one user", 1, "unique", (0.0, 0.0)),
            RunSpec("realistic-unique", args.users, "unique", (0.1, 0.3)),
            RunSpec("saturation", args.saturation_users, "unique", (0.0, 0.0)),
        ):
            result = run_locust(spec, svc, pids, args, workdir, 0)
            total = result.endpoints[-1]
            runs[spec.name] = {
                "embedding_rps": result.embedding_rps,
                "p50_ms": total.p50_ms,
                "p99_ms": total.p99_ms,
                "failures": total.failures,
                "cpu_ms_per_request": {
                    label: cores * 1000 / total.rps for label, cores in result.cores.items()
                },
                "cores": result.cores,
            }
        after = embedder_rate(EMBED_BATCH, args.embedder_seconds, rng)
    raw = max(before.texts_per_s, after.texts_per_s)
    for run in runs.values():
        run["ratio"] = run["embedding_rps"] / raw
    return {
        "config": config.name,
        "raw_texts_per_s": [before.texts_per_s, after.texts_per_s],
        "runs": runs,
    }


def table(rounds: list[dict[str, Any]]) -> str:
    def med(values: list[float]) -> float:
        return statistics.median(values)

    lines = [
        "| configuration | run | embedding req/s | ratio to raw | p50 ms | p99 ms"
        " | service CPU ms/req | postgres CPU ms/req | load gen. CPU ms/req"
        " | rest of machine (cores) | failures |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for config in CONFIGS:
        mine = [r for r in rounds if r["config"] == config.name]
        if not mine:
            continue
        for run in ("one user", "realistic-unique", "saturation"):
            rs = [r["runs"][run] for r in mine]
            if not rs:
                continue
            cpu = [r["cpu_ms_per_request"] for r in rs]
            lines.append(
                f"| {config.name} | {run} | {med([r['embedding_rps'] for r in rs]):.1f}"
                f" | {med([r['ratio'] for r in rs]):.2f} | {med([r['p50_ms'] for r in rs]):.1f}"
                f" | {med([r['p99_ms'] for r in rs]):.1f} | {med([c['service'] for c in cpu]):.2f}"
                f" | {med([c['postgres'] for c in cpu]):.2f}"
                f" | {med([c['load generator'] for c in cpu]):.2f}"
                f" | {med([r['cores']['rest of machine'] for r in rs]):.2f}"
                f" | {sum(r['failures'] for r in rs)} |"
            )
    return "\n".join(lines)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=2, help="rounds over all configurations")
    parser.add_argument("--duration", type=float, default=20, help="measured seconds per run")
    parser.add_argument("--warmup", type=float, default=3, help="unmeasured seconds per run")
    parser.add_argument("--users", type=int, default=50)
    parser.add_argument("--saturation-users", type=int, default=64)
    parser.add_argument("--embedder-seconds", type=float, default=5)
    parser.add_argument("--out", type=Path, default=BENCH / "out")
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument(
        "--configs",
        default=",".join(c.key for c in CONFIGS),
        help="comma-separated configuration keys (see above)",
    )
    args = parser.parse_args(argv)
    keys = [c.key for c in CONFIGS]
    args.configs = [k for k in args.configs.split(",") if k]
    if not args.configs or any(k not in keys for k in args.configs):
        parser.error(f"--configs takes a comma-separated subset of {','.join(keys)}")
    if importlib.util.find_spec("locust") is None:
        parser.error('locust is not installed: pip install -e ".[bench]"')
    if not 1 <= args.rounds <= 20 or not 1 <= args.duration <= 600:
        parser.error("--rounds must be 1-20 and --duration 1-600 s")
    if not 1 <= args.users <= 2000 or not 1 <= args.saturation_users <= 2000:
        parser.error("user counts must be 1-2000")
    if not 1 <= args.embedder_seconds <= 120 or not 0 <= args.warmup <= 60:
        parser.error("--embedder-seconds must be 1-120 s and --warmup 0-60 s")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    started = time.perf_counter()
    facts = {**machine_facts(), **stack_facts(1)}
    facts["loadavg_at_start"] = " ".join(f"{x:.2f}" for x in os.getloadavg())
    command = print_header(facts)
    rng = random.Random(args.seed)
    rounds: list[dict[str, Any]] = []
    with embedded_server("load") as server:
        with service(server, CONFIGS[-1], server.data_dir.parent / "seed.log") as svc:
            seed(svc.url, rng)
        chosen = [c for c in CONFIGS if c.key in args.configs]
        for i in range(args.rounds):
            for config in chosen:
                log(f"round {i + 1}/{args.rounds}: {config.name}")
                rounds.append({"round": i + 1, **one_round(server, config, args, rng)})
                sat = rounds[-1]["runs"]["saturation"]
                log(f"  saturation {sat['embedding_rps']:.1f} req/s, ratio {sat['ratio']:.2f}")
    print()
    print(table(rounds))
    print(
        f"\nmedians over {args.rounds} round(s);"
        f" total runtime {time.perf_counter() - started:.0f} s"
    )
    report = {
        "command": command,
        "machine": facts,
        "config": {k: v for k, v in vars(args).items() if k != "out"},
        "rounds": rounds,
    }
    print(f"JSON: {write_json(args.out, 'load_ab', report)}")
    return 0


if __name__ == "__main__":
    run_main(main)
