"""Limits before work, and limits that keys cannot multiply (issue 21, section 4).

- A caller over its limit is refused before anything is embedded: the client pays for a
  store, a batch or a search in SQL (memex.reserve_rate_limit) first, and the call that
  follows spends that reservation instead of being counted again. A batch of N memories
  costs N. Checked by counting the texts a real embedder (MiniLM) was given.
- The limits count per agent as well as per key: the keys an agent's admin key mints share
  the agent's budget, so minting keys adds none.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Iterator, Sequence

import httpx
import psycopg
import pytest
from mcp import Client

from memexdb import NewMemory
from memexdb.client import AsyncMemex
from memexdb.embedding import BatchingEmbedder, Embedder
from memexdb.embedding.protocol import Vectors
from memexdb.errors import Forbidden, RateLimited
from memexdb.mcp import build_mcp_server
from memexdb.rest.app import create_app
from tests.sqlapi import angled
from tests.test_mcp_support import call_error, connected


class CountingEmbedder:
    """The real embedder, counting the texts it is given."""

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner
        self.texts = 0

    @property
    def model_id(self) -> str:
        return self.inner.model_id

    @property
    def dim(self) -> int:
        return self.inner.dim

    def embed(self, texts: Sequence[str]) -> Vectors:
        self.texts += len(texts)
        return self.inner.embed(texts)


@pytest.fixture
def counting(embedder: Embedder) -> Iterator[CountingEmbedder]:
    yield CountingEmbedder(embedder)


@pytest.fixture
async def client(dsn: str, counting: CountingEmbedder) -> AsyncIterator[AsyncMemex]:
    batching = BatchingEmbedder(counting)  # no cache: every text reaches the model
    memex = await AsyncMemex.connect(dsn, embedder=batching)
    try:
        yield memex
    finally:
        await memex.aclose()
        await batching.aclose()


def _limit(conn: psycopg.Connection, operation: str, per_minute: int) -> None:
    conn.execute(
        "update memex.settings set value = %s where name = %s",
        (str(per_minute), f"rate_limit_{operation}_per_minute"),
    )


def _key(conn: psycopg.Connection, access: str, agent: str) -> str:
    row = conn.execute("select token from memex.create_key(%s, %s)", (access, agent)).fetchone()
    assert row is not None
    return str(row[0])


def _count(conn: psycopg.Connection, agent: str) -> int:
    row = conn.execute("select count(*) from memex.memories where agent_id = %s", (agent,))
    return int(row.fetchone()[0])  # type: ignore[index]


def _batch(n: int, agent: str = "A") -> list[NewMemory]:
    return [NewMemory(agent_id=agent, user_id="u", content=f"note number {i}") for i in range(n)]


# --- limits before work -------------------------------------------------------------------


async def test_a_batch_over_the_limit_is_refused_before_it_is_embedded(
    conn: psycopg.Connection, client: AsyncMemex, counting: CountingEmbedder
) -> None:
    _limit(conn, "store", 5)
    writer = client.with_key(_key(conn, "write", "A"))
    # a batch of exactly the limit passes: it is counted once (reserved, then spent)
    assert len(await writer.store_many(_batch(5))) == 5
    assert counting.texts == 5
    # the key is now over its limit: a 1,000-text batch is refused without embedding
    with pytest.raises(RateLimited) as refused:
        await writer.store_many(_batch(1000))
    assert refused.value.retry_after > 0
    with pytest.raises(RateLimited):
        await writer.store("A", "u", "one more")
    assert counting.texts == 5
    assert _count(conn, "A") == 5


async def test_a_batch_larger_than_the_limit_never_passes_and_says_so(
    conn: psycopg.Connection, client: AsyncMemex, counting: CountingEmbedder
) -> None:
    _limit(conn, "store", 5)
    writer = client.with_key(_key(conn, "write", "A"))
    with pytest.raises(RateLimited, match="send at most 5 at a time"):
        await writer.store_many(_batch(6))
    assert counting.texts == 0 and _count(conn, "A") == 0
    assert len(await writer.store_many(_batch(5))) == 5  # the refusal cost nothing


async def test_search_and_update_are_refused_before_they_are_embedded(
    conn: psycopg.Connection, client: AsyncMemex, counting: CountingEmbedder
) -> None:
    _limit(conn, "search", 2)
    _limit(conn, "store", 2)
    key = client.with_key(_key(conn, "write", "A"))
    stored = await key.store("A", "u", "tea with milk")
    await key.search("A", "u", "tea")
    await key.search("A", "u", "milk")
    assert counting.texts == 3
    with pytest.raises(RateLimited):
        await key.search("A", "u", "a third query")
    await key.update("A", "u", stored.id, content="green tea")
    assert counting.texts == 4
    with pytest.raises(RateLimited):
        await key.update("A", "u", stored.id, content="black tea")
    assert counting.texts == 4


async def test_rest_batch_over_the_limit_is_a_429_before_any_embedding(
    conn: psycopg.Connection, dsn: str, counting: CountingEmbedder
) -> None:
    _limit(conn, "store", 3)
    token = _key(conn, "write", "A")
    batching = BatchingEmbedder(counting)

    @contextlib.asynccontextmanager
    async def connect() -> AsyncIterator[AsyncMemex]:
        async with await AsyncMemex.connect(dsn, embedder=batching) as memex:
            yield memex

    app = create_app(connect)
    headers = {"Authorization": f"Bearer {token}"}
    try:
        async with (
            app.router.lifespan_context(app),
            httpx.AsyncClient(
                transport=httpx.ASGITransport(app=app),
                base_url="http://localhost",
                headers=headers,
            ) as http,
        ):
            for i in range(3):
                one = {"agent_id": "A", "user_id": "u", "content": f"note {i}"}
                assert (await http.post("/v1/memories", json=one)).status_code == 201
            batch = {
                "memories": [
                    {"agent_id": "A", "user_id": "u", "content": f"batch note {i}"}
                    for i in range(1000)
                ]
            }
            r = await http.post("/v1/memories/batch", json=batch)
            assert r.status_code == 429, r.text
            assert r.json()["error"]["code"] == "rate_limited"
            assert int(r.headers["retry-after"]) >= 1
    finally:
        await batching.aclose()
    assert counting.texts == 3
    assert _count(conn, "A") == 3


async def test_smart_read_and_memory_search_are_refused_before_they_are_embedded(
    conn: psycopg.Connection, dsn: str, client: AsyncMemex, counting: CountingEmbedder
) -> None:
    """Issue 34: smart_read and memory_search embedded an over-limit query (8 kB: ~200 ms
    of model time each) before their 429. Python, MCP (in-process, the SDK's client) and
    REST: every refusal comes before the model sees the text."""
    _limit(conn, "search", 2)
    token = _key(conn, "write", "A")
    key = client.with_key(token)
    big = ("what does alice drink in the morning? " * 220)[:8000]
    await key.smart_read("A", "u", "tea")
    await key.passages("A", "u", "coffee")
    assert counting.texts == 2  # within the limit: one embedding each, counted once
    with pytest.raises(RateLimited):
        await key.smart_read("A", "u", big)
    with pytest.raises(RateLimited):
        await key.passages("A", "u", big)
    assert counting.texts == 2

    async with connected(Client(build_mcp_server(lambda: key), mode="legacy")) as mcp:
        for tool in ("memory_smart_read", "memory_search"):
            for _ in range(3):
                message = await call_error(mcp, tool, agent_id="A", user_id="u", query=big)
                assert "rate limit" in message, message
    assert counting.texts == 2

    batching = BatchingEmbedder(counting)

    @contextlib.asynccontextmanager
    async def connect() -> AsyncIterator[AsyncMemex]:
        async with await AsyncMemex.connect(dsn, embedder=batching) as memex:
            yield memex

    app = create_app(connect)
    try:
        async with (
            app.router.lifespan_context(app),
            httpx.AsyncClient(
                transport=httpx.ASGITransport(app=app),
                base_url="http://localhost",
                headers={"Authorization": f"Bearer {token}"},
            ) as http,
        ):
            body = {"agent_id": "A", "user_id": "u", "query": big}
            for path in ("/v1/files/smart-read", "/v1/memory-search") * 10:
                r = await http.post(path, json=body)
                assert r.status_code == 429, (path, r.text)
                assert int(r.headers["retry-after"]) >= 1
    finally:
        await batching.aclose()
    assert counting.texts == 2


def test_sql_callers_reserve_then_spend_without_being_counted_twice(
    conn: psycopg.Connection,
) -> None:
    """The contract for other languages: reserve the batch's items, embed, then name the
    reservation in memex.rate_reservation for the store that follows."""
    _limit(conn, "store", 3)
    vectors = [angled(0.5).tolist()] * 3
    store_many = "select count(*) from memex.store_many(%s, %s, %s, %s::vector[], 'm')"
    args = (["A"] * 3, ["u"] * 3, ["x", "y", "z"], [str(v) for v in vectors])
    with conn.transaction():
        reservation = conn.execute(
            "select memex.reserve_rate_limit('store', %s, %s)", (["A"] * 3, ["u"] * 3)
        ).fetchone()
    assert reservation is not None and reservation[0] is not None
    with conn.transaction():
        conn.execute(
            "select set_config('memex.rate_reservation', %s, true)", (str(reservation[0]),)
        )
        assert conn.execute(store_many, args).fetchone() == (3,)
    # spent: naming it again counts the call, and the budget is gone
    with pytest.raises(psycopg.Error) as spent, conn.transaction():
        conn.execute(
            "select set_config('memex.rate_reservation', %s, true)", (str(reservation[0]),)
        )
        conn.execute(store_many, args)
    assert spent.value.sqlstate == "MX429"
    # a refused reservation reserves and counts nothing
    _limit(conn, "store", 5)
    with pytest.raises(psycopg.Error) as refused:
        conn.execute("select memex.reserve_rate_limit('store', %s, %s)", (["A"] * 3, ["u"] * 3))
    assert refused.value.sqlstate == "MX429"
    assert conn.execute("select count(*) from memex.rate_limit_reservations").fetchone() == (0,)
    assert conn.execute("select memex.reserve_rate_limit('store', %s, %s)", (["A"] * 2, ["u"] * 2))
    assert _count(conn, "A") == 3


def test_a_batch_costs_one_item_per_memory_in_sql(conn: psycopg.Connection) -> None:
    _limit(conn, "store", 3)
    vector = str(angled(0.5).tolist())
    store_many = "select count(*) from memex.store_many(%s, %s, %s, %s::vector[], 'm')"
    with pytest.raises(psycopg.Error) as refused:
        conn.execute(store_many, (["A"] * 4, ["u"] * 4, list("abcd"), [vector] * 4))
    assert refused.value.sqlstate == "MX429"
    assert conn.execute(store_many, (["A"] * 3, ["u"] * 3, list("abc"), [vector] * 3)).fetchone()
    assert _count(conn, "A") == 3


# --- limits that keys cannot multiply -----------------------------------------------------


async def _searches(memex: AsyncMemex, n: int, agent: str = "A") -> tuple[int, int]:
    ok = refused = 0
    for i in range(n):
        try:
            await memex.search(agent, "u", f"query {i}", mode="text")
            ok += 1
        except RateLimited:
            refused += 1
    return ok, refused


async def test_keys_minted_by_an_agent_admin_share_the_agents_limit(
    conn: psycopg.Connection, client: AsyncMemex
) -> None:
    _limit(conn, "search", 10)
    admin = client.with_key(_key(conn, "admin", "A"))
    minted = [
        client.with_key((await admin.create_key("read", agent_id="A")).token) for _ in range(5)
    ]
    results = [await _searches(key, 6) for key in minted]  # 30 searches, 6 per key
    assert sum(ok for ok, _ in results) == 10
    # another agent's keys have their own budget
    other = client.with_key(_key(conn, "read", "B"))
    assert await _searches(other, 3, agent="B") == (3, 0)


async def test_an_admin_over_its_limit_cannot_mint_its_way_past_it(
    conn: psycopg.Connection, client: AsyncMemex
) -> None:
    _limit(conn, "search", 10)
    admin = client.with_key(_key(conn, "admin", "A"))
    assert await _searches(admin, 12) == (10, 2)
    minted = [
        client.with_key((await admin.create_key("read", agent_id="A")).token) for _ in range(5)
    ]
    for key in minted:
        assert await _searches(key, 10) == (0, 10)


async def test_a_key_cannot_spend_another_agents_budget(
    conn: psycopg.Connection, dsn: str, client: AsyncMemex
) -> None:
    """memex._enforce_rate_limit is executable by tenants (memex.store runs it as its
    caller): it refuses to count against an agent the caller may not act on."""
    _limit(conn, "search", 3)
    token_b = _key(conn, "read", "B")
    with psycopg.connect(dsn) as app:
        app.execute("set role memex_app")
        app.execute("select memex._enter(%s)", (token_b,))
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            app.execute("select memex._enforce_rate_limit('search', 'A')")
    with psycopg.connect(dsn) as app:
        app.execute("set role memex_app")
        app.execute("select memex._enter(%s)", (token_b,))
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            app.execute("select memex.reserve_rate_limit('search', array['A'], array['u'])")
    reader_a = client.with_key(_key(conn, "read", "A"))
    assert await _searches(reader_a, 3) == (3, 0)
    with pytest.raises(Forbidden):
        await client.with_key(token_b).search("A", "u", "q", mode="text")
