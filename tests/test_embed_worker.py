"""The embed worker against a real database and the real model: a queued memory gets the
embedding of its own text (in full when it is long); a memory that changes while its
batch is embedded keeps its new vector; failures back off without holding other memories
back; NOTIFY wakes the worker at once and polling catches what no notification announced;
and a service killed in the middle of the queue loses nothing."""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import signal
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from datetime import UTC, datetime, timedelta
from http.server import ThreadingHTTPServer
from typing import Any
from uuid import UUID

import numpy as np
import psycopg
import pytest
from pgvector.psycopg import register_vector

from memexdb import AsyncMemex
from memexdb.config import Settings
from memexdb.embedded import EmbeddedPostgres
from memexdb.embedding import BatchingEmbedder, Embedder, OpenAIEmbeddings, Vectors
from memexdb.embedding.long_text import embed_in_full, window_of
from memexdb.runtime import JobRunner, default_jobs
from memexdb.runtime.embed_worker import embed_job
from memexdb.types import EmbedBatch
from tests.conftest import drop_database, new_database, scratch_dir
from tests.json_http import JsonHandler, serving
from tests.live_service import (
    Service,
    free_port,
    run_cli,
    service_env,
    uvicorn_args,
    wait_until,
)
from tests.sqlapi import half, unit

STAND_IN = unit((0, 1.0))  # what consolidation stores until the worker embeds the text
STAND_IN_MODEL = "stand-in"
BOUND = 20.0  # seconds any wait below may take at most
LONG = "\n".join(
    f"Session {n}. Alice and Bob planned the garden: tomatoes along the south fence, beans"
    " on the trellis, and a bed of herbs by the kitchen door. They agreed to water twice a"
    " week and to compost the kitchen scraps." * 2
    for n in range(8)
)


def queue(conn: psycopg.Connection, contents: Sequence[str], agent: str = "a") -> list[UUID]:
    """Memories written as SQL writes a summary: a stand-in vector, then queued."""
    register_vector(conn)
    ids = []
    with conn.transaction():
        for content in contents:
            row = conn.execute(
                "select id from memex.store(%s, 'u', %s, %s, %s)",
                (agent, content, STAND_IN, STAND_IN_MODEL),
            ).fetchone()
            assert row is not None
            conn.execute("select memex._queue_embedding(%s)", (row[0],))
            ids.append(row[0])
    return ids


def vectors(conn: psycopg.Connection) -> dict[UUID, tuple[str, str, np.ndarray]]:
    register_vector(conn)
    rows = conn.execute("select id, content, embedding_model, embedding from memex.memories")
    return {r[0]: (r[1], r[2], r[3].to_numpy().astype(np.float32)) for r in rows}


def queued_ids(conn: psycopg.Connection) -> set[UUID]:
    return {r[0] for r in conn.execute("select memory_id from memex.embed_queue")}


async def test_a_queued_memory_gets_the_embedding_of_its_own_text(
    conn: psycopg.Connection, amemex: AsyncMemex, embedder: Embedder
) -> None:
    contents = ["Alice's sister lives in Lisbon", LONG, "Bob fixed the bike on Sunday"]
    ids = queue(conn, contents)
    started = time.monotonic()
    batch = await amemex.as_operator("jobs").embed_queued()
    print(f"one batch of 3 (one of {len(LONG)} characters): {time.monotonic() - started:.2f} s")
    assert batch == EmbedBatch(taken=3, written=3, failed=0)
    stored = vectors(conn)
    for memory_id, content in zip(ids, contents, strict=True):
        _, model, vector = stored[memory_id]
        assert model == embedder.model_id
        assert np.array_equal(vector, half(embed_in_full(embedder, [content])[0]))
    # short texts: exactly what `store` would have written; the long one: all of it
    assert np.array_equal(stored[ids[0]][2], half(embedder.embed([contents[0]])[0]))
    assert not np.array_equal(stored[ids[1]][2], half(embedder.embed([LONG])[0]))
    assert queued_ids(conn) == set()
    assert await amemex.as_operator("jobs").embed_queued() == EmbedBatch(0, 0, 0)


