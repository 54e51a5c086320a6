"""`memexdb` command line: serve, mcp, migrate, convert-embeddings, status, dsn, keys,
schedule, export, import, erase, reembed."""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import shutil
import signal
import sys
import tempfile
from collections.abc import Iterator, Sequence
from typing import IO, Any

import psycopg
import uvicorn
from tqdm import tqdm
from uvicorn.config import LOGGING_CONFIG

from memexdb import (
    __version__,
    cli_consolidate,
    cli_keys,
    cli_schedule,
    export_format,
    halfvec,
    logs,
    metrics,
    moving,
)
from memexdb.client import Memex
from memexdb.config import Settings, SettingsError, env_name, listens_on_loopback_only
from memexdb.embedded import EmbeddedPostgresError
from memexdb.embeddings import sql as embeddings_sql
from memexdb.embeddings.models import DEFAULT_REEMBED_BATCH, REEMBED_BATCH_MAX
from memexdb.errors import InvalidArgument, MemexError
from memexdb.health import sql as health_sql
from memexdb.keys import sql as keys_sql
from memexdb.migrations import head_revision
from memexdb.port_check import port_in_use
from memexdb.replicas import WRITES_TABLE_ENV, WriteTable
from memexdb.runtime import Attach, Database, open_database
from memexdb.runtime.embedder import embedder_for
from memexdb.supervisor import WORKER_HEALTHCHECK_SECONDS, watched_workers

log = logging.getLogger("memexdb")

QUIET_LOG_LEVEL = "warning"  # commands other than serve, without -v


def _serve(args: argparse.Namespace, settings: Settings) -> int:
    busy = port_in_use(args.host, args.port)
    if busy is not None:
        print(f"memexdb: cannot serve on {args.host}:{args.port}: {busy}", file=sys.stderr)
        return 2
    with (
        open_database(settings, Attach.OWN) as database,
        contextlib.ExitStack() as cleanup,
    ):
        if args.workers > 1:
            # Workers relay legacy-SSE messages to each other through sockets in here.
            relay = tempfile.mkdtemp(prefix="memexdb-mcp-")
            cleanup.callback(shutil.rmtree, relay, ignore_errors=True)
            os.environ["MEMEX_MCP_RELAY_DIR"] = relay
            # ... and write their metrics here, so that a scrape answered by any of them
            # adds up all of them (a fresh dir per start: no figures of an earlier one).
            figures = metrics.new_multiprocess_dir()
            cleanup.callback(metrics.remove_multiprocess_dir, figures)
            os.environ[metrics.MULTIPROC_ENV] = figures
            if settings.read_database_url_list:
                # ... and share each caller's last write, so that its read on another
                # worker than the write is not answered by a replica behind it
                writes = WriteTable.create()
                cleanup.callback(writes.unlink, missing_ok=True)
                os.environ[WRITES_TABLE_ENV] = str(writes)
        if not listens_on_loopback_only(args.host) and not _has_live_keys(database.dsn):
            print(
                f"memexdb: refusing to serve on {args.host} without API keys: anyone who "
                "can reach it could read and delete every memory. Create a key first:\n"
                "  memexdb keys create --access admin --name operator\n"
                "then serve again (every request then needs Authorization: Bearer <key>),"
                " or serve on 127.0.0.1.",
                file=sys.stderr,
            )
            return 2
        # Workers (and the app factory) read the DSN from the environment.
        os.environ["MEMEX_DATABASE_URL"] = database.dsn
        # ... and the listen host, which the MCP endpoints accept in Host headers.
        os.environ["MEMEX_HOST"] = args.host
        # ... and log as this process does (--log-level included).
        logs.export_to_workers(args.log_level, settings.log_format)
        log.info("memexdb %s serving on http://%s:%s", __version__, args.host, args.port)
        log_config = logs.uvicorn_log_config(args.log_level, settings.log_format)
        try:
            with watched_workers():
                uvicorn.run(
                    "memexdb.service:app_from_env",
                    factory=True,
                    host=args.host,
                    port=args.port,
                    workers=args.workers,
                    log_level=args.log_level,
                    # json: the service logs each request itself (request id, route, latency)
                    access_log=log_config is None,
                    log_config=log_config if log_config is not None else LOGGING_CONFIG,
                    # Keep-alive timeouts of load balancers are typically 60 s.
                    timeout_keep_alive=65,
                    # uvicorn kills a worker that misses a 5 s ping; a worker importing and
                    # loading the model on a busy machine (a container's first start) can,
                    # and was killed over and over without ever serving (dead workers are
                    # still replaced at once: memexdb.supervisor)
                    timeout_worker_healthcheck=WORKER_HEALTHCHECK_SECONDS,
                )
        except SystemExit as exc:
            # One worker: after its graceful shutdown uvicorn raises the SIGTERM again, and
            # the signal handler stops PostgreSQL and exits 143. A stop that was asked for
            # and completed is a success (exit 0, as with several workers), which is what
            # service managers expect.
            if exc.code != 128 + signal.SIGTERM:
                raise
            log.info("stopped on SIGTERM")
    return 0


