"""A memory answers as it was stored, on every surface, and memex's delete call works
(issue 24, sections 5 and 6), against one live `memexdb serve`:

- a search result carries the memory's fields as a read (GET /v1/memories/{id}) answers
  them, archived ones included (archived_at, superseded_by), and updated_at and
  embedding_model in every result;
- importance 1.2 and 0.1 come back as 1.2 and 0.1 (not a real's 1.2000000476837158)
  through REST, MCP, the HTTP client, the in-process client and SQL;
- `DELETE /v1/memories/{id}?agent_id=...` (memex's call, no user_id) deletes within the
  caller's scope: a key limited to one user cannot delete another user's memory.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import httpx2
import psycopg
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from memexdb_client import AsyncMemexClient

from memexdb import AsyncMemex
from memexdb.embedded import EmbeddedPostgres
from memexdb.embedding import Embedder
from memexdb.memories.models import MemoryOut
from tests.conftest import drop_database, new_database
from tests.live_service import Service, client
from tests.test_mcp_support import call, connected, serve

MEMORY = "/v1/memories"
IMPORTANCES = (1.2, 0.1)


@dataclass
class Live:
    service: Service
    dsn: str
    token: str  # an admin key of every agent (open loopback mode ends with the first key)

    def http(self, token: str | None = None) -> httpx.Client:
        c = client(self.service.base_url)
        c.headers["Authorization"] = f"Bearer {token or self.token}"
        return c


@pytest.fixture(scope="module")
def live(
    pg_server: EmbeddedPostgres, template_db: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Live]:
    dsn = new_database(pg_server)
    try:
        with serve(tmp_path_factory.mktemp("fidelity"), dsn=dsn) as service:
            yield Live(service, dsn, create_key(dsn, "admin"))
    finally:
        drop_database(pg_server, dsn)


def create_key(dsn: str, access: str, agent_id: str | None = None, users: Any = None) -> str:
    with psycopg.connect(dsn, autocommit=True) as conn:
        row = conn.execute(
            "select token from memex.create_key(p_access => %s, p_agent_id => %s,"
            " p_user_ids => %s, p_name => 'fidelity')",
            (access, agent_id, users),
        ).fetchone()
    assert row is not None
    token: str = row[0]
    return token


def tenant() -> dict[str, str]:
    tag = uuid.uuid4().hex[:10]
    return {"agent_id": f"agent-{tag}", "user_id": f"user-{tag}"}


def store(http: httpx.Client, who: dict[str, str], content: str, **fields: Any) -> dict[str, Any]:
    r = http.post(MEMORY, json={**who, "content": content, **fields})
    assert r.status_code == 201, r.text
    body: dict[str, Any] = r.json()
    return body


def read(http: httpx.Client, who: dict[str, str], memory_id: str) -> dict[str, Any]:
    r = http.get(f"{MEMORY}/{memory_id}", params=who)
    assert r.status_code == 200, r.text
    body: dict[str, Any] = r.json()
    return body


# --- search results carry the record ------------------------------------------------------

# every field of a stored memory (the answer model of a read), the score aside
RECORD_FIELDS = [f for f in MemoryOut.model_fields if f != "score"]


async def test_a_search_result_is_the_stored_record(live: Live, embedder: Embedder) -> None:
    who = tenant()
    texts = [
        "Dana moved to Lisbon in March.",
        "Dana's new flat in Lisbon has a balcony facing the river.",
        "Dana bikes along the Tagus river to work in Lisbon.",
    ]
    with live.http() as http:
        ids = [store(http, who, t, importance=1.2)["id"] for t in texts]
        # a change: updated_at moves past created_at
        r = http.patch(f"{MEMORY}/{ids[0]}", json={**who, "metadata": {"city": "Lisbon"}})
        assert r.status_code == 200, r.text
    async with await AsyncMemex.connect(live.dsn, embedder=embedder, key=live.token) as memex:
        run = await memex.consolidate(who["agent_id"], who["user_id"], force=True)
    assert run is not None and run.status == "done" and run.summary_id is not None

    with live.http() as http:
        query = {**who, "query": "Where does Dana live?", "top_k": 10, "include_archived": True}
        r = http.post(f"{MEMORY}/search", json=query)
        assert r.status_code == 200, r.text
        results = r.json()["results"]
        assert {h["id"] for h in results} == {*ids, str(run.summary_id)}
        for hit in results:
            stored = read(http, who, hit["id"])
            assert {f: hit[f] for f in RECORD_FIELDS} == {f: stored[f] for f in RECORD_FIELDS}
            assert hit["updated_at"] is not None and hit["embedding_model"] is not None
        archived = [h for h in results if h["id"] in ids]
        assert all(
            h["archived_at"] is not None and h["superseded_by"] == str(run.summary_id)
            for h in archived
        )
        changed = next(h for h in results if h["id"] == ids[0])
        assert changed["updated_at"] > changed["created_at"]

    async with mcp_session(live) as mcp:
        found = await call(mcp, "search_memories", **query)

    # the same records (the scores move with the clock: recency)
    def records(hits: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return sorted(({f: h[f] for f in RECORD_FIELDS} for h in hits), key=lambda h: h["id"])

    assert records(found["results"]) == records(results)


@contextlib.asynccontextmanager
async def mcp_session(live: Live) -> AsyncIterator[Client]:
    """An MCP session over streamable HTTP with the admin key."""
    headers = {"Authorization": f"Bearer {live.token}"}
    async with httpx2.AsyncClient(headers=headers, timeout=120) as http:
        transport = streamable_http_client(f"{live.service.base_url}/mcp", http_client=http)
        async with connected(Client(transport, mode="legacy", read_timeout_seconds=120)) as c:
            yield c


# --- importance as sent -------------------------------------------------------------------


@pytest.mark.parametrize("importance", IMPORTANCES)
async def test_importance_comes_back_as_sent_on_every_surface(
    live: Live, embedder: Embedder, importance: float
) -> None:
    who = tenant()
    content = f"Dana rates the bakery on Rua Augusta {importance} out of 2."
    seen: dict[str, float] = {}
    with live.http() as http:
        stored = store(http, who, content, importance=importance)
        seen["rest store"] = stored["importance"]
        seen["rest get"] = read(http, who, stored["id"])["importance"]
        r = http.post(f"{MEMORY}/search", json={**who, "query": "bakery rating"})
        assert r.status_code == 200, r.text
        seen["rest search"] = r.json()["results"][0]["importance"]
        r = http.patch(f"{MEMORY}/{stored['id']}", json={**who, "importance": importance})
        assert r.status_code == 200, r.text
        seen["rest update"] = r.json()["importance"]
    async with mcp_session(live) as mcp:
        mcp_stored = await call(
            mcp, "store_memory", **who, content=content + " (mcp)", importance=importance
        )
        seen["mcp store"] = mcp_stored["importance"]
        found = await call(mcp, "search_memories", **who, query="bakery rating")
        seen["mcp search"] = found["results"][0]["importance"]
    async with AsyncMemexClient(live.service.base_url, live.token) as remote:
        seen["python client search"] = (
            await remote.search(who["agent_id"], who["user_id"], "bakery")
        )[0].importance
    async with await AsyncMemex.connect(live.dsn, embedder=embedder, key=live.token) as memex:
        agent, user = who["agent_id"], who["user_id"]
        local = await memex.store(agent, user, content + " (in process)", importance=importance)
        seen["python store"] = local.importance
        seen["python get"] = (await memex.get(agent, user, local.id)).importance
    with psycopg.connect(live.dsn) as conn:
        row = conn.execute(
            "select importance from memex.get_memory(%s, %s, %s)",
            (who["agent_id"], who["user_id"], stored["id"]),
        ).fetchone()
        assert row is not None
        seen["sql get_memory"] = row[0]
        row = conn.execute(
            "select importance from memex.export_memories(%s, %s) where id = %s",
            (who["agent_id"], who["user_id"], stored["id"]),
        ).fetchone()
        assert row is not None
        seen["sql export"] = row[0]
    assert seen == dict.fromkeys(seen, importance)


# --- memex's delete: no user_id -----------------------------------------------------------


def test_delete_without_user_id_deletes_within_the_caller_s_scope(live: Live) -> None:
    agent = f"agent-{uuid.uuid4().hex[:10]}"
    alice = {"agent_id": agent, "user_id": "alice"}
    bob = {"agent_id": agent, "user_id": "bob"}
    alice_only = create_key(live.dsn, "write", agent, ["alice"])
    with live.http() as http:
        a = store(http, alice, "Alice keeps her spare key under the blue flower pot.")["id"]
        b = store(http, bob, "Bob's locker code is 4711.")["id"]
        other = store(http, tenant(), "Someone else's memory.")["id"]
    with live.http(alice_only) as http:
        # another user of the same agent: invisible to this key, so not found
        r = http.delete(f"{MEMORY}/{b}", params={"agent_id": agent})
        assert r.status_code == 404, r.text
        # another agent's memory under this agent: not found either
        r = http.delete(f"{MEMORY}/{other}", params={"agent_id": agent})
        assert r.status_code == 404, r.text
        # another agent named: refused, as with a user
        r = http.delete(f"{MEMORY}/{other}", params={"agent_id": "agent-not-mine"})
        assert r.status_code == 403, r.text
        r = http.delete(f"{MEMORY}/{a}", params={"agent_id": agent})
        assert r.status_code == 204, r.text
    with live.http() as http:
        assert http.get(f"{MEMORY}/{a}", params=alice).status_code == 404
        assert read(http, bob, b)["content"] == "Bob's locker code is 4711."
        # an admin of every agent deletes any user's memory of the agent named
        r = http.delete(f"{MEMORY}/{b}", params={"agent_id": agent})
        assert r.status_code == 204, r.text
        assert http.get(f"{MEMORY}/{b}", params=bob).status_code == 404
        # a named user still scopes the delete
        r = http.delete(f"{MEMORY}/{other}", params={"agent_id": agent, "user_id": "bob"})
        assert r.status_code == 404, r.text
        # no agent_id: still a 422
        r = http.delete(f"{MEMORY}/{other}")
        assert r.status_code == 422, r.text


async def test_mcp_delete_memory_without_user_id(live: Live) -> None:
    who = tenant()
    with live.http() as http:
        memory = store(http, who, "Carol parks on level 3 of the garage.")
    async with mcp_session(live) as mcp:
        deleted = await call(mcp, "delete_memory", agent_id=who["agent_id"], id=memory["id"])
    assert deleted["deleted"]["id"] == memory["id"]
    assert deleted["deleted"]["user_id"] == who["user_id"]
    with live.http() as http:
        assert http.get(f"{MEMORY}/{memory['id']}", params=who).status_code == 404
