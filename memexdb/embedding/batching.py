"""Micro-batching of concurrent embedding requests onto one dedicated worker thread.

One model call on many texts costs less per text than one call per text, so
``embed_one`` calls arriving from many coroutines are gathered (until ``max_batch``
texts are queued or ``max_wait_ms`` has passed since the first) and embedded together.
While a batch runs, new requests keep queueing and go out as the next batch as soon as
it finishes, so batches grow with load. The model never runs on the event loop.

The default wait is 0: a batch takes what was queued in the same event-loop iteration,
so an idle service adds no delay, and under load batches form while the model runs.
(A wait can only delay a lone request; the former 2 ms made no measurable difference
under load: bench/RESULTS.md, "Load test".) A longer wait suits models with a large
fixed cost per call, such as a remote embeddings API.
"""

import asyncio
import threading
import time
from collections import deque
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from types import TracebackType
from typing import Self

import numpy as np

from memexdb import metrics
from memexdb.embedding.cache import EmbeddingCache
from memexdb.embedding.errors import EmbeddingError
from memexdb.embedding.long_text import Plan, plan, window_of
from memexdb.embedding.protocol import Embedder, Vectors, validate_text, validate_texts

# (text, its caller's future, when it was queued: perf_counter)
_Waiter = tuple[str, asyncio.Future[Vectors], float]


@dataclass
class _LoopQueue:
    """Requests of one event loop; only ever touched from that loop's thread."""

    pending: deque[_Waiter] = field(default_factory=deque)
    running: list[_Waiter] = field(default_factory=list)
    timer: asyncio.TimerHandle | None = None


