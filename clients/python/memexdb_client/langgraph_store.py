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
- Each text at the indexed fields has a vector of its own, kept in the entry's
  `vectors` (float32, base64, with the model's name), as LangGraph's stores embed
  field by field: with the caller's `embed` (an `index` config) for every indexed item,
  and a query search scores the items under the prefix by their best text under the
  config's distance type, best first; with memexdb's model for an item of several
  texts, whose score is then its best text's cosine similarity (memexdb's order).
- `search` with a query is memexdb's hybrid search (vector + text + recency) with the
  namespace prefix and the exact-match filters as metadata containment, in memexdb's
  order; `score` is the cosine similarity of the query and the item (as LangGraph's
  stores score), so it need not fall monotonically down the list. Without a query,
  memories are listed newest first with the same containment. Operators ($eq, $ne,
  $gt, $gte, $lt, $lte) and lists are checked on the client, as LangGraph's
  InMemoryStore checks them.
- `list_namespaces` pages over the tenant's items (prefix conditions without wildcards
  narrow it by containment), then matches, cuts to `max_depth`, sorts and slices.
- A batch's reads see the store before its writes (LangGraph's stores' order); its gets
  are one `get_memories` call, its puts and deletes one `put_memories` upsert per 1000
  (a put racing a delete never fails); concurrent calls on a loop are coalesced. Items
  put with `index=False` are stored and listed, but a query leaves them out.
- TTL: a put's `ttl` (minutes) is the memory's `expires_at` (past it memexdb never
  reads it); a get or search with `refresh_ttl` sets it again for the items it returns
  (one `refresh_memories` call per batch); the sweeper only frees rows.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import logging
import math
import sys
import uuid
import weakref
from array import array
from collections.abc import Awaitable, Coroutine, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar

from langchain_core.embeddings import Embeddings
from langgraph.store.base import (
    BaseStore,
    GetOp,
    IndexConfig,
    Item,
    ListNamespacesOp,
    MatchCondition,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
    TTLConfig,
)
from langgraph.store.base.embed import ensure_embeddings, get_text_at_path, tokenize_path

from memexdb_client.api import AsyncMemoryAPI
from memexdb_client.errors import InvalidArgument
from memexdb_client.types import Memory

__all__ = ["MemexStore"]

log = logging.getLogger("memexdb_client.langgraph_store")

_ID_NAMESPACE = uuid.UUID("6f1d8a52-4c1e-4b8e-9a0c-6c616e676772")
_FIELD = "langgraph"
_PAGE = 1000  # memories per page of list_memories (its maximum)
_TOP_K_MAX = 100  # memexdb's search returns at most 100 hits
_SLACK = 20  # hits asked for beyond a query's offset + limit (index=False items drop out)
_DIMS = 384  # the vector size of memexdb's default model (all-MiniLM-L6-v2)
_CONCURRENCY = 4  # searches and listings of one batch in flight at once
_METADATA_MAX_BYTES = 65536  # memexdb's metadata limit (JSON text)
_CONTENT_MAX_CHARS = 32768  # memexdb's content limit
_REQUEST_BYTES = 8 * 1024 * 1024  # of JSON per put_memories request (the service: 16 MiB)
_EMBED_TEXTS = 256  # texts per embed_texts call (the service takes 2048)
_EMBED_CHARS = 200_000  # characters per embed_texts call (the service takes 262,144)
_EMBED_TEXT_MAX = 8000  # characters of one text embed_texts takes (a query's bound)
_DISTANCES = ("cosine", "inner_product", "l2")
_TEXTS = "_texts"  # a write's texts to embed, not sent
_T = TypeVar("_T")


def item_id(agent_id: str, user_id: str, namespace: tuple[str, ...], key: str) -> uuid.UUID:
    """The memory id of (namespace, key) in a tenant: stable, so a put replaces."""
    name = "\x00".join((agent_id, user_id, ".".join(namespace), key))
    return uuid.uuid5(_ID_NAMESPACE, name)


