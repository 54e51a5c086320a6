"""The API key of an HTTP request (REST and MCP over HTTP): `Authorization: Bearer <key>`.

Only the header's shape is checked here; whether the key is valid, and what it may do, is
decided in SQL (memex._enter) in the transaction of each call.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from memexdb.errors import Unauthenticated

# The WWW-Authenticate header of every 401 (REST, MCP over HTTP): RFC 6750's scheme, as
# the MCP authorization spec asks, so that a client knows to send `Bearer <API key>`.
BEARER_CHALLENGE = 'Bearer realm="memexdb"'


def bearer_key(headers: Mapping[str, str] | None) -> str | None:
    """The key in the Authorization header; None without one. A header of another
    scheme, or an empty key, is refused rather than ignored."""
    if headers is None:
        return None
    value = next((v for k, v in headers.items() if k.lower() == "authorization"), None)
    return None if value is None else _key_of(value)


def raw_bearer_key(headers: Iterable[tuple[bytes, bytes]]) -> str | None:
    """`bearer_key` of an ASGI scope's raw headers, read as Starlette's Headers reads them
    (latin-1) without decoding the other headers of the request."""
    for name, value in headers:
        if name.lower() == b"authorization":
            return _key_of(value.decode("latin-1"))
    return None


def _key_of(value: str) -> str:
    scheme, _, key = value.strip().partition(" ")
    if scheme.lower() != "bearer" or not key.strip():
        raise Unauthenticated("the Authorization header must be 'Bearer <API key>'")
    return key.strip()
