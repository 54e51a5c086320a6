"""`memexdb` command line: serve, mcp, migrate, status."""

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

import psycopg
import uvicorn

from memexdb import __version__, queries
from memexdb.config import Settings
from memexdb.embedded import EmbeddedPostgresError
from memexdb.errors import MemexError
from memexdb.migrations import head_revision
from memexdb.runtime import database, embedded_server

log = logging.getLogger("memexdb")


def _serve(args: argparse.Namespace, settings: Settings) -> int:
    with database(settings) as dsn, contextlib.ExitStack() as cleanup:
        if args.workers > 1:
            # Workers relay legacy-SSE messages to each other through sockets in here.
            relay = tempfile.mkdtemp(prefix="memexdb-mcp-")
            cleanup.callback(shutil.rmtree, relay, ignore_errors=True)
            os.environ["MEMEX_MCP_RELAY_DIR"] = relay
        # Workers (and the app factory) read the DSN from the environment.
        os.environ["MEMEX_DATABASE_URL"] = dsn
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
            # database()'s handler stops PostgreSQL and exits 143. A stop that was asked
            # for and completed is a success (exit 0, as with several workers), which is
            # what service managers expect.
            if exc.code != 128 + signal.SIGTERM:
                raise
            log.info("stopped on SIGTERM")
    return 0


def _mcp(args: argparse.Namespace, settings: Settings) -> int:
    from memexdb.mcp.stdio import run_stdio

    return run_stdio(settings)


def _migrate(args: argparse.Namespace, settings: Settings) -> int:
    with database(settings):
        print(f"migrated to revision {head_revision()}")
    return 0


def _status(args: argparse.Namespace, settings: Settings) -> int:
    if settings.database_url:
        where, dsn = "MEMEX_DATABASE_URL", settings.database_url
    else:
        server = embedded_server(settings)
        where, dsn = f"embedded ({server.data_dir})", server.dsn
    print(f"memexdb {__version__}; database: {where}")
    try:
        with psycopg.connect(dsn, connect_timeout=3) as conn:
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


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="memexdb", description="Persistent memory for AI agents.")
    parser.add_argument("--version", action="version", version=f"memexdb {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    serve = sub.add_parser("serve", help="run the REST + MCP service")
    serve.add_argument("--host", default=os.environ.get("MEMEX_HOST", "127.0.0.1"))
    serve.add_argument("--port", type=int, default=int(os.environ.get("MEMEX_PORT", "8000")))
    serve.add_argument("--workers", type=int, default=int(os.environ.get("MEMEX_WORKERS", "1")))
    serve.add_argument("--log-level", default="info")
    sub.add_parser(
        "mcp",
        help="serve MCP over stdio (for Claude Desktop / Claude Code configs)",
        description="Serve the memexdb MCP tools over stdin/stdout, on the embedded "
        "PostgreSQL (MEMEX_DATA_DIR) or MEMEX_DATABASE_URL. Logs go to stderr.",
    )
    sub.add_parser("migrate", help="create or upgrade the memex schema")
    sub.add_parser("status", help="show database, schema revision and counts")
    args = parser.parse_args(argv)

    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    settings = Settings.from_env()
    commands = {"serve": _serve, "mcp": _mcp, "migrate": _migrate, "status": _status}
    try:
        return commands[args.command](args, settings)
    except (MemexError, EmbeddedPostgresError) as exc:
        print(f"memexdb: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
