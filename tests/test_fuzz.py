"""The live service fuzzed from its own OpenAPI document with schemathesis (every check;
the coverage phase, which tries each schema's edges, and random fuzzing): no input may
answer 5xx, and every answer must match the document (status codes, bodies, content
types; schema-valid requests accepted, schema-violating ones refused). The stateful
phase is left out: the document declares no links between operations, so it only
repeats the fuzzing phase's requests in sequences, at three times its cost."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from memexdb.embedded import EmbeddedPostgres
from tests.conftest import drop_database, new_database, scratch_dir
from tests.live_service import Service, free_port, service_env, uvicorn_args

SCHEMATHESIS = Path(sys.executable).with_name("schemathesis")
# Fixed, so that a CI run is reproducible; change it to explore other inputs.
SEED = "20261203"
MIN_CASES = 1000


@pytest.fixture(scope="module")
def service(pg_server: EmbeddedPostgres, template_db: str) -> Iterator[Service]:
    dsn = new_database(pg_server)
    root = scratch_dir("memexdb-fuzz-")
    port = free_port()
    live = Service(uvicorn_args(port), service_env(MEMEX_DATABASE_URL=dsn), port, root / "log")
    try:
        live.wait_healthy()
        yield live
        assert "Traceback" not in live.output(), live.output()[-4000:]
    finally:
        live.close()
        drop_database(pg_server, dsn)
        shutil.rmtree(root, ignore_errors=True)


def test_no_server_error_and_no_schema_mismatch(service: Service) -> None:
    workdir = scratch_dir("memexdb-schemathesis-")  # its hypothesis database and reports
    try:
        run = subprocess.run(
            [
                str(SCHEMATHESIS),
                "run",
                f"{service.base_url}/openapi.json",
                "--checks",
                "all",
                "--phases",
                "coverage,fuzzing",
                "--max-examples",
                "200",
                "--seed",
                SEED,
                "--no-color",
            ],
            cwd=workdir,
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
    print(f"schemathesis: {generated.group(0)} cases, exit {run.returncode}")
    assert run.returncode == 0, report[-6000:]
    assert int(generated.group(1)) >= MIN_CASES, report[-3000:]
