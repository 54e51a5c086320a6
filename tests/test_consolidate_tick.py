"""pg_cron's consolidation tick commits after every batch (issue 34, section 6): the
command `memexdb schedule` registers (memexdb.pg_cron.CONSOLIDATE.command) runs, as
pg_cron runs it (one statement on an autocommit connection), over a tenant whose batches
take a while to summarize, while stores go into that tenant. No store waits for the
batch in progress, and the tick condenses every batch it is due. The command used
to be `select memex.consolidate_due()`, one transaction: a store waited for the batch in
progress and the tick then stopped (the rest left to the next tick). Against the real
embedded PostgreSQL; pg_cron itself runs the same command in tests/test_pg_cron.py."""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime, timedelta

import psycopg
import pytest

from memexdb import Memex
from memexdb.memories.models import MemoryCreate
from memexdb.pg_cron import CONSOLIDATE

# timing over a real tick: end to end (docs/development.md, "Test tiers")
pytestmark = pytest.mark.e2e

A, U = "ticked", "tess"
START = datetime(2025, 1, 1, tzinfo=UTC)
BATCH = 600
SENTENCE = (
    "On day {i} Tess described the {w} at the market, the price of {w}s, the tram to the"
    " old town and what her neighbour said about the {w} and the weather in spring."
)
WORDS = ["apples", "lanterns", "ferries", "violins", "bicycles", "kettles", "pottery"]


def _memories(n: int) -> list[MemoryCreate]:
    return [
        MemoryCreate(
            agent_id=A,
            user_id=U,
            content=" ".join(SENTENCE.format(i=i, w=WORDS[(i + k) % len(WORDS)]) for k in range(3)),
            created_at=START + timedelta(hours=i),
        )
        for i in range(n)
    ]


def test_the_scheduled_tick_holds_a_store_for_a_moment_not_a_batch(memex: Memex, dsn: str) -> None:
    assert CONSOLIDATE.command == "call memex.consolidate_due_tick()"
    operator = memex.as_operator("test")
    operator.set_dream_config(
        enabled=True, threshold=10, grace_minutes=0, batch_size=BATCH, write_budget=10
    )
    operator.store_many(_memories(3 * BATCH + 5))

    done = threading.Event()
    tick: dict[str, float] = {}

    def run_tick() -> None:
        with psycopg.connect(dsn, autocommit=True) as cron:  # as pg_cron runs a job
            started = time.monotonic()
            cron.execute(CONSOLIDATE.command)
            tick["seconds"] = time.monotonic() - started
        done.set()

    runner = threading.Thread(target=run_tick)
    runner.start()
    waits: list[float] = []
    while not done.is_set():
        started = time.monotonic()
        operator.store(A, U, f"Tess wrote something new at {started:.3f}.")
        waits.append(time.monotonic() - started)
        time.sleep(0.05)
    runner.join()
    runs = operator.consolidation_runs(A, U)
    condensed = [r for r in runs if r.kind == "condense" and r.status == "done"]
    per_batch = tick["seconds"] / max(len(condensed), 1)
    print(
        f"tick {tick['seconds']:.2f} s, {len(condensed)} batches, stores {len(waits)},"
        f" longest store {max(waits):.3f} s"
    )
    # every due batch (the stores add a fourth), not one and then left to the next tick
    assert len(condensed) >= 3, [(r.status, r.details.get("reason")) for r in runs]
    assert per_batch > 0.3, "a batch too quick to tell a wait from none"
    assert len(waits) >= 5
    # a store that waited for the batch in progress would take most of a batch
    assert max(waits) < 0.75 * per_batch, (max(waits), per_batch)


def test_the_tick_cannot_commit_inside_a_transaction(dsn: str) -> None:
    """A caller that wants the runs back in one transaction calls memex.consolidate_due."""
    with (
        psycopg.connect(dsn) as conn,  # psycopg opens a transaction block
        pytest.raises(psycopg.errors.InvalidTransactionTermination),
    ):
        conn.execute("call memex.consolidate_due_tick()")