def _mcp(args: argparse.Namespace, settings: Settings) -> int:
    from memexdb.mcp.stdio import run_stdio

    return run_stdio(settings)


def _has_live_keys(dsn: str) -> bool:
    with psycopg.connect(dsn) as conn:
        row = conn.execute(keys_sql.LIVE_KEYS).fetchone()
    return bool(row and row[0])


def _migrate(args: argparse.Namespace, settings: Settings) -> int:
    # A running `memexdb serve` (or `memexdb mcp`) keeps its server: migrate uses it.
    with open_database(settings, Attach.SHARE, keep_running=False) as database:
        print(f"migrated to revision {head_revision()}")
        if args.schedule:
            return cli_schedule.run(args, database.dsn, settings)
    return 0


def _schedule(args: argparse.Namespace, settings: Settings) -> int:
    # Not migrated here (that is `migrate --schedule`): a job whose function is missing
    # is skipped and said so.
    with open_database(settings, Attach.SHARE, migrate=False, keep_running=False) as database:
        return cli_schedule.run(args, database.dsn, settings)


def _convert_embeddings(args: argparse.Namespace, settings: Settings) -> int:
    # Before revision 0037, while the service serves: not migrated here (that swaps the
    # columns once this is done).
    with open_database(settings, Attach.SHARE, migrate=False, keep_running=False) as database:
        done = halfvec.convert_embeddings(
            database.dsn,
            batch_size=args.batch_size,
            progress=lambda message: print(message, file=sys.stderr),
        )
    if done.already_halfvec:
        print("memex.memories.embedding is already halfvec: nothing to do")
    else:
        print(
            f"filled {done.rows_filled} rows, built {len(done.indexes_built)} index(es);"
            " `memexdb migrate` now swaps the columns"
        )
    return 0


def _status(args: argparse.Namespace, settings: Settings) -> int:
    with open_database(settings, Attach.LOOK, migrate=False) as database:
        return _print_status(database)


def _print_status(database: Database) -> int:
    print(f"memexdb {__version__}; database: {database.where}")
    if database.server is not None:
        print(f"dsn: {database.dsn}")
        if database.shared_with is not None:
            print(f"served by pid {database.shared_with.pid}")
    if not database.running:
        print("database: not reachable (is `memexdb serve` running?)")
        return 1
    try:
        with psycopg.connect(database.dsn, connect_timeout=3) as conn:
            version = conn.execute(health_sql.SERVER_VERSION).fetchone()
            print(f"server: PostgreSQL {version[0] if version else '?'}")
            row = conn.execute(health_sql.SCHEMA_REVISION).fetchone()
            revision = row[0] if row else None
            print(
                f"schema revision: {revision or 'not migrated'} (this release: {head_revision()})"
            )
            if revision and revision != head_revision():
                # Older schemas lack what the counts read (e.g. tenants.ann before 0005).
                print("the schema differs from this release's: `memexdb migrate` upgrades it")
                return 1
            if revision:
                stats = conn.execute(health_sql.TENANT_STATS).fetchone()
                assert stats is not None
                tenants, memories, indexed, waiting = stats
                print(f"tenants: {tenants}, memories: {memories}")
                print(
                    f"ANN index: {indexed} tenant(s) in it, {waiting} grown past"
                    " exact_scan_max_rows and waiting for memex.maintenance()"
                )
                depth = conn.execute(embeddings_sql.EMBED_QUEUE_DEPTH).fetchone()
                assert depth is not None
                queued, due, failing, oldest, _ = depth
                print(
                    f"embed queue: {queued} memories waiting for their own embedding"
                    + (f" ({due} due, {failing} failed before)" if queued else "")
                    + (f", oldest queued at {oldest:%Y-%m-%d %H:%M:%S %Z}" if oldest else "")
                )
    except psycopg.OperationalError:
        print("database: not reachable (is `memexdb serve` running?)")
        return 1
    except psycopg.errors.UndefinedTable:
        print("schema revision: not migrated")
        return 1
    return 0