class MemexStore(BaseStore):
    """A LangGraph `BaseStore` whose items are memexdb memories of one tenant.

    `client` is an `AsyncMemex` or an `AsyncMemexClient`. The async methods (`aput`,
    `asearch`, ..., what `graph.ainvoke` uses) run on the caller's event loop; the sync
    ones (`graph.invoke`) hand the work to the loop the store was built on, which must
    be running in another thread (as LangGraph's AsyncPostgresStore does).

    Concurrent calls on one loop are coalesced, as LangGraph's batched stores do: what
    arrives while a batch runs goes out together next, its gets as one `get_memories`
    call and its puts and deletes as one `put_memories` upsert per 1000 items, its
    searches and listings at most `concurrency` at a time."""

    supports_ttl = True

    def __init__(
        self,
        client: AsyncMemoryAPI,
        agent_id: str,
        user_id: str = "langgraph",
        *,
        index_fields: Sequence[str] | None = None,
        memory_type: str = "semantic",
        loop: asyncio.AbstractEventLoop | None = None,
        dims: int = _DIMS,
        concurrency: int = _CONCURRENCY,
        ttl: TTLConfig | None = None,
        index: IndexConfig | None = None,
    ) -> None:
        self.client = client
        self.agent_id = agent_id
        self.user_id = user_id
        config: dict[str, Any] = dict(index or {})
        # (LangGraph's SQLite store names them `text_fields`)
        fields = config.get("fields") or config.get("text_fields") or index_fields
        if isinstance(fields, str):
            fields = [fields]
        self.index_fields = list(fields) if fields else None
        self.memory_type = memory_type
        self.concurrency = max(1, concurrency)
        # LangGraph's `index` config: an `embed` of the caller's (an Embeddings, a sync or
        # async function, a provider string) makes this store embed on the client with
        # it, as LangGraph's stores do; without one, memexdb's model embeds in the server
        embed = config.get("embed")
        self.embeddings: Embeddings | None = None if embed is None else ensure_embeddings(embed)
        self.distance_type: str = str(config.get("distance_type") or "cosine")
        if self.distance_type not in _DISTANCES:
            raise ValueError(
                f"distance_type must be one of {', '.join(_DISTANCES)}, not {self.distance_type!r}"
            )
        dims = int(config.get("dims") or dims)
        # which model made a vector kept with an item: vectors of two models are never
        # compared (an item whose vectors another embed made is embedded again)
        self._model = None if embed is None else _model_id(embed, dims)
        # as LangGraph's stores expose theirs: the vector size and the fields embedded
        config.update(dims=dims, fields=self.index_fields or ["$"])
        self.index_config: IndexConfig = config  # type: ignore[assignment]
        if loop is None:
            try:
                loop = asyncio.get_running_loop()
            except RuntimeError:
                loop = None
        self.loop = loop
        # LangGraph's TTL settings: default_ttl (minutes) for puts that give none,
        # refresh_on_read (default True) for gets and searches, sweep_interval_minutes
        self.ttl_config: TTLConfig | None = ttl
        self._sweeper: asyncio.Task[None] | None = None
        self._sweeper_stop: asyncio.Event | None = None
        self._queues: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Queue] = (
            weakref.WeakKeyDictionary()
        )

    # --- BaseStore ---

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        if self.loop is None:
            raise RuntimeError("MemexStore.batch needs the event loop the client runs on")
        try:
            running: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is self.loop:
            # waiting here for work that this very loop must run would never end: the
            # error LangGraph's own async stores raise
            raise asyncio.InvalidStateError(
                "Synchronous calls to MemexStore detected in the event loop its client runs"
                " on: use the async methods (abatch, aget, asearch, aput, graph.ainvoke)"
            )
        future = asyncio.run_coroutine_threadsafe(self.abatch(ops), self.loop)
        return future.result()

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """The results of `ops`, in order, as LangGraph's stores give them: the reads
        (gets, searches, listings) see the store as it was before the batch's writes; of
        several puts to one (namespace, key) the last one stays. Calls made at the same
        time on one loop go out together (a caller whose own ops are refused fails
        alone)."""
        prepared = _Prepared(self, list(ops))  # a bad op raises here, for its caller only
        loop = asyncio.get_running_loop()
        queue = self._queues.get(loop)
        if queue is None:
            queue = self._queues[loop] = _Queue()
        future: asyncio.Future[list[Result]] = loop.create_future()
        queue.waiting.append((prepared, future))
        if queue.task is None or queue.task.done():
            queue.task = loop.create_task(self._drain(queue))
        return await future

    async def _drain(self, queue: _Queue) -> None:
        while queue.waiting:
            await asyncio.sleep(0)  # let the callers of this moment join the batch
            taken, queue.waiting = queue.waiting, []
            taken = [(p, f) for p, f in taken if not f.done()]  # (cancelled callers)
            if not taken:
                continue
            try:
                results = await self._run([p for p, _ in taken])
            except Exception as exc:
                if len(taken) == 1:
                    if not taken[0][1].done():
                        taken[0][1].set_exception(exc)
                else:  # whose ops failed? each caller's again, alone
                    for prepared, future in taken:
                        await self._settle(prepared, future)
                continue
            except BaseException as exc:  # cancelled: no caller waits forever
                for _, future in taken:
                    if not future.done():
                        future.set_exception(exc)
                raise
            for (_, future), result in zip(taken, results, strict=True):
                if not future.done():
                    future.set_result(result)

    async def _settle(self, prepared: _Prepared, future: asyncio.Future[list[Result]]) -> None:
        try:
            (result,) = await self._run([prepared])
        except Exception as exc:
            if not future.done():
                future.set_exception(exc)
        else:
            if not future.done():
                future.set_result(result)

    async def _run(self, batches: list[_Prepared]) -> list[list[Result]]:
        """Run the ops of several callers as one batch: the reads first (one call for
        every get, the searches and listings `concurrency` at a time), then the writes
        (the last put per key, `put_memories` per 1000)."""
        limit = asyncio.Semaphore(self.concurrency)

        async def bounded(work: Awaitable[_T]) -> _T:
            async with limit:
                return await work

        gets: dict[uuid.UUID, Memory] = {}
        ids = list(dict.fromkeys(p.id for b in batches for p in b.gets.values()))
        pages = await asyncio.gather(
            *(
                bounded(self.client.get_memories(self.agent_id, self.user_id, some))
                for some in _chunks(ids, _PAGE)
            )
        )
        for page in pages:
            for memory in page:
                gets[memory.id] = memory

        refresh: dict[uuid.UUID, datetime] = {}  # the expiry of items read with refresh_ttl
        reads: list[tuple[list[Result], int, Awaitable[Any]]] = []
        for b in batches:
            for i, op in b.searches.items():
                reads.append((b.results, i, bounded(self._search(op, refresh))))
            for i, listing in b.listings.items():
                reads.append((b.results, i, bounded(self._list_namespaces(listing))))
        if reads:
            done = await asyncio.gather(*(work for _, _, work in reads))
            for (results, i, _), result in zip(reads, done, strict=True):
                results[i] = result
        for b in batches:
            for i, wanted in b.gets.items():
                found = gets.get(wanted.id)
                item = None if found is None else _item(found, wanted.op)
                b.results[i] = item
                if item is not None and found is not None and wanted.op.refresh_ttl:
                    _refresh(refresh, found.id, found.metadata.get(_FIELD))
        # the TTL of the items read starts again (one call per 1000), before the batch's
        # writes, so a put of the same key in the batch sets the expiry it says
        await asyncio.gather(
            *(
                bounded(
                    self.client.refresh_memories(
                        self.agent_id,
                        self.user_id,
                        [{"id": i, "expires_at": at} for i, at in part],
                    )
                )
                for part in _chunks(list(refresh.items()), _PAGE)
            )
        )
        writes: dict[uuid.UUID, dict[str, Any]] = {}
        for b in batches:
            for write in b.writes:
                writes.pop(write["id"], None)  # the last put of a key is the one sent
                writes[write["id"]] = write
        await self._embed_writes(list(writes.values()))
        # one id per item now: the requests are independent of each other
        await asyncio.gather(
            *(
                bounded(
                    self.client.put_memories(
                        self.agent_id, self.user_id, part, memory_type=self.memory_type
                    )
                )
                for part in _write_chunks(list(writes.values()))
            )
        )
        return [b.results for b in batches]

    # --- vectors of the item's texts, one per text (LangGraph's per-field vectors) ---

    async def _embed(self, texts: list[str], *, query: bool = False) -> tuple[str, list[bytes]]:
        """The model id and the float32 vectors of `texts`: by the caller's `embed`, or
        by memexdb's model (`embed_texts`, a few hundred texts a call)."""
        if self.embeddings is not None:
            assert self._model is not None
            if query:
                rows = [await self.embeddings.aembed_query(texts[0])]
            else:
                rows = await self.embeddings.aembed_documents(texts)
            if len(rows) != len(texts):
                raise ValueError(f"embed gave {len(rows)} vectors for {len(texts)} texts")
            return self._model, [_pack(row) for row in rows]
        model = ""
        vectors: list[bytes] = []
        for part in _text_chunks([t[:_EMBED_TEXT_MAX] for t in texts]):
            result = await self.client.embed_texts(part)
            model = result.model
            rows = result.vectors  # numpy in process, lists over HTTP
            vectors.extend(
                _pack(row) for row in (rows.tolist() if hasattr(rows, "tolist") else rows)
            )
        return model, vectors

    async def _embed_writes(self, writes: list[dict[str, Any]]) -> None:
        """Embed the texts of the puts that have some (one embedding call for the batch)
        and keep their vectors in the item's metadata entry: `vectors` = {model, data:
        [base64 of float32, one per text]}."""
        wanted: list[dict[str, Any]] = []
        for write in writes:
            if write.get(_TEXTS):
                wanted.append(write)
            else:
                write.pop(_TEXTS, None)
        if not wanted:
            return
        texts = [t for w in wanted for t in w[_TEXTS]]
        model, vectors = await self._embed(texts)
        start = 0
        for write in wanted:
            n = len(write.pop(_TEXTS))
            write["metadata"][_FIELD]["vectors"] = {
                "model": model,
                "data": [base64.b64encode(v).decode() for v in vectors[start : start + n]],
            }
            start += n

    def _similarity(self, query: Sequence[float], vector: Sequence[float]) -> float:
        """The score of a vector for a query, as LangGraph's stores define it for their
        distance type: cosine similarity, inner product, or the negative L2 distance."""
        if self.distance_type == "inner_product":
            return math.fsum(a * b for a, b in zip(query, vector, strict=False))
        if self.distance_type == "l2":
            return -math.sqrt(math.fsum((a - b) ** 2 for a, b in zip(query, vector, strict=False)))
        return _cosine(query, vector)

    # --- operations ---

    def _id(self, namespace: tuple[str, ...], key: str) -> uuid.UUID:
        return item_id(self.agent_id, self.user_id, namespace, key)

    def _write(self, op: PutOp) -> dict[str, Any]:
        """The `put_memories` item of a put (content None: a delete)."""
        _check_labels(op.namespace)  # (the root "langgraph" is BaseStore.put's to refuse)
        if not op.namespace:
            from langgraph.store.base import InvalidNamespaceError

            raise InvalidNamespaceError("Namespace cannot be empty.")
        memory_id = self._id(op.namespace, op.key)
        if op.value is None:
            return {"id": memory_id, "content": None}
        value = dict(op.value)
        entry: dict[str, Any] = {
            "namespace": list(op.namespace),
            "path": {str(i): label for i, label in enumerate(op.namespace)},
            "key": op.key,
            "value": value,
            "put_at": datetime.now(UTC).isoformat(),
        }
        if op.index is False:
            entry["index"] = False  # stored, got and listed; a query leaves it out
        elif isinstance(op.index, list):
            entry["index"] = list(op.index)  # the put's own fields (to embed it again)
        expires_at = None
        if op.ttl is not None:
            entry["ttl"] = op.ttl  # minutes, for a refresh on read
            expires_at = datetime.now(UTC) + timedelta(minutes=op.ttl)
        texts = self._texts(value, op.index)
        metadata = {_FIELD: entry}
        size = len(json.dumps(metadata, ensure_ascii=False, default=str).encode())
        if texts:  # the vectors kept with the item count too
            size += len(texts) * (4 * math.ceil(4 * self.index_config["dims"] / 3) + 4) + 40
        if size > _METADATA_MAX_BYTES:
            raise InvalidArgument(
                "value",
                f"must be at most {_METADATA_MAX_BYTES} bytes of JSON with its namespace and"
                f" key (64 KiB, memexdb's metadata limit); this item is {size} bytes",
            )
        write: dict[str, Any] = {
            "id": memory_id,
            "content": self._content(value, op.index),
            "metadata": metadata,
            "expires_at": expires_at,
        }
        if texts:
            write[_TEXTS] = texts  # embedded by the batch (_embed_texts), then dropped
        return write

    def _texts(self, value: dict[str, Any], index: Any) -> list[str]:
        """The texts of an item embedded one by one, as LangGraph's stores embed them:
        each text at each field path (the whole value as JSON for "$"). With the caller's
        `embed`, every indexed item's; with memexdb's model, only an item with several
        texts (one text is the memory's own vector already), none for "$"."""
        if index is False:
            return []
        fields = index if isinstance(index, list) else (self.index_fields or ["$"])
        texts: list[str] = []
        for path in fields:
            if self.embeddings is None and path == "$":
                continue
            texts.extend(t for t in get_text_at_path(value, path) if t)
        if self.embeddings is None:
            texts = [t for t in texts if t.strip()]
            return texts if len(texts) > 1 else []
        return texts

    def _content(self, value: dict[str, Any], index: Any) -> str:
        fields = index if isinstance(index, list) else self.index_fields
        texts: list[str] = []
        for path in fields or ():
            if path == "$":
                continue  # the whole value: its JSON, below
            texts.extend(t for t in get_text_at_path(value, tokenize_path(path)) if t)
        content = "\n".join(texts)
        if not content.strip():
            content = json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
        # what is embedded and searched: memexdb keeps up to its content limit (the
        # embedding model reads far less); the whole value is in the metadata
        return content[:_CONTENT_MAX_CHARS]

    async def _search(self, op: SearchOp, refresh: dict[uuid.UUID, datetime]) -> list[SearchItem]:
        _check_labels(op.namespace_prefix)
        if _holds_nul(op.filter):
            return []  # no stored value holds a NUL (JSON in Postgres cannot): no match
        containment, exact = _containment(op.namespace_prefix, op.filter)
        wanted = op.offset + op.limit
        found: list[SearchItem] = []
        ids: list[tuple[uuid.UUID, Any]] = []  # of the items found, for a refresh
        if op.query and self.embeddings is not None:
            found, ids = await self._search_vectors(op, containment)
            return self._refreshed(op, found, ids, refresh)
        if op.query:
            query_vector: list[float] | None = None
            model = ""
            # a few more than wanted: items put with index=False are left out here
            top_k = _TOP_K_MAX if not exact else min(max(wanted, 1) + _SLACK, _TOP_K_MAX)
            while True:
                hits = await self.client.search(
                    self.agent_id, self.user_id, op.query, top_k=top_k, metadata=containment
                )
                found, ids = [], []
                kept = [
                    (hit, entry)
                    for hit in hits
                    if isinstance(entry := hit.metadata.get(_FIELD), dict)
                    and entry.get("index") is not False
                    and _matches(entry.get("value"), op.filter)
                ]
                if query_vector is None and any(_stored(e) for _, e in kept):
                    model, (packed,) = await self._embed([op.query], query=True)
                    query_vector = _unpack(packed)
                for hit, entry in kept:
                    # score: the similarity of the query and the item, as LangGraph's
                    # stores score (an item of several texts: its best text's); the
                    # order: memexdb's ranking
                    score = hit.similarity if hit.similarity is not None else hit.score
                    vectors = _vectors(entry, model) if query_vector is not None else None
                    if vectors and query_vector is not None:
                        score = max(_cosine(query_vector, v) for v in vectors)
                    found.append(_search_item(entry, hit.created_at, hit.updated_at, score))
                    ids.append((hit.id, entry))
                if len(found) >= wanted or len(hits) < top_k or top_k >= _TOP_K_MAX:
                    return self._refreshed(op, found, ids, refresh)
                top_k = _TOP_K_MAX
        cursor: str | None = None
        page_size = min(max(wanted, 1), _PAGE) if exact else _PAGE
        while len(found) < wanted:
            page = await self.client.list_memories(
                self.agent_id, self.user_id, limit=page_size, cursor=cursor, metadata=containment
            )
            for memory in page.memories:
                entry = memory.metadata.get(_FIELD)
                if isinstance(entry, dict) and _matches(entry.get("value"), op.filter):
                    found.append(_search_item(entry, memory.created_at, memory.updated_at, None))
                    ids.append((memory.id, entry))
            cursor = page.next_cursor
            if cursor is None:
                break
        return self._refreshed(op, found, ids, refresh)

    async def _search_vectors(
        self, op: SearchOp, containment: dict[str, Any]
    ) -> tuple[list[SearchItem], list[tuple[uuid.UUID, Any]]]:
        """A query search with the caller's `embed`, as LangGraph's InMemoryStore runs
        it: every item under the prefix that passes the filter, scored by its best
        vector's similarity to the query (the store's distance type), best first; the
        items with no text to embed after them (score None)."""
        candidates: list[tuple[Memory, dict[str, Any]]] = []
        cursor: str | None = None
        while True:
            page = await self.client.list_memories(
                self.agent_id, self.user_id, limit=_PAGE, cursor=cursor, metadata=containment
            )
            for memory in page.memories:
                entry = memory.metadata.get(_FIELD)
                if (
                    isinstance(entry, dict)
                    and entry.get("index") is not False
                    and _matches(entry.get("value"), op.filter)
                ):
                    candidates.append((memory, entry))
            cursor = page.next_cursor
            if cursor is None:
                break
        if not candidates:
            return [], []
        model, (packed,) = await self._embed([op.query or ""], query=True)
        query = _unpack(packed)
        vectors: dict[uuid.UUID, list[list[float]]] = {}
        stale: list[tuple[uuid.UUID, list[str]]] = []
        for memory, entry in candidates:
            kept = _vectors(entry, model)
            if kept is not None:
                vectors[memory.id] = kept
            else:  # put before this embed (or by another): its texts, embedded now
                texts = self._texts(entry.get("value") or {}, entry.get("index"))
                stale.append((memory.id, texts))
        texts = [t for _, some in stale for t in some]
        if texts:
            _, fresh = await self._embed(texts)
            start = 0
            for memory_id, some in stale:
                vectors[memory_id] = [_unpack(v) for v in fresh[start : start + len(some)]]
                start += len(some)
        scored: list[tuple[float, Memory, dict[str, Any]]] = []
        scoreless: list[tuple[Memory, dict[str, Any]]] = []
        for memory, entry in candidates:
            if vectors.get(memory.id):
                best = max(self._similarity(query, v) for v in vectors[memory.id])
                scored.append((best, memory, entry))
            else:
                scoreless.append((memory, entry))
        scored.sort(key=lambda s: s[0], reverse=True)
        found = [_search_item(e, m.created_at, m.updated_at, score) for score, m, e in scored]
        found += [_search_item(e, m.created_at, m.updated_at, None) for m, e in scoreless]
        ids = [(m.id, e) for _, m, e in scored] + [(m.id, e) for m, e in scoreless]
        return found, ids

    @staticmethod
    def _refreshed(
        op: SearchOp,
        found: list[SearchItem],
        ids: list[tuple[uuid.UUID, Any]],
        refresh: dict[uuid.UUID, datetime],
    ) -> list[SearchItem]:
        """The page of the items found that the search returns; with refresh_ttl, their
        TTLs start again (the items returned only, as LangGraph's stores refresh)."""
        end = op.offset + op.limit
        if op.refresh_ttl:
            for memory_id, entry in ids[op.offset : end]:
                _refresh(refresh, memory_id, entry)
        return found[op.offset : end]

    # --- TTL sweeper (LangGraph's PostgresStore and AsyncPostgresStore API) ---
    #
    # LangGraph names the sweeper's methods alike on its sync and async stores:
    # `store.sweep_ttl()` returns the count on PostgresStore (and SqliteStore), `await
    # store.sweep_ttl()` on AsyncPostgresStore. A MemexStore is both, so each answers as
    # its caller calls: from async code (a running event loop in the calling thread) it
    # returns the awaitable; from sync code it runs on the store's loop (as `batch` does)
    # and returns the result.

    def sweep_ttl(self) -> Any:
        """Delete expired memories now; how many (an `int`, or from async code an
        awaitable of it). Expired items are never read (memexdb leaves a memory past its
        `expires_at` out of every get, search and listing), so this only frees their
        rows: with the in-process client it runs memexdb's maintenance
        (`AsyncMemex.maintenance`, all tenants; needs the operator role); over HTTP there
        is no such call and it returns 0 (the service's own maintenance schedule deletes
        them)."""
        return self._as_called(self._sweep_ttl())

    def start_ttl_sweeper(self, sweep_interval_minutes: int | None = None) -> Any:
        """Call `sweep_ttl` every `sweep_interval_minutes` (or the TTL config's, else 5)
        until `stop_ttl_sweeper`; without a TTL config, a sweeper that does nothing (as
        LangGraph's stores answer). Its failures are logged, never raised. From async code
        an awaitable of the sweeper's `asyncio.Task` (AsyncPostgresStore's); from sync
        code a `concurrent.futures.Future` that ends with the sweeper, and cancelling it
        stops it (PostgresStore's)."""
        start = self._start_ttl_sweeper(sweep_interval_minutes)
        if _in_event_loop():
            return start
        task = self._on_loop(start)

        async def until_done() -> None:
            await task  # cancelling the future cancels this, and so the sweeper

        assert self.loop is not None
        return asyncio.run_coroutine_threadsafe(until_done(), self.loop)

    def stop_ttl_sweeper(self, timeout: float | None = None) -> Any:
        """Stop the sweeper; True once it stopped (or was not running), False if it did
        not within `timeout` seconds (from async code, an awaitable of that)."""
        return self._as_called(self._stop_ttl_sweeper(timeout))

    def _as_called(self, work: Coroutine[Any, Any, _T]) -> Any:
        """`work` itself for an async caller, its result for a sync one."""
        return work if _in_event_loop() else self._on_loop(work)

    def _on_loop(self, work: Coroutine[Any, Any, _T]) -> _T:
        """Run `work` on the store's loop from a thread without a running loop; its
        result."""
        if self.loop is None:
            work.close()
            raise RuntimeError("MemexStore's sync methods need the event loop the client runs on")
        return asyncio.run_coroutine_threadsafe(work, self.loop).result()

    async def _sweep_ttl(self) -> int:
        maintenance = getattr(self.client, "maintenance", None)
        if maintenance is None:
            return 0
        result = await maintenance()
        return int(result.expired_memories_deleted)

    async def _start_ttl_sweeper(self, sweep_interval_minutes: int | None) -> asyncio.Task[None]:
        if not self.ttl_config:
            return asyncio.create_task(asyncio.sleep(0))
        if self._sweeper is not None and not self._sweeper.done():
            return self._sweeper
        interval = float(
            sweep_interval_minutes or self.ttl_config.get("sweep_interval_minutes") or 5
        )
        stop = self._sweeper_stop = asyncio.Event()

        async def sweep() -> None:
            while not stop.is_set():
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stop.wait(), timeout=interval * 60)
                    return
                try:
                    deleted = await self._sweep_ttl()
                    if deleted:
                        log.info("TTL sweep deleted %d expired memories", deleted)
                except Exception:
                    log.exception("TTL sweep failed")

        self._sweeper = asyncio.create_task(sweep())
        return self._sweeper

    async def _stop_ttl_sweeper(self, timeout: float | None) -> bool:  # noqa: ASYNC109 (LangGraph's API)
        task = self._sweeper
        if task is None or task.done():
            return True
        assert self._sweeper_stop is not None
        self._sweeper_stop.set()
        try:
            await asyncio.wait_for(asyncio.shield(task), timeout=timeout)
        except TimeoutError:
            return False
        self._sweeper = None
        return True

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


