"""The periodic SQL jobs, for servers with pg_cron: their pg_cron names, the functions
they call and their default schedules, defined once; registering them in cron.job
(`memexdb schedule`, `memexdb migrate --schedule`) and asking which ones pg_cron runs.

Where pg_cron runs a job, the service's own scheduler (memexdb.runtime.jobs) leaves it
alone; everywhere else (the embedded server has no pg_cron) the service runs it. pg_cron
runs jobs only in the database named by its `cron.database_name`, where the extension
lives, as the role that registered them; cron.job shows a role only its own jobs (a
superuser sees all), so the service sees what the same role registered.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import psycopg
from psycopg.rows import class_row

from memexdb.config import Settings
from memexdb.consolidation import sql as consolidation_sql
from memexdb.errors import InvalidArgument, SetupError


@dataclass(frozen=True)
class CronJob:
    """A pg_cron job: `select <function>` (or `call <procedure>`) on `schedule` (cron
    syntax such as '*/5 * * * *'; pg_cron >= 1.5 also takes '[1-59] seconds')."""

    name: str  # cron.job.jobname
    function: str  # the call, with its arguments left to their defaults
    schedule: str  # the default
    what: str  # for --help
    procedure: bool = False  # a procedure (CALL): it commits as it goes

    @property
    def command(self) -> str:
        return f"{'call' if self.procedure else 'select'} {self.function}"

    @property
    def proc(self) -> str:
        """The function's name (as to_regproc reads it: one function of that name)."""
        return self.function.partition("(")[0]

    @property
    def option(self) -> str:
        """The command-line option that sets its schedule."""
        return f"--{self.name.removeprefix('memex-')}-schedule"


MAINTENANCE = CronJob(
    "memex-maintenance",
    "memex.maintenance()",
    "* * * * *",  # the service's default MEMEX_MAINTENANCE_INTERVAL_SECONDS: 60
    "expired memories, stale rate-limit rows, grown tenants into the ANN index",
)
# every 5 minutes: dream_config.interval_seconds' default (300) for the service's ticks.
# memex.consolidate_due_tick commits after every batch, so that a store into a tenant
# being condensed waits for one batch at most (memex.consolidate_due is one transaction).
CONSOLIDATE = CronJob(
    "memex-consolidate",
    "memex.consolidate_due_tick()",
    "*/5 * * * *",
    "old episodic memories of due tenants condensed into summaries",
    procedure=True,
)
DREAM = CronJob(
    "memex-dream", "memex.dream_due()", "*/5 * * * *", "due tenants' files tidied (dreaming)"
)
JOBS = (MAINTENANCE, CONSOLIDATE, DREAM)
# the consolidation jobs by the name the service's scheduler and dream_config give them
CONSOLIDATION = {"condense": CONSOLIDATE, "dream": DREAM}
# With an LLM the service's own scheduler runs these (abstractive summaries, contradictions
# resolved); a pg_cron run has no model and would take the due tenants first.
LLM_JOBS = (CONSOLIDATE, DREAM)
NAMES = [job.name for job in JOBS]


def not_for_pg_cron(settings: Settings) -> dict[str, str]:
    """The jobs `schedule` leaves out under `settings`, each with the reason: the ones the
    settings turn off (MEMEX_CONDENSE_ENABLED, MEMEX_DREAM_ENABLED: the same switches as
    the service's scheduler, so that they say what runs in the database whoever runs it),
    and with an LLM the ones the service runs with it."""
    left: dict[str, str] = {}
    if settings.llm_url is not None:
        for job in LLM_JOBS:
            left[job.name] = "MEMEX_LLM_URL is set: the service's scheduler runs it with the LLM"
    if not settings.condense_enabled:
        left[CONSOLIDATE.name] = "MEMEX_CONDENSE_ENABLED is false: condensing is off"
    if not settings.dream_enabled:
        left[DREAM.name] = "MEMEX_DREAM_ENABLED is not true: dreaming over files is opt-in"
    return left


@dataclass(frozen=True)
class Registered:
    """A row of cron.job: one of ours, in this database."""

    jobid: int
    jobname: str
    schedule: str
    command: str
    active: bool
    username: str


@dataclass(frozen=True)
class Scheduled:
    """What `schedule` did: the jobs it skipped (and why), and cron.job's rows for our
    names afterwards."""

    version: str
    skipped: dict[str, str]
    jobs: list[Registered]