def _dsn(args: argparse.Namespace, settings: Settings) -> int:
    with open_database(settings, Attach.LOOK, migrate=False) as database:
        print(database.dsn)
        if not database.running:
            print(
                "memexdb: no process runs this embedded server now; start `memexdb serve`",
                file=sys.stderr,
            )
    return 0


def _consolidate(args: argparse.Namespace, settings: Settings) -> int:
    if args.user_id is not None and args.agent_id is None:
        print("memexdb: --user-id needs --agent-id", file=sys.stderr)
        return 2
    with open_database(settings, Attach.SHARE, keep_running=False) as database:
        return cli_consolidate.run(args, database.dsn, settings)


def _keys(args: argparse.Namespace, settings: Settings) -> int:
    with open_database(settings, Attach.SHARE, keep_running=False) as database:
        return cli_keys.run(args, database.dsn)


@contextlib.contextmanager
def _client(settings: Settings) -> Iterator[Memex]:
    # A running `memexdb serve` keeps its server: export and import use it, as migrate does.
    with (
        open_database(settings, Attach.SHARE, keep_running=False) as database,
        Memex.connect(database.dsn, embedder=embedder_for(settings)) as memex,
    ):
        # The command line holds the database credentials: it acts as the operator.
        yield memex.as_operator("cli")


def _progress(args: argparse.Namespace, total: int | None = None) -> tqdm[Any]:
    return tqdm(
        total=total, unit=" records", file=sys.stderr, disable=args.quiet, dynamic_ncols=True
    )


def _export(args: argparse.Namespace, settings: Settings) -> int:
    with (
        _client(settings) as memex,
        contextlib.ExitStack() as files,
        _progress(args) as bar,
    ):
        out: IO[str] = (
            files.enter_context(open(args.output, "w", encoding="utf-8"))
            if args.output not in (None, "-")
            else sys.stdout
        )
        counts = dict.fromkeys(_KIND_NAMES, 0)
        for record in memex.export(
            args.agent_id,
            args.user_id,
            embeddings=args.embeddings,
            memory_revisions=not args.no_memory_revisions,
        ):
            out.write(json.dumps(record, ensure_ascii=False) + "\n")
            kind = export_format.kind_of(record)
            if kind in counts:
                counts[kind] += 1
            bar.update()
    print(
        "exported " + ", ".join(f"{n} {_KIND_NAMES[k]}" for k, n in counts.items()), file=sys.stderr
    )
    return 0


# what `memexdb export` and `import` count, per kind of record (memexdb.export_format)
_KIND_NAMES = {
    "memory": "memories",
    "file_revision": "file revisions",
    "access": "access-log entries",
    "consolidation_run": "consolidation runs",
    "memory_revision": "memory revisions",
}


def _records(lines: IO[str]) -> Iterator[dict[str, Any]]:
    # Line n holds record n - 1 (records[n - 1] in the Python API's errors).
    for number, line in enumerate(lines, 1):
        if not line.strip():
            raise InvalidArgument(f"line {number}", "is empty (one JSON object per line)")
        try:
            record = json.loads(line)
        except ValueError as exc:
            raise InvalidArgument(f"line {number}", f"is not JSON: {exc}") from None
        if not isinstance(record, dict):
            raise InvalidArgument(f"line {number}", "is not a JSON object")
        yield record


