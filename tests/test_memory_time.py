"""Memory that knows time (issue 36) on its surfaces: history (list, diff, revert, a read
as of a moment), supersession, search as of a moment, validity and creation-time filters,
over REST, MCP and the Python HTTP client, against one real service and database."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest
from memexdb_client import AsyncMemexClient, InvalidArgument, NotFound

from memexdb.embedded import EmbeddedPostgres
from tests.live_service import client, service_on_new_database
from tests.test_mcp_support import call, call_error, connected, http_client_of

STORE = "/v1/memories"
SEARCH = "/v1/memories/search"
HOME_OLD = "Alice lives in Paris, in a flat near the Canal Saint-Martin."
HOME_NEW = "Alice moved to Berlin last month and lives in Kreuzberg now."
WHERE = "Where does Alice live?"


@dataclass
class Live:
    base_url: str
    http: httpx.Client


@pytest.fixture(scope="module")
def live(pg_server: EmbeddedPostgres, template_db: str) -> Iterator[Live]:
    with (
        service_on_new_database(pg_server, "memtime") as service,
        client(service.base_url) as http,
    ):
        yield Live(service.base_url, http)


def tenant() -> dict[str, str]:
    tag = uuid.uuid4().hex[:10]
    return {"agent_id": f"agent-{tag}", "user_id": f"user-{tag}"}


def store(http: httpx.Client, who: dict[str, str], content: str, **fields: Any) -> dict[str, Any]:
    r = http.post(STORE, json={**who, "content": content, **fields})
    assert r.status_code == 201, r.text
    body: dict[str, Any] = r.json()
    return body


def search(http: httpx.Client, who: dict[str, str], **fields: Any) -> list[dict[str, Any]]:
    r = http.post(SEARCH, json={**who, "query": WHERE, **fields})
    assert r.status_code == 200, r.text
    results: list[dict[str, Any]] = r.json()["results"]
    return results


def error(r: httpx.Response, status: int) -> dict[str, Any]:
    assert r.status_code == status, r.text
    body: dict[str, Any] = r.json()["error"]
    return body


def field_names(body: dict[str, Any]) -> set[str]:
    return {f["field"] for f in body["fields"]}


# --- history ----------------------------------------------------------------------------


def test_a_fact_updated_twice_has_three_revisions_a_diff_an_old_read_and_a_revert(
    live: Live,
) -> None:
    who, http = tenant(), live.http
    memory = store(http, who, "Alice drives a Kia Niro.", memory_type="semantic")
    path = f"{STORE}/{memory['id']}"
    time.sleep(0.05)
    between = datetime.now(UTC)
    time.sleep(0.05)
    for content in ("Alice drives a Skoda Octavia.", "Alice drives a Tesla Model 3."):
        r = http.patch(path, json={**who, "content": content})
        assert r.status_code == 200, r.text

    r = http.get(f"{path}/revisions", params=who)
    assert r.status_code == 200, r.text
    page = r.json()
    revisions = page["revisions"]
    assert [v["revision"] for v in revisions] == [3, 2, 1]
    assert [v["operation"] for v in revisions] == ["update", "update", "store"]
    assert revisions[-1]["content"] == "Alice drives a Kia Niro."
    assert "content" in revisions[0]["changed"]
    assert page["next_before"] is None
    # a page of one, then the next
    r = http.get(f"{path}/revisions", params={**who, "limit": 1})
    assert [v["revision"] for v in r.json()["revisions"]] == [3]
    assert r.json()["next_before"] == 3
    r = http.get(f"{path}/revisions", params={**who, "limit": 1, "before": 3})
    assert [v["revision"] for v in r.json()["revisions"]] == [2]

    r = http.get(f"{path}/revisions/diff", params={**who, "from_revision": 1, "to_revision": 3})
    assert r.status_code == 200, r.text
    diff = r.json()
    assert (diff["from_revision"], diff["to_revision"]) == (1, 3)
    # one line each, not run together (a memory's content has no line end of its own)
    assert diff["content"].endswith("-Alice drives a Kia Niro.\n+Alice drives a Tesla Model 3.\n")

    # as_of: the memory as it was between the store and the first update
    r = http.get(path, params={**who, "as_of": between.isoformat()})
    assert r.status_code == 200, r.text
    assert r.json()["content"] == "Alice drives a Kia Niro."
    assert http.get(path, params=who).json()["content"] == "Alice drives a Tesla Model 3."
    # before it existed: not found
    long_ago = (datetime.now(UTC) - timedelta(days=365)).isoformat()
    error(http.get(path, params={**who, "as_of": long_ago}), 404)

    r = http.post(f"{path}/revert", json={**who, "revision": 1})
    assert r.status_code == 200, r.text
    assert r.json()["content"] == "Alice drives a Kia Niro."
    revisions = http.get(f"{path}/revisions", params=who).json()["revisions"]
    assert [(v["revision"], v["operation"]) for v in revisions[:2]] == [
        (4, "revert"),
        (3, "update"),
    ]


def test_history_of_another_tenants_memory_is_a_404(live: Live) -> None:
    who, other, http = tenant(), tenant(), live.http
    memory = store(http, who, "Alice's passport number ends in 42.")
    path = f"{STORE}/{memory['id']}"
    error(http.get(f"{path}/revisions", params=other), 404)
    error(
        http.get(f"{path}/revisions/diff", params={**other, "from_revision": 1, "to_revision": 1}),
        404,
    )
    error(http.post(f"{path}/revert", json={**other, "revision": 1}), 404)
    error(http.get(f"{STORE}/{memory['id']}", params={**other}), 404)


# --- supersession -----------------------------------------------------------------------


def test_supersedes_hides_the_old_version_and_include_superseded_ranks_it_after(
    live: Live,
) -> None:
    who, http = tenant(), live.http
    old = store(http, who, HOME_OLD, memory_type="semantic")
    new = store(http, who, HOME_NEW, memory_type="semantic", supersedes=[old["id"]])
    assert new["supersedes"] == [old["id"]]
    assert new["superseded_by"] is None

    old_now = http.get(f"{STORE}/{old['id']}", params=who).json()
    assert old_now["superseded_by"] == new["id"]
    assert old_now["superseded_at"] is not None
    # its validity closed where the successor's started
    assert old_now["valid_to"] is not None

    ids = [h["id"] for h in search(http, who)]
    assert ids == [new["id"]]
    ids = [h["id"] for h in search(http, who, include_superseded=True)]
    assert ids == [new["id"], old["id"]]
    revisions = http.get(f"{STORE}/{old['id']}/revisions", params=who).json()["revisions"]
    assert revisions[0]["operation"] == "superseded"


def test_bad_supersedes_get_typed_errors(live: Live) -> None:
    who, other, http = tenant(), tenant(), live.http
    mine = store(http, who, HOME_OLD)
    theirs = store(http, other, "Bob lives in Madrid.")
    # an unknown id, and another tenant's: the same 404
    unknown = error(
        http.post(STORE, json={**who, "content": HOME_NEW, "supersedes": [str(uuid.uuid4())]}), 404
    )
    foreign = error(
        http.post(STORE, json={**who, "content": HOME_NEW, "supersedes": [theirs["id"]]}), 404
    )
    assert unknown["code"] == foreign["code"]
    # itself
    body = error(
        http.post(
            STORE, json={**who, "content": HOME_NEW, "id": mine["id"], "supersedes": [mine["id"]]}
        ),
        422,
    )
    assert "supersedes" in body["message"] or "supersedes" in str(body["fields"])
    body = error(http.patch(f"{STORE}/{mine['id']}", json={**who, "supersedes": [mine["id"]]}), 422)
    assert "supersedes" in field_names(body)
    # a repeat, and not a list of ids
    error(http.post(STORE, json={**who, "content": HOME_NEW, "supersedes": [mine["id"]] * 2}), 422)
    error(http.post(STORE, json={**who, "content": HOME_NEW, "supersedes": ["x"]}), 422)
    # in a batch, by the same rules: another tenant's id is the same 404, nothing stored
    r = http.post(
        f"{STORE}/batch",
        json={
            "memories": [
                {**who, "content": HOME_NEW, "supersedes": [mine["id"]]},
                {**who, "content": HOME_NEW, "supersedes": [theirs["id"]]},
            ]
        },
    )
    assert error(r, 404)["code"] == foreign["code"]
    # nothing of these was stored, and the old one is untouched
    assert http.get(f"{STORE}/{mine['id']}", params=who).json()["superseded_by"] is None
    assert [h["id"] for h in search(http, who)] == [mine["id"]]


# --- search as of a moment, validity, creation time ---------------------------------------


def test_search_as_of_a_past_moment_answers_what_was_held_then(live: Live) -> None:
    who, http = tenant(), live.http
    old = store(http, who, HOME_OLD, memory_type="semantic")
    time.sleep(0.05)
    before_move = datetime.now(UTC)
    time.sleep(0.05)
    new = store(http, who, HOME_NEW, memory_type="semantic", supersedes=[old["id"]])
    then = [h["id"] for h in search(http, who, as_of=before_move.isoformat())]
    assert then == [old["id"]]
    assert [h["id"] for h in search(http, who)] == [new["id"]]
    assert [h["id"] for h in search(http, who, as_of=datetime.now(UTC).isoformat())] == [new["id"]]


def test_created_after_before_and_valid_at_filter(live: Live) -> None:
    who, http = tenant(), live.http
    first = store(http, who, HOME_OLD)
    time.sleep(0.05)
    cut = datetime.now(UTC)
    time.sleep(0.05)
    second = store(
        http,
        who,
        HOME_NEW,
        valid_from="2020-01-01T00:00:00Z",
        valid_to="2021-01-01T00:00:00Z",
    )
    assert second["valid_from"].startswith("2020-01-01")
    assert [h["id"] for h in search(http, who, created_after=cut.isoformat())] == [second["id"]]
    assert [h["id"] for h in search(http, who, created_before=cut.isoformat())] == [first["id"]]
    in_2020 = [h["id"] for h in search(http, who, valid_at="2020-06-01T00:00:00Z")]
    assert in_2020 == [second["id"]]
    now = [h["id"] for h in search(http, who, valid_at=datetime.now(UTC).isoformat())]
    assert now == [first["id"]]
    # the window the wrong way round, and a validity that ends before it starts: 422
    body = error(
        http.post(
            SEARCH,
            json={
                **who,
                "query": WHERE,
                "created_after": "2030-01-01T00:00:00Z",
                "created_before": "2020-01-01T00:00:00Z",
            },
        ),
        422,
    )
    assert "created_after" in body["message"] or body["fields"]
    error(
        http.post(
            STORE,
            json={
                **who,
                "content": HOME_NEW,
                "valid_from": "2021-01-01T00:00:00Z",
                "valid_to": "2020-01-01T00:00:00Z",
            },
        ),
        422,
    )
    # valid_to cleared by an update: the fact holds again
    r = http.patch(f"{STORE}/{second['id']}", json={**who, "valid_to": None})
    assert r.status_code == 200, r.text
    assert r.json()["valid_to"] is None


# --- MCP --------------------------------------------------------------------------------


async def test_mcp_store_supersedes_and_memory_history(live: Live) -> None:
    who = tenant()
    async with connected(http_client_of(f"{live.base_url}/mcp")) as c:
        tools = {t.name: t for t in (await c.list_tools()).tools}
        assert "supersedes" in (tools["store_memory"].description or "")
        assert "supersedes" in tools["store_memory"].input_schema["properties"]
        old = await call(c, "store_memory", **who, content=HOME_OLD)
        new = await call(c, "store_memory", **who, content=HOME_NEW, supersedes=[old["id"]])
        found = await call(c, "search_memories", **who, query=WHERE)
        assert [m["id"] for m in found["results"]] == [new["id"]]
        history = await call(c, "memory_history", **who, id=old["id"])
        assert [v["operation"] for v in history["revisions"]] == ["superseded", "store"]
        assert history["revisions"][0]["superseded_by"] == new["id"]
        message = await call_error(
            c, "store_memory", **who, content=HOME_NEW, supersedes=[str(uuid.uuid4())]
        )
        assert "not found" in message.lower() or "no such" in message.lower()
        message = await call_error(c, "memory_history", **tenant(), id=old["id"])
        assert message


async def test_mcp_diff_and_revert_a_memory(live: Live) -> None:
    """The whole history over MCP: list (memory_history), diff (diff_memory), restore
    (revert_memory), read as of a moment (get_memory as_of)."""
    who = tenant()
    async with connected(http_client_of(f"{live.base_url}/mcp")) as c:
        tools = {t.name: t for t in (await c.list_tools()).tools}
        assert "supersedes" in (tools["update_memory"].description or "")
        assert tools["revert_memory"].annotations is not None
        assert tools["diff_memory"].annotations is not None
        assert tools["diff_memory"].annotations.read_only_hint is True
        old = await call(c, "store_memory", **who, content=HOME_OLD)
        await call(c, "update_memory", **who, id=old["id"], content=HOME_NEW, importance=1.5)
        diff = await call(c, "diff_memory", **who, id=old["id"], from_revision=1, to_revision=2)
        assert f"-{HOME_OLD}" in diff["content"] and f"+{HOME_NEW}" in diff["content"]
        assert diff["fields"]["importance"] == {"from": 1.0, "to": 1.5}
        reverted = await call(c, "revert_memory", **who, id=old["id"], revision=1)
        assert (reverted["content"], reverted["importance"]) == (HOME_OLD, 1.0)
        history = await call(c, "memory_history", **who, id=old["id"])
        assert [v["operation"] for v in history["revisions"]] == ["revert", "update", "store"]
        message = await call_error(c, "revert_memory", **tenant(), id=old["id"], revision=1)
        assert message


# --- the Python HTTP client -------------------------------------------------------------


async def test_python_client_history_supersession_and_as_of(live: Live) -> None:
    who = tenant()
    a, u = who["agent_id"], who["user_id"]
    async with AsyncMemexClient(live.base_url) as memex:
        old = await memex.store(a, u, HOME_OLD, memory_type="semantic")
        await asyncio.sleep(0.05)
        before_move = datetime.now(UTC)
        new = await memex.store(a, u, HOME_NEW, memory_type="semantic", supersedes=[old.id])
        assert new.supersedes == [old.id]
        assert [h.id for h in await memex.search(a, u, WHERE)] == [new.id]
        hits = await memex.search(a, u, WHERE, include_superseded=True)
        assert [h.id for h in hits] == [new.id, old.id]
        assert hits[1].superseded_by == new.id and hits[1].valid_to is not None
        assert [h.id for h in await memex.search(a, u, WHERE, as_of=before_move)] == [old.id]

        await memex.update(a, u, new.id, content="Alice lives in Munich now.")
        history = await memex.memory_history(a, u, new.id)
        assert [r.revision for r in history] == [2, 1]
        diff = await memex.memory_revision_diff(a, u, new.id, 1, 2)
        assert "+Alice lives in Munich now." in diff["content"]
        reverted = await memex.revert_memory(a, u, new.id, 1)
        assert reverted.content == HOME_NEW
        # every revision, a page of one at a time
        every = [r async for r in memex.iter_memory_history(a, u, new.id, limit=1)]
        assert [(r.revision, r.operation) for r in every] == [
            (3, "revert"),
            (2, "update"),
            (1, "store"),
        ]
        assert (await memex.get(a, u, old.id, as_of=before_move)).superseded_by is None
        assert (await memex.get(a, u, old.id)).superseded_by == new.id
        with pytest.raises(NotFound):
            await memex.store(a, u, "x", supersedes=[uuid.uuid4()])
        with pytest.raises(InvalidArgument):
            await memex.search(
                a,
                u,
                WHERE,
                created_after=datetime(2030, 1, 1, tzinfo=UTC),
                created_before=datetime(2020, 1, 1, tzinfo=UTC),
            )


async def test_store_many_in_process_refuses_validity(amemex: Any) -> None:
    """A batch takes supersedes (tests/test_batch_supersedes.py), not validity yet."""
    from memexdb import NewMemory
    from memexdb.errors import InvalidArgument as Invalid

    who = tenant()
    await amemex.store(who["agent_id"], who["user_id"], HOME_OLD)
    item = NewMemory(**who, content=HOME_NEW, valid_to=datetime(2030, 1, 1, tzinfo=UTC))
    with pytest.raises(Invalid) as refused:
        await amemex.store_many([item])
    assert refused.value.field == "memories[0].valid_to"
    assert await amemex.count(who["agent_id"], who["user_id"]) == 1
