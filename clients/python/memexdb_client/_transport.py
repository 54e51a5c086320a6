"""HTTP for the client: one keep-alive httpx client, typed errors from the error bodies,
retries with exponential backoff and jitter on 429 and 503 (honouring Retry-After),
bounded in count and in total time."""

from __future__ import annotations

import asyncio
import json
import random
import time
from collections.abc import AsyncIterable
from dataclasses import dataclass
from typing import Any

import httpx

from memexdb_client.errors import (
    BY_CODE,
    InvalidArgument,
    MemexError,
    RateLimited,
    Unavailable,
)

RETRY_STATUSES = frozenset({429, 503})
# Read-your-writes across a service's processes and hosts (docs/rest.md): the answer to a
# write carries a session token, which every later request of the client sends back.
WRITE_LSN_HEADER = "Memex-Write-LSN"
MIN_LSN_HEADER = "Memex-Min-LSN"


def _lsn(token: str) -> int | None:
    """A session token (a WAL position as up to 16 hexadecimal digits) as a number; None
    if it is not one."""
    if not 1 <= len(token) <= 16 or token.strip("0123456789abcdefABCDEF"):
        return None
    return int(token, 16)


class HTTPError(MemexError):
    """An answer of the service that is none of memexdb's typed errors (e.g. a 500)."""

    code = "http_error"

    def __init__(self, status: int, message: str) -> None:
        super().__init__(f"HTTP {status}: {message}")
        self.status = status


@dataclass(frozen=True)
class Retries:
    """How the client retries: at most `attempts` tries in all (1: never retry), waits of
    `base` * 2**n seconds (with full jitter, at most `max_wait`, at least what Retry-After
    asks), and never past `max_total` seconds from the first try."""

    attempts: int = 4
    base: float = 0.25
    max_wait: float = 8.0
    max_total: float = 30.0

    def wait(self, attempt: int, retry_after: float | None) -> float:
        backoff = random.uniform(0, min(self.max_wait, self.base * 2**attempt))  # noqa: S311
        return max(backoff, retry_after or 0.0)


def error_of(response: httpx.Response) -> MemexError:
    """The typed exception of an error response (its JSON body: {"error": {...}})."""
    try:
        body = response.json()["error"]
        code, message = str(body["code"]), str(body["message"])
    except (ValueError, KeyError, TypeError):
        return HTTPError(response.status_code, response.text[:200])
    kind = BY_CODE.get(code)  # the error table's row of the code
    if kind is None or kind.exception is None:
        return HTTPError(response.status_code, message)
    if kind.exception is InvalidArgument:
        fields = body.get("fields") or []
        if fields:
            first = fields[0]
            return InvalidArgument(str(first.get("field")), str(first.get("message")))
        return InvalidArgument("request", message)
    if kind.exception is RateLimited:
        retry = body.get("retry_after_seconds") or _retry_after(response) or 1.0
        return RateLimited(message, float(retry))
    return kind.exception(message)


def _retry_after(response: httpx.Response) -> float | None:
    value = response.headers.get("Retry-After")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        return None


def _jsonable(value: Any) -> Any:
    from pydantic_core import to_jsonable_python

    return to_jsonable_python(value)


def query_params(values: dict[str, Any]) -> dict[str, str]:
    """Arguments as query parameters: None left out, booleans as true/false, objects as
    JSON text, timestamps in ISO 8601."""
    out: dict[str, str] = {}
    for name, value in values.items():
        if value is None:
            continue
        if isinstance(value, bool):
            out[name] = "true" if value else "false"
        elif isinstance(value, dict | list):
            out[name] = json.dumps(_jsonable(value))
        else:
            plain = _jsonable(value)
            out[name] = plain if isinstance(plain, str) else json.dumps(plain)
    return out


def body_json(values: dict[str, Any]) -> Any:
    return _jsonable(values)


class AsyncTransport:
    """One httpx.AsyncClient (keep-alive) and the retry loop."""

    def __init__(
        self,
        base_url: str,
        api_key: str | None,
        timeout: float | httpx.Timeout,
        retries: Retries,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        headers = {"User-Agent": "memexdb-client"}
        if api_key:
            headers["Authorization"] = f"Bearer {api_key}"
        self.retries = retries
        # the latest session token the service gave this client (Memex-Write-LSN)
        self.session_token: str | None = None
        self.base_url = base_url.rstrip("/")
        self.http = httpx.AsyncClient(
            base_url=self.base_url, headers=headers, timeout=timeout, transport=transport
        )

    async def send(
        self,
        method: str,
        path: str,
        *,
        params: dict[str, str] | None = None,
        json_body: Any = None,
        resend: bool = False,
        stream: bool = False,
        content: AsyncIterable[bytes] | None = None,
        headers: dict[str, str] | None = None,
    ) -> httpx.Response:
        """The response to a request, retried on 429 and 503 (nothing was applied then)
        and on a connection that failed before the request was sent; with `resend` (an
        idempotent request), also on one that failed after it was sent. A streamed body
        (`content`) is read once: such a request is sent once, never retried."""
        started = time.monotonic()
        attempt = 0
        if self.session_token is not None:
            headers = {MIN_LSN_HEADER: self.session_token, **(headers or {})}
        while True:
            request = self.http.build_request(
                method,
                path,
                params=params,
                json=json_body if json_body is not None else None,
                content=content,
                headers=headers,
            )
            retry_after: float | None = None
            failure: httpx.TransportError | None = None
            try:
                response = await self.http.send(request, stream=stream)
            except (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout) as exc:
                failure, response = exc, None
            except (httpx.ReadError, httpx.RemoteProtocolError, httpx.ReadTimeout) as exc:
                if not resend:
                    raise self.unavailable(exc) from exc
                failure, response = exc, None
            except httpx.TransportError as exc:  # e.g. a write that failed: never retried
                raise self.unavailable(exc) from exc
            if response is not None:
                if response.status_code < 400:
                    self._keep_token(response.headers.get(WRITE_LSN_HEADER))
                    return response
                if response.status_code not in RETRY_STATUSES:
                    if stream:
                        await response.aread()
                    raise error_of(response)
                if stream:
                    await response.aread()
                retry_after = _retry_after(response)
            attempt += 1
            wait = self.retries.wait(attempt - 1, retry_after)
            spent = time.monotonic() - started
            if (
                content is not None
                or attempt >= self.retries.attempts
                or spent + wait > self.retries.max_total
            ):
                if response is not None:
                    raise error_of(response)
                assert failure is not None
                raise self.unavailable(failure) from failure
            await asyncio.sleep(wait)

    def _keep_token(self, token: str | None) -> None:
        """Keep `token` if it is later than the one kept (answers can arrive out of order)."""
        if token is None or (position := _lsn(token)) is None:
            return
        kept = None if self.session_token is None else _lsn(self.session_token)
        if kept is None or position > kept:
            self.session_token = token

    def unavailable(self, failure: httpx.TransportError) -> Unavailable:
        """The typed error of a request that got no answer (`failure`: httpx's)."""
        what = {
            httpx.ConnectError: "cannot connect",
            httpx.ConnectTimeout: "no connection within the timeout",
            httpx.PoolTimeout: "no free connection within the timeout",
            httpx.ReadTimeout: "no answer within the timeout (the request may have been applied)",
        }.get(type(failure), "the connection failed (the request may have been applied)")
        detail = str(failure)
        return Unavailable(self.base_url, f"{what}: {detail}" if detail else what)

    async def aclose(self) -> None:
        await self.http.aclose()