def _import(args: argparse.Namespace, settings: Settings) -> int:
    total = None
    if args.file != "-":
        with open(args.file, encoding="utf-8") as counting:
            total = sum(1 for _ in counting)
    with (
        contextlib.ExitStack() as files,
        _client(settings) as memex,
        _progress(args, total) as bar,
    ):
        lines: IO[str] = (
            files.enter_context(open(args.file, encoding="utf-8"))
            if args.file != "-"
            else sys.stdin
        )

        def counted() -> Iterator[dict[str, Any]]:
            for record in _records(lines):
                bar.update()
                yield record

        try:
            result = memex.import_memories(counted())
        except InvalidArgument as exc:
            raise moving.line_error(exc) from None
    memories = result.kinds.get("memory", {})
    history = "".join(
        f"; {_KIND_NAMES[k]}: imported {c['imported']}, skipped {c['skipped']}"
        for k, c in result.kinds.items()
        if k != "memory"
    )
    print(
        f"imported {memories.get('imported', 0)} memories, skipped"
        f" {memories.get('skipped', 0)} (their id exists already), embedded"
        f" {result.reembedded} again{history}",
        file=sys.stderr,
    )
    if result.access_log_expiring:
        print(
            f"{result.access_log_expiring} imported access-log entries are older than"
            " access_log_retention_days: the next maintenance prunes them",
            file=sys.stderr,
        )
    return 0


def _erase(args: argparse.Namespace, settings: Settings) -> int:
    what = (
        f"every memory, file, revision, access-log entry and consolidation run of user"
        f" {args.user_id!r} of agent {args.agent_id!r}"
    )
    confirm = args.user_id if args.yes else None
    if confirm is None and sys.stdin.isatty():
        print(
            f"This deletes {what}, for good. Type the user id to confirm: ",
            end="",
            file=sys.stderr,
            flush=True,
        )
        confirm = sys.stdin.readline().strip()
    if confirm != args.user_id:
        print(
            f"memexdb: not erased ({what} stays; --yes erases without asking)",
            file=sys.stderr,
        )
        return 2
    with _client(settings) as memex:
        deleted = memex.erase_user(args.agent_id, args.user_id, confirm=confirm)
    print(
        f"erased user {args.user_id} of agent {args.agent_id}: "
        + ", ".join(f"{table} {n}" for table, n in deleted.items())
    )
    return 0


def _batch_size(text: str) -> int:
    try:
        size = int(text)
    except ValueError:
        size = 0
    if not 1 <= size <= REEMBED_BATCH_MAX:
        raise argparse.ArgumentTypeError(f"must be a number from 1 to {REEMBED_BATCH_MAX}")
    return size


def _reembed(args: argparse.Namespace, settings: Settings) -> int:
    with _client(settings) as memex:
        counts = memex.embedding_models()
        others = {model: n for model, n in counts.items() if model != memex.model_id}
        stale = sum(others.values())
        which = ", ".join(f"{model}: {n}" for model, n in others.items())
        print(
            f"{stale} memories have vectors of another model than {memex.model_id}"
            + (f" ({which})" if which else ""),
            file=sys.stderr,
        )
        seen = written = 0
        after = None
        with _progress(args, stale) as bar:
            # Each page starts after the last id of the one before: the loop ends.
            while True:
                page = memex.reembed_page(after, limit=args.batch_size)
                seen, written = seen + page.seen, written + page.written
                bar.update(page.seen)
                if page.next_after is None:
                    break
                after = page.next_after
    changed = seen - written
    print(
        f"embedded {written} memories again with {memex.model_id}"
        + (f"; {changed} changed meanwhile (run again for them)" if changed else ""),
        file=sys.stderr,
    )
    return 0


def _option_help(settings: Settings, field: str) -> str:
    info = Settings.model_fields[field]
    return f"{info.description} (default: {getattr(settings, field)}; env {env_name(field)})"