def _in_event_loop() -> bool:
    """Whether the calling thread runs an event loop (the caller is async code)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


def _check_labels(namespace: tuple[str, ...]) -> None:
    from langgraph.store.base import InvalidNamespaceError

    for label in namespace:
        if not isinstance(label, str) or not label or "." in label or "\x00" in label:
            raise InvalidNamespaceError(f"Invalid namespace label {label!r} in {namespace}")


def _item(memory: Memory, op: GetOp) -> Item | None:
    entry = memory.metadata.get(_FIELD)
    # the id names (namespace, key) with its labels joined by dots: the item must be
    # the one asked for, label by label
    if (
        not isinstance(entry, dict)
        or entry.get("namespace") != list(op.namespace)
        or entry.get("key") != op.key
    ):
        return None
    return Item(
        value=entry["value"],
        key=entry["key"],
        namespace=tuple(entry["namespace"]),
        created_at=memory.created_at,
        updated_at=memory.updated_at,
    )


def _refresh(refresh: dict[uuid.UUID, datetime], memory_id: uuid.UUID, entry: Any) -> None:
    """Note the new expiry of an item read, if it was put with a TTL."""
    if isinstance(entry, dict):
        ttl = entry.get("ttl")
        if isinstance(ttl, int | float) and not isinstance(ttl, bool) and ttl > 0:
            refresh[memory_id] = datetime.now(UTC) + timedelta(minutes=ttl)


def _holds_nul(value: Any) -> bool:
    if isinstance(value, str):
        return "\x00" in value
    if isinstance(value, dict):
        return any(_holds_nul(k) or _holds_nul(v) for k, v in value.items())
    if isinstance(value, list | tuple):
        return any(_holds_nul(v) for v in value)
    return False


def _model_id(embed: Any, dims: int) -> str:
    """A name for the caller's embed, stored with the vectors it makes."""
    if isinstance(embed, str):
        name = embed
    else:
        kind = embed if callable(embed) and not isinstance(embed, Embeddings) else type(embed)
        name = f"{getattr(kind, '__module__', '?')}.{getattr(kind, '__qualname__', '?')}"
    return f"langgraph:{name}:{dims}"


