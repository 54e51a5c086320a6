"""Loopback stand-ins for OpenAI-compatible endpoints (embeddings, chat): a JSON request
handler and a context manager that serves it on a thread."""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, TypeVar

_Server = TypeVar("_Server", bound=ThreadingHTTPServer)


class JsonHandler(BaseHTTPRequestHandler):
    """A handler that answers JSON and keeps quiet in the test log."""

    def read_json(self) -> Any:
        return json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))))

    def send_json(self, status: int, payload: dict[str, Any]) -> None:
        self.send_raw(status, json.dumps(payload).encode())

    def send_raw(self, status: int, data: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@contextlib.contextmanager
def serving(server: _Server) -> Iterator[_Server]:
    """`server` answering on its own thread until the block ends."""
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
