"""`memexdb schedule` against a real pg_cron: a PostgreSQL started here with pg_cron
preloaded and pgvector, the memex schema migrated into it, and the real `memexdb` command
and service. pg_cron really runs memex.maintenance(); the service leaves the job to it, and
runs it again once it is unscheduled.

The server is Debian's PostgreSQL with postgresql-NN-cron and a pgvector built for it:
`.ci/pg_cron.sh` installs them (it says why PostgreSQL 15 and pg_cron 1.4.2, not the
embedded PostgreSQL 18). Skipped without them, except in CI (CI set), where .ci/run runs
that script. pg_cron 1.4 schedules by the minute, so seeing it run waits for the next
minute (at most ~60 s); everything else takes a few seconds.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import NamedTuple
from uuid import UUID

import psycopg
import pytest
from psycopg.conninfo import conninfo_to_dict, make_conninfo
from psycopg.rows import namedtuple_row

from memexdb import pg_cron
from memexdb.embedded.accounts import service_account
from tests.conftest import scratch_dir
from tests.live_service import (
    Service,
    cli_args,
    client,
    free_port,
    kill_postgres,
    required,
    run_as_postgres_user,
    run_cli,
    service_env,
    wait_until,
)
from tests.sqlapi import store, store_expired, unit

DATABASE = "memex"
CLI_TIMEOUT = 60.0
LOG_WAIT = 20.0  # the service's log lines, with a maintenance interval of 1 s
CRON_WAIT = 75.0  # the next minute, when pg_cron 1.4 runs an every-minute job, and slack
DEFERS = "job maintenance: pg_cron runs it in this database (its job memex-maintenance)"
TAKES_OVER = "job maintenance: pg_cron no longer runs memex-maintenance here; this process runs it"


def pg_cron_bindir() -> Path | None:
    """The newest Debian PostgreSQL whose lib has both pg_cron and pgvector."""
    found = [
        bindir
        for bindir in Path("/usr/lib/postgresql").glob("*/bin")
        if all((bindir.parent / "lib" / lib).exists() for lib in ("pg_cron.so", "vector.so"))
    ]
    return max(found, key=lambda b: int(b.parent.name), default=None)


def require_pg_cron_bindir() -> Path:
    """pg_cron_bindir(), or skip the test (fail it in CI, where .ci/run installs one)."""
    message = "no PostgreSQL with pg_cron and pgvector (run .ci/pg_cron.sh as root)"
    return required(pg_cron_bindir(), message)


@contextlib.contextmanager
def pg_cron_server(bindir: Path) -> Iterator[str]:
    """A scratch PostgreSQL from `bindir` with pg_cron preloaded for database DATABASE,
    on a unix socket only; yields the DSN of its `postgres` database."""
    root = scratch_dir("memexdb-cron-")
    acct = service_account()
    if acct.switch:
        os.chown(root, acct.uid, acct.gid)
    pgdata = root / "pgdata"
    try:
        run_as_postgres_user([bindir / "initdb", "-D", pgdata, "-U", "postgres", "--auth=trust",
              "--encoding=UTF8", "--locale=C.UTF-8", "--no-instructions"], root)  # fmt: skip
        with (pgdata / "postgresql.conf").open("a") as conf:
            conf.write(
                "listen_addresses = ''\n"
                f"unix_socket_directories = '{root}'\n"
                "fsync = off\n"  # a scratch server
                "shared_preload_libraries = 'pg_cron'\n"
                f"cron.database_name = '{DATABASE}'\n"
                # pg_cron runs a job over a libpq connection: the unix socket (trust auth)
                f"cron.host = '{root}'\n"
            )
        run_as_postgres_user(
            [bindir / "pg_ctl", "start", "-D", pgdata, "-l", root / "log", "-w", "-t", "60"], root
        )
        yield f"postgresql://postgres@/postgres?host={root}"
    finally:
        with contextlib.suppress(AssertionError, subprocess.TimeoutExpired):
            run_as_postgres_user(
                [bindir / "pg_ctl", "stop", "-D", pgdata, "-m", "immediate", "-w"], root
            )
        kill_postgres(pgdata)  # only if the stop failed
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(scope="module")
def cron_server() -> Iterator[str]:
    with pg_cron_server(require_pg_cron_bindir()) as dsn:
        yield dsn


@pytest.fixture(scope="module")
def cron_database(cron_server: str) -> str:
    """The database pg_cron runs jobs in, with the extension created as an operator would;
    returns its DSN. Never dropped: pg_cron's scheduler would stop for good."""
    with psycopg.connect(cron_server, autocommit=True) as admin:
        admin.execute(f"create database {DATABASE}")
    dsn = make_conninfo(cron_server, dbname=DATABASE)

    def scheduler_runs() -> bool:  # it retries every second until the database exists
        with psycopg.connect(dsn) as conn:
            row = conn.execute(
                "select exists (select from pg_stat_activity"
                " where backend_type = 'pg_cron launcher' and datname = current_database())"
            ).fetchone()
        return bool(row and row[0])

    assert wait_until(scheduler_runs, LOG_WAIT), "pg_cron's scheduler did not start"
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("create extension pg_cron")
    return dsn