def _pack(vector: Sequence[float]) -> bytes:
    data = array("f", vector)
    if sys.byteorder != "little":
        data.byteswap()
    return data.tobytes()


def _unpack(packed: bytes) -> list[float]:
    data = array("f")
    data.frombytes(packed)
    if sys.byteorder != "little":
        data.byteswap()
    return data.tolist()


def _stored(entry: dict[str, Any]) -> bool:
    return isinstance(entry.get("vectors"), dict)


def _vectors(entry: dict[str, Any], model: str) -> list[list[float]] | None:
    """The vectors kept with an item if `model` made them (never another model's)."""
    kept = entry.get("vectors")
    if not isinstance(kept, dict) or kept.get("model") != model:
        return None
    data = kept.get("data")
    if not isinstance(data, list):
        return None
    return [_unpack(base64.b64decode(v)) for v in data]


def _cosine(a: Sequence[float], b: Sequence[float]) -> float:
    dot = math.fsum(x * y for x, y in zip(a, b, strict=False))
    norms = math.sqrt(math.fsum(x * x for x in a)) * math.sqrt(math.fsum(y * y for y in b))
    return dot / norms if norms > 0 else 0.0


def _text_chunks(texts: list[str]) -> Iterator[list[str]]:
    """Lists of texts for one embed_texts call each."""
    chunk: list[str] = []
    size = 0
    for text in texts:
        if chunk and (len(chunk) >= _EMBED_TEXTS or size + len(text) > _EMBED_CHARS):
            yield chunk
            chunk, size = [], 0
        chunk.append(text)
        size += len(text)
    if chunk:
        yield chunk


