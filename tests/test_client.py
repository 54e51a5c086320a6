"""The Python API (AsyncMemex and Memex) with the real embedding model."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from memexdb import (
    AsyncMemex,
    InvalidArgument,
    Memex,
    MemoryType,
    NewMemory,
    NotFound,
    RateLimited,
    SearchMode,
    SetupError,
)

FACTS = [
    ("The user's favourite colour is teal", MemoryType.SEMANTIC),
    ("Yesterday the user flew from Lisbon to Berlin for a conference", MemoryType.EPISODIC),
    ("To restart the staging cluster, drain the nodes first, then reboot", MemoryType.PROCEDURAL),
]


async def test_store_and_search_best_match_first(amemex: AsyncMemex) -> None:
    for content, kind in FACTS:
        memory = await amemex.store("agent", "alice", content, memory_type=kind)
        assert memory.memory_type is kind
        assert memory.embedding_model == "all-MiniLM-L6-v2-int8"
    hits = await amemex.search("agent", "alice", "which colour does she like best?", top_k=3)
    assert hits[0].content == FACTS[0][0]
    assert hits[0].similarity is not None and hits[0].similarity > hits[1].similarity  # type: ignore[operator]
    # no alpha sent: relevance (hybrid) with recency as a bounded tiebreaker
    assert hits[0].score == pytest.approx(hits[0].relevance * (1 + 0.25 * hits[0].recency))
    assert hits[0].text_rank is not None  # hybrid by default
    hits = await amemex.search(
        "agent", "alice", "how do I reboot staging?", memory_types=[MemoryType.PROCEDURAL]
    )
    assert [h.content for h in hits] == [FACTS[2][0]]
    assert await amemex.count("agent", "alice") == 3
    assert await amemex.count("agent", "alice", MemoryType.EPISODIC) == 1


async def test_hybrid_finds_exact_terms(amemex: AsyncMemex) -> None:
    await amemex.store("agent", "bob", "Bob's locker code is 4711")
    await amemex.store("agent", "bob", "Bob likes hiking in the Alps")
    hits = await amemex.search("agent", "bob", "4711", mode=SearchMode.HYBRID)
    assert hits[0].content == "Bob's locker code is 4711"
    assert hits[0].text_rank is not None
    text_only = await amemex.search("agent", "bob", "locker", mode=SearchMode.TEXT)
    assert text_only[0].content == "Bob's locker code is 4711"
    assert text_only[0].similarity is None


async def test_concurrent_stores_are_batched_and_all_kept(amemex: AsyncMemex) -> None:
    texts = [f"note number {i} about topic {i % 7}" for i in range(60)]
    stored = await asyncio.gather(*(amemex.store("agent", "carol", t) for t in texts))
    assert len({m.id for m in stored}) == 60
    assert await amemex.count("agent", "carol") == 60


async def test_store_many_and_forget(amemex: AsyncMemex) -> None:
    when = datetime(2025, 1, 1, tzinfo=UTC)
    stored = await amemex.store_many(
        [
            NewMemory(
                agent_id="agent",
                user_id="dan",
                content=f"fact {i}",
                importance=0.5 + i / 10,
                created_at=when,
            )
            for i in range(5)
        ]
    )
    assert [m.content for m in stored] == [f"fact {i}" for i in range(5)]
    assert stored[0].created_at == when
    removed = await amemex.forget("agent", "dan", stored[0].id)
    assert removed.id == stored[0].id
    with pytest.raises(NotFound):
        await amemex.forget("agent", "dan", stored[0].id)
    with pytest.raises(NotFound):
        await amemex.forget("agent", "eve", stored[1].id)  # not eve's
    assert await amemex.count("agent", "dan") == 4


async def test_errors_are_typed(amemex: AsyncMemex) -> None:
    with pytest.raises(InvalidArgument) as info:
        await amemex.store("agent", "x", "text", importance=3.0)
    assert info.value.field == "importance"
    with pytest.raises(InvalidArgument) as info:
        await amemex.search("agent", "x", "q", top_k=0)
    assert info.value.field == "top_k"
    with pytest.raises(InvalidArgument) as info:
        await amemex.store("agent", "x", "   ")
    assert info.value.field == "content"
    with pytest.raises(InvalidArgument) as info:
        await amemex.store("", "x", "text")
    assert info.value.field == "agent_id"
    await amemex.set_setting("rate_limit_search_per_minute", 1)
    await amemex.search("agent", "x", "q")
    with pytest.raises(RateLimited) as limited:
        await amemex.search("agent", "x", "q")
    assert 0 < limited.value.retry_after <= 120


async def test_expiry_and_maintenance(amemex: AsyncMemex) -> None:
    soon = datetime.now(UTC) + timedelta(milliseconds=300)
    await amemex.store("agent", "fay", "short-lived", expires_at=soon)
    await amemex.store("agent", "fay", "long-lived")
    await asyncio.sleep(0.5)
    assert [h.content for h in await amemex.search("agent", "fay", "lived")] == ["long-lived"]
    result = await amemex.maintenance()
    assert result.expired_memories_deleted == 1


class ThreeDims:
    """A real (if tiny) embedder of the wrong dimension for this schema."""

    model_id = "three-d"
    dim = 3

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        return np.ones((len(texts), 3), dtype=np.float32) / np.sqrt(3)


async def test_embedder_must_fit_the_schema(dsn: str) -> None:
    with pytest.raises(SetupError, match="halfvec\\(384\\)"):
        await AsyncMemex.connect(dsn, embedder=ThreeDims())


def test_sync_client(memex: Memex) -> None:
    for content, kind in FACTS:
        memex.store("agent", "gus", content, memory_type=kind, metadata={"k": 1})
    hits = memex.search("agent", "gus", "favourite colour", top_k=2)
    assert hits[0].content == FACTS[0][0]
    assert hits[0].metadata == {"k": 1}
    assert memex.count("agent", "gus") == 3
    memex.forget("agent", "gus", hits[0].id)
    with pytest.raises(NotFound):
        memex.forget("agent", "gus", uuid.uuid4())
    assert memex.count("agent", "gus") == 2
    assert (
        len(memex.store_many([NewMemory(agent_id="agent", user_id="gus", content="batched")])) == 1
    )


async def test_unknown_memory_type_is_an_invalid_argument(amemex: AsyncMemex) -> None:
    with pytest.raises(InvalidArgument) as info:
        await amemex.store("agent", "hal", "text", memory_type="dream")
    assert info.value.field == "memory_type"
    with pytest.raises(InvalidArgument) as info:
        await amemex.search("agent", "hal", "q", memory_types=["semantic", "dream"])
    assert info.value.field == "memory_types[1]"
    # NewMemory checks itself when built by hand, with the same typed error
    with pytest.raises(InvalidArgument) as info:
        NewMemory(agent_id="agent", user_id="hal", content="x", memory_type="dream")
    assert info.value.field == "memory_type"


def test_sync_client_has_every_method_of_the_async_one() -> None:
    def public(cls: type) -> set[str]:
        return {n for n, v in vars(cls).items() if callable(v) and not n.startswith("_")}

    lifecycle = {"connect", "aclose"}  # Memex: connect (sync) and close
    assert public(AsyncMemex) - lifecycle <= public(Memex)
    assert Memex.search.__doc__ == AsyncMemex.search.__doc__


async def test_a_tuple_is_as_good_as_a_list(amemex: AsyncMemex) -> None:
    """Sequence arguments (supersedes, memory_types) reach the request as the lists its
    fields take, whatever sequence the caller passes."""
    old = await amemex.store("agent", "tuples", "The user drives a Kia Niro")
    new = await amemex.store("agent", "tuples", "The user drives a Skoda", supersedes=(old.id,))
    assert new.supersedes == [old.id]
    hits = await amemex.search(
        "agent", "tuples", "which car?", memory_types=(MemoryType.EPISODIC,), top_k=5
    )
    assert [h.id for h in hits] == [new.id]
