"""`memexdb mcp`: the MCP server over stdio, for Claude Desktop / Claude Code style configs.

stdout carries protocol messages only. Until the server speaks, fd 1 points at stderr
(and fd 0 at /dev/null), so nothing printed while PostgreSQL starts, the schema migrates
or the model loads (by Python code, C libraries or child processes, which inherit these
descriptors) can corrupt the stream; the MCP SDK's stdio transport then takes the real
descriptors over and keeps the same diversion while it serves.

Desktop clients start one `memexdb mcp` per window or session, and a `memexdb serve` may
already run on the same data dir: then this process uses that embedded server, and takes
it over (starts it itself) if the process running it ends first (memexdb.runtime).
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
from collections.abc import Iterator

import anyio

from memexdb.config import Settings
from memexdb.mcp.server import build_mcp_server
from memexdb.runtime import Attach, Runtime, open_database
from memexdb.session import STDIO_REMEDY

log = logging.getLogger("memexdb.mcp")

POOL_SIZE = 4  # one client's calls


@contextlib.contextmanager
def protocol_streams_reserved() -> Iterator[None]:
    """Point fd 0 at /dev/null and fd 1 at stderr for the body; restore them afterwards."""
    saved_in, saved_out = os.dup(0), os.dup(1)
    devnull = os.open(os.devnull, os.O_RDONLY)
    try:
        os.dup2(devnull, 0)
        os.dup2(2, 1)
        yield
    finally:
        with contextlib.suppress(ValueError, OSError):
            sys.stdout.flush()  # whatever Python buffered still goes to stderr
        os.dup2(saved_in, 0)
        os.dup2(saved_out, 1)
        for fd in (devnull, saved_in, saved_out):
            os.close(fd)


async def _serve(dsn: str, settings: Settings, restore: contextlib.ExitStack) -> None:
    async with Runtime.open(settings, dsn, pool_size=POOL_SIZE, remedy=STDIO_REMEDY) as runtime:
        server = build_mcp_server(lambda: runtime.memex)
        restore.close()  # give the protocol its stdin/stdout back, then speak
        log.info("memexdb MCP server ready on stdio")
        await server.run_stdio_async()


def run_stdio(settings: Settings) -> int:
    """Serve MCP on stdin/stdout until the client closes stdin; 0 on a clean exit."""
    with contextlib.ExitStack() as restore:
        restore.enter_context(protocol_streams_reserved())
        # The SDK's stdin reader thread cannot be joined while the client keeps stdin
        # open: on a signal, stop the server (if this process runs it) and end at once.
        with open_database(settings, Attach.SHARE, exit_at_once_on_signal=True) as database:
            anyio.run(_serve, database.dsn, settings, restore)
    return 0