@pytest.fixture
def cron_db(cron_database: str) -> Iterator[str]:
    """The pg_cron database, left without jobs by each test."""
    yield cron_database
    with psycopg.connect(cron_database, autocommit=True) as conn:
        conn.execute("select cron.unschedule(jobid) from cron.job")


def memexdb(dsn: str, *args: str, **env: str) -> tuple[int, str]:
    return run_cli(args, service_env(MEMEX_DATABASE_URL=dsn, **env), timeout=CLI_TIMEOUT)


class Row(NamedTuple):
    jobid: int
    jobname: str
    schedule: str
    command: str
    active: bool


def cron_jobs(dsn: str) -> list[Row]:
    """cron.job, read directly."""
    with psycopg.connect(dsn) as conn:
        cur = conn.cursor(row_factory=namedtuple_row)
        sql = "select jobid, jobname, schedule, command, active from cron.job order by jobid"
        return [Row(*row) for row in cur.execute(sql)]


def schedule_of(dsn: str, jobid: int) -> str:
    return next(job.schedule for job in cron_jobs(dsn) if job.jobid == jobid)


def test_schedule_without_pg_cron_is_a_clear_error(dsn: str) -> None:
    """The embedded PostgreSQL 18 (conftest's) has no pg_cron."""
    database = conninfo_to_dict(dsn)["dbname"]
    for command in (["schedule"], ["migrate", "--schedule"]):
        code, out = memexdb(dsn, *command)
        assert code == 2, out
        assert f'memexdb: pg_cron is not installed in database "{database}".' in out, out
        assert "shared_preload_libraries = 'pg_cron'" in out, out
        assert f"cron.database_name = '{database}'" in out, out
        assert "create extension pg_cron" in out, out
        assert "runs these jobs itself" in out, out
        assert "Traceback" not in out, out
    assert "migrated to revision" in out, out  # migrate --schedule migrated first


def test_schedule_registers_each_job_once_and_unschedule_removes_them(cron_db: str) -> None:
    # by default condensing is scheduled, dreaming over files is not (it is opt-in)
    code, out = memexdb(cron_db, "migrate", "--schedule")
    assert code == 0, out
    assert "migrated to revision" in out, out
    assert "skipped memex-dream: MEMEX_DREAM_ENABLED is not true" in out, out
    assert [job.jobname for job in cron_jobs(cron_db)] == ["memex-maintenance", "memex-consolidate"]
    # the same switches as the service's: off, a job is removed if registered
    code, out = memexdb(cron_db, "schedule", MEMEX_CONDENSE_ENABLED="false")
    assert code == 0 and "skipped memex-consolidate: MEMEX_CONDENSE_ENABLED is false" in out
    assert [job.jobname for job in cron_jobs(cron_db)] == ["memex-maintenance"]
    code, out = memexdb(cron_db, "schedule", MEMEX_DREAM_ENABLED="true")
    assert code == 0, out
    # this release has every job's function (a missing one would be skipped, and said so)
    present = list(pg_cron.JOBS)
    assert "skipped" not in out, out
    jobs = cron_jobs(cron_db)
    assert [job[1:] for job in jobs] == [
        (job.name, job.schedule, job.command, True) for job in present
    ]
    maintenance = next(job.jobid for job in jobs if job.jobname == "memex-maintenance")
    assert "memex-maintenance  * * * * *     select memex.maintenance()  (job" in out, out

    # Again: the same jobs (pg_cron keeps one per name), and a new schedule updates one.
    dreaming = {"MEMEX_DREAM_ENABLED": "true"}
    code, out = memexdb(cron_db, "schedule", **dreaming)
    assert code == 0 and cron_jobs(cron_db) == jobs, out
    code, out = memexdb(cron_db, "schedule", "--maintenance-schedule", "*/5 * * * *", **dreaming)
    assert code == 0, out
    assert schedule_of(cron_db, maintenance) == "*/5 * * * *", out
    assert len(cron_jobs(cron_db)) == len(jobs)

    # pg_cron judges a schedule (1.4 has no 'N seconds'); a bad one changes nothing.
    code, out = memexdb(cron_db, "schedule", "--maintenance-schedule", "every minute")
    assert code == 2, out
    assert "memexdb: invalid --maintenance-schedule: invalid schedule: every minute" in out, out
    assert schedule_of(cron_db, maintenance) == "*/5 * * * *", out

    # A service with an LLM runs consolidation itself: scheduling leaves (and removes)
    # those jobs, and keeps the others.
    code, out = memexdb(cron_db, "schedule", MEMEX_LLM_URL="http://127.0.0.1:9/v1", **dreaming)
    assert code == 0, out
    for job in pg_cron.LLM_JOBS:
        assert f"skipped {job.name}: MEMEX_LLM_URL is set" in out, out
    assert [job.jobname for job in cron_jobs(cron_db)] == ["memex-maintenance"]
    code, out = memexdb(cron_db, "schedule", **dreaming)
    assert code == 0 and len(cron_jobs(cron_db)) == len(jobs), out

    code, out = memexdb(cron_db, "schedule", "--unschedule")
    assert code == 0, out
    names = ", ".join(sorted(job.name for job in present))
    assert f"unscheduled: {names}" in out, out
    assert cron_jobs(cron_db) == []


