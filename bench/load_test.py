"""Load test: the memex reference workload replayed with Locust against the real service.

    python bench/load_test.py [--users 50] [--saturation-users 64] [--duration 60]
                              [--workers 1]
                              [--runs realistic,realistic-unique,saturation,saturation-memex]

Starts a private embedded PostgreSQL and `memexdb serve` on a free loopback port, seeds
1,000 memories over 20 agents x 10 users through POST /v1/memories/batch, measures the
raw embedder's batch-32 throughput, runs Locust headless (bench/locustfile.py) for each
run, measures the raw embedder again, then prints Markdown tables and writes JSON to
bench/out/. Everything it started is stopped and removed at the end. See
bench/README.md for what is measured and bench/RESULTS.md for the latest figures.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.metadata
import importlib.util
import json
import os
import random
import shlex
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import httpx
import numpy as np
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
from load_workload import (
    AGENTS,
    SEARCH_NAME,
    SEED_MEMORIES,
    STORE_NAME,
    USERS_PER_AGENT,
    Texts,
    seed_memories,
)
from machine import machine_facts

from memexdb.embedded import EmbeddedPostgres
from memexdb.embedding import build_embedder
from memexdb.embedding.fastembed_model import DEFAULT_THREADS
from memexdb.embedding.local_minilm import LocalMiniLM
from memexdb.runtime.embedder import EMBEDDER_THREADS

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
LOCUSTFILE = BENCH / "locustfile.py"
SEED_BATCH = 250
EMBED_BATCH = 32
EMBED_WARMUP_BATCHES = 3
LOCUST_GRACE_S = 60.0  # on top of the run time, before a hung Locust is killed
TARGET_RATIO = 0.9  # issue "Recall by default", item 6 (was 0.8)
TARGET_P99_MS = 100.0
TARGET_MEMEX_RATIO = 2.5  # saturation on the reference's repeated texts, vs the raw embedder
ALL_RUNS = ("realistic", "realistic-unique", "saturation", "saturation-memex")


# --- processes ---------------------------------------------------------------------


def postmaster_pid(server: EmbeddedPostgres) -> int:
    return int((server.pgdata / "postmaster.pid").read_text().split("\n", 1)[0])


@dataclass
class Service:
    url: str
    proc: subprocess.Popen[bytes]
    log_path: Path


@contextlib.contextmanager
def service(dsn: str, workers: int, extra_env: dict[str, str], log_path: Path) -> Iterator[Service]:
    """`memexdb serve` on a free loopback port; stopped (by pid) on exit."""
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMEX_")}
    env |= {"MEMEX_DATABASE_URL": dsn, **extra_env}
    args = [sys.executable, "-m", "memexdb.cli", "serve", "--host", "127.0.0.1"]
    args += ["--port", str(port), "--workers", str(workers), "--log-level", "warning"]
    with log_path.open("w") as out:
        proc = subprocess.Popen(args, env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=out)
    svc = Service(f"http://127.0.0.1:{port}", proc, log_path)
    try:
        wait_healthy(svc.url, proc, log_path)
        yield svc
    finally:
        stop_process(proc)


# --- seeding and the raw embedder --------------------------------------------------


def seed(url: str, rng: random.Random) -> float:
    """POST the seed memories in SEED_BATCH chunks; seconds taken."""
    memories = seed_memories(rng)
    start = time.perf_counter()
    with httpx.Client(base_url=url, timeout=120) as client:
        for lo in range(0, len(memories), SEED_BATCH):
            resp = client.post(
                "/v1/memories/batch", json={"memories": memories[lo : lo + SEED_BATCH]}
            )
            resp.raise_for_status()
    return time.perf_counter() - start


@dataclass
class EmbedderRate:
    batch: int
    onnx_threads: int
    texts: int
    seconds: float
    texts_per_s: float
    loadavg_1m: float


def embedder_rate(
    batch: int, budget_s: float, rng: random.Random, threads: int | None = None
) -> EmbedderRate:
    """Raw embedder.embed throughput on unique texts of the workload's length mix, for
    `budget_s` seconds after a few untimed batches; no service code in between. The
    embedder is build_embedder("minilm") (2 ONNX threads), or LocalMiniLM(threads=...)."""
    embedder = build_embedder("minilm") if threads is None else LocalMiniLM(threads=threads)
    texts = Texts("unique", rng, start=10_000_000)
    for _ in range(EMBED_WARMUP_BATCHES):
        embedder.embed([texts.mixed() for _ in range(batch)])
    done = 0
    elapsed = 0.0
    while elapsed < budget_s:
        chunk = [texts.mixed() for _ in range(batch)]  # built outside the timed part
        start = time.perf_counter()
        embedder.embed(chunk)
        elapsed += time.perf_counter() - start
        done += batch
    used = DEFAULT_THREADS if threads is None else threads
    return EmbedderRate(batch, used, done, elapsed, done / elapsed, os.getloadavg()[0])


def raw_rates(when: str, budget_s: float, rng: random.Random) -> dict[str, EmbedderRate]:
    """The target's baseline (build_embedder("minilm"), batch 32), then the same model
    with one ONNX thread, as each service worker runs it (for context)."""
    rates = {
        when: embedder_rate(EMBED_BATCH, budget_s, rng),
        f"{when}, 1 ONNX thread": embedder_rate(EMBED_BATCH, budget_s / 2, rng, threads=1),
    }
    log(
        f"raw embedder {when}: {rates[when].texts_per_s:.1f} texts/s"
        f" ({rates[f'{when}, 1 ONNX thread'].texts_per_s:.1f} with 1 ONNX thread)"
    )
    return rates


# --- locust runs ---------------------------------------------------------------------


@dataclass
class RunSpec:
    name: str
    users: int
    variant: str
    think: tuple[float, float]


@dataclass
class Endpoint:
    name: str
    requests: int
    failures: int
    rps: float
    p50_ms: float
    p95_ms: float
    p99_ms: float
    mean_ms: float
    max_ms: float


def endpoint(name: str, ms: Sequence[float], failures: int, window_s: float) -> Endpoint:
    if not ms:
        nan = float("nan")
        return Endpoint(name, 0, failures, 0.0, nan, nan, nan, nan, nan)
    a = np.asarray(ms, dtype=np.float64)
    p50, p95, p99 = np.percentile(a, [50, 95, 99])
    return Endpoint(
        name,
        len(a),
        failures,
        len(a) / window_s,
        float(p50),
        float(p95),
        float(p99),
        float(a.mean()),
        float(a.max()),
    )


@dataclass
class RunResult:
    spec: RunSpec
    window_s: float
    endpoints: list[Endpoint]
    failure_messages: dict[str, dict[str, int]]
    cores: dict[str, float]  # CPU seconds per window second, per process tree
    loadavg_1m: tuple[float, float]
    memories_before: int

    @property
    def embedding_rps(self) -> float:
        """Requests per second that each needed one embedding (every search and store)."""
        return sum(e.rps for e in self.endpoints if e.name in (SEARCH_NAME, STORE_NAME))


def run_locust(
    spec: RunSpec,
    svc: Service,
    pids: dict[str, int],
    args: argparse.Namespace,
    workdir: Path,
    memories_before: int,
) -> RunResult:
    record = workdir / f"{spec.name}.json"
    run_time = int(args.warmup + args.duration + 2)
    env = {
        **os.environ,
        "LOADTEST_TEXTS": spec.variant,
        "LOADTEST_THINK": f"{spec.think[0]},{spec.think[1]}",
        "LOADTEST_RECORD": str(record),
        "LOADTEST_WARMUP": str(args.warmup),
        "LOADTEST_PIDS": json.dumps(pids),
    }
    cmd = [sys.executable, "-m", "locust", "-f", str(LOCUSTFILE), "--headless"]
    cmd += ["-u", str(spec.users), "-r", str(spec.users), "-t", f"{run_time}s"]
    cmd += ["--host", svc.url, "--only-summary", "--loglevel", "WARNING", "--stop-timeout", "0"]
    log(f"{spec.name}: {shlex.join(cmd[1:])}")
    log_path = workdir / f"{spec.name}.locust.log"
    with log_path.open("w") as out:
        proc = subprocess.Popen(cmd, env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=out)
    try:
        proc.wait(timeout=run_time + LOCUST_GRACE_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=10)
        raise RuntimeError(
            f"locust did not stop in time:\n{log_path.read_text()[-3000:]}"
        ) from None
    if not record.exists():
        raise RuntimeError(
            f"locust wrote no record (rc {proc.returncode}):\n{log_path.read_text()[-3000:]}"
        )
    data = json.loads(record.read_text())
    window = float(data["window_s"])
    names = sorted(set(data["latency_ms"]) | set(data["failures"]))
    endpoints = [
        endpoint(
            n, data["latency_ms"].get(n, []), sum(data["failures"].get(n, {}).values()), window
        )
        for n in names
    ]
    every = [ms for n in names for ms in data["latency_ms"].get(n, [])]
    failed = sum(e.failures for e in endpoints)
    endpoints.append(endpoint("all", every, failed, window))
    cores = {label: seconds / window for label, seconds in data["cpu_seconds"].items()}
    busy = data["machine_busy_cpu_seconds"] / window
    cores["rest of machine"] = busy - sum(cores.values())
    cores["machine busy"] = busy
    result = RunResult(
        spec,
        window,
        endpoints,
        data["failures"],
        cores,
        (data["loadavg_start"][0], data["loadavg_end"][0]),
        memories_before,
    )
    total = result.endpoints[-1]
    log(
        f"{spec.name}: {total.rps:.1f} req/s, p50 {total.p50_ms:.1f} ms, p99 {total.p99_ms:.1f} ms,"
        f" {total.failures} failures; service {cores.get('service', 0):.2f} cores,"
        f" load generator {cores.get('load generator', 0):.2f} cores"
    )
    return result


def count_memories(dsn: str) -> int:
    with psycopg.connect(dsn) as conn:
        row = conn.execute("select count(*) from memex.memories").fetchone()
        return int(row[0]) if row else 0


# --- reporting ---------------------------------------------------------------------


def latency_table(results: Sequence[RunResult]) -> str:
    lines = [
        "| run | users | think s | texts | endpoint | requests | req/s | p50 ms | p95 ms"
        " | p99 ms | max ms | failures |",
        "|---|---:|---|---|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in results:
        s = r.spec
        for e in r.endpoints:
            lines.append(
                f"| {s.name} | {s.users} | {s.think[0]:g}-{s.think[1]:g} | {s.variant}"
                f" | {e.name} | {e.requests:,} | {e.rps:.1f} | {e.p50_ms:.1f} | {e.p95_ms:.1f}"
                f" | {e.p99_ms:.1f} | {e.max_ms:.0f} | {e.failures} |"
            )
    return "\n".join(lines)


def cpu_table(results: Sequence[RunResult]) -> str:
    labels = ["service", "postgres", "load generator", "rest of machine", "machine busy"]
    lines = [
        "| run | window s | "
        + " | ".join(f"{label} (cores)" for label in labels)
        + " | load 1m start/end | memories at start |",
        "|---|---:|" + "---:|" * len(labels) + "---|---:|",
    ]
    for r in results:
        cells = " | ".join(f"{r.cores.get(label, float('nan')):.2f}" for label in labels)
        lines.append(
            f"| {r.spec.name} | {r.window_s:.1f} | {cells}"
            f" | {r.loadavg_1m[0]:.1f} / {r.loadavg_1m[1]:.1f} | {r.memories_before:,} |"
        )
    return "\n".join(lines)


def embedder_table(rates: dict[str, EmbedderRate]) -> str:
    lines = [
        "| raw embedder (in-process, unique texts) | ONNX threads | batch | texts | seconds"
        " | texts/s | load 1m |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for label, r in rates.items():
        lines.append(
            f"| {label} | {r.onnx_threads} | {r.batch} | {r.texts:,} | {r.seconds:.1f}"
            f" | {r.texts_per_s:.1f} | {r.loadavg_1m:.1f} |"
        )
    return "\n".join(lines)


def verdict(
    results: Sequence[RunResult], rates: dict[str, EmbedderRate], users: int
) -> dict[str, Any]:
    out: dict[str, Any] = {}
    batch32 = [
        r.texts_per_s
        for r in rates.values()
        if r.batch == EMBED_BATCH and r.onnx_threads == DEFAULT_THREADS
    ]
    raw = max(batch32) if batch32 else float("nan")
    sat = next((r for r in results if r.spec.name == "saturation"), None)
    if sat is not None:
        ratio = sat.embedding_rps / raw
        out["throughput"] = {
            "service_embedding_rps": sat.embedding_rps,
            "raw_embedder_texts_per_s_best": raw,
            "ratio": ratio,
            "target": TARGET_RATIO,
            "met": bool(ratio >= TARGET_RATIO),
        }
    memex = next((r for r in results if r.spec.name == "saturation-memex"), None)
    if memex is not None:
        ratio = memex.embedding_rps / raw
        out["throughput memex workload"] = {
            "service_rps": memex.embedding_rps,
            "raw_embedder_texts_per_s_best": raw,
            "ratio": ratio,
            "target": TARGET_MEMEX_RATIO,
            "met": bool(ratio >= TARGET_MEMEX_RATIO),
        }
    for r in results:
        if r.spec.users == users and not r.spec.name.startswith("saturation"):
            worst = max(e.p99_ms for e in r.endpoints)
            out[f"p99 {r.spec.name}"] = {
                "worst_p99_ms": worst,
                "target_ms": TARGET_P99_MS,
                "met": bool(worst < TARGET_P99_MS),
            }
    out["failures"] = sum(r.endpoints[-1].failures for r in results)
    return out


def verdict_lines(v: dict[str, Any]) -> str:
    lines = []
    if "throughput" in v:
        t = v["throughput"]
        lines.append(
            f"- throughput: saturation (unique texts) {t['service_embedding_rps']:.1f} embedding"
            f" req/s / raw embedder {t['raw_embedder_texts_per_s_best']:.1f} texts/s at batch"
            f" {EMBED_BATCH} (better of before/after) = **{t['ratio']:.2f}x** (target >="
            f" {t['target']}x): {'met' if t['met'] else 'NOT met'}"
        )
    if "throughput memex workload" in v:
        t = v["throughput memex workload"]
        lines.append(
            f"- throughput: saturation, the memex reference's repeated texts"
            f" {t['service_rps']:.1f} req/s / raw embedder"
            f" {t['raw_embedder_texts_per_s_best']:.1f} texts/s = **{t['ratio']:.2f}x** (target"
            f" >= {t['target']}x): {'met' if t['met'] else 'NOT met'}"
        )
    for key, value in v.items():
        if key.startswith("p99 "):
            lines.append(
                f"- {key}: worst endpoint p99 {value['worst_p99_ms']:.1f} ms (target <"
                f" {value['target_ms']:.0f} ms): {'met' if value['met'] else 'NOT met'}"
            )
    lines.append(f"- failed requests, all runs: {v['failures']}")
    return "\n".join(lines)


# --- main --------------------------------------------------------------------------


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--users", type=int, default=50, help="users of the realistic runs")
    parser.add_argument(
        "--saturation-users", type=int, default=64, help="users of the saturation run (no think)"
    )
    parser.add_argument("--duration", type=float, default=60, help="measured seconds per run")
    parser.add_argument("--warmup", type=float, default=5, help="unmeasured seconds per run")
    parser.add_argument("--workers", type=int, default=1, help="uvicorn worker processes")
    parser.add_argument(
        "--runs", default=",".join(ALL_RUNS), help=f"comma-separated subset of {','.join(ALL_RUNS)}"
    )
    parser.add_argument(
        "--embedder-seconds", type=float, default=15, help="timed seconds per raw embedder rate"
    )
    parser.add_argument(
        "--service-env",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="extra environment for the service (e.g. MEMEX_POOL_SIZE=4); repeatable",
    )
    parser.add_argument("--out", type=Path, default=BENCH / "out", help="JSON folder")
    parser.add_argument("--seed", type=int, default=42)
    args = parser.parse_args(argv)
    if importlib.util.find_spec("locust") is None:
        parser.error('locust is not installed: pip install -e ".[bench]"')
    runs = [r for r in args.runs.split(",") if r]
    if not runs or any(r not in ALL_RUNS for r in runs):
        parser.error(f"--runs takes a comma-separated subset of {','.join(ALL_RUNS)}")
    args.runs = runs
    if not 1 <= args.duration <= 3600 or not 0 <= args.warmup <= 600:
        parser.error("--duration must be 1-3600 s and --warmup 0-600 s")
    if not 1 <= args.users <= 2000 or not 1 <= args.saturation_users <= 2000:
        parser.error("user counts must be 1-2000")
    if not 1 <= args.workers <= 16 or not 1 <= args.embedder_seconds <= 600:
        parser.error("--workers must be 1-16 and --embedder-seconds 1-600")
    try:
        args.service_env = dict(item.split("=", 1) for item in args.service_env)
    except ValueError:
        parser.error("--service-env takes NAME=VALUE")
    return args


def stack_facts(workers: int) -> dict[str, str]:
    """What the service runs on: uvicorn picks uvloop and httptools when importable."""

    def version(name: str) -> str | None:
        try:
            return importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            return None

    loop = "uvloop" if version("uvloop") else "asyncio"
    http = "httptools" if version("httptools") else "h11"
    return {
        "service": f"memexdb serve --workers {workers}, uvicorn {version('uvicorn')}"
        f" ({loop}, {http}), {EMBEDDER_THREADS} ONNX thread(s) per worker",
        "onnxruntime": str(version("onnxruntime")),
        "locust": str(version("locust")),
    }


def specs(args: argparse.Namespace) -> list[RunSpec]:
    all_specs = {
        "realistic": RunSpec("realistic", args.users, "reference", (0.1, 0.3)),
        "realistic-unique": RunSpec("realistic-unique", args.users, "unique", (0.1, 0.3)),
        "saturation": RunSpec("saturation", args.saturation_users, "unique", (0.0, 0.0)),
        # the reference's own texts (8 queries, 15 contents) without think time: what the
        # cache of repeated embeddings is for
        "saturation-memex": RunSpec(
            "saturation-memex", args.saturation_users, "reference", (0.0, 0.0)
        ),
    }
    return [all_specs[name] for name in args.runs]


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    started = time.perf_counter()
    facts = {**machine_facts(), **stack_facts(args.workers)}
    facts["loadavg_at_start"] = " ".join(f"{x:.2f}" for x in os.getloadavg())
    command = print_header(facts)
    rng = random.Random(args.seed)
    results: list[RunResult] = []
    rates: dict[str, EmbedderRate] = {}
    with embedded_server("load") as server:
        workdir = server.data_dir.parent
        with psycopg.connect(server.dsn) as conn:
            row = conn.execute("show server_version").fetchone()
            facts["postgresql"] = row[0] if row else "?"
        with service(server.dsn, args.workers, args.service_env, workdir / "service.log") as svc:
            seconds = seed(svc.url, rng)
            log(
                f"seeded {SEED_MEMORIES} memories over {AGENTS} agents x {USERS_PER_AGENT} users"
                f" in {seconds:.1f} s"
            )
            rates |= raw_rates("before the load", args.embedder_seconds, rng)
            pids = {"service": svc.proc.pid, "postgres": postmaster_pid(server)}
            for spec in specs(args):
                before = count_memories(server.dsn)
                results.append(run_locust(spec, svc, pids, args, workdir, before))
            rates |= raw_rates("after the load", args.embedder_seconds, rng)
    runtime = time.perf_counter() - started
    v = verdict(results, rates, args.users)
    print()
    print(latency_table(results), end="\n\n")
    print(cpu_table(results), end="\n\n")
    print(embedder_table(rates), end="\n\n")
    print(verdict_lines(v))
    print(f"\ntotal runtime: {runtime:.0f} s")
    report = {
        "command": command,
        "machine": facts,
        "config": {k: val for k, val in vars(args).items() if k != "out"},
        "runs": [{**asdict(r), "embedding_rps": r.embedding_rps} for r in results],
        "raw_embedder": {k: asdict(r) for k, r in rates.items()},
        "verdict": v,
        "runtime_seconds": runtime,
    }
    print(f"JSON: {write_json(args.out, 'load_test', report)}")
    return 0


if __name__ == "__main__":
    run_main(main)
