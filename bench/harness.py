"""What every benchmark script needs around its measurements: a private embedded server
and databases on it, the service's process, latency summaries, log lines, the header
and the JSON report."""

from __future__ import annotations

import contextlib
import json
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import psycopg
from psycopg.conninfo import make_conninfo

import memexdb
from memexdb.embedded import EmbeddedPostgres, install_signal_handlers

SERVICE_START_TIMEOUT_S = 180.0


@dataclass(frozen=True)
class Latency:
    """Client-side latency summary in milliseconds."""

    n: int
    p50_ms: float
    p95_ms: float
    p99_ms: float
    mean_ms: float
    max_ms: float

    @classmethod
    def of(cls, seconds: Sequence[float]) -> Latency:
        ms = np.asarray(seconds, dtype=np.float64) * 1000.0
        p50, p95, p99 = np.percentile(ms, [50, 95, 99])
        return cls(len(ms), float(p50), float(p95), float(p99), float(ms.mean()), float(ms.max()))


def print_header(facts: dict[str, Any]) -> str:
    """Print the exact command and the machine facts; returns the command."""
    command = shlex.join(sys.orig_argv)
    print(f"command: {command}")
    for key, value in facts.items():
        print(f"{key}: {value}")
    return command


def unit_vectors(rng: np.random.Generator, n: int, dims: int = 384) -> np.ndarray:
    """n random unit vectors (float32), as the schema's vector(384) holds them."""
    v = rng.standard_normal((n, dims)).astype(np.float32)
    unit: np.ndarray = v / np.linalg.norm(v, axis=1, keepdims=True)
    return unit


def create_database(admin_dsn: str, name: str) -> str:
    """A new, migrated database on the server of `admin_dsn`; returns its DSN."""
    with psycopg.connect(admin_dsn, autocommit=True) as conn:
        conn.execute(f"create database {name}")
    dsn = make_conninfo(admin_dsn, dbname=name)
    memexdb.migrate(dsn)
    return dsn


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", flush=True)


@contextlib.contextmanager
def embedded_server(prefix: str) -> Iterator[EmbeddedPostgres]:
    """A private embedded PostgreSQL in a fresh /var/tmp folder, removed afterwards."""
    root = Path(tempfile.mkdtemp(prefix=f"memexdb-{prefix}-", dir="/var/tmp"))
    root.chmod(0o755)  # our own folder; the server's OS user must traverse it as root
    server = EmbeddedPostgres(root / "pg")
    try:
        server.start()
        install_signal_handlers(server)  # SIGTERM/SIGHUP: stop, then SystemExit
        yield server
    finally:
        server.stop()
        shutil.rmtree(root, ignore_errors=True)


def run_maintenance(conn: Any, max_calls: int = 1000) -> None:
    """memex.maintenance() until it has nothing left to move into the ANN index (it moves
    at most one tenant per call), as the service's scheduler calls it."""
    for _ in range(max_calls):
        row = conn.execute(
            "select tenants_indexed, memories_indexed from memex.maintenance()"
        ).fetchone()
        if tuple(row) == (0, 0):
            return
    raise RuntimeError(f"memex.maintenance() still moving rows after {max_calls} calls")


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def wait_healthy(url: str, proc: subprocess.Popen[bytes], log_path: Path) -> None:
    """Until GET /health answers 200; fails if the service exits or takes too long."""
    deadline = time.monotonic() + SERVICE_START_TIMEOUT_S
    with httpx.Client(base_url=url, timeout=10) as client:
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise RuntimeError(
                    f"service exited with {proc.returncode}:\n{log_path.read_text()}"
                )
            with contextlib.suppress(httpx.TransportError):
                if client.get("/health").status_code == 200:
                    return
            time.sleep(0.25)
    raise RuntimeError(f"service not healthy after {SERVICE_START_TIMEOUT_S:.0f} s")


def stop_process(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)


def write_json(out_dir: Path, name: str, report: dict[str, Any]) -> Path:
    """bench/out/<name>-<timestamp>.json"""
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"{name}-{time.strftime('%Y%m%d-%H%M%S')}.json"
    path.write_text(json.dumps(report, indent=2, default=str))
    return path


def run_main(main: Callable[[], int]) -> None:
    """Exit with main()'s status; Ctrl-C exits 130 (servers are stopped on the way out)."""
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        sys.exit(130)
