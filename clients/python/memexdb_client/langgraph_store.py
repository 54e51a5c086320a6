"""MemexStore: LangGraph's long-term memory store (`BaseStore`) on memexdb.

Works over either client of the `AsyncMemoryAPI` Protocol: the in-process
`memexdb.AsyncMemex` or the HTTP `memexdb_client.AsyncMemexClient`, so it imports with
only `memexdb-client[langgraph]` installed (no server stack).

The mapping (docs/langgraph.md):

- Every item of a store lives in one memexdb tenant: (`agent_id`, `user_id`) given to
  the constructor (`user_id` defaults to "langgraph"). Use one store per end user when
  memexdb's own per-user isolation (erase a user, quotas, keys) should apply.
- An item (namespace, key, value) is one memory whose id is uuid5 of (agent_id,
  user_id, namespace, key): a put of the same (namespace, key) updates that memory, a
  put of `None` (delete) forgets it.
- The memory's metadata holds the item under "langgraph": `namespace` (the labels),
  `path` (label i under the key str(i), for prefix filters by containment), `key`,
  `value` and `put_at` (the time of the last put).
- Its content (what memexdb embeds and ranks) is the text at the store's
  `index_fields` (or the put's `index`) joined by newlines, else the value as JSON.
- `search` with a query is memexdb's hybrid search (vector + text + recency) with the
  namespace prefix and the exact-match filters as metadata containment; `score` is
  memexdb's score. Without a query, memories are listed newest first with the same
  containment. Operators ($eq, $ne, $gt, $gte, $lt, $lte) and lists are checked on the
  client, as LangGraph's InMemoryStore checks them.
- `list_namespaces` pages over the tenant's items (prefix conditions without wildcards
  narrow it by containment), then matches, cuts to `max_depth`, sorts and slices.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import uuid
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from langgraph.store.base import (
    BaseStore,
    GetOp,
    Item,
    ListNamespacesOp,
    MatchCondition,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
)
from langgraph.store.base.embed import get_text_at_path, tokenize_path

from memexdb_client.api import AsyncMemoryAPI
from memexdb_client.errors import Conflict, NotFound
from memexdb_client.types import Memory

__all__ = ["MemexStore"]

_ID_NAMESPACE = uuid.UUID("6f1d8a52-4c1e-4b8e-9a0c-6c616e676772")
_FIELD = "langgraph"
_PAGE = 1000  # memories per page of list_memories (its maximum)
_TOP_K_MAX = 100  # memexdb's search returns at most 100 hits


def item_id(agent_id: str, user_id: str, namespace: tuple[str, ...], key: str) -> uuid.UUID:
    """The memory id of (namespace, key) in a tenant: stable, so a put replaces."""
    name = "\x00".join((agent_id, user_id, ".".join(namespace), key))
    return uuid.uuid5(_ID_NAMESPACE, name)


class MemexStore(BaseStore):
    """A LangGraph `BaseStore` whose items are memexdb memories of one tenant.

    `client` is an `AsyncMemex` or an `AsyncMemexClient`. The async methods (`aput`,
    `asearch`, ..., what `graph.ainvoke` uses) run on the caller's event loop; the sync
    ones (`graph.invoke`) hand the work to the loop the store was built on, which must
    be running in another thread (as LangGraph's AsyncPostgresStore does)."""

    supports_ttl = False

    def __init__(
        self,
        client: AsyncMemoryAPI,
        agent_id: str,
        user_id: str = "langgraph",
        *,
        index_fields: Sequence[str] | None = None,
        memory_type: str = "semantic",
        loop: asyncio.AbstractEventLoop | None = None,
    ) -> None:
        self.client = client
        self.agent_id = agent_id
        self.user_id = user_id
        self.index_fields = list(index_fields) if index_fields else None
        self.memory_type = memory_type
        if loop is None:
            try:
                loop = asyncio.get_running_loop()
            except RuntimeError:
                loop = None
        self.loop = loop

    # --- BaseStore ---

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        if self.loop is None:
            raise RuntimeError("MemexStore.batch needs the event loop the client runs on")
        try:
            running: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is self.loop:
            # waiting here for work that this very loop must run would never end
            raise RuntimeError(
                "synchronous MemexStore calls cannot run on the client's event loop: "
                "use the async methods (abatch, asearch, graph.ainvoke)"
            )
        future = asyncio.run_coroutine_threadsafe(self.abatch(ops), self.loop)
        return future.result()

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        # one after the other, in order: a get sees the puts before it in the batch
        results: list[Result] = []
        for op in ops:
            if isinstance(op, GetOp):
                results.append(await self._get(op))
            elif isinstance(op, SearchOp):
                results.append(await self._search(op))
            elif isinstance(op, ListNamespacesOp):
                results.append(await self._list_namespaces(op))
            elif isinstance(op, PutOp):
                await self._put(op)
                results.append(None)
            else:
                raise ValueError(f"Unknown operation type: {type(op)}")
        return results

    # --- operations ---

    def _id(self, namespace: tuple[str, ...], key: str) -> uuid.UUID:
        return item_id(self.agent_id, self.user_id, namespace, key)

    async def _get(self, op: GetOp) -> Item | None:
        try:
            memory = await self.client.get(
                self.agent_id, self.user_id, self._id(op.namespace, op.key)
            )
        except NotFound:
            return None
        return _item(memory)

    async def _put(self, op: PutOp) -> None:
        _check_namespace(op.namespace)
        memory_id = self._id(op.namespace, op.key)
        if op.value is None:
            with contextlib.suppress(NotFound):  # deleting what is gone is no error
                await self.client.forget(self.agent_id, self.user_id, memory_id)
            return
        value = dict(op.value)
        content = self._content(value, op.index)
        metadata = {
            _FIELD: {
                "namespace": list(op.namespace),
                "path": {str(i): label for i, label in enumerate(op.namespace)},
                "key": op.key,
                "value": value,
                "put_at": datetime.now(UTC).isoformat(),
            }
        }
        try:
            await self.client.get(self.agent_id, self.user_id, memory_id)
        except NotFound:
            try:
                await self.client.store(
                    self.agent_id,
                    self.user_id,
                    content,
                    memory_type=self.memory_type,
                    metadata=metadata,
                    id=memory_id,
                )
                return
            except Conflict:
                pass  # another writer stored it first: update theirs
        await self.client.update(
            self.agent_id, self.user_id, memory_id, content=content, metadata=metadata
        )

    def _content(self, value: dict[str, Any], index: Any) -> str:
        fields = index if isinstance(index, list) else self.index_fields
        texts: list[str] = []
        for path in fields or ():
            texts.extend(t for t in get_text_at_path(value, tokenize_path(path)) if t)
        if texts:
            return "\n".join(texts)
        return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)

    async def _search(self, op: SearchOp) -> list[SearchItem]:
        _check_labels(op.namespace_prefix)
        containment, exact = _containment(op.namespace_prefix, op.filter)
        wanted = op.offset + op.limit
        found: list[SearchItem] = []
        if op.query:
            top_k = _TOP_K_MAX if not exact else min(max(wanted, 1), _TOP_K_MAX)
            hits = await self.client.search(
                self.agent_id, self.user_id, op.query, top_k=top_k, metadata=containment
            )
            for hit in hits:
                entry = hit.metadata.get(_FIELD)
                if isinstance(entry, dict) and _matches(entry.get("value"), op.filter):
                    found.append(_search_item(entry, hit.created_at, hit.updated_at, hit.score))
            return found[op.offset : wanted]
        cursor: str | None = None
        while len(found) < wanted:
            page = await self.client.list_memories(
                self.agent_id, self.user_id, limit=_PAGE, cursor=cursor, metadata=containment
            )
            for memory in page.memories:
                entry = memory.metadata.get(_FIELD)
                if isinstance(entry, dict) and _matches(entry.get("value"), op.filter):
                    found.append(_search_item(entry, memory.created_at, memory.updated_at, None))
            cursor = page.next_cursor
            if cursor is None:
                break
        return found[op.offset : wanted]

    async def _list_namespaces(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        path: dict[str, str] = {}
        for condition in op.match_conditions or ():
            _check_labels(tuple(condition.path))
            if condition.match_type == "prefix":
                for i, label in enumerate(condition.path):
                    if label != "*":
                        path[str(i)] = label
        namespaces: set[tuple[str, ...]] = set()
        cursor: str | None = None
        while True:
            page = await self.client.list_memories(
                self.agent_id,
                self.user_id,
                limit=_PAGE,
                cursor=cursor,
                metadata={_FIELD: {"path": path}},
            )
            for memory in page.memories:
                entry = memory.metadata.get(_FIELD)
                if isinstance(entry, dict) and isinstance(entry.get("namespace"), list):
                    namespaces.add(tuple(entry["namespace"]))
            cursor = page.next_cursor
            if cursor is None:
                break
        matching = [
            ns
            for ns in namespaces
            if all(_does_match(condition, ns) for condition in op.match_conditions or ())
        ]
        if op.max_depth is not None:
            result = sorted({ns[: op.max_depth] for ns in matching})
        else:
            result = sorted(matching)
        return result[op.offset : op.offset + op.limit]


# --- helpers ---


def _check_namespace(namespace: tuple[str, ...]) -> None:
    from langgraph.store.base import InvalidNamespaceError

    if not namespace:
        raise InvalidNamespaceError("Namespace cannot be empty.")
    if namespace[0] == "langgraph":
        raise InvalidNamespaceError(f'Root label cannot be "langgraph": {namespace}')
    _check_labels(namespace)


def _check_labels(namespace: tuple[str, ...]) -> None:
    from langgraph.store.base import InvalidNamespaceError

    for label in namespace:
        if not isinstance(label, str) or not label or "." in label or "\x00" in label:
            raise InvalidNamespaceError(f"Invalid namespace label {label!r} in {namespace}")


def _item(memory: Memory) -> Item | None:
    entry = memory.metadata.get(_FIELD)
    if not isinstance(entry, dict):
        return None
    return Item(
        value=entry["value"],
        key=entry["key"],
        namespace=tuple(entry["namespace"]),
        created_at=memory.created_at,
        updated_at=memory.updated_at,
    )


def _search_item(
    entry: Mapping[str, Any], created_at: datetime, updated_at: datetime, score: float | None
) -> SearchItem:
    return SearchItem(
        namespace=tuple(entry["namespace"]),
        key=entry["key"],
        value=entry["value"],
        created_at=created_at,
        updated_at=updated_at,
        score=score,
    )


def _containment(
    prefix: tuple[str, ...], filter: dict[str, Any] | None
) -> tuple[dict[str, Any], bool]:
    """The metadata containment of a search, and whether it is all of the filter (so
    the server's top k needs no client-side filtering after it)."""
    entry: dict[str, Any] = {"path": {str(i): label for i, label in enumerate(prefix)}}
    exact = True
    value: dict[str, Any] = {}
    for name, wanted in (filter or {}).items():
        # scalars only: jsonb containment of arrays and objects is looser than equality
        if isinstance(wanted, str | int | float | bool) and not isinstance(wanted, dict):
            value[name] = wanted
        else:
            exact = False
    if value:
        entry["value"] = value
    return {_FIELD: entry}, exact


def _matches(value: Any, filter: dict[str, Any] | None) -> bool:
    if not filter:
        return True
    if not isinstance(value, dict):
        return False
    return all(_compare(value.get(name), wanted) for name, wanted in filter.items())


def _compare(item_value: Any, wanted: Any) -> bool:
    """Equality as LangGraph's InMemoryStore checks it, with its operators."""
    if isinstance(wanted, dict):
        if any(k.startswith("$") for k in wanted):
            return all(_operator(item_value, k, v) for k, v in wanted.items())
        if not isinstance(item_value, dict):
            return False
        return all(_compare(item_value.get(k), v) for k, v in wanted.items())
    if isinstance(wanted, list | tuple):
        return (
            isinstance(item_value, list | tuple)
            and len(item_value) == len(wanted)
            and all(_compare(i, w) for i, w in zip(item_value, wanted, strict=True))
        )
    return bool(item_value == wanted)


def _operator(value: Any, operator: str, operand: Any) -> bool:
    if operator == "$eq":
        return bool(value == operand)
    if operator == "$ne":
        return bool(value != operand)
    if value is None:
        return False
    if operator == "$gt":
        return float(value) > float(operand)
    if operator == "$gte":
        return float(value) >= float(operand)
    if operator == "$lt":
        return float(value) < float(operand)
    if operator == "$lte":
        return float(value) <= float(operand)
    raise ValueError(f"Unsupported operator: {operator}")


def _does_match(condition: MatchCondition, namespace: tuple[str, ...]) -> bool:
    path = condition.path
    if len(namespace) < len(path):
        return False
    if condition.match_type == "prefix":
        pairs = zip(namespace, path, strict=False)
    elif condition.match_type == "suffix":
        pairs = zip(reversed(namespace), reversed(path), strict=False)
    else:
        raise ValueError(f"Unsupported match type: {condition.match_type}")
    return all(p == "*" or n == p for n, p in pairs)
