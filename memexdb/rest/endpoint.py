"""One declaration per REST operation: the route the app serves and the operation the
OpenAPI document describes are both built from it, so the two cannot drift."""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from pydantic import BaseModel
from starlette.requests import Request
from starlette.responses import Response

from memexdb.operation import Domain, Reply

__all__ = ["Endpoint", "Handler", "Reply"]

Handler = Callable[[Request], Awaitable[Response]]

# The session token of read-your-writes across processes (memexdb.replicas): the answer
# to an operation that may write carries the primary's WAL position after it (with read
# replicas), and a read that sends it back is answered by a replica that has replayed it
# or by the primary.
WRITE_LSN_HEADER = "Memex-Write-LSN"
MIN_LSN_HEADER = "Memex-Min-LSN"


@dataclass(frozen=True, eq=False)  # hashed by identity: the OpenAPI document is cached
class Endpoint:
    """An operation: method + Starlette path (with convertors, e.g. `{memory_id:uuid}`),
    its handler, and what it reads (JSON body, query string) and answers."""

    method: str
    path: str
    handler: Handler
    summary: str
    ok: Reply
    body: type[BaseModel] | None = None
    # A body streamed as lines rather than one JSON document (POST /v1/import): its media
    # type and an example; the handler reads and checks it itself.
    stream: tuple[str, str] | None = None
    query: type[BaseModel] | None = None
    # Path parameters: name -> JSON schema.
    path_params: dict[str, dict[str, str]] = field(default_factory=dict)
    errors: tuple[Reply, ...] = ()
    # Open to everyone (probes): no API key, and none of the common errors (401, 422...).
    open: bool = False
    # The OpenAPI operationId (the operation's name: `search`, `write_file`, `health`) and
    # tag (its domain); required, so that no endpoint is left unnamed or untagged.
    operation_id: str = field(kw_only=True)
    tag: Domain = field(kw_only=True)
    # It reads the Memex-Min-LSN request header / may answer a Memex-Write-LSN header.
    min_lsn: bool = field(default=False, kw_only=True)
    write_lsn: bool = field(default=False, kw_only=True)

    @property
    def openapi_path(self) -> str:
        """The path as OpenAPI writes it: `{memory_id}` without the convertor."""
        return re.sub(r"\{(\w+):\w+\}", r"{\1}", self.path)
