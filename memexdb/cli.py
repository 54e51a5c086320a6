"""`memexdb` command line: serve, mcp, migrate, status, dsn."""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import shutil
import signal
import sys
import tempfile
from collections.abc import Sequence
from typing import Any

import psycopg
import uvicorn

from memexdb import __version__, cli_keys, queries
from memexdb.config import Settings, SettingsError, env_name, listens_on_loopback_only
from memexdb.embedded import EmbeddedPostgresError
from memexdb.errors import MemexError
from memexdb.migrations import head_revision
from memexdb.runtime import Attach, Database, open_database

log = logging.getLogger("memexdb")

LOG_FORMAT = "%(levelname)s %(name)s: %(message)s"


def _serve(args: argparse.Namespace, settings: Settings) -> int:
    with (
        open_database(settings, Attach.OWN) as database,
        contextlib.ExitStack() as cleanup,
    ):
        if args.workers > 1:
            # Workers relay legacy-SSE messages to each other through sockets in here.
            relay = tempfile.mkdtemp(prefix="memexdb-mcp-")
            cleanup.callback(shutil.rmtree, relay, ignore_errors=True)
            os.environ["MEMEX_MCP_RELAY_DIR"] = relay
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
        log.info("memexdb %s serving on http://%s:%s", __version__, args.host, args.port)
        try:
            uvicorn.run(
                "memexdb.service:app_from_env",
                factory=True,
                host=args.host,
                port=args.port,
                workers=args.workers,
                log_level=args.log_level,
                # Keep-alive timeouts of load balancers are typically 60 s.
                timeout_keep_alive=65,
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
        row = conn.execute(queries.LIVE_KEYS).fetchone()
    return bool(row and row[0])


def _migrate(args: argparse.Namespace, settings: Settings) -> int:
    # A running `memexdb serve` (or `memexdb mcp`) keeps its server: migrate uses it.
    with open_database(settings, Attach.SHARE, keep_running=False):
        print(f"migrated to revision {head_revision()}")
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
            version = conn.execute(queries.SERVER_VERSION).fetchone()
            print(f"server: PostgreSQL {version[0] if version else '?'}")
            row = conn.execute(queries.SCHEMA_REVISION).fetchone()
            revision = row[0] if row else None
            print(
                f"schema revision: {revision or 'not migrated'} (this release: {head_revision()})"
            )
            if revision and revision != head_revision():
                # Older schemas lack what the counts read (e.g. tenants.ann before 0005).
                print("the schema differs from this release's: `memexdb migrate` upgrades it")
                return 1
            if revision:
                stats = conn.execute(queries.TENANT_STATS).fetchone()
                assert stats is not None
                tenants, memories, indexed, waiting = stats
                print(f"tenants: {tenants}, memories: {memories}")
                print(
                    f"ANN index: {indexed} tenant(s) in it, {waiting} grown past"
                    " exact_scan_max_rows and waiting for memex.maintenance()"
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


def _keys(args: argparse.Namespace, settings: Settings) -> int:
    with open_database(settings, Attach.SHARE, keep_running=False) as database:
        return cli_keys.run(args, database.dsn)


def _option_help(settings: Settings, field: str) -> str:
    info = Settings.model_fields[field]
    return f"{info.description} (default: {getattr(settings, field)}; env {env_name(field)})"


def _parser(settings: Settings) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="memexdb",
        description="Persistent memory for AI agents, in PostgreSQL. Settings come from "
        "MEMEX_* environment variables (see the README's Configuration); with no "
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
    sub.add_parser(
        "migrate",
        help="create or upgrade the memex schema",
        description="Create or upgrade the memex schema and SQL functions. Safe to run "
        "twice or from several processes at once, and while `memexdb serve` runs (it "
        "uses that process's embedded PostgreSQL; else it starts and stops its own).",
    )
    sub.add_parser(
        "status",
        help="show database, DSN, schema revision and counts",
        description="Show the database (and the DSN of the embedded server), its schema "
        "revision, tenants and memories, and the ANN index. Looks at a running server "
        "only: exit code 1 when none answers.",
    )
    sub.add_parser(
        "dsn",
        help="print the database's DSN (for MEMEX_DATABASE_URL)",
        description="Print only the DSN of the database: the embedded server's (running "
        "under `memexdb serve`) or MEMEX_DATABASE_URL. For example: "
        "export MEMEX_DATABASE_URL=$(memexdb dsn)",
    )
    cli_keys.add_parser(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    try:
        settings = Settings.from_env()
    except SettingsError as exc:
        print(f"memexdb: invalid setting: {exc}", file=sys.stderr)
        return 2
    args = _parser(settings).parse_args(argv)

    # Logs go to stderr: `memexdb dsn` and `status` print their answers alone on stdout.
    logging.basicConfig(
        level=settings.log_level.upper().replace("TRACE", "DEBUG"), format=LOG_FORMAT
    )
    commands = {
        "serve": _serve,
        "mcp": _mcp,
        "migrate": _migrate,
        "status": _status,
        "dsn": _dsn,
        "keys": _keys,
    }
    try:
        return commands[args.command](args, settings)
    except (MemexError, EmbeddedPostgresError) as exc:
        print(f"memexdb: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