def _parser(settings: Settings) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="memexdb",
        description="Persistent memory for AI agents, in PostgreSQL. Settings come from "
        "MEMEX_* environment variables (see docs/configuration.md); with no "
        "MEMEX_DATABASE_URL, memexdb runs its own embedded PostgreSQL in MEMEX_DATA_DIR.",
    )
    parser.add_argument("--version", action="version", version=f"memexdb {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    serve = sub.add_parser(
        "serve",
        help="run the REST + MCP service",
        description="Migrate the database, then serve the REST API and the MCP endpoints "
        "(starting the embedded PostgreSQL unless MEMEX_DATABASE_URL is set). Options "
        "default to their environment variables.",
    )
    options: dict[str, dict[str, Any]] = {
        "host": {},
        "port": {"type": int},
        "workers": {"type": int},
        "log_level": {"choices": ["critical", "error", "warning", "info", "debug", "trace"]},
    }
    for field, extra in options.items():
        serve.add_argument(
            f"--{field.replace('_', '-')}",
            default=getattr(settings, field),
            help=_option_help(settings, field),
            **extra,
        )
    sub.add_parser(
        "mcp",
        help="serve MCP over stdio (for Claude Desktop / Claude Code configs)",
        description="Serve the memexdb MCP tools over stdin/stdout, on the embedded "
        "PostgreSQL (MEMEX_DATA_DIR; shared with a running `memexdb serve`) or "
        "MEMEX_DATABASE_URL. Logs go to stderr.",
    )
    migrate = sub.add_parser(
        "migrate",
        help="create or upgrade the memex schema",
        description="Create or upgrade the memex schema and SQL functions. Safe to run "
        "twice or from several processes at once, and while `memexdb serve` runs (it "
        "uses that process's embedded PostgreSQL; else it starts and stops its own).",
    )
    migrate.add_argument(
        "--schedule",
        action="store_true",
        help="then register the periodic jobs with pg_cron, as `memexdb schedule` does",
    )
    cli_schedule.add_schedule_options(migrate)
    convert = sub.add_parser(
        "convert-embeddings",
        help="convert the embeddings to halfvec online, before revision 0037 on a big table",
        description="Store memex.memories' embeddings at half precision without a long lock "
        "(memexdb/halfvec.py): a column embedding_half kept filled by a trigger, a backfill "
        "in batches, each ANN index built again on it concurrently, a validated not-null "
        "check; while the service serves. `memexdb migrate` (revision 0037) then swaps the "
        "columns in catalog changes only. Needed on a table of more than 10,000 memories "
        "(memex.halfvec_rewrite_max_rows), where the migration refuses until it has run. "
        "Stopped part-way, it resumes when run again.",
    )
    convert.add_argument(
        "--batch-size", type=int, default=2000, metavar="N", help="rows a transaction"
    )
    sub.add_parser(
        "status",
        help="show database, DSN, schema revision and counts",
        description="Show the database (and the DSN of the embedded server), its schema "
        "revision, tenants and memories, the ANN index and the embed queue. Looks at a "
        "running server only: exit code 1 when none answers.",
    )
    sub.add_parser(
        "dsn",
        help="print the database's DSN (for MEMEX_DATABASE_URL)",
        description="Print only the DSN of the database: the embedded server's (running "
        "under `memexdb serve`) or MEMEX_DATABASE_URL. For example: "
        "export MEMEX_DATABASE_URL=$(memexdb dsn)",
    )
    cli_keys.add_parser(sub)
    cli_schedule.add_parser(sub)
    cli_consolidate.add_parser(sub)
    export = sub.add_parser(
        "export",
        help="write an agent's (or one user's) whole memory as JSON Lines",
        description="Write everything memexdb holds for an agent, or for one of its users, "
        "as JSON Lines (format version 3, docs/operations.md#export-and-import): a header "
        "line (format, version, agent, user, time, model), then one line per record, its "
        'kind in "record": every memory with every field (id, agent_id, user_id, '
        "memory_type, content, importance, metadata, created_at, updated_at, expires_at, "
        "embedding_model, actor, and with --embeddings the embedding), archived ones "
        "with their lineage (archived_at, superseded_by, source_ids), its time where set "
        "(valid_from, valid_to, supersedes, superseded_by, superseded_at, restored_at) "
        "and files (a memory with a path), oldest first per user; then every file "
        "revision (content, actor, time, operation, details), the access log, the "
        "consolidation runs and every revision of every memory, as stored. Expired "
        "memories are left out (they are deleted by maintenance). "
        "`memexdb import` reads it back.",
    )
    export.add_argument("--agent-id", required=True, help="the agent whose memory to export")
    export.add_argument("--user-id", help="only this user's (default: every user's)")
    export.add_argument(
        "--embeddings",
        action="store_true",
        help="include each memory's vector (an import with the same model then embeds nothing)",
    )
    export.add_argument(
        "--no-memory-revisions",
        action="store_true",
        help="leave the memories' revisions out (an import then starts each history anew)",
    )
    export.add_argument("-o", "--output", help="file to write (default: standard output)")
    export.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    imports = sub.add_parser(
        "import",
        help="read a JSON Lines export back, keeping ids, timestamps and history",
        description="Insert the records of a `memexdb export` file (or - for standard "
        "input; a version-1 export, memories only, too), keeping ids, timestamps, "
        "actors and history, 500 per statement, as the operator. A memory whose id "
        "exists already is skipped (and counted) before anything is embedded, never "
        "overwritten; a new one without an embedding, or with one from another model "
        "than MEMEX_EMBEDDER's, is embedded again. A file revision whose path and "
        "number exist, an access-log entry or a consolidation run recorded already at "
        "the same time, is skipped too: an import that stopped part-way can be run again.",
    )
    imports.add_argument("file", help="the JSON Lines file (- for standard input)")
    imports.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    erase = sub.add_parser(
        "erase",
        help="erase a user: delete everything memexdb holds of one user of an agent",
        description="Delete, for good, every row of user --user-id of agent --agent-id in "
        "every table (memories, archived and expired ones too, files, file revisions, the "
        "access log, consolidation runs), as the operator (memex.erase_user; the audit "
        "log keeps that it happened and how many rows, not what). Asks for the user id "
        "again on a terminal; --yes erases without asking (a script without it is "
        "refused). `memexdb export --user-id` first keeps a copy.",
    )
    erase.add_argument("--agent-id", required=True, help="the user's agent")
    erase.add_argument("--user-id", required=True, help="the user to erase")
    erase.add_argument("--yes", action="store_true", help="erase without asking")
    reembed = sub.add_parser(
        "reembed",
        help="embed again every memory whose vector is of another model than MEMEX_EMBEDDER's",
        description="Embed again, with MEMEX_EMBEDDER's model, every memory (archived and "
        "expired ones too) whose vector is of another model: a search compares only vectors "
        "of its own model, so after changing MEMEX_EMBEDDER those memories are invisible "
        "until they are embedded again. Long contents are embedded in full (the mean of "
        "their chunks). Pages of --batch-size memories, each stored as soon as it is "
        "embedded; a memory changed meanwhile keeps its new vector. Stopped part-way, it "
        "resumes where it was when run again (only what is still of another model is "
        "found). The vector's dimension is the schema's (halfvec(384)): a model of another "
        "dimension is refused at start; changing the dimension is a migration.",
    )
    reembed.add_argument(
        "--batch-size",
        type=_batch_size,
        default=DEFAULT_REEMBED_BATCH,
        metavar="N",
        help=f"memories per page, 1 to {REEMBED_BATCH_MAX} (default: {DEFAULT_REEMBED_BATCH})",
    )
    reembed.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    _add_verbose(parser)
    return parser


