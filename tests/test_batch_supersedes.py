"""Batches that supersede (issue 36): memex.store_many (AsyncMemex.store_many, POST
/v1/memories/batch) and memex.store_queued (direct SQL callers) take per item the ids
of the older memories it replaces, by memex.store's rules, in batch order, all or
nothing per call."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from psycopg.rows import dict_row
from psycopg.types.json import Jsonb

from memexdb import AsyncMemex, NewMemory
from memexdb.errors import InvalidArgument, NotFound
from tests.live_service import in_process_service
from tests.sqlapi import bound_login_role

A, U = "batcher", "alice"
CAR_OLD = "Alice drives a Kia Niro."
CAR_NEW = "Alice picked up her new car, a Skoda Octavia."
HOME_OLD = "Alice lives in Paris."
HOME_NEW = "Alice moved to Berlin."
HOME_NEWER = "Alice moved on from Berlin to Lisbon."


async def live_ids(amemex: AsyncMemex, query: str, agent: str = A, user: str = U) -> set[uuid.UUID]:
    return {h.id for h in await amemex.search(agent, user, query, top_k=20)}


async def test_items_supersede_older_memories_and_earlier_items(amemex: AsyncMemex) -> None:
    car = await amemex.store(A, U, CAR_OLD, memory_type="semantic")
    home = await amemex.store(A, U, HOME_OLD, memory_type="semantic")
    berlin, lisbon = uuid.uuid4(), uuid.uuid4()
    stored = await amemex.store_many(
        [
            NewMemory(agent_id=A, user_id=U, content=CAR_NEW, supersedes=[car.id]),
            NewMemory(agent_id=A, user_id=U, content=HOME_NEW, id=berlin, supersedes=[home.id]),
            # an earlier item of the same batch, by its id
            NewMemory(agent_id=A, user_id=U, content=HOME_NEWER, id=lisbon, supersedes=[berlin]),
            NewMemory(agent_id=A, user_id=U, content="Alice likes green tea."),
        ]
    )
    new_car = stored[0]
    assert [m.content for m in stored] == [CAR_NEW, HOME_NEW, HOME_NEWER, "Alice likes green tea."]
    assert new_car.supersedes == [car.id] and stored[2].supersedes == [berlin]
    # the batch answers each memory as it is after the batch: berlin is superseded already
    assert (stored[1].superseded_by, stored[2].superseded_by) == (lisbon, None)
    old_car = await amemex.get(A, U, car.id)
    assert old_car.superseded_by == new_car.id and old_car.valid_to is not None
    assert (await amemex.get(A, U, home.id)).superseded_by == berlin
    # out of the default search, back with include_superseded, after their successors
    assert await live_ids(amemex, "Where does Alice live? Which car?") == {
        new_car.id,
        lisbon,
        stored[3].id,
    }
    hits = await amemex.search(A, U, "Which car does Alice drive?", include_superseded=True)
    order = [h.id for h in hits]
    assert order.index(new_car.id) < order.index(car.id)
    # history: the older memory's revision says superseded, the item's its link
    [superseded, _] = await amemex.memory_history(A, U, car.id)
    assert (superseded.operation, superseded.superseded_by) == ("superseded", new_car.id)
    revisions = await amemex.memory_history(A, U, new_car.id)
    assert [(r.revision, r.operation) for r in revisions] == [(2, "supersede"), (1, "store")]


async def test_a_retried_batch_supersedes_nothing_more(amemex: AsyncMemex) -> None:
    old = await amemex.store(A, U, CAR_OLD)
    item = NewMemory(agent_id=A, user_id=U, content=CAR_NEW, id=uuid.uuid4(), supersedes=[old.id])
    [first] = await amemex.store_many([item])
    history = await amemex.memory_history(A, U, old.id)
    [again] = await amemex.store_many([item])
    assert again.id == first.id and again.supersedes == [old.id]
    assert await amemex.memory_history(A, U, old.id) == history
    assert await amemex.count(A, U) == 1  # the new one (count leaves the superseded out)


@pytest.mark.parametrize(
    ("case", "field", "error"),
    [
        ("later item", "memories[0].supersedes", InvalidArgument),
        ("unknown id", None, NotFound),
        ("other tenant", None, NotFound),
    ],
)
async def test_a_refused_item_stores_and_supersedes_nothing_of_the_batch(
    amemex: AsyncMemex, case: str, field: str | None, error: type[Exception]
) -> None:
    old = await amemex.store(A, U, HOME_OLD)
    theirs = await amemex.store(A, "bob", "Bob lives in Madrid.")
    first, second = uuid.uuid4(), uuid.uuid4()
    named = {
        "later item": ([second], None),
        "unknown id": (None, [uuid.uuid4()]),
        "other tenant": (None, [theirs.id]),
    }[case]
    items = [
        # the first item's supersession is valid on its own: undone with the rest
        NewMemory(
            agent_id=A, user_id=U, content=HOME_NEW, id=first, supersedes=named[0] or [old.id]
        ),
        NewMemory(agent_id=A, user_id=U, content=HOME_NEWER, id=second, supersedes=named[1]),
    ]
    with pytest.raises(error) as refused:
        await amemex.store_many(items)
    if field is not None:
        assert isinstance(refused.value, InvalidArgument) and refused.value.field == field
    assert await amemex.count(A, U) == 1
    assert (await amemex.get(A, U, old.id)).superseded_by is None
    assert (await amemex.get(A, "bob", theirs.id)).superseded_by is None
    assert len(await amemex.memory_history(A, U, old.id)) == 1


async def test_a_memory_superseded_before_is_relinked_as_by_store(amemex: AsyncMemex) -> None:
    """memex.store's rule (memex._supersede): a memory superseded before by another is
    re-linked to the newer one; the batch follows it."""
    old = await amemex.store(A, U, HOME_OLD)
    first = await amemex.store(A, U, HOME_NEW, supersedes=[old.id])
    [second] = await amemex.store_many(
        [NewMemory(agent_id=A, user_id=U, content=HOME_NEWER, supersedes=[old.id])]
    )
    assert (await amemex.get(A, U, old.id)).superseded_by == second.id
    assert first.id != second.id
    # two items of one batch naming the same memory: the later one ends its successor
    paris = await amemex.store(A, U, "Alice lived in Paris.")
    one, two = await amemex.store_many(
        [
            NewMemory(agent_id=A, user_id=U, content=HOME_NEW, supersedes=[paris.id]),
            NewMemory(agent_id=A, user_id=U, content=HOME_NEWER, supersedes=[paris.id]),
        ]
    )
    assert (one.supersedes, two.supersedes) == ([paris.id], [paris.id])
    assert (await amemex.get(A, U, paris.id)).superseded_by == two.id


def test_the_rest_batch_takes_supersedes(dsn: str) -> None:
    with in_process_service(dsn) as http:
        who = {"agent_id": A, "user_id": U}
        old = http.post("/v1/memories", json={**who, "content": CAR_OLD}).json()
        r = http.post(
            "/v1/memories/batch",
            json={"memories": [{**who, "content": CAR_NEW, "supersedes": [old["id"]]}]},
        )
        assert r.status_code == 201, r.text
        [new] = r.json()["memories"]
        assert new["supersedes"] == [old["id"]]
        got = http.get(f"/v1/memories/{old['id']}", params=who).json()
        assert got["superseded_by"] == new["id"]
        # another tenant's id: the 404 of a single store, and nothing stored
        r = http.post(
            "/v1/memories/batch",
            json={
                "memories": [
                    {**who, "content": "x"},
                    {"agent_id": A, "user_id": "bob", "content": "y", "supersedes": [new["id"]]},
                ]
            },
        )
        assert r.status_code == 404, r.text
        assert http.get("/v1/memories/count", params=who).json()["count"] == 1  # the new one
        # validity stays a single store's
        r = http.post(
            "/v1/memories/batch",
            json={"memories": [{**who, "content": "z", "valid_to": "2030-01-01T00:00:00Z"}]},
        )
        assert r.status_code == 422, r.text


# --- memex.store_queued, as a bound SQL role calls it ------------------------------------


@pytest.fixture
def alice(dsn: str) -> Iterator[psycopg.Connection]:
    """A login role bound to tenant (A, U) with write access, connected."""
    with (
        bound_login_role(dsn, A, [U]) as role,
        psycopg.connect(role, autocommit=True) as bound,
    ):
        yield bound


QUEUED = (
    "select * from memex.store_queued(p_agent_ids => %s, p_user_ids => %s, p_contents => %s,"
    " p_ids => %s::uuid[], p_supersedes => %s::jsonb[])"
)


def queued(
    bound: psycopg.Connection,
    contents: list[str],
    supersedes: list[Any] | None,
    ids: list[uuid.UUID] | None = None,
    user: str = U,
) -> list[dict[str, Any]]:
    n = len(contents)
    lists = (
        None if supersedes is None else [Jsonb(s) if s is not None else None for s in supersedes]
    )
    cur = bound.cursor(row_factory=dict_row)
    return cur.execute(QUEUED, ([A] * n, [user] * n, contents, ids, lists)).fetchall()


def test_store_queued_supersedes_for_a_direct_caller(
    conn: psycopg.Connection, alice: psycopg.Connection
) -> None:
    [old] = queued(alice, [HOME_OLD], None)
    berlin = uuid.uuid4()
    rows = queued(
        alice,
        [HOME_NEW, HOME_NEWER, "Alice likes tea."],
        [[str(old["id"])], [str(berlin)], None],
        [berlin, uuid.uuid4(), uuid.uuid4()],
    )
    assert [r["supersedes"] for r in rows] == [[old["id"]], [berlin], None]
    assert rows[0]["superseded_by"] == rows[1]["id"]
    linked = conn.execute(
        "select id, superseded_by from memex.memories where id = any(%s)",
        ([old["id"], berlin],),
    ).fetchall()
    assert dict(linked) == {old["id"]: berlin, berlin: rows[1]["id"]}
    # queued for the embed worker as ever
    queue = {r[0] for r in conn.execute("select memory_id from memex.embed_queue").fetchall()}
    assert {r["id"] for r in rows} <= queue


def test_store_queued_refuses_what_store_refuses(
    conn: psycopg.Connection, alice: psycopg.Connection
) -> None:
    [mine] = queued(alice, [HOME_OLD], None)
    theirs = conn.execute(
        "insert into memex.memories (agent_id, user_id, content, embedding, embedding_model)"
        " values (%s, 'bob', 'Bob lives in Madrid.', array_fill(0.05, array[384])::vector,"
        " 'x') returning id",
        (A,),
    ).fetchone()
    assert theirs is not None
    cases: list[tuple[list[Any], str]] = [
        ([[str(theirs[0])]], "MX404"),  # another tenant's: as an unknown id
        ([[str(uuid.uuid4())]], "MX404"),
        ([["not a uuid"]], "MX422"),
        ([{"id": str(mine["id"])}], "MX422"),  # not an array
        ([[str(mine["id"])] * 2], "MX422"),  # twice
        ([[str(mine["id"])], None], "MX422"),  # one list per memory: a length mismatch
    ]
    for supersedes, sqlstate in cases:
        with pytest.raises(psycopg.Error) as refused:
            queued(alice, ["Alice moved."], supersedes)
        assert refused.value.sqlstate == sqlstate, (supersedes, refused.value)
    # itself, and a later item of the batch (as if stored one by one: not there yet)
    first, second = uuid.uuid4(), uuid.uuid4()
    for supersedes, message in [
        ([[str(first)], None], "memories[0].supersedes: a memory cannot supersede itself"),
        ([[str(second)], None], "memories[0].supersedes: names memories[1], later in the batch"),
    ]:
        with pytest.raises(psycopg.Error) as refused:
            queued(alice, ["Alice moved.", "Alice moved again."], supersedes, [first, second])
        assert refused.value.sqlstate == "MX422"
        assert str(refused.value).startswith(message), str(refused.value)
    count = conn.execute(
        "select count(*) from memex.memories where agent_id = %s and user_id = %s", (A, U)
    ).fetchone()
    assert count == (1,)
    assert conn.execute(
        "select superseded_at from memex.memories where id = %s", (mine["id"],)
    ).fetchone() == (None,)