class Gate:
    """A real embedder that waits for `open` before each call (to change a memory while
    its batch is being embedded)."""

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner
        self.open = threading.Event()
        self.entered = threading.Event()

    @property
    def model_id(self) -> str:
        return self.inner.model_id

    @property
    def dim(self) -> int:
        return self.inner.dim

    @property
    def token_window(self) -> Any:
        return getattr(self.inner, "token_window", None)

    def embed(self, texts: Sequence[str]) -> Vectors:
        self.entered.set()
        assert self.open.wait(BOUND), "the gate was never opened"
        return self.inner.embed(texts)


@contextlib.asynccontextmanager
async def client(dsn: str, embedder: Embedder) -> AsyncIterator[AsyncMemex]:
    batching = BatchingEmbedder(embedder)
    memex = await AsyncMemex.connect(dsn, embedder=batching)
    try:
        yield memex.as_operator("jobs")
    finally:
        await memex.aclose()
        await batching.aclose()


async def test_a_memory_changed_while_its_batch_is_embedded_keeps_its_new_vector(
    conn: psycopg.Connection, dsn: str, embedder: Embedder
) -> None:
    [memory_id] = queue(conn, ["Alice works at the bakery"])
    gate = Gate(embedder)
    async with client(dsn, gate) as worker:
        batch = asyncio.create_task(worker.embed_queued())
        assert await asyncio.to_thread(gate.entered.wait, BOUND)  # taken, being embedded
        fresh = embedder.embed(["Alice works at the library"])[0]
        conn.execute(  # the user corrects the memory meanwhile, as the API would
            "select memex.update_memory('a', 'u', %s, p_content => %s, p_embedding => %s,"
            " p_embedding_model => %s)",
            (memory_id, "Alice works at the library", fresh, embedder.model_id),
        )
        gate.open.set()
        assert await asyncio.wait_for(batch, BOUND) == EmbedBatch(taken=1, written=0, failed=0)
        content, model, vector = vectors(conn)[memory_id]
        assert (content, model) == ("Alice works at the library", embedder.model_id)
        assert np.array_equal(vector, half(fresh))  # not the bakery's vector
        # still queued: the next batch embeds the content as it is now
        assert queued_ids(conn) == {memory_id}
        assert await worker.embed_queued() == EmbedBatch(taken=1, written=1, failed=0)
    assert np.array_equal(vectors(conn)[memory_id][2], half(fresh))
    assert queued_ids(conn) == set()


class PoisonHandler(JsonHandler):
    """An OpenAI-compatible embeddings server (the real model behind it) that fails on any
    request holding the word "poison", as a server may on one bad input."""

    model: Embedder

    def do_POST(self) -> None:
        texts = self.read_json()["input"]
        if any("poison" in text for text in texts):
            self.send_json(500, {"error": {"message": "cannot embed this input"}})
            return
        rows = self.model.embed(texts)
        data = [{"index": i, "embedding": row.tolist()} for i, row in enumerate(rows)]
        self.send_json(200, {"data": data})


@pytest.fixture
def flaky_server(embedder: Embedder) -> Iterator[str]:
    handler = type("Handler", (PoisonHandler,), {"model": embedder})
    with serving(ThreadingHTTPServer(("127.0.0.1", 0), handler)) as httpd:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/v1"


async def test_failures_back_off_and_do_not_hold_the_others_back(
    conn: psycopg.Connection, dsn: str, flaky_server: str
) -> None:
    good, poison, other = queue(conn, ["a fine memory", "a poison memory", "another one"])
    remote = OpenAIEmbeddings(flaky_server, "served-minilm", dim=384)
    async with client(dsn, remote) as worker:
        batch = await worker.embed_queued()
        assert batch == EmbedBatch(taken=3, written=2, failed=1)
        [error] = batch.errors  # what the worker logs
        assert (
            error.startswith(f"{poison} (attempt 1): EmbeddingServiceError") and "HTTP 500" in error
        )
        assert queued_ids(conn) == {poison}
        stored = vectors(conn)
        assert stored[good][1] == stored[other][1] == "served-minilm"
        assert stored[poison][1] == STAND_IN_MODEL

        def attempt() -> tuple[int, float, str]:
            row = conn.execute(
                "select attempts, extract(epoch from next_attempt_at - now()), last_error"
                " from memex.embed_queue"
            ).fetchone()
            assert row is not None
            return int(row[0]), float(row[1]), str(row[2])

        attempts, wait, error = attempt()
        assert attempts == 1 and 9 < wait <= 10 and "HTTP 500" in error, (wait, error)
        assert await worker.embed_queued() == EmbedBatch(0, 0, 0)  # not due yet
        depth = await worker.embed_queue_depth()
        assert (depth.queued, depth.due, depth.failing) == (1, 0, 1)
        conn.execute("update memex.embed_queue set next_attempt_at = now()")
        assert await worker.embed_queued() == EmbedBatch(taken=1, written=0, failed=1)
        attempts, wait, _ = attempt()
        assert attempts == 2 and 19 < wait <= 20  # doubled
    remote.close()