def _chunks(items: list[_T], size: int) -> Iterator[list[_T]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def _write_chunks(writes: list[dict[str, Any]]) -> Iterator[list[dict[str, Any]]]:
    """Requests of at most 1000 items and about _REQUEST_BYTES of JSON (the service
    takes bodies of up to 16 MiB)."""
    chunk: list[dict[str, Any]] = []
    size = 0
    for write in writes:
        weight = 2 * len(write.get("content") or "") + len(
            json.dumps(write.get("metadata"), default=str)
        )
        if chunk and (len(chunk) >= _PAGE or size + weight > _REQUEST_BYTES):
            yield chunk
            chunk, size = [], 0
        chunk.append(write)
        size += weight
    if chunk:
        yield chunk


@dataclass
class _Queue:
    """The calls waiting on one event loop, and the task that runs them."""

    waiting: list[tuple[_Prepared, asyncio.Future[list[Result]]]] = field(default_factory=list)
    task: asyncio.Task[None] | None = None


@dataclass
class _Get:
    op: GetOp
    id: uuid.UUID


class _Prepared:
    """One caller's ops, checked and sorted by kind (their results, in order, filled in
    by MemexStore._run)."""

    def __init__(self, store: MemexStore, ops: list[Op]) -> None:
        self.results: list[Result] = [None] * len(ops)
        self.gets: dict[int, _Get] = {}
        self.searches: dict[int, SearchOp] = {}
        self.listings: dict[int, ListNamespacesOp] = {}
        self.writes: list[dict[str, Any]] = []
        for i, op in enumerate(ops):
            if isinstance(op, GetOp):
                # refused, as LangGraph's Postgres and SQLite stores refuse it
                # (validate_op_namespace): ("foo.bar",) would share the id of ("foo",
                # "bar"); the empty namespace names no item
                _check_labels(op.namespace)
                if op.namespace:
                    self.gets[i] = _Get(op, store._id(op.namespace, op.key))
            elif isinstance(op, SearchOp):
                _check_labels(op.namespace_prefix)
                self.searches[i] = op
            elif isinstance(op, ListNamespacesOp):
                for condition in op.match_conditions or ():
                    _check_labels(tuple(condition.path))
                self.listings[i] = op
            elif isinstance(op, PutOp):
                self.writes.append(store._write(op))
            else:
                raise ValueError(f"Unknown operation type: {type(op)}")


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
