"""Writes that hold under load (issue #34, item 6): a background job (a condense tick)
never makes a client's write fail. A 500-memory backfill of old memories goes into one
tenant through the real REST batch endpoint of a live service while another connection
runs the service's condense ticks on that tenant back to back, and busy-loop processes load the
machine's cores: every batch is answered 201 and every memory is there afterwards."""

from __future__ import annotations

import asyncio
import random
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
import pytest

from memexdb.agentic import consolidation
from memexdb.client import AsyncMemex
from memexdb.embedded import EmbeddedPostgres
from memexdb.embedding import Embedder
from memexdb.memories.models import MemoryCreate
from tests.conftest import drop_database, new_database, scratch_dir
from tests.live_service import Service, client, free_port, service_env, uvicorn_args

pytestmark = pytest.mark.e2e  # docs/development.md, 'Test tiers'

A, U = "loaded", "lena"
START = datetime(2026, 1, 5, 9, tzinfo=UTC)  # months back: every memory is due at once
BACKFILL = 500
PER_REQUEST = 100  # memories per POST /v1/memories/batch
BURNERS = 3  # busy-loop processes beside the service, the ticks and this test (2 cores)
BURN_SECONDS = 240  # each burner ends by itself after this, whatever happens to the test

_rng = random.Random(34)
_WORDS = [
    "".join(_rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(_rng.randint(4, 9)))
    for _ in range(3000)
]
# Lines of 40 words (150 to 190 of MiniLM's tokens, one sentence each): the service embeds
# a long text as the mean of chunks that fit the model's 254-token window, cut at line
# and sentence ends, so each line is one chunk, and its embedding cache (memexdb.session,
# by chunk text) embeds a line once for the whole test. A memory's first chunk (its turn
# number) is its own. The database stores, indexes and condenses the same long texts of
# a wide vocabulary; the model embeds ~1 chunk a memory instead of ~15 (a run's embedding
# was ~9,000 chunks, minutes of CPU that prove nothing about locks).
_LINE_RNG = random.Random(35)
_LINES = [" ".join(_LINE_RNG.choices(_WORDS, k=40)) + "." for _ in range(64)]


def _content(i: int) -> str:
    """A long turn (~6,000 characters) of lines over a wide vocabulary: many lexemes
    shared with every other turn, as a conversation's are."""
    rng = random.Random(i)
    lines: list[str] = []
    for line in rng.sample(_LINES, len(_LINES)):
        if sum(len(s) + 1 for s in lines) >= 6_000:
            break
        lines.append(line)
    return f"Turn {i}: " + "\n".join(lines)


def _memories(first: int, n: int) -> list[dict[str, Any]]:
    return [
        {
            "agent_id": A,
            "user_id": U,
            "content": _content(i),
            "created_at": (START + timedelta(minutes=i)).isoformat(),
        }
        for i in range(first, first + n)
    ]


def _older(n: int) -> list[dict[str, Any]]:
    """Short memories older than the backfill: the ticks condense them first, quickly."""
    return [
        {
            "agent_id": A,
            "user_id": U,
            "content": f"Earlier note {i}: Lena mentioned the weather and lunch.",
            "created_at": (START - timedelta(days=60, minutes=-i)).isoformat(),
        }
        for i in range(n)
    ]


@pytest.fixture
def live(pg_server: EmbeddedPostgres, template_db: str) -> Iterator[tuple[Service, str]]:
    dsn = new_database(pg_server)
    log = scratch_dir("memexdb-load-") / "service.log"
    port = free_port()
    # the ticks come from this test, not from the service's own scheduler
    env = service_env(MEMEX_DATABASE_URL=dsn, MEMEX_CONDENSE_ENABLED="false")
    service = Service(uvicorn_args(port), env, port, log)
    try:
        service.wait_healthy()
        yield service, dsn
        service.stop()
    finally:
        service.close()
        drop_database(pg_server, dsn)
        shutil.rmtree(log.parent, ignore_errors=True)


def _burners() -> list[subprocess.Popen[bytes]]:
    code = (
        f"import time\nend = time.monotonic() + {BURN_SECONDS}\n"
        "while time.monotonic() < end: pass\n"
    )
    return [subprocess.Popen([sys.executable, "-c", code]) for _ in range(BURNERS)]