def _add_verbose(parser: argparse.ArgumentParser, top: bool = True) -> None:
    """-v / --verbose on every command and subcommand (`memexdb keys list -v` as well as
    `memexdb -v keys list`): a subcommand's only sets it, never resets the top one's."""
    parser.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        default=False if top else argparse.SUPPRESS,
        help="log progress (migrations, the database) on stderr at MEMEX_LOG_LEVEL; without"
        " it commands other than serve log warnings and errors only",
    )
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for child in dict.fromkeys(action.choices.values()):
                _add_verbose(child, top=False)


def _log_level(args: argparse.Namespace, settings: Settings) -> str:
    """serve logs at --log-level (MEMEX_LOG_LEVEL); the other commands print their
    answers and say only what went wrong, unless -v."""
    if args.command == "serve":
        return str(args.log_level)
    return settings.log_level if args.verbose else QUIET_LOG_LEVEL


def main(argv: Sequence[str] | None = None) -> int:
    try:
        settings = Settings.from_env()
    except SettingsError as exc:
        print(f"memexdb: invalid setting: {exc}", file=sys.stderr)
        return 2
    args = _parser(settings).parse_args(argv)

    # Logs go to stderr: `memexdb dsn` and `status` print their answers alone on stdout.
    logs.configure(_log_level(args, settings), settings.log_format)
    commands = {
        "serve": _serve,
        "mcp": _mcp,
        "migrate": _migrate,
        "convert-embeddings": _convert_embeddings,
        "status": _status,
        "dsn": _dsn,
        "keys": _keys,
        "schedule": _schedule,
        "consolidate": _consolidate,
        "export": _export,
        "import": _import,
        "erase": _erase,
        "reembed": _reembed,
    }
    try:
        return commands[args.command](args, settings)
    except InvalidArgument as exc:
        print(f"memexdb: invalid {exc.field}: {exc.message}", file=sys.stderr)
        return 2
    except (MemexError, EmbeddedPostgresError) as exc:
        print(f"memexdb: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"memexdb: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