async def test_notify_wakes_the_worker_and_polling_catches_what_was_not_announced(
    conn: psycopg.Connection, dsn: str, amemex: AsyncMemex, embedder: Embedder
) -> None:
    async def embedded(memory_id: UUID) -> float:
        started = time.monotonic()
        for _ in range(int(BOUND / 0.02)):
            if vectors(conn)[memory_id][1] == embedder.model_id:
                return time.monotonic() - started
            await asyncio.sleep(0.02)
        raise AssertionError(f"{memory_id} was not embedded within {BOUND} s")

    # Polling every 60 s: only the notification can explain an embedding within seconds.
    runner = JobRunner(dsn, amemex, [embed_job(60)], retry_seconds=0.2)
    task = asyncio.create_task(runner.run())
    try:
        [early] = queue(conn, ["queued before the worker started"])
        await embedded(early)  # the first run, at once
        await asyncio.sleep(0.5)  # listening by now
        [woken] = queue(conn, ["Alice adopted a cat named Miso"])
        waited = await embedded(woken)
        print(f"NOTIFY to embedded: {waited:.3f} s")
        assert waited < 5.0
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task

    # An entry that no notification announced (inserted directly): the poll finds it.
    runner = JobRunner(dsn, amemex, [embed_job(1)], retry_seconds=0.2)
    task = asyncio.create_task(runner.run())
    try:
        assert await asyncio.to_thread(wait_until, lambda: runner.leading, BOUND)
        await asyncio.sleep(0.5)
        register_vector(conn)
        row = conn.execute(
            "select id from memex.store('a', 'u', 'unannounced', %s, %s)",
            (STAND_IN, STAND_IN_MODEL),
        ).fetchone()
        assert row is not None
        conn.execute("insert into memex.embed_queue (memory_id) values (%s)", (row[0],))
        waited = await embedded(row[0])
        print(f"unannounced entry embedded by the poll after {waited:.3f} s")
        assert waited < 1.0 + 5.0
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


def test_the_worker_is_a_default_job_unless_turned_off() -> None:
    names: Callable[[Settings], list[str]] = lambda s: [j.name for j in default_jobs(s)]  # noqa: E731
    assert "embed" in names(Settings())
    assert "embed" not in names(Settings(embed_poll_seconds=0))
    assert [j.wake_channel for j in default_jobs(Settings()) if j.name == "embed"] == [
        "memex_embed"
    ]


# --- a service killed in the middle of the queue -------------------------------------------

QUEUED = 600


def _contents(n: int) -> list[str]:
    return [
        f"Note {i}: on day {i % 31} the team discussed item {i * 7} of the roadmap, moved"
        f" ticket {i * 13} to review and agreed that {i % 5} people would pair on it."
        for i in range(n)
    ]