def _ticks(dsn: str, embedder: Embedder, stop: threading.Event, outcome: dict[str, Any]) -> None:
    """Condense ticks back to back until `stop`, as the service's scheduler runs them
    (memexdb.agentic.consolidation.condense, as the operator "jobs")."""

    async def loop() -> None:
        async with await AsyncMemex.connect(dsn, embedder=embedder) as memex:
            jobs = memex.as_operator("jobs")
            while not stop.is_set():
                runs = await consolidation.condense(jobs)
                outcome["done"] += sum(1 for r in runs if r.status == "done")
                if not runs:
                    await asyncio.sleep(0.2)

    outcome["done"] = 0
    try:
        asyncio.run(loop())
    except BaseException as exc:  # seen by the test, not lost in the thread
        outcome["error"] = exc


@pytest.mark.timeout(600)
def test_a_condense_tick_never_fails_a_backfill_on_a_loaded_machine(
    live: tuple[Service, str], embedder: Embedder
) -> None:
    service, dsn = live
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("select memex._enter_operator('load-test')")
        # due at once: low threshold, no grace, small batches, a big budget per tick
        conn.execute(
            "select memex.set_dream_config(%s)",
            [
                '{"threshold": 10, "grace_minutes": 0, "batch_size": 20,'
                ' "write_budget": 1000, "summary_chars": 32000}'
            ],
        )
    answers: list[int] = []
    stored: list[str] = []
    stop = threading.Event()
    ticks: dict[str, Any] = {}
    with client(service.base_url, timeout=600) as http:
        # older memories, and a first part of the backfill: the tenant is due at once
        older = http.post("/v1/memories/batch", json={"memories": _older(200)})
        assert older.status_code == 201, older.text
        first = http.post("/v1/memories/batch", json={"memories": _memories(0, PER_REQUEST)})
        assert first.status_code == 201, first.text
        stored += [m["id"] for m in first.json()["memories"]]
        burners = _burners()
        ticker = threading.Thread(target=_ticks, args=(dsn, embedder, stop, ticks), daemon=True)
        try:
            ticker.start()
            for start in range(PER_REQUEST, BACKFILL, PER_REQUEST):
                r = http.post(
                    "/v1/memories/batch", json={"memories": _memories(start, PER_REQUEST)}
                )
                answers.append(r.status_code)
                if r.status_code == 201:
                    stored += [m["id"] for m in r.json()["memories"]]
                else:
                    print(r.status_code, r.text[:300])
        finally:
            stop.set()
            ticker.join(timeout=120)
            for p in burners:
                p.kill()
            for p in burners:
                p.wait(timeout=30)
    assert answers == [201] * (BACKFILL // PER_REQUEST - 1), answers  # 0 busy
    assert "error" not in ticks, ticks.get("error")
    assert ticks.get("done", 0) > 0, "the ticks condensed nothing: the test proves nothing"
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("select memex._enter_operator('load-test')")
        (found,) = conn.execute(
            "select count(*) from memex.memories where id = any(%s::uuid[])", [stored]
        ).fetchone() or (0,)
    assert len(stored) == BACKFILL and found == BACKFILL


async def test_a_batch_is_not_refused_by_a_budget_sized_for_one_store(
    amemex: AsyncMemex, dsn: str
) -> None:
    """A request's statement_timeout (settings.request_statement_timeout_ms) is sized for
    one store; a batch adds request_batch_item_ms per memory (memex._batch_budget). Here
    200 ms, which one store fits in and a batch of 300 long memories does not."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(
            "insert into memex.settings (name, value)"
            " values ('request_statement_timeout_ms', '200')"
            " on conflict (name) do update set value = excluded.value"
        )
        # the budget memex._batch_budget gives, as a request's transaction sees it
        with conn.transaction():
            conn.execute("select memex._enter(null)")
            assert conn.execute("select current_setting('statement_timeout')").fetchone() == (
                "200ms",
            )
            conn.execute("select memex._batch_budget(500)")
            budget = conn.execute(
                "select current_setting('statement_timeout'), current_setting('lock_timeout')"
            ).fetchone()
            assert budget == ("100200ms", "10s")
    one = await amemex.store(A, U, "One store fits.")
    assert one.content == "One store fits."
    # 300 long memories for the statement, of 5 texts only: the embedder (before the
    # statement, outside its budget) embeds a text a batch holds again once, so the test
    # costs 5 long embeddings instead of 300 and the database does the same work
    items = [MemoryCreate(agent_id=A, user_id=U, content=_content(i % 5)) for i in range(300)]
    stored = await amemex.store_many(items)
    assert [m.content for m in stored] == [i.content for i in items]
