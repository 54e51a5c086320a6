"""`memexdb schedule` (and `memexdb migrate --schedule`): register memex's periodic SQL
jobs with pg_cron, where the server has it (memexdb.pg_cron defines the jobs)."""

from __future__ import annotations

import argparse
from typing import Any

import psycopg

from memexdb import pg_cron
from memexdb.config import Settings


def _dest(job: pg_cron.CronJob) -> str:
    return job.option.removeprefix("--").replace("-", "_")


def add_schedule_options(parser: argparse.ArgumentParser) -> None:
    """One option per job for its schedule (shared by `schedule` and `migrate`)."""
    for job in pg_cron.JOBS:
        parser.add_argument(
            job.option,
            dest=_dest(job),
            metavar="SCHEDULE",
            help=f"when {job.name} runs {job.function} ({job.what}): cron syntax, or "
            f"'N seconds' on pg_cron >= 1.5 (default: '{job.schedule}')",
        )


def add_parser(sub: Any) -> None:
    schedule = sub.add_parser(
        "schedule",
        help="register memex's periodic SQL jobs with pg_cron",
        description="Register memex's periodic SQL jobs as named pg_cron jobs in the "
        "database (MEMEX_DATABASE_URL): "
        + "; ".join(f"{job.name}: {job.command}" for job in pg_cron.JOBS)
        + ". A job whose function is not in the database is skipped. Running it again "
        "updates the jobs (one per name). The service then leaves these jobs to pg_cron. "
        "memex-consolidate is left out with MEMEX_CONDENSE_ENABLED=false, memex-dream "
        "unless MEMEX_DREAM_ENABLED=true (dreaming over files is opt-in); with "
        "MEMEX_LLM_URL set both are left to the service's scheduler, which runs them with "
        "the LLM. A job left out is removed if registered before. "
        "The server needs pg_cron in shared_preload_libraries, cron.database_name set to "
        "this database, and `create extension pg_cron` in it.",
    )
    add_schedule_options(schedule)
    action = schedule.add_mutually_exclusive_group()
    action.add_argument(
        "--unschedule",
        action="store_true",
        help="remove the jobs from pg_cron (the service runs them again)",
    )
    action.add_argument("--list", action="store_true", help="only show the jobs pg_cron has")


def _show(jobs: list[pg_cron.Registered]) -> None:
    if not jobs:
        print("no memex jobs in pg_cron")
        return
    width = max(len(job.jobname) for job in jobs)
    for job in jobs:
        state = "active" if job.active else "inactive"
        print(
            f"  {job.jobname:<{width}}  {job.schedule:<12}  {job.command}"
            f"  (job {job.jobid}, {state}, as {job.username})"
        )


def run(args: argparse.Namespace, dsn: str, settings: Settings) -> int:
    schedules = {job.name: getattr(args, _dest(job)) for job in pg_cron.JOBS}
    with psycopg.connect(dsn, autocommit=True) as conn:
        if getattr(args, "unschedule", False):
            removed = pg_cron.unschedule(conn)
            print(f"unscheduled: {', '.join(removed) or 'nothing (no memex jobs in pg_cron)'}")
            return 0
        if getattr(args, "list", False):
            print(f"pg_cron {pg_cron.require(conn)}:")
            _show(pg_cron.registered(conn))
            return 0
        chosen = {name: when for name, when in schedules.items() if when}
        done = pg_cron.schedule(conn, chosen, leave=pg_cron.not_for_pg_cron(settings))
    for name, why in done.skipped.items():
        print(f"skipped {name}: {why}")
    print(f"pg_cron {done.version} runs:")
    _show(done.jobs)
    return 0
