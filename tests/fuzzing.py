"""The live service fuzzed from its own OpenAPI document with schemathesis (every check;
the coverage phase, which tries each schema's edges, and random fuzzing): no input may
answer 5xx, and every answer must match the document (status codes, bodies, content
types; schema-valid requests accepted, schema-violating ones refused). The stateful
phase is left out: the document declares no links between operations, so it only
repeats the fuzzing phase's requests in sequences, at three times its cost."""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import psycopg

from memexdb.embedded import EmbeddedPostgres
from tests.conftest import drop_database, new_database, scratch_dir
from tests.live_service import REPO, Service, free_port, service_env, uvicorn_args

SCHEMATHESIS = Path(sys.executable).with_name("schemathesis")
# Fixed, so that a CI run is reproducible; change it to explore other inputs.
SEED = "20261203"
MIN_CASES = 1000


@dataclass(frozen=True)
class Mode:
    """How the fuzzer meets the service: without keys in the database (open loopback
    mode), with an operator key, or without a key where the database has keys."""

    name: str
    keys: bool
    send_key: bool
    examples: int
    # creating a key would end open mode halfway through the run
    exclude: tuple[str, ...] = ()
    phases: str = "coverage,fuzzing"


OPEN, OPERATOR_KEY, MISSING_KEY = MODES = (
    # Every operation in every run. What costs is the fuzzing phase: each of its cases is
    # drawn by hypothesis from the operation's schema (about 0.3 s of CPU for the memory
    # bodies), where the coverage phase's edge cases (some 3,000 a run: the extremes of
    # every field, where the bugs it found were) cost little. So the coverage phase runs in
    # full in both modes that send accepted requests, and the fuzzing phase is sized to a
    # sample: open mode 25 cases an operation (50 until 2026-12-06), the operator key 10
    # (25; open mode's handlers again, behind another principal).
    Mode("open", keys=False, send_key=False, examples=25, exclude=("POST /v1/admin/keys",)),
    Mode("operator key", keys=True, send_key=True, examples=10),
    # every answer is a 401 whatever the input: the coverage phase's edge cases (thousands
    # of requests) would only check that again, and a few fuzzed requests an operation
    # (negative ones too) show it (10 until 2026-12-06: 4 minutes of one worker)
    Mode("missing key", keys=True, send_key=False, examples=3, phases="fuzzing"),
)


@dataclass
class Fuzzed:
    service: Service
    mode: Mode
    token: str | None


@contextlib.contextmanager
def _serving(mode: Mode, pg_server: EmbeddedPostgres) -> Iterator[Fuzzed]:
    dsn = new_database(pg_server)
    token = None
    if mode.keys:
        with psycopg.connect(dsn, autocommit=True) as conn:
            row = conn.execute("select token from memex.create_key('admin')").fetchone()
            assert row is not None
            token = row[0]
    root = scratch_dir("memexdb-fuzz-")
    port = free_port()
    live = Service(uvicorn_args(port), service_env(MEMEX_DATABASE_URL=dsn), port, root / "log")
    try:
        live.wait_healthy()
        yield Fuzzed(live, mode, token)
        assert "Traceback" not in live.output(), live.output()[-4000:]
    finally:
        live.close()
        drop_database(pg_server, dsn)
        shutil.rmtree(root, ignore_errors=True)


def fuzz(mode: Mode, pg_server: EmbeddedPostgres) -> None:
    """Fuzz a fresh service in `mode`: no 5xx, no answer that differs from the document,
    no traceback in its log. (One test file per mode, so that parallel test workers can
    take them side by side.)"""
    with _serving(mode, pg_server) as fuzzed:
        _run(fuzzed)


def _run(fuzzed: Fuzzed) -> None:
    workdir = scratch_dir("memexdb-schemathesis-")  # its hypothesis database and reports
    mode = fuzzed.mode
    options = [f"--exclude-name={name}" for name in mode.exclude]
    if mode.send_key:
        options += ["--header", f"Authorization: Bearer {fuzzed.token}"]
    try:
        run = subprocess.run(
            [
                str(SCHEMATHESIS),
                "--config-file",
                str(REPO / "tests" / "schemathesis.toml"),
                "run",
                f"{fuzzed.service.base_url}/openapi.json",
                "--checks",
                "all",
                "--phases",
                mode.phases,
                "--max-examples",
                str(mode.examples),
                "--seed",
                SEED,
                "--no-color",
                # generating the recursive metadata of a memory can be slow on a busy
                # machine: that says nothing about the service
                "--suppress-health-check=too_slow",
                *options,
            ],
            cwd=workdir,
            # tests/fuzz_hooks.py: expiries in the future (what the schema cannot say)
            env={**os.environ, "SCHEMATHESIS_HOOKS": "tests.fuzz_hooks", "PYTHONPATH": str(REPO)},
            capture_output=True,
            text=True,
            timeout=900,
            check=False,
        )
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    report = run.stdout + run.stderr
    generated = re.search(r"(\d+) generated", report)
    assert generated, report[-3000:]
    print(f"schemathesis ({mode.name}): {generated.group(0)} cases, exit {run.returncode}")
    assert run.returncode == 0, report[-6000:]
    assert int(generated.group(1)) >= MIN_CASES * mode.examples // 100, report[-3000:]
