"""Locust users replaying the memex reference workload against a memexdb service.

Run by bench/load_test.py (which starts the database and the service, seeds them and
reads what this file records); by hand, against a seeded service on loopback:

    LOADTEST_TEXTS=unique locust -f bench/locustfile.py --headless -u 50 -r 50 -t 60s \\
        --host http://127.0.0.1:8000

Each user waits 0.1-0.3 s between requests (LOADTEST_THINK="0.1,0.3"; "0,0" for a
saturation run) and does, for a random seeded tenant, a search (weight 3: top_k 5,
alpha 0.7) or a store (weight 1: episodic or semantic, importance 0.5-1.5).

With LOADTEST_RECORD=path, every request started LOADTEST_WARMUP seconds (default 5)
after the last user spawned is recorded (latency, failure) until the run stops, and
written there as JSON with the CPU time that the process trees in LOADTEST_PIDS (JSON
{"label": pid}), this process and the whole machine used in that window.
"""

from __future__ import annotations

import json
import os
import random
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import gevent
import psutil
from load_workload import (
    SEARCH_NAME,
    SEARCH_WEIGHT,
    STORE_NAME,
    STORE_WEIGHT,
    Texts,
    search_body,
    store_body,
    tenant,
)
from locust import FastHttpUser, between, constant, events, task

VARIANT = os.environ.get("LOADTEST_TEXTS", "reference")
THINK = tuple(float(x) for x in os.environ.get("LOADTEST_THINK", "0.1,0.3").split(","))
RECORD = os.environ.get("LOADTEST_RECORD")
WARMUP_S = float(os.environ.get("LOADTEST_WARMUP", "5"))
PIDS: dict[str, int] = json.loads(os.environ.get("LOADTEST_PIDS", "{}"))

# One Texts per process: gevent runs the users on one thread, so its counter is shared.
TEXTS = Texts(VARIANT, random.Random())


class MemexUser(FastHttpUser):
    wait_time = between(THINK[0], THINK[1]) if THINK[1] > 0 else constant(0)

    def on_start(self) -> None:
        self.rng = random.Random()

    @task(SEARCH_WEIGHT)
    def search(self) -> None:
        body = search_body(TEXTS, *tenant(self.rng))
        self.client.post("/v1/memories/search", json=body, name=SEARCH_NAME)

    @task(STORE_WEIGHT)
    def store(self) -> None:
        body = store_body(self.rng, TEXTS, *tenant(self.rng))
        self.client.post("/v1/memories", json=body, name=STORE_NAME)


# --- recording --------------------------------------------------------------------


def _cpu_by_process(root_pid: int) -> dict[tuple[int, float], float]:
    """CPU seconds (user + system) of a process and all its descendants."""
    try:
        root = psutil.Process(root_pid)
        procs = [root, *root.children(recursive=True)]
    except psutil.Error:
        return {}
    out: dict[tuple[int, float], float] = {}
    for p in procs:
        try:
            t = p.cpu_times()
            out[(p.pid, p.create_time())] = t.user + t.system
        except psutil.Error:
            continue
    return out


def _snapshot() -> dict[str, Any]:
    busy = psutil.cpu_times()
    return {
        "time": time.time(),
        "trees": {label: _cpu_by_process(pid) for label, pid in _trees().items()},
        "machine_busy": busy.user + busy.nice + busy.system + busy.irq + busy.softirq,
        "loadavg": os.getloadavg(),
    }


def _trees() -> dict[str, int]:
    return {**PIDS, "load generator": os.getpid()}


class _Recorder:
    def __init__(self) -> None:
        self.measure_from: float | None = None
        self.start: dict[str, Any] | None = None
        self.ms: dict[str, list[float]] = defaultdict(list)
        self.failures: dict[str, Counter[str]] = defaultdict(Counter)

    def begin(self) -> None:
        self.start = _snapshot()

    def on_request(self, name: str, response_time: float, start_time: float, exc: Any) -> None:
        if self.measure_from is None or start_time < self.measure_from:
            return
        if exc is None:
            self.ms[name].append(response_time)
        else:
            self.failures[name][str(exc)[:200]] += 1

    def write(self, path: Path) -> None:
        end = _snapshot()
        start = self.start or end
        cpu: dict[str, float] = {}
        for label, before in start["trees"].items():
            after = end["trees"].get(label, {})
            # A process that appeared during the window counts from zero.
            cpu[label] = sum(t - before.get(key, 0.0) for key, t in after.items())
        report = {
            "variant": VARIANT,
            "think_s": THINK,
            "window_s": end["time"] - start["time"],
            "latency_ms": self.ms,
            "failures": {name: dict(c) for name, c in self.failures.items()},
            "cpu_seconds": cpu,
            "machine_busy_cpu_seconds": end["machine_busy"] - start["machine_busy"],
            "loadavg_start": start["loadavg"],
            "loadavg_end": end["loadavg"],
        }
        path.write_text(json.dumps(report))


_recorder = _Recorder()


@events.spawning_complete.add_listener
def _spawned(user_count: int, **_: Any) -> None:
    _recorder.measure_from = time.time() + WARMUP_S
    gevent.spawn_later(WARMUP_S, _recorder.begin)


@events.request.add_listener
def _request(
    name: str,
    response_time: float,
    exception: Any,
    start_time: float | None = None,
    **_: Any,
) -> None:
    _recorder.on_request(name, response_time, start_time or time.time(), exception)


@events.test_stop.add_listener
def _stopped(**_: Any) -> None:
    if RECORD and _recorder.start is not None:
        _recorder.write(Path(RECORD))
