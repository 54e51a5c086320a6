"""schemathesis hooks for tests/fuzzing.py (loaded with SCHEMATHESIS_HOOKS=tests.fuzz_hooks).

A memory's `expires_at` must lie in the future (a past one is a 422: a memory that expired
when stored would never be found), which JSON Schema cannot say; the document says it in
words. So that the fuzzer's schema-valid requests stay requests the service accepts, an
expiry it generated that has passed (or is about to) is moved a year ahead before the
request goes out; schemathesis then judges the request as sent.
tests/test_entry_guards.py checks the 422 itself. Likewise a NUL character inside
metadata (the schema says "any JSON object"; its description rules NUL out) is taken out.

POST /v1/import takes JSON Lines (application/x-ndjson), which schemathesis has no
serializer for: a generated string is sent as its UTF-8 bytes, anything else as one JSON
line (tests/schemathesis.toml says why a 422 is the right answer to most of them)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import schemathesis

# the operations whose bodies hold memories' expires_at
MEMORY_BODIES = frozenset(
    {"/v1/memories", "/v1/memories/batch", "/v1/memories/expiry", "/v1/memories/{memory_id}"}
)
# those of them whose body is a list of memories
BATCH_BODIES = frozenset({"/v1/memories/batch", "/v1/memories/expiry"})
MARGIN = timedelta(hours=1)


def _in_the_future(value: Any) -> Any:
    if not isinstance(value, str):
        return value
    try:
        when = datetime.fromisoformat(value)
    except ValueError:
        return value  # not a time: the service says so
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    now = datetime.now(UTC)
    if when > now + MARGIN:
        return value
    return (now + timedelta(days=365)).isoformat()


def _without_nul(value: Any) -> Any:
    """A JSON value with the NUL characters of its strings and keys taken out."""
    if isinstance(value, str):
        return value.replace("\x00", "")
    if isinstance(value, list):
        return [_without_nul(item) for item in value]
    if isinstance(value, dict):
        return {_without_nul(k): _without_nul(v) for k, v in value.items()}
    return value


def _metadata_without_nul(holder: Any) -> None:
    if isinstance(holder, dict) and isinstance(holder.get("metadata"), dict):
        holder["metadata"] = _without_nul(holder["metadata"])


@schemathesis.hook
def before_call(context: Any, case: Any, kwargs: dict[str, Any]) -> None:
    # search's creation window the wrong way round is a 422 the schema cannot say
    if case.operation.path == "/v1/memories/search" and isinstance(case.body, dict):
        after, before = (
            _when(case.body.get("created_after")),
            _when(case.body.get("created_before")),
        )
        if after is not None and before is not None and after >= before:
            del case.body["created_before"]
    # metadata: any JSON object to the schema (a recursive one broke client generators),
    # without NUL in a nested string to the service (jsonb cannot hold one), which the
    # description says: so that schema-valid requests stay ones it accepts
    body = case.body
    _metadata_without_nul(case.query)
    _metadata_without_nul(body)
    for item in body.get("memories") or [] if isinstance(body, dict) else []:
        _metadata_without_nul(item)
    if case.operation.path not in MEMORY_BODIES or not isinstance(body, dict):
        return
    batch = case.operation.path in BATCH_BODIES
    items = body.get("memories") if batch else [body]
    for item in items if isinstance(items, list) else []:
        if isinstance(item, dict) and "expires_at" in item:
            item["expires_at"] = _in_the_future(item["expires_at"])
        if isinstance(item, dict):
            _coherent_validity(item, batch)


def _when(value: Any) -> datetime | None:
    try:
        when = datetime.fromisoformat(value) if isinstance(value, str) else None
    except ValueError:
        return None
    return when.replace(tzinfo=UTC) if when is not None and when.tzinfo is None else when


def _coherent_validity(item: dict[str, Any], batch: bool) -> None:
    # Issue 36's fields, what the schema cannot say: a batch takes no validity (the same
    # item model as a single store, refused there with a 422; its supersedes, random ids
    # here, would name no memory of the tenant), and a validity ends after
    # it starts (after the memory's creation when it has no start: moved into the future)
    if batch:
        for name in ("supersedes", "valid_from", "valid_to"):
            item.pop(name, None)
        return
    if item.get("valid_to") is not None:
        item["valid_to"] = _in_the_future(item["valid_to"])
        start, end = _when(item.get("valid_from")), _when(item["valid_to"])
        if start is not None and end is not None and start >= end:
            del item["valid_from"]


@schemathesis.serializer("application/x-ndjson")
def ndjson(context: Any, value: Any) -> bytes:
    if isinstance(value, bytes):
        return value
    if isinstance(value, str):
        return value.encode("utf-8", "surrogatepass")
    return (json.dumps(value) + "\n").encode()