def _store_expired(dsn: str, content: str) -> UUID:
    with psycopg.connect(dsn, autocommit=True) as conn:
        expired = datetime.now(UTC) - timedelta(seconds=1)
        return UUID(str(store_expired(conn, content, unit((0, 1.0)), expired)["id"]))


def _exists(dsn: str, memory_id: UUID) -> bool:
    with psycopg.connect(dsn) as conn:
        return conn.execute("select from memex.memories where id = %s", (memory_id,)).rowcount == 1


def _cron_runs_since(
    dsn: str, since: datetime, job: str = "memex-maintenance"
) -> list[tuple[str, str]]:
    """pg_cron's runs of `job` that started at `since` or later."""
    with psycopg.connect(dsn) as conn:
        rows = conn.execute(
            "select d.status, d.return_message from cron.job_run_details d"
            " join cron.job j using (jobid)"
            " where j.jobname = %s and d.start_time >= %s",
            (job, since),
        ).fetchall()
    return [(str(status), str(message)) for status, message in rows]


def test_pg_cron_runs_maintenance_and_the_service_leaves_it_to_pg_cron(
    cron_db: str, tmp_path: Path
) -> None:
    every_minute = ("--consolidate-schedule", "* * * * *", "--dream-schedule", "* * * * *")
    code, out = memexdb(cron_db, "migrate", "--schedule", *every_minute, MEMEX_DREAM_ENABLED="true")
    assert code == 0, out
    since = datetime.now(UTC)
    first = _store_expired(cron_db, "expired before pg_cron's next run")
    # a tenant due for condensing (130 episodic memories, no grace period), for pg_cron's
    # memex-consolidate in the same minute
    with psycopg.connect(cron_db, autocommit=True) as conn:
        conn.execute("""select memex.set_dream_config('{"grace_minutes": 0}')""")
        for i in range(130):
            store(conn, f"day {i}: cron fact {i}", unit((1, 1.0)), user="cron-user")

    port = free_port()
    env = service_env(MEMEX_DATABASE_URL=cron_db, MEMEX_MAINTENANCE_INTERVAL_SECONDS="1")
    service = Service(cli_args("serve", "--port", str(port)), env, port, tmp_path / "serve.log")
    try:
        service.wait_healthy()
        assert wait_until(lambda: DEFERS in service.output(), LOG_WAIT), service.output()
        # condensing is the service's by default, and left to pg_cron here; so is dreaming
        with client(service.base_url) as http:
            config = http.get("/v1/admin/dream/config").json()
        assert (config["condense"], config["dream"]) == ("pg_cron", "pg_cron"), config
        condense_defers = "job condense: pg_cron runs it in this database"
        assert wait_until(lambda: condense_defers in service.output(), LOG_WAIT)
        # With a 1 s interval the service would have deleted it by now: only pg_cron may.
        time.sleep(3)
        assert _exists(cron_db, first) or _cron_runs_since(cron_db, since)

        started = time.monotonic()
        assert wait_until(lambda: not _exists(cron_db, first), CRON_WAIT, interval=0.5)
        runs = _cron_runs_since(cron_db, since)
        assert runs and all(status == "succeeded" for status, _ in runs), runs
        print(f"pg_cron ran memex.maintenance() {time.monotonic() - started:.1f} s later: {runs}")
        # the consolidation jobs ran in the same minute, as the operator: one summary
        for job in ("memex-consolidate", "memex-dream"):

            def finished(job: str = job) -> bool:
                runs = _cron_runs_since(cron_db, since, job)
                return bool(runs) and all(s not in ("starting", "running") for s, _ in runs)

            assert wait_until(finished, LOG_WAIT), _cron_runs_since(cron_db, since, job)
            done = _cron_runs_since(cron_db, since, job)
            assert all(status == "succeeded" for status, _ in done), done
        with psycopg.connect(cron_db) as conn:
            condensed = conn.execute(
                "select status, memories_in from memex.consolidation_runs"
                " where user_id = 'cron-user' and kind = 'condense'"
            ).fetchall()
        assert condensed == [("done", 50)], condensed

        code, out = memexdb(cron_db, "schedule", "--unschedule")
        assert code == 0, out
        assert "unscheduled: memex-consolidate, memex-dream, memex-maintenance" in out, out
        assert wait_until(lambda: TAKES_OVER in service.output(), LOG_WAIT), service.output()
        second = _store_expired(cron_db, "expired while the service runs maintenance")
        assert wait_until(lambda: not _exists(cron_db, second), LOG_WAIT), service.output()
        assert service.output().count(DEFERS) == 1, service.output()
        assert service.stop() == 0, service.output()
    finally:
        service.close()
