"""Legacy SSE across worker processes.

An SSE session lives in the worker that holds its GET /sse stream, but the client POSTs
its messages on other connections, which the kernel may hand to any worker. A worker
that does not know the session passes the POST to its sibling workers over unix sockets
in a private directory (MEMEX_MCP_RELAY_DIR, made by `memexdb serve --workers N`); the
one that holds the session runs the SDK's own message handler on it and its answer goes
back to the client. With one worker (or no directory) nothing is relayed.

Frames on a socket: 4-byte big-endian length + JSON head, then 4-byte length + body.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import struct
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from mcp.server.transport_security import DEFAULT_MAX_REQUEST_BODY_SIZE
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

log = logging.getLogger("memexdb.mcp")

RELAY_TIMEOUT_SECONDS = 10.0
_LENGTH = struct.Struct(">I")

Answer = tuple[int, list[tuple[bytes, bytes]], bytes]


async def _capture(app: ASGIApp, scope: Scope, body: bytes) -> Answer:
    """Run an ASGI app on a buffered request; return (status, headers, body) it answered."""
    delivered = False
    status = 500
    headers: list[tuple[bytes, bytes]] = []
    chunks: list[bytes] = []

    async def receive() -> Message:
        nonlocal delivered
        if delivered:
            return {"type": "http.disconnect"}
        delivered = True
        return {"type": "http.request", "body": body, "more_body": False}

    async def send(message: Message) -> None:
        nonlocal status, headers
        if message["type"] == "http.response.start":
            status = int(message["status"])
            headers = list(message.get("headers", []))
        elif message["type"] == "http.response.body":
            chunks.append(message.get("body", b""))

    await app(scope, receive, send)
    return status, headers, b"".join(chunks)


async def _read_body(receive: Receive, limit: int) -> bytes | None:
    body = bytearray()
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return bytes(body)
        body.extend(message.get("body", b""))
        if len(body) > limit:
            return None
        if not message.get("more_body", False):
            return bytes(body)


async def _write_frame(writer: asyncio.StreamWriter, head: dict[str, Any], body: bytes) -> None:
    raw = json.dumps(head).encode()
    writer.write(_LENGTH.pack(len(raw)) + raw + _LENGTH.pack(len(body)) + body)
    await writer.drain()


async def _read_frame(reader: asyncio.StreamReader) -> tuple[dict[str, Any], bytes]:
    size = _LENGTH.unpack(await reader.readexactly(_LENGTH.size))[0]
    head: dict[str, Any] = json.loads(await reader.readexactly(size))
    size = _LENGTH.unpack(await reader.readexactly(_LENGTH.size))[0]
    if size > DEFAULT_MAX_REQUEST_BODY_SIZE:
        raise ValueError("relayed body too large")
    return head, await reader.readexactly(size)


def _latin1(pairs: list[tuple[bytes, bytes]]) -> list[list[str]]:
    return [[k.decode("latin-1"), v.decode("latin-1")] for k, v in pairs]


def _bytes(pairs: list[list[str]]) -> list[tuple[bytes, bytes]]:
    return [(k.encode("latin-1"), v.encode("latin-1")) for k, v in pairs]


class SseMessageRelay:
    """ASGI app for the SSE message endpoint: the SDK's handler, plus relaying to the
    worker that holds the session when it is not this one."""

    def __init__(self, handler: ASGIApp, directory: Path | None) -> None:
        self.handler = handler
        self.directory = directory
        self._socket = directory / f"{os.getpid()}.sock" if directory else None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "POST" or self.directory is None:
            await self.handler(scope, receive, send)
            return
        body = await _read_body(receive, DEFAULT_MAX_REQUEST_BODY_SIZE)
        if body is None:
            await Response("Request body too large", status_code=413)(scope, receive, send)
            return
        status, headers, content = await _capture(self.handler, scope, body)
        if status == 404:  # not a session of this worker: ask the others
            answer = await self._ask_peers(scope, body)
            if answer is not None:
                status, headers, content = answer
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": content})

    async def _ask_peers(self, scope: Scope, body: bytes) -> Answer | None:
        assert self.directory is not None
        head = {
            "path": scope["path"],
            "root_path": scope.get("root_path", ""),
            "query_string": scope.get("query_string", b"").decode("latin-1"),
            "headers": _latin1(list(scope.get("headers", []))),
        }
        for peer in sorted(self.directory.glob("*.sock")):
            if peer == self._socket:
                continue
            try:
                async with asyncio.timeout(RELAY_TIMEOUT_SECONDS):
                    reader, writer = await asyncio.open_unix_connection(peer)
                    try:
                        await _write_frame(writer, head, body)
                        answer, content = await _read_frame(reader)
                    finally:
                        writer.close()
                        with contextlib.suppress(OSError):
                            await writer.wait_closed()
            except (OSError, TimeoutError, ValueError, asyncio.IncompleteReadError):
                continue  # a worker that is gone (stale socket) or stuck
            if answer["status"] != 404:
                return int(answer["status"]), _bytes(answer["headers"]), content
        return None

    async def _serve_peer(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            async with asyncio.timeout(RELAY_TIMEOUT_SECONDS):
                head, body = await _read_frame(reader)
                scope: Scope = {
                    "type": "http",
                    "asgi": {"version": "3.0"},
                    "http_version": "1.1",
                    "method": "POST",
                    "scheme": "http",
                    "path": head["path"],
                    "raw_path": head["path"].encode(),
                    "root_path": head["root_path"],
                    "query_string": head["query_string"].encode("latin-1"),
                    "headers": _bytes(head["headers"]),
                    "client": None,
                    "server": None,
                }
                status, headers, content = await _capture(self.handler, scope, body)
                answer = {"status": status, "headers": _latin1(headers)}
                await _write_frame(writer, answer, content)
        except (OSError, TimeoutError, ValueError, KeyError, asyncio.IncompleteReadError):
            log.warning("dropped a malformed or stalled SSE relay request", exc_info=True)
        finally:
            writer.close()

    @contextlib.asynccontextmanager
    async def run(self) -> AsyncIterator[None]:
        """Listen for relayed messages while the app runs (no-op without a directory)."""
        if self._socket is None:
            yield
            return
        self._socket.unlink(missing_ok=True)
        server = await asyncio.start_unix_server(self._serve_peer, path=self._socket)
        try:
            yield
        finally:
            server.close()
            self._socket.unlink(missing_ok=True)
            await server.wait_closed()