def _setup_steps(database: str) -> str:
    quoted = database.replace("'", "''")
    return (
        "On a server that has pg_cron (e.g. Debian's postgresql-NN-cron):\n"
        "  1. in postgresql.conf: shared_preload_libraries = 'pg_cron' and "
        f"cron.database_name = '{quoted}', then restart PostgreSQL;\n"
        f'  2. in database "{database}", as a superuser: create extension pg_cron;\n'
        "  3. run `memexdb schedule` again.\n"
        "Without pg_cron the service (`memexdb serve`, `memexdb mcp`) runs these jobs itself."
    )


@dataclass(frozen=True)
class PgCron:
    """pg_cron in this database: its version, whether this role may use it (USAGE on
    schema cron) and whether its scheduler runs here (None: this role cannot see)."""

    version: str
    usable: bool
    running: bool | None


def require(conn: psycopg.Connection) -> str:
    """The version of pg_cron in this database, which this role may use and whose
    scheduler runs here; SetupError with the setup steps otherwise."""
    row = conn.execute("select current_database()").fetchone()
    database = str(row[0]) if row else "?"
    found = conn.cursor(row_factory=class_row(PgCron)).execute(consolidation_sql.PG_CRON).fetchone()
    if found is None:
        raise SetupError(
            f'pg_cron is not installed in database "{database}".\n' + _setup_steps(database)
        )
    if found.running is False:
        raise SetupError(
            f'pg_cron {found.version} is installed in database "{database}", but its scheduler'
            " does not run there (pg_cron missing from shared_preload_libraries, or"
            " cron.database_name names another database), so its jobs would never run.\n"
            + _setup_steps(database)
        )
    if not found.usable:
        raise SetupError(
            "this role may not use pg_cron: as a superuser, grant usage on schema cron to it"
            " (or run `memexdb schedule` as a superuser)"
        )
    return found.version


def registered(conn: psycopg.Connection) -> list[Registered]:
    """Our jobs in cron.job for this database (those the role may see)."""
    cur = conn.cursor(row_factory=class_row(Registered))
    return cur.execute(consolidation_sql.CRON_JOBS, {"names": NAMES}).fetchall()


def schedule(
    conn: psycopg.Connection,
    schedules: Mapping[str, str] | None = None,
    *,
    leave: Mapping[str, str] | None = None,
) -> Scheduled:
    """Register every job whose function exists in this database (`schedules`: name ->
    schedule, default each job's own), all or none, but those named in `leave` (name ->
    why; not_for_pg_cron), which are removed if registered before. pg_cron keeps one job
    per name and role: registering again updates it."""
    schedules = schedules or {}
    leave = leave or {}
    version = require(conn)
    skipped: dict[str, str] = {}
    with conn.transaction():
        if leave:
            conn.execute(consolidation_sql.CRON_UNSCHEDULE, {"names": list(leave)}).fetchall()
        for job in JOBS:
            if job.name in leave:
                skipped[job.name] = leave[job.name]
                continue
            exists = conn.execute(consolidation_sql.FUNCTION_EXISTS, {"function": job.proc})
            if not (row := exists.fetchone()) or not row[0]:
                skipped[job.name] = (
                    f"{job.function} does not exist in this database (`memexdb migrate`"
                    " creates the functions of this release)"
                )
                continue
            when = schedules.get(job.name) or job.schedule
            try:
                conn.execute(
                    consolidation_sql.CRON_SCHEDULE,
                    {"name": job.name, "schedule": when, "command": job.command},
                )
            except psycopg.errors.InvalidParameterValue as exc:
                raise InvalidArgument(
                    job.option,
                    f"{exc.diag.message_primary} (cron syntax such as '*/5 * * * *';"
                    f" pg_cron >= 1.5 also takes '[1-59] seconds'; this is {version})",
                ) from None
    return Scheduled(version, skipped, registered(conn))


def unschedule(conn: psycopg.Connection) -> list[str]:
    """Remove our jobs from this database's cron.job; returns the names removed."""
    require(conn)
    rows = conn.execute(consolidation_sql.CRON_UNSCHEDULE, {"names": NAMES}).fetchall()
    return [str(row[0]) for row in rows]


async def runs(conn: psycopg.AsyncConnection, names: Sequence[str]) -> set[str]:
    """Which of `names` pg_cron runs in this database now: active in cron.job, with
    pg_cron's scheduler running here. Empty where pg_cron is not installed, or this role
    may not read its jobs (then the service runs them too: they may run concurrently)."""
    cur = await conn.cursor(row_factory=class_row(PgCron)).execute(consolidation_sql.PG_CRON)
    found = await cur.fetchone()
    if found is None or not found.usable or found.running is False:
        return set()
    rows = await (
        await conn.execute(consolidation_sql.CRON_ACTIVE, {"names": list(names)})
    ).fetchall()
    return {str(row[0]) for row in rows}