@pytest.mark.timeout(900)
def test_a_service_killed_mid_queue_loses_nothing_and_the_next_one_finishes(
    pg_server: EmbeddedPostgres, template_db: str, embedder: Embedder
) -> None:
    dsn = new_database(pg_server)
    root = scratch_dir("memexdb-embed-kill-")
    try:
        with psycopg.connect(dsn, autocommit=True) as conn:
            ids = queue(conn, _contents(QUEUED))

            def embedded() -> int:
                row = conn.execute(
                    "select count(*) from memex.memories where embedding_model = %s",
                    (embedder.model_id,),
                ).fetchone()
                return int(row[0]) if row else 0

            def unlocked() -> int:
                row = conn.execute(
                    "select count(*) from (select from memex.embed_queue for update skip locked) t"
                ).fetchone()
                return int(row[0]) if row else -1

            def mid_batch() -> bool:
                # a batch committed, and the next one holds its entries (being embedded)
                return embedded() >= 32 and unlocked() < len(queued_ids(conn))

            def check_nothing_lost() -> dict[UUID, tuple[str, str, np.ndarray]]:
                stored, waiting = vectors(conn), queued_ids(conn)
                for memory_id in ids:
                    _, model, _ = stored[memory_id]
                    # embedded (and dequeued), or still queued with its stand-in
                    if model == embedder.model_id:
                        assert memory_id not in waiting
                    else:
                        assert model == STAND_IN_MODEL and memory_id in waiting
                return stored

            env = service_env(MEMEX_DATABASE_URL=dsn, MEMEX_EMBED_POLL_SECONDS="1")
            port = free_port()
            first = Service(uvicorn_args(port), env, port, root / "first.log")
            try:
                first.wait_healthy()
                assert wait_until(mid_batch, 300, 0.02), first.output()[-3000:]
                first.send(signal.SIGKILL, group=True)
                first.wait()
            finally:
                first.close()
            at_kill = embedded()
            print(f"killed with {at_kill} of {QUEUED} embedded")
            assert at_kill < QUEUED, "the queue drained before the kill: make it longer"
            check_nothing_lost()
            # the killed batch's transaction is rolled back as its session ends (at once:
            # its backend was waiting on the socket): nothing stays locked
            assert wait_until(lambda: unlocked() == QUEUED - at_kill, 10)

            port = free_port()
            second = Service(uvicorn_args(port), env, port, root / "second.log")
            try:
                second.wait_healthy()
                started = time.monotonic()
                assert wait_until(lambda: not queued_ids(conn), 600, 0.2), second.output()[-3000:]
                print(f"the second service embedded the rest in {time.monotonic() - started:.1f} s")
            finally:
                second.close()
            stored = check_nothing_lost()
            sample = ids[:: QUEUED // 20]
            expected = embed_in_full(embedder, [stored[i][0] for i in sample])
            for memory_id, vector in zip(sample, expected, strict=True):
                assert np.array_equal(stored[memory_id][2], half(vector))
            assert embedded() == QUEUED
    finally:
        drop_database(pg_server, dsn)
        shutil.rmtree(root, ignore_errors=True)


def test_status_shows_the_queue(dsn: str, conn: psycopg.Connection) -> None:
    env = service_env(MEMEX_DATABASE_URL=dsn)
    code, out = run_cli(["status"], env, timeout=60)
    assert code == 0 and "embed queue: 0 memories waiting for their own embedding\n" in out, out
    first, _ = queue(conn, ["one", "two"])
    conn.execute("select memex.embed_queue_failed(%s, %s)", ([first], ["down"]))
    code, out = run_cli(["status"], env, timeout=60)
    assert code == 0, out
    assert (
        "embed queue: 2 memories waiting for their own embedding (1 due, 1 failed before),"
        " oldest queued at " in out
    ), out


async def test_a_consolidation_summary_gets_the_embedding_of_its_whole_text(
    conn: psycopg.Connection, amemex: AsyncMemex, embedder: Embedder
) -> None:
    """The queue's producer as it is: memex.consolidate_tenant writes a summary with its
    sources' centroid and queues it; the worker replaces the centroid."""
    register_vector(conn)
    start = datetime(2026, 1, 1, tzinfo=UTC)
    conn.execute(
        "select count(*) from memex.store_many(%s, %s, %s, %s, 'source-model',"
        " null, null, null, null, %s)",
        (
            ["a"] * 130,
            ["u"] * 130,
            [f"Fact {i}: the locker code of gym bag {i} is {i * 37 % 1000}." for i in range(130)],
            [unit((i % 300, 1.0)) for i in range(130)],
            [start + timedelta(days=i) for i in range(130)],
        ),
    )
    run = conn.execute(
        "select summary_id from memex.consolidate_tenant('a', 'u', p_now => %s)",
        (datetime.now(UTC) + timedelta(hours=2),),
    ).fetchone()
    assert run is not None and run[0] is not None
    summary_id = run[0]
    content, model, centroid = vectors(conn)[summary_id]
    assert model == "source-model" and queued_ids(conn) == {summary_id}
    assert len(window_of(embedder).spans([content])[0]) > 254  # longer than one window
    assert await amemex.as_operator("jobs").embed_queued() == EmbedBatch(
        taken=1, written=1, failed=0
    )
    _, model, vector = vectors(conn)[summary_id]
    assert model == embedder.model_id
    assert np.array_equal(vector, half(embed_in_full(embedder, [content])[0]))
    assert not np.array_equal(vector, centroid) and queued_ids(conn) == set()