class BatchingEmbedder:
    """Async, micro-batched front of a blocking :class:`Embedder`.

    Vectors are float32 numpy arrays: ``embed_one`` gives shape ``(dim,)``, the others
    ``(n, dim)``, rows L2-normalised. Texts must be non-empty strings; texts longer
    than the model's context (256 tokens for the default MiniLM) are truncated by its
    tokenizer. A failed model call raises its exception in every caller of that batch.

    The worker thread starts with the first request. One instance may serve several
    event loops (one after another, or even at once). ``aclose``/``close`` let queued
    work finish, then stop the thread; the instance can't be used after that.
    """

    def __init__(
        self,
        embedder: Embedder,
        max_batch: int = 32,
        max_wait_ms: float = 0.0,
        *,
        cache_entries: int = 0,
    ) -> None:
        if max_batch < 1:
            raise ValueError("max_batch must be >= 1")
        if max_wait_ms < 0:
            raise ValueError("max_wait_ms must be >= 0")
        self.embedder = embedder
        self.max_batch = max_batch
        self.max_wait_s = max_wait_ms / 1000.0
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="memexdb-embed")
        # asyncio objects are created per running loop, never here, so the instance is
        # not tied to whichever loop (if any) existed when it was built.
        self._queues: dict[asyncio.AbstractEventLoop, _LoopQueue] = {}
        self._queues_lock = threading.Lock()
        self._closed = False
        # Repeated texts skip the model (0: no cache).
        self.cache = EmbeddingCache(cache_entries) if cache_entries else None

    @property
    def model_id(self) -> str:
        return self.embedder.model_id

    @property
    def dim(self) -> int:
        return self.embedder.dim

    async def embed_one(self, text: str) -> Vectors:
        """Embed one text, batched with concurrent calls; returns shape ``(dim,)``."""
        validate_text(text)
        self._check_open()
        if self.cache is not None and (cached := self.cache.get(text)) is not None:
            return cached
        loop = asyncio.get_running_loop()
        queue = self._queue_for(loop)
        future: asyncio.Future[Vectors] = loop.create_future()
        queue.pending.append((text, future, time.perf_counter()))
        if not queue.running:  # else the batch that is running dispatches on completion
            if len(queue.pending) >= self.max_batch:
                self._dispatch(loop, queue)
            elif queue.timer is None:
                queue.timer = loop.call_later(self.max_wait_s, self._dispatch, loop, queue)
        return await future

    async def embed_many(self, texts: Sequence[str]) -> Vectors:
        """Embed ``texts`` in model calls of at most ``max_batch``; shape ``(n, dim)``."""
        batch = validate_texts(texts)
        self._check_open()
        loop = asyncio.get_running_loop()
        known = self._cached(batch)
        missing = [t for t in dict.fromkeys(batch) if t not in known]
        # Awaiting chunk by chunk lets queued embed_one batches run in between.
        parts = [
            await loop.run_in_executor(self._executor, self._run, chunk, [time.perf_counter()])
            for chunk in self._chunks(missing)
        ]
        if not known and len(missing) == len(batch):  # nothing cached, no repeats
            return parts[0] if len(parts) == 1 else np.concatenate(parts)
        known.update(self._remember(missing, np.concatenate(parts)))
        return np.stack([known[t] for t in batch]) if batch else parts[0]

    async def plan_in_full(self, texts: Sequence[str]) -> Plan:
        """The chunks `embed_in_full` embeds for `texts` (tokenized off the event loop,
        on a thread of its own: the model's thread may be busy)."""
        batch = validate_texts(texts)
        return await asyncio.to_thread(plan, batch, window_of(self.embedder))

    async def embed_in_full(self, texts: Sequence[str]) -> Vectors:
        """One vector per text that represents all of it, however long: the mean of its
        chunks' vectors (memexdb.embedding.long_text); a text that fits the model's
        window gets exactly `embed_many`'s vector."""
        cut = await self.plan_in_full(texts)
        return cut.combine(await self.embed_many(cut.pieces))

    def embed_sync(self, texts: Sequence[str]) -> Vectors:
        """Blocking ``embed_many`` for sync callers (not from the event loop thread)."""
        batch = validate_texts(texts)
        self._check_open()
        parts = [
            self._executor.submit(self._run, chunk, [time.perf_counter()]).result()
            for chunk in self._chunks(batch)
        ]
        return parts[0] if len(parts) == 1 else np.concatenate(parts)

    async def aclose(self) -> None:
        """Finish this loop's queued requests, then stop the worker thread."""
        self._closed = True
        queue = self._queues.get(asyncio.get_running_loop())
        if queue is not None:
            waiting = [f for _, f, _ in (*queue.pending, *queue.running)]
            if waiting:
                await asyncio.wait(waiting)
        await asyncio.to_thread(self._executor.shutdown, wait=True)

    def close(self) -> None:
        """Stop the worker thread once the model calls already submitted are done."""
        self._closed = True
        self._executor.shutdown(wait=True)

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    def __repr__(self) -> str:
        return (
            f"BatchingEmbedder({self.embedder!r}, max_batch={self.max_batch}, "
            f"max_wait_ms={self.max_wait_s * 1000:g})"
        )

    def _check_open(self) -> None:
        if self._closed:
            raise EmbeddingError("BatchingEmbedder is closed")

    def _queue_for(self, loop: asyncio.AbstractEventLoop) -> _LoopQueue:
        with self._queues_lock:
            queue = self._queues.get(loop)
            if queue is None:
                # Forget loops that were closed with requests still queued.
                for stale in [other for other in self._queues if other.is_closed()]:
                    del self._queues[stale]
                queue = self._queues[loop] = _LoopQueue()
            return queue

    def _chunks(self, texts: list[str]) -> list[list[str]]:
        # An empty input still goes to the embedder, which knows its (0, dim) shape.
        step = self.max_batch
        return [texts[i : i + step] for i in range(0, len(texts), step)] or [texts]

    def _cached(self, texts: list[str]) -> dict[str, Vectors]:
        if self.cache is None:
            return {}
        return {t: v for t in dict.fromkeys(texts) if (v := self.cache.get(t)) is not None}

    def _remember(self, texts: list[str], vectors: Vectors) -> dict[str, Vectors]:
        if self.cache is None:
            return dict(zip(texts, vectors, strict=True))
        return {t: self.cache.put(t, v) for t, v in zip(texts, vectors, strict=True)}

    def _run(self, texts: list[str], queued_at: Sequence[float]) -> Vectors:
        """Runs on the worker thread. `queued_at`: when each request of this model call
        was made (one time for a whole embed_many chunk)."""
        started = time.perf_counter()
        for at in queued_at:
            metrics.EMBEDDING_QUEUE_WAIT.observe(started - at)
        metrics.EMBEDDING_BATCH_SIZE.observe(len(texts))
        operation = metrics.embedding_operation(len(texts))
        try:
            vectors = self.embedder.embed(texts)
            metrics.EMBEDDING_DURATION.labels(operation).observe(time.perf_counter() - started)
            if vectors.shape != (len(texts), self.embedder.dim):
                raise EmbeddingError(
                    f"{self.embedder!r} returned shape {vectors.shape} for {len(texts)} texts"
                )
        except Exception as exc:
            metrics.EMBEDDING_ERRORS.labels(operation, type(exc).__name__).inc()
            raise
        return vectors

    def _dispatch(self, loop: asyncio.AbstractEventLoop, queue: _LoopQueue) -> None:
        """Send up to max_batch queued requests to the worker (on the loop's thread)."""
        if queue.timer is not None:
            queue.timer.cancel()
            queue.timer = None
        batch: list[_Waiter] = []
        while queue.pending and len(batch) < self.max_batch:
            waiter = queue.pending.popleft()
            if not waiter[1].done():  # skip callers that were cancelled meanwhile
                batch.append(waiter)
        if not batch:
            self._forget_if_idle(loop, queue)
            return
        queue.running = batch
        # A text asked for twice in one batch is embedded once.
        unique = list(dict.fromkeys(text for text, _, _ in batch))
        queued_at = [at for _, _, at in batch]
        try:
            done = asyncio.wrap_future(
                self._executor.submit(self._run, unique, queued_at), loop=loop
            )
        except RuntimeError:  # the executor was shut down by close()
            done = loop.create_future()
            done.set_exception(EmbeddingError("BatchingEmbedder is closed"))
        done.add_done_callback(lambda finished: self._deliver(loop, queue, finished))

    def _deliver(
        self,
        loop: asyncio.AbstractEventLoop,
        queue: _LoopQueue,
        finished: asyncio.Future[Vectors],
    ) -> None:
        batch, queue.running = queue.running, []
        error = None if finished.cancelled() else finished.exception()
        vectors: dict[str, Vectors] = {}
        if not finished.cancelled() and error is None:
            unique = list(dict.fromkeys(text for text, _, _ in batch))
            vectors = self._remember(unique, finished.result())
        for text, future, _ in batch:
            if future.done():
                continue
            if finished.cancelled():
                future.cancel()
            elif error is not None:
                future.set_exception(error)
            else:
                # without a cache each caller gets its own array
                vector = vectors[text]
                future.set_result(vector if self.cache is not None else vector.copy())
        if queue.pending:
            # These waited while the model ran; send them now rather than wait again.
            self._dispatch(loop, queue)
        else:
            self._forget_if_idle(loop, queue)

    def _forget_if_idle(self, loop: asyncio.AbstractEventLoop, queue: _LoopQueue) -> None:
        if not queue.pending and not queue.running and queue.timer is None:
            with self._queues_lock:
                if self._queues.get(loop) is queue:
                    del self._queues[loop]
