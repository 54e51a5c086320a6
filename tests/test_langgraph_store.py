"""MemexStore (LangGraph's BaseStore on memexdb) over both clients: the in-process
AsyncMemex and the HTTP AsyncMemexClient on the service's REST app (in this process for
the store's behaviours; against a live service for the documented example, the client
wheel, the load tests). Real Postgres, the real embedding model, a real compiled
LangGraph StateGraph; no LLM, no mocks."""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import json
import re
import threading
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any, TypedDict

import httpx
import pytest
from langgraph.graph import END, START, StateGraph
from langgraph.store.base import (
    BaseStore,
    GetOp,
    InvalidNamespaceError,
    Item,
    ListNamespacesOp,
    MatchCondition,
    PutOp,
    SearchItem,
    SearchOp,
)
from langgraph.store.memory import InMemoryStore
from memexdb_client import AsyncMemexClient, MemexClient

from memexdb import AsyncMemex
from memexdb.embedded import EmbeddedPostgres
from memexdb.embedding import BatchingEmbedder
from memexdb.langgraph_store import MemexStore
from memexdb.rest.app import create_app
from tests.live_service import REPO, service_on_new_database


@pytest.fixture(scope="module")
def live_url(pg_server: EmbeddedPostgres, template_db: str) -> Iterator[tuple[str, str]]:
    with service_on_new_database(pg_server, "langgraph") as service:
        with MemexClient(service.base_url) as operator:
            token = operator.create_key("admin", name="langgraph tests").token
        yield service.base_url, token


@contextlib.asynccontextmanager
async def http_client_in_process(
    dsn: str, embedder: BatchingEmbedder
) -> AsyncIterator[AsyncMemexClient]:
    """The HTTP client on the service's REST app in this process (httpx's ASGI
    transport): the same requests, routes and answers as over a socket, without a
    process (docs/development.md, "Test tiers"); `live_url` is the process."""

    @contextlib.asynccontextmanager
    async def connect() -> AsyncIterator[AsyncMemex]:
        async with await AsyncMemex.connect(dsn, embedder=embedder, remedy=None) as memex:
            yield memex

    app = create_app(connect)
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app, client=("127.0.0.1", 50000))
        async with AsyncMemexClient("http://127.0.0.1:8000", transport=transport) as client:
            yield client


# "in-process": AsyncMemex; "http": AsyncMemexClient on the REST app in this process;
# "live": AsyncMemexClient on a live service (e2e; the load test asks for it by name)
@pytest.fixture(params=["in-process", "http"])
async def store(
    request: pytest.FixtureRequest, dsn: str, batching_embedder: BatchingEmbedder
) -> AsyncIterator[MemexStore]:
    agent = f"lg-{uuid.uuid4().hex[:8]}"  # a tenant of its own per test
    if request.param == "in-process":
        memex = await AsyncMemex.connect(dsn, embedder=batching_embedder)
        try:
            yield MemexStore(memex, agent)
        finally:
            await memex.aclose()
    elif request.param == "http":
        async with http_client_in_process(dsn, batching_embedder) as client:
            yield MemexStore(client, agent)
    else:
        base_url, token = request.getfixturevalue("live_url")
        async with AsyncMemexClient(base_url, token) as client:
            yield MemexStore(client, agent)


# --- the store inside a real LangGraph graph ---


class State(TypedDict, total=False):
    user: str
    said: str
    recalled: list[str]


async def remember(state: State, *, store: BaseStore) -> State:
    namespace = ("memories", state["user"])
    await store.aput(namespace, str(uuid.uuid4()), {"text": state["said"]})
    return {}


async def recall(state: State, *, store: BaseStore) -> State:
    hits = await store.asearch(("memories", state["user"]), query=state["said"], limit=3)
    return {"recalled": [hit.value["text"] for hit in hits]}


async def test_a_graph_remembers_across_threads(store: MemexStore) -> None:
    builder = StateGraph(State)
    builder.add_node("remember", remember)
    builder.add_edge(START, "remember")
    builder.add_edge("remember", END)
    writer = builder.compile(store=store)

    reader_builder = StateGraph(State)
    reader_builder.add_node("recall", recall)
    reader_builder.add_edge(START, "recall")
    reader_builder.add_edge("recall", END)
    reader = reader_builder.compile(store=store)

    for said in ("I am allergic to peanuts", "My favourite city is Lisbon"):
        await writer.ainvoke(
            {"user": "ana", "said": said}, {"configurable": {"thread_id": "thread-A"}}
        )
    await writer.ainvoke(
        {"user": "bob", "said": "I love peanuts"}, {"configurable": {"thread_id": "thread-A"}}
    )

    out = await reader.ainvoke(
        {"user": "ana", "said": "what food should I avoid?"},
        {"configurable": {"thread_id": "thread-B"}},
    )
    assert out["recalled"][0] == "I am allergic to peanuts"
    assert set(out["recalled"]) == {"I am allergic to peanuts", "My favourite city is Lisbon"}


# --- the store's behaviours (as LangGraph's own store tests check them) ---


async def test_put_get_overwrite_delete(store: MemexStore) -> None:
    ns = ("users", "ana")
    assert await store.aget(ns, "k") is None
    await store.aput(ns, "k", {"colour": "blue", "n": 1})
    item = await store.aget(ns, "k")
    assert isinstance(item, Item)
    assert (item.namespace, item.key, item.value) == (ns, "k", {"colour": "blue", "n": 1})
    assert item.created_at <= item.updated_at

    await store.aput(ns, "k", {"colour": "green"})
    again = await store.aget(ns, "k")
    assert again is not None
    assert again.value == {"colour": "green"}
    assert again.created_at == item.created_at
    assert again.updated_at > item.updated_at
    # a search hit is the same item, with the same times as a get (the memory's)
    (hit,) = await store.asearch(ns, query="green")
    assert (hit.key, hit.created_at, hit.updated_at) == ("k", again.created_at, again.updated_at)

    assert await store.aget(("users", "bob"), "k") is None  # namespaces are separate
    await store.adelete(ns, "k")
    assert await store.aget(ns, "k") is None
    await store.adelete(ns, "k")  # deleting what is gone is no error
    await store.aput(ns, "k", {"colour": "red"})  # and the key can be used again
    back = await store.aget(ns, "k")
    assert back is not None and back.value == {"colour": "red"}


async def test_search_by_query_ranks_and_scores(store: MemexStore) -> None:
    ns = ("docs", "ana")
    await store.aput(ns, "a", {"text": "The cat sat on the warm windowsill"})
    await store.aput(ns, "b", {"text": "Quarterly revenue grew by twelve percent"})
    await store.aput(("docs", "bob"), "c", {"text": "My cat is called Tom"})
    await store.aput(("other",), "d", {"text": "A cat in another namespace"})

    hits = await store.asearch(("docs",), query="kittens and cats", limit=10)
    assert [h.key for h in hits][:2] == ["a", "c"] or [h.key for h in hits][:2] == ["c", "a"]
    assert {h.key for h in hits} == {"a", "b", "c"}
    assert all(isinstance(h, SearchItem) and h.score is not None for h in hits)

    only_ana = await store.asearch(("docs", "ana"), query="cat")
    assert only_ana[0].key == "a"
    assert {h.namespace for h in only_ana} == {ns}
    one = await store.asearch(("docs",), query="kittens and cats", limit=1, offset=1)
    assert [h.key for h in one] == [hits[1].key]


async def test_search_by_filter(store: MemexStore) -> None:
    ns = ("items",)
    await store.aput(ns, "1", {"colour": "red", "size": 1, "tags": ["a", "b"]})
    await store.aput(ns, "2", {"colour": "red", "size": 5, "nested": {"x": 1}})
    await store.aput(ns, "3", {"colour": "blue", "size": 9})

    async def keys(**kwargs: Any) -> set[str]:
        return {h.key for h in await store.asearch(ns, **kwargs)}

    assert await keys(filter={"colour": "red"}) == {"1", "2"}
    assert await keys(filter={"colour": "red", "size": 5}) == {"2"}
    assert await keys(filter={"size": {"$gt": 1}}) == {"2", "3"}
    assert await keys(filter={"size": {"$gte": 1, "$lt": 9}}) == {"1", "2"}
    assert await keys(filter={"colour": {"$ne": "red"}}) == {"3"}
    assert await keys(filter={"tags": ["a", "b"]}) == {"1"}
    assert await keys(filter={"tags": ["a"]}) == set()  # lists match whole, not contained
    assert await keys(filter={"nested": {"x": 1}}) == {"2"}
    assert await keys(filter={"colour": "green"}) == set()
    assert await keys(query="a red thing", filter={"colour": "blue"}) == {"3"}
    assert await keys(query="a red thing", filter={"size": {"$lte": 5}}) == {"1", "2"}

    # without a query: newest first, with limit/offset over the matches
    listed = await store.asearch(ns, limit=10)
    assert [h.key for h in listed] == ["3", "2", "1"]
    assert all(h.score is None for h in listed)
    assert [h.key for h in await store.asearch(ns, limit=1, offset=1)] == ["2"]
    assert [h.key for h in await store.asearch(ns, filter={"colour": "red"}, offset=1)] == ["1"]


async def test_list_namespaces(store: MemexStore) -> None:
    for ns in [
        ("a", "b", "c"),
        ("a", "b", "d", "e"),
        ("a", "b", "d", "i"),
        ("a", "b", "f"),
        ("a", "c", "f"),
        ("b", "a", "f"),
        ("users", "123"),
        ("users", "456", "settings"),
        ("admin", "users", "789"),
    ]:
        await store.aput(ns, "k", {"x": 1})

    everything = await store.alist_namespaces()
    assert everything == sorted(everything) and len(everything) == 9
    assert await store.alist_namespaces(prefix=("a", "b")) == [
        ("a", "b", "c"),
        ("a", "b", "d", "e"),
        ("a", "b", "d", "i"),
        ("a", "b", "f"),
    ]
    assert await store.alist_namespaces(suffix=("f",)) == [
        ("a", "b", "f"),
        ("a", "c", "f"),
        ("b", "a", "f"),
    ]
    assert await store.alist_namespaces(prefix=("a",), suffix=("f",)) == [
        ("a", "b", "f"),
        ("a", "c", "f"),
    ]
    assert await store.alist_namespaces(prefix=("a", "*", "f")) == [
        ("a", "b", "f"),
        ("a", "c", "f"),
    ]
    assert await store.alist_namespaces(suffix=("*", "f")) == [
        ("a", "b", "f"),
        ("a", "c", "f"),
        ("b", "a", "f"),
    ]
    assert await store.alist_namespaces(prefix=("a", "b"), max_depth=3) == [
        ("a", "b", "c"),
        ("a", "b", "d"),
        ("a", "b", "f"),
    ]
    assert await store.alist_namespaces(max_depth=1) == [("a",), ("admin",), ("b",), ("users",)]
    assert await store.alist_namespaces(prefix=("users",)) == [
        ("users", "123"),
        ("users", "456", "settings"),
    ]
    assert await store.alist_namespaces(limit=2, offset=1) == everything[1:3]
    assert await store.alist_namespaces(prefix=("nope",)) == []

    await store.adelete(("users", "123"), "k")  # a namespace with no items is gone
    assert await store.alist_namespaces(prefix=("users",)) == [("users", "456", "settings")]


def _shape(result: Any) -> Any:
    """A batch result without the times (which differ between two stores)."""
    if isinstance(result, Item):
        return (result.namespace, result.key, result.value)
    if isinstance(result, list):
        return [_shape(r) for r in result]
    return result


async def test_a_batch_answers_as_langgraphs_in_memory_store(store: MemexStore) -> None:
    """The reads of a batch see the store as it was before the batch's writes, and of
    several puts to one key the last one stays: InMemoryStore's answers, op for op."""
    ns = ("batch",)
    before = [PutOp(ns, "k0", {"v": 0}), PutOp(ns, "k1", {"v": "old"})]
    ops = [
        PutOp(ns, "k1", {"v": 1}),
        GetOp(ns, "k1"),
        PutOp(ns, "k2", {"v": "first"}),
        PutOp(ns, "k2", {"v": "second"}),
        SearchOp(ns, filter={"v": 0}),
        ListNamespacesOp(match_conditions=(MatchCondition("prefix", ns),)),
        GetOp(ns, "missing"),
        PutOp(ns, "k0", None),
        GetOp(ns, "k0"),
    ]
    after = [GetOp(ns, "k0"), GetOp(ns, "k1"), GetOp(ns, "k2")]
    reference = InMemoryStore()
    for target in (reference, store):
        await target.abatch(before)
    expected = [_shape(r) for r in await reference.abatch(ops)]
    assert [_shape(r) for r in await store.abatch(ops)] == expected
    assert expected[1] == (ns, "k1", {"v": "old"}) and expected[8] == (ns, "k0", {"v": 0})
    expected_after = [_shape(r) for r in await reference.abatch(after)]
    assert [_shape(r) for r in await store.abatch(after)] == expected_after
    assert expected_after == [None, (ns, "k1", {"v": 1}), (ns, "k2", {"v": "second"})]


async def test_invalid_namespaces_are_refused(store: MemexStore) -> None:
    for bad in [(), ("a.b",), ("",), ("langgraph", "x")]:
        with pytest.raises(InvalidNamespaceError):
            await store.aput(bad, "k", {"x": 1})


async def test_index_fields_choose_what_is_embedded(store: MemexStore) -> None:
    indexed = MemexStore(store.client, store.agent_id, "indexed", index_fields=["text"])
    await indexed.aput(("n",), "k", {"text": "Paris is the capital of France", "id": 7})
    memory = await store.client.get(indexed.agent_id, "indexed", indexed._id(("n",), "k"))
    assert memory.content == "Paris is the capital of France"
    await store.aput(("n",), "k", {"text": "Paris"}, index=False)
    memory = await store.client.get(store.agent_id, store.user_id, store._id(("n",), "k"))
    assert memory.content == '{"text": "Paris"}'  # no index fields: the value as JSON


async def test_sync_methods_run_on_the_store_loop(store: MemexStore) -> None:
    """graph.invoke (sync) from another thread while the client's loop runs."""
    result: dict[str, Any] = {}

    def sync_user() -> None:
        store.put(("sync",), "k", {"text": "hello"})
        result["item"] = store.get(("sync",), "k")
        result["hits"] = store.search(("sync",), query="hello")
        result["namespaces"] = store.list_namespaces()

    thread = threading.Thread(target=sync_user)
    thread.start()
    await asyncio.to_thread(thread.join)  # the loop keeps running the store's work
    assert result["item"].value == {"text": "hello"}
    assert [h.key for h in result["hits"]] == ["k"]
    assert result["namespaces"] == [("sync",)]
    with pytest.raises(asyncio.InvalidStateError, match="async methods"):
        store.get(("sync",), "k")  # on the loop itself it would deadlock: refused


# --- the documented example ---


def _doc_example() -> str:
    text = (REPO / "docs" / "langgraph.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    assert blocks, "docs/langgraph.md has no python example"
    return str(blocks[0])


async def test_the_documented_example_runs(live_url: tuple[str, str], tmp_path: Path) -> None:
    base_url, token = live_url
    namespace: dict[str, Any] = {"__name__": "langgraph_example"}
    exec(compile(_doc_example(), "docs/langgraph.md", "exec"), namespace)
    recalled = await namespace["main"](base_url, token)
    assert recalled[0] == "Ana is allergic to peanuts"


def test_the_store_imports_without_the_server_package() -> None:
    """memexdb_client.langgraph_store needs memexdb-client and langgraph only: importing
    it with `memexdb` (the server stack) made unimportable succeeds."""
    import subprocess
    import sys

    code = (
        "import sys; sys.modules['memexdb'] = None\n"
        "from memexdb_client.langgraph_store import MemexStore\n"
        "from langgraph.store.base import BaseStore\n"
        "assert issubclass(MemexStore, BaseStore)\n"
        "assert not any(m == 'memexdb' or m.startswith('memexdb.') for m in sys.modules"
        " if sys.modules[m] is not None)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=REPO / "clients" / "python",
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr


STORE_SCRIPT = """
import asyncio, sys
from memexdb_client import AsyncMemexClient
from memexdb_client.langgraph_store import MemexStore

async def main() -> None:
    async with AsyncMemexClient(sys.argv[1], sys.argv[2]) as client:
        store = MemexStore(client, "wheel-langgraph")
        await store.aput(("prefs", "ana"), "drink", {"text": "Ana drinks green tea"})
        hits = await store.asearch(("prefs",), query="what does Ana drink?")
        assert hits[0].value == {"text": "Ana drinks green tea"}, hits
        print("ok", len(hits))

asyncio.run(main())
"""


@pytest.mark.timeout(900)  # a venv and an install (tests/clean_install.py's INSTALL_TIMEOUT)
def test_the_client_wheel_with_the_langgraph_extra_in_a_new_venv(
    live_url: tuple[str, str], tmp_path: Path
) -> None:
    """`pip install memexdb-client[langgraph]` alone (no server stack) runs MemexStore."""
    import json
    import os
    import shutil
    import subprocess
    import sys

    wheels, client_dir = tmp_path / "wheels", REPO / "clients" / "python"
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", wheels, client_dir],
        check=True,
        timeout=600,
    )
    (wheel,) = wheels.glob("memexdb_client-*.whl")
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", venv], check=True, timeout=300)
    python = venv / "bin" / "python"
    subprocess.run(
        [python, "-m", "pip", "install", "-q", f"memexdb-client[langgraph] @ {wheel.as_uri()}"],
        check=True,
        timeout=600,
    )
    listed = subprocess.run(
        [python, "-m", "pip", "list", "--format", "json"],
        check=True,
        capture_output=True,
        text=True,
        timeout=120,
    )
    installed = {p["name"].lower() for p in json.loads(listed.stdout)}
    print("memexdb-client[langgraph] pulled in:", sorted(installed))
    assert {"memexdb-client", "langgraph"} <= installed
    assert not installed & {"memexdb", "psycopg", "fastembed", "onnxruntime", "uvicorn"}
    script = tmp_path / "use_store.py"
    script.write_text(STORE_SCRIPT)
    env = {k: v for k, v in os.environ.items() if k not in {"PYTHONPATH", "VIRTUAL_ENV"}}
    base_url, token = live_url
    result = subprocess.run(
        [python, "-I", script, base_url, token],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
        env=env,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.strip() == "ok 1"
    shutil.rmtree(venv, ignore_errors=True)


async def test_a_value_past_the_metadata_limit_is_an_invalid_argument(store: MemexStore) -> None:
    from memexdb_client import InvalidArgument

    with pytest.raises(InvalidArgument):
        await store.aput(("big",), "k", {"text": "x" * 70_000})
    assert await store.aget(("big",), "k") is None


# --- issue 37: LangGraph's store contract under concurrency and at its edges ---


async def test_a_put_racing_a_delete_of_the_same_key_never_fails(store: MemexStore) -> None:
    """gather(aput, adelete, aput) of one key, from one store (coalesced into one batch)
    and from three stores of the tenant (three concurrent upserts and deletes): no call
    fails, and the item ends as one of the puts left it or deleted."""
    others = [MemexStore(store.client, store.agent_id) for _ in range(2)]
    ns = ("race",)
    values = ({"v": 1}, {"v": 2})

    async def rounds() -> None:
        for i in range(30):
            key = f"k{i % 3}"
            await asyncio.gather(
                store.aput(ns, key, values[0]),
                store.adelete(ns, key),
                store.aput(ns, key, values[1]),
            )
            item = await store.aget(ns, key)
            assert item is not None and item.value == values[1]  # one batch: the last put
            await asyncio.gather(
                others[0].aput(ns, key, values[0]),
                others[1].adelete(ns, key),
                store.aput(ns, key, values[1]),
            )
            item = await store.aget(ns, key)
            assert item is None or item.value in values

    await asyncio.wait_for(rounds(), timeout=120)


@pytest.mark.e2e  # a load test: 12,000 ops (seconds even in process)
@pytest.mark.parametrize("store", ["in-process", "live"], indirect=True)
async def test_six_thousand_ops_go_out_in_bulk_and_finish(store: MemexStore) -> None:
    """6,000 puts in one abatch, 6,000 concurrent aputs (gather), then 6,000 gets each
    way: no pool timeout, no op lost, in seconds. The values share a few texts, so that
    this measures the store's bulk calls and bounded fan-out, not the embedding model
    (which embeds a text a batch holds twice once)."""
    n = 6000
    ns = ("bulk",)
    indexed = MemexStore(store.client, store.agent_id, index_fields=["text"])
    started = time.monotonic()
    await asyncio.wait_for(
        indexed.abatch([PutOp(ns, f"b{i}", {"text": f"note {i % 7}", "n": i}) for i in range(n)]),
        timeout=120,
    )
    got = await asyncio.wait_for(indexed.abatch([GetOp(ns, f"b{i}") for i in range(n)]), 60)
    assert [item.value["n"] for item in got] == list(range(n))  # type: ignore[union-attr]
    in_one_batch = time.monotonic() - started

    started = time.monotonic()
    await asyncio.wait_for(
        asyncio.gather(
            *(indexed.aput(ns, f"g{i}", {"text": f"note {i % 7}", "n": i}) for i in range(n))
        ),
        timeout=120,
    )
    items = await asyncio.wait_for(
        asyncio.gather(*(indexed.aget(ns, f"g{i}") for i in range(n))), timeout=60
    )
    assert [item.value["n"] for item in items if item is not None] == list(range(n))
    concurrent = time.monotonic() - started
    hits = await indexed.asearch(ns, query="note 3", limit=5)
    assert len(hits) == 5 and all(hit.value["text"] == "note 3" for hit in hits)
    print(f"6000 puts + 6000 gets: abatch {in_one_batch:.1f} s, gather {concurrent:.1f} s")


async def test_a_dotted_label_reads_no_other_namespace(store: MemexStore) -> None:
    # refused, as LangGraph's Postgres and SQLite stores refuse a raw op
    # (validate_op_namespace): the whole batch, before it writes anything
    await store.aput(("foo", "bar"), "k", {"v": 1})
    for namespace in [("foo.bar",), ("foo", ""), ("foo", 1)]:
        with pytest.raises(InvalidNamespaceError):
            await store.abatch([PutOp(("valid",), "k", {}), GetOp(namespace, "k")])
    assert await store.aget(("valid",), "k") is None
    item = await store.aget(("foo", "bar"), "k")
    assert item is not None and item.value == {"v": 1}
    assert await store.abatch([GetOp((), "k")]) == [None]


async def test_the_langgraph_root_is_refused_by_put_only(store: MemexStore) -> None:
    """BaseStore.put refuses the root "langgraph"; a raw PutOp, which LangGraph's own
    stores take, is stored."""
    ns = ("langgraph", "internal")
    await store.abatch([PutOp(ns, "k", {"v": 1})])
    [item] = await store.abatch([GetOp(ns, "k")])
    assert isinstance(item, Item) and item.value == {"v": 1}
    with pytest.raises(InvalidNamespaceError):
        await store.aput(ns, "k", {"v": 2})


async def test_a_value_up_to_64_kib_is_stored_without_index_fields(store: MemexStore) -> None:
    from memexdb_client import InvalidArgument

    value = {"text": "y" * 60_000}  # 60 KB of JSON: more than a memory's 32,768 characters
    await store.aput(("big",), "k", value)
    item = await store.aget(("big",), "k")
    assert item is not None and item.value == value
    with pytest.raises(InvalidArgument) as refused:
        await store.aput(("big",), "k2", {"text": "x" * 70_000})
    assert "65536 bytes of JSON" in str(refused.value) and "String" not in str(refused.value)


async def test_a_nul_in_a_filter_value_matches_nothing(store: MemexStore) -> None:
    await store.aput(("nul",), "k", {"text": "hello", "tag": "a"})
    assert await store.asearch(("nul",), filter={"tag": "a\x00b"}) == []
    assert await store.asearch(("nul",), query="hello", filter={"tag": "a\x00"}) == []
    assert [h.key for h in await store.asearch(("nul",), filter={"tag": "a"})] == ["k"]


async def test_index_false_items_are_stored_listed_and_got_but_not_found_by_a_query(
    store: MemexStore,
) -> None:
    ns = ("notes",)
    await store.aput(ns, "indexed", {"text": "The lighthouse keeper feeds the gulls"})
    await store.aput(ns, "hidden", {"text": "The lighthouse keeper feeds the gulls"}, index=False)
    hits = await store.asearch(ns, query="lighthouse keeper gulls", limit=10)
    assert [h.key for h in hits] == ["indexed"]
    hidden = await store.aget(ns, "hidden")
    assert hidden is not None and hidden.value["text"].startswith("The lighthouse")
    assert sorted(h.key for h in await store.asearch(ns)) == ["hidden", "indexed"]
    # put again with an index, it is found
    await store.aput(ns, "hidden", {"text": "The lighthouse keeper feeds the gulls"})
    hits = await store.asearch(ns, query="lighthouse keeper gulls", limit=10)
    assert sorted(h.key for h in hits) == ["hidden", "indexed"]


async def test_index_config_says_the_dims_and_fields(store: MemexStore) -> None:
    assert store.index_config == {"dims": 384, "fields": ["$"]}
    indexed = MemexStore(store.client, store.agent_id, index_fields=["text", "facts[*].text"])
    assert indexed.index_config == {"dims": 384, "fields": ["text", "facts[*].text"]}
    vectors = (await store.client.embed_texts(["dims"])).vectors
    assert len(vectors[0]) == store.index_config["dims"]


async def test_a_put_of_another_tenants_id_is_a_conflict(store: MemexStore) -> None:
    from memexdb_client import Conflict

    theirs = await store.client.store(store.agent_id, "someone-else", "their memory")
    with pytest.raises(Conflict):
        await store.client.put_memories(
            store.agent_id, store.user_id, [{"id": theirs.id, "content": "mine now"}]
        )
    assert (await store.client.get(store.agent_id, "someone-else", theirs.id)).content == (
        "their memory"
    )


@pytest.mark.e2e
async def test_two_thousand_concurrent_http_calls_are_all_answered(
    live_url: tuple[str, str],
) -> None:
    """The HTTP client queues for its connection pool instead of failing: 2,000 calls at
    once (searches: each embeds its query on the service) over 8 connections, each
    answered (hits or a typed Busy), none lost to a client-side pool timeout, with a
    per-request timeout of 2 s that most of them wait longer than for a connection, and
    no retries to hide a call that gave up."""
    from memexdb_client import Busy

    base_url, token = live_url
    agent = f"lg-{uuid.uuid4().hex[:8]}"
    pool = httpx.AsyncHTTPTransport(limits=httpx.Limits(max_connections=8))
    async with AsyncMemexClient(base_url, token, timeout=2.0, retries=1, transport=pool) as client:
        await client.store(agent, "u", "one memory to find")
        started = time.monotonic()
        answers = await asyncio.gather(
            *(client.search(agent, "u", f"memory {i}") for i in range(2000)),
            return_exceptions=True,
        )
        took = time.monotonic() - started
    failures = [a for a in answers if isinstance(a, BaseException) and not isinstance(a, Busy)]
    assert not failures, f"{len(failures)} calls lost, e.g. {failures[0]!r}"
    assert sum(1 for a in answers if isinstance(a, list) and len(a) == 1) >= 1900
    print(f"2000 concurrent searches over HTTP: {took:.1f} s")


async def test_a_saturated_pool_is_busy_not_unavailable(
    dsn: str, batching_embedder: BatchingEmbedder
) -> None:
    """Every connection of the service's pool taken (the database up): a request is
    refused with the typed Busy (503 `busy`, retry), and /health says busy, not that the
    database is unreachable; once a connection is free both answer again."""
    from types import SimpleNamespace

    from memexdb_client import Busy
    from starlette.requests import Request

    from memexdb.rest import health

    memex = await AsyncMemex.connect(dsn, embedder=batching_embedder, max_size=1)
    app = SimpleNamespace(state=SimpleNamespace(memex=memex))
    request = Request({"type": "http", "app": app, "method": "GET", "path": "/health"})
    try:
        memex.pool.timeout = 0.5
        async with memex.pool.connection():  # the only connection is taken
            with pytest.raises(Busy, match="saturated"):
                await memex.count("agent", "u")
            answer = await health.health(request)
            assert answer.status_code == 503
            assert json.loads(bytes(answer.body)) | {"version": None} == {
                "status": "busy",
                "db": "busy",
                "version": None,
            }
        assert await memex.count("agent", "u") == 0
        answer = await health.health(request)
        assert answer.status_code == 200
    finally:
        await memex.aclose()


async def test_put_memories_upserts_and_deletes_by_id_in_one_call(store: MemexStore) -> None:
    """The bulk calls the store sends, as any client may: an upsert keeps created_at and
    moves updated_at; of one id given twice the last counts (a delete too); deleting what
    is not there is no error; get_memories answers in the order asked, unknown ids left
    out."""
    client, agent, user = store.client, store.agent_id, "bulk-user"
    a, b, c, missing = (uuid.uuid4() for _ in range(4))
    first = await client.put_memories(
        agent,
        user,
        [{"id": a, "content": "alpha"}, {"id": b, "content": "beta", "metadata": {"n": 1}}],
    )
    assert [m.id for m in first] == [a, b] and first[1].metadata == {"n": 1}
    written = await client.put_memories(
        agent,
        user,
        [
            {"id": a, "content": "alpha again"},
            {"id": b, "content": None},
            {"id": c, "content": "gamma"},
            {"id": c, "content": None},
            {"id": missing, "content": None},
            {"id": b, "content": "beta back"},
        ],
    )
    assert [m.content for m in written] == ["alpha again", "beta back"]
    found = await client.get_memories(agent, user, [c, b, missing, a])
    assert [m.id for m in found] == [b, a]
    again = {m.id: m for m in found}
    assert again[a].created_at == first[0].created_at
    assert again[a].updated_at > first[0].updated_at
    assert again[a].memory_type == "semantic"


# --- TTL (LangGraph's `ttl` in minutes, on memexdb's expires_at) ---


def _with_ttl(store: MemexStore, **ttl: Any) -> MemexStore:
    return MemexStore(store.client, store.agent_id, ttl=ttl or None)


async def test_an_item_with_a_ttl_disappears_after_it_and_one_without_stays(
    store: MemexStore,
) -> None:
    assert store.supports_ttl
    ns = ("ttl",)
    await store.aput(ns, "brief", {"text": "a passing thought about kites"}, ttl=0.05)  # 3 s
    await store.aput(ns, "lasting", {"text": "a lasting thought about kites"})
    assert (await store.aget(ns, "brief", refresh_ttl=False)) is not None
    await asyncio.sleep(4)
    assert (await store.aget(ns, "brief")) is None
    assert [h.key for h in await store.asearch(ns)] == ["lasting"]
    assert [h.key for h in await store.asearch(ns, query="thought about kites")] == ["lasting"]
    assert await store.alist_namespaces() == [ns]
    assert (await store.aget(ns, "lasting")) is not None
    # a put again starts it over (the memory is gone, the key is free)
    await store.aput(ns, "brief", {"text": "back"}, ttl=1)
    assert (await store.aget(ns, "brief")) is not None


async def test_refresh_on_read_keeps_an_item_alive(store: MemexStore) -> None:
    """Items put with a 6 s TTL, read after 3 s (a get, a query search, a listing search)
    with refresh_ttl, are there at 7.5 s; the ones read without it, or never, are gone."""
    ns = ("ttl", "refresh")
    keys = ("got", "found", "listed", "peeked", "unread")
    for key in keys:
        await store.aput(ns, key, {"text": f"the {key} note about lanterns"}, ttl=0.1)
    started = time.monotonic()
    await asyncio.sleep(3)
    assert (await store.aget(ns, "got")) is not None  # refresh_ttl: the default
    assert (await store.aget(ns, "peeked", refresh_ttl=False)) is not None
    found = await store.asearch(ns, query="the found note about lanterns", limit=1)
    assert [h.key for h in found] == ["found"]  # only the item returned is refreshed
    listed = await store.asearch(ns, filter={"text": "the listed note about lanterns"})
    assert [h.key for h in listed] == ["listed"]
    await asyncio.sleep(7.5 - (time.monotonic() - started))
    alive = {key for key in keys if await store.aget(ns, key, refresh_ttl=False) is not None}
    assert alive == {"got", "found", "listed"}
    # the refresh moved the expiry only: value and updated_at are the put's
    got = await store.aget(ns, "got", refresh_ttl=False)
    assert got is not None and got.value == {"text": "the got note about lanterns"}
    assert got.updated_at == got.created_at


async def test_ttl_config_default_ttl_and_refresh_on_read(store: MemexStore) -> None:
    """`TTLConfig`: default_ttl for puts that give none (BaseStore.aput applies it),
    refresh_on_read False: reads do not extend (unless a read asks)."""
    lazy = _with_ttl(store, default_ttl=0.05, refresh_on_read=False)
    assert lazy.ttl_config == {"default_ttl": 0.05, "refresh_on_read": False}
    ns = ("ttl", "config")
    await lazy.aput(ns, "default", {"text": "one"})
    await lazy.aput(ns, "asked", {"text": "two"})
    await lazy.aput(ns, "forever", {"text": "three"}, ttl=None)
    await asyncio.sleep(1.5)
    assert (await lazy.aget(ns, "default")) is not None  # not refreshed: the config
    assert (await lazy.aget(ns, "asked", refresh_ttl=True)) is not None
    await asyncio.sleep(2.5)  # 4 s: "default" expired at 3 s, "asked" lives to 4.5 s
    assert (await lazy.aget(ns, "default")) is None
    assert (await lazy.aget(ns, "asked")) is not None
    assert (await lazy.aget(ns, "forever")) is not None


async def test_the_ttl_sweeper_api(store: MemexStore) -> None:
    """start_ttl_sweeper / stop_ttl_sweeper / sweep_ttl as LangGraph's AsyncPostgresStore
    has them: no TTL config, the task does nothing; with one, it runs until stopped.
    In-process the sweep deletes the expired rows (memexdb's maintenance); over HTTP there
    is no such call and it deletes nothing (expired items are never read either way)."""
    idle = await store.start_ttl_sweeper()
    await idle
    assert await store.stop_ttl_sweeper()
    swept = _with_ttl(store, default_ttl=0.02, sweep_interval_minutes=1)
    await swept.aput(("sweep",), "k", {"text": "soon gone"})
    task = await swept.start_ttl_sweeper()
    assert (await swept.start_ttl_sweeper()) is task  # one sweeper at a time
    assert not task.done()
    assert await swept.stop_ttl_sweeper(timeout=5)
    assert task.done()
    await asyncio.sleep(1.5)
    deleted = await swept.sweep_ttl()
    assert deleted == (1 if isinstance(store.client, AsyncMemex) else 0)
    assert (await swept.aget(("sweep",), "k")) is None


async def test_the_ttl_sweeper_api_from_sync_code(store: MemexStore) -> None:
    """The same names as LangGraph's sync stores have them (PostgresStore, SqliteStore):
    from a thread without an event loop `sweep_ttl()` returns the count,
    `start_ttl_sweeper()` a `concurrent.futures.Future` that ends with the sweeper (and
    cancelling it stops the sweeper), `stop_ttl_sweeper()` a bool; each runs on the
    store's loop, as the sync `get`/`put` do."""
    swept = _with_ttl(store, default_ttl=0.02, sweep_interval_minutes=1)
    seen: dict[str, Any] = {}

    def sync_user() -> None:
        swept.put(("sync-sweep",), "k", {"text": "soon gone"})
        seen["idle"] = store.start_ttl_sweeper()  # no TTL config: a sweeper doing nothing
        seen["idle_result"] = seen["idle"].result(timeout=5)
        seen["future"] = future = swept.start_ttl_sweeper()
        seen["running"] = not future.done()
        seen["stopped"] = swept.stop_ttl_sweeper(timeout=5)
        seen["ended"] = future.result(timeout=5) is None and future.done()
        time.sleep(1.5)  # past the item's 1.2 s
        seen["deleted"] = swept.sweep_ttl()
        seen["gone"] = swept.get(("sync-sweep",), "k") is None
        cancelled = swept.start_ttl_sweeper()
        cancelled.cancel()
        time.sleep(0.5)
        seen["cancel_stopped"] = swept._sweeper is not None and swept._sweeper.done()
        seen["stopped_again"] = swept.stop_ttl_sweeper()

    thread = threading.Thread(target=sync_user)
    thread.start()
    await asyncio.to_thread(thread.join)  # the loop keeps running the store's work
    assert isinstance(seen["idle"], concurrent.futures.Future) and seen["idle_result"] is None
    assert isinstance(seen["future"], concurrent.futures.Future)
    assert seen["running"] and seen["stopped"] is True and seen["ended"]
    assert seen["deleted"] == (1 if isinstance(store.client, AsyncMemex) else 0)
    assert seen["gone"]
    assert seen["cancel_stopped"] and seen["stopped_again"] is True
    # from async code the same methods still give awaitables (AsyncPostgresStore's)
    assert isinstance(await swept.sweep_ttl(), int)


async def test_refresh_memories_sets_the_expiry_of_live_memories_only(
    store: MemexStore,
) -> None:
    """The bulk call behind refresh on read, as any client may send it."""
    from datetime import UTC, datetime, timedelta

    from memexdb_client import InvalidArgument

    client, agent, user = store.client, store.agent_id, "refresh-user"
    a, b, missing = uuid.uuid4(), uuid.uuid4(), uuid.uuid4()
    soon = datetime.now(UTC) + timedelta(seconds=2)
    await client.put_memories(
        agent,
        user,
        [{"id": a, "content": "alpha", "expires_at": soon}, {"id": b, "content": "beta"}],
    )
    later = datetime.now(UTC) + timedelta(hours=1)
    refreshed = await client.refresh_memories(
        agent, user, [{"id": a, "expires_at": later}, {"id": missing, "expires_at": later}]
    )
    assert refreshed == 1
    (got,) = await client.get_memories(agent, user, [a])
    assert got.expires_at is not None and abs((got.expires_at - later).total_seconds()) < 1
    assert got.updated_at == got.created_at and got.content == "alpha"
    # another tenant's id is skipped, not set
    assert (
        await client.refresh_memories(agent, "someone-else", [{"id": b, "expires_at": later}]) == 0
    )
    with pytest.raises(InvalidArgument):
        await client.refresh_memories(
            agent, user, [{"id": a, "expires_at": datetime.now(UTC) - timedelta(seconds=1)}]
        )


async def test_a_query_search_scores_the_similarity_and_keeps_memexdbs_order(
    store: MemexStore,
) -> None:
    """`score` is what LangGraph's stores give: the cosine similarity of the query and the
    item's embedded text (here its value as JSON); the order is memexdb's ranking, the
    same as the search the store sends."""
    ns = ("scored",)
    values = {
        "cat": {"text": "The cat sleeps on the warm windowsill"},
        "tax": {"text": "Quarterly tax returns are due in April"},
        "dog": {"text": "Our dog chases the neighbour's cat"},
    }
    for key, value in values.items():
        await store.aput(ns, key, value)
    query = "where does the cat sleep?"
    hits = await store.asearch(ns, query=query, limit=10)
    contents = [json.dumps(values[h.key], ensure_ascii=False, sort_keys=True) for h in hits]
    vectors = (await store.client.embed_texts([query, *contents])).vectors
    q = vectors[0]
    for hit, vector in zip(hits, vectors[1:], strict=True):
        cosine = sum(a * b for a, b in zip(q, vector, strict=True))
        assert hit.score == pytest.approx(cosine, abs=2e-3), hit.key
    ranked = await store.client.search(store.agent_id, store.user_id, query, top_k=30)
    assert [h.key for h in hits] == [h.metadata["langgraph"]["key"] for h in ranked]
    assert hits[0].key == "cat"


# --- a caller's own embed, and several indexed fields scored per text ---


def letter_counts(texts: list[str]) -> list[list[float]]:
    """A caller's embedding function (LangGraph's `EmbeddingsFunc`): each text as the
    counts of the letters a to z, not normalised (so the three distance types differ)."""
    return [[float(t.lower().count(chr(ord("a") + i))) for i in range(26)] for t in texts]


async def vowel_counts(texts: list[str]) -> list[list[float]]:
    """Another embed, async: the counts of a, e, i, o, u, then 21 zeros (also 26 numbers,
    so only the model's name tells its vectors from letter_counts')."""
    return [[float(t.lower().count(v)) for v in "aeiou"] + [0.0] * 21 for t in texts]


def similarity(distance: str, a: list[float], b: list[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    if distance == "inner_product":
        return dot
    if distance == "l2":
        return -(sum((x - y) ** 2 for x, y in zip(a, b, strict=True)) ** 0.5)
    norms = sum(x * x for x in a) ** 0.5 * sum(y * y for y in b) ** 0.5
    return dot / norms


@pytest.mark.parametrize("distance", ["cosine", "inner_product", "l2"])
async def test_a_callers_embed_scores_and_orders_with_its_vectors(
    store: MemexStore, distance: str
) -> None:
    """An `index` config with the caller's `embed` (here a plain function) and `dims`:
    index_config says them, each put's text is embedded by it on the client, and a query
    search scores every item by that vector's similarity under the configured distance
    type, best first (LangGraph's own stores' scores), with index=False items left out."""
    index = {"dims": 26, "embed": letter_counts, "fields": ["text"], "distance_type": distance}
    custom = MemexStore(store.client, store.agent_id, f"embed-{distance}", index=index)
    assert custom.index_config["dims"] == 26
    assert custom.index_config["embed"] is letter_counts
    assert custom.index_config["fields"] == ["text"]
    texts = {"a": "banana bandana", "b": "zzz buzz", "c": "kayak", "d": "abracadabra"}
    for key, text in texts.items():
        await custom.aput(("docs",), key, {"text": text, "n": key})
    await custom.aput(("docs",), "hidden", {"text": "banana"}, index=False)
    query = "a banana"
    hits = await custom.asearch(("docs",), query=query, limit=10)
    (q,) = letter_counts([query])
    expected = {k: similarity(distance, q, letter_counts([t])[0]) for k, t in texts.items()}
    assert [h.key for h in hits] == sorted(expected, key=lambda k: expected[k], reverse=True)
    for hit in hits:
        assert hit.score == pytest.approx(expected[hit.key], rel=1e-5), hit.key
    # a filter and an offset apply as without a query
    filtered = await custom.asearch(("docs",), query=query, filter={"n": "c"})
    assert [h.key for h in filtered] == ["c"]
    second = await custom.asearch(("docs",), query=query, limit=1, offset=1)
    assert [h.key for h in second] == [hits[1].key]
    # memexdb's own model still embedded the content (its search and text ranking work)
    memory = await store.client.get(store.agent_id, f"embed-{distance}", custom._id(("docs",), "a"))
    assert memory.content == "banana bandana"
    assert memory.metadata["langgraph"]["vectors"]["model"].endswith(":26")


async def test_vectors_of_another_embed_are_never_compared(store: MemexStore) -> None:
    """Items put by a store with one embed, searched by a store with another (the same
    tenant, the same dims): the query is compared with vectors of its own model only,
    the items' texts embedded again by it, never with the other model's vectors."""
    user = "two-models"
    index = {"dims": 26, "fields": ["text"]}
    first = MemexStore(store.client, store.agent_id, user, index={**index, "embed": letter_counts})
    second = MemexStore(store.client, store.agent_id, user, index={**index, "embed": vowel_counts})
    await first.aput(("n",), "k", {"text": "education"})
    (q,) = await vowel_counts(["audio"])
    (item,) = await vowel_counts(["education"])
    (hit,) = await second.asearch(("n",), query="audio")
    assert hit.score == pytest.approx(similarity("cosine", q, item), rel=1e-5)
    (other,) = letter_counts(["education"])
    assert hit.score != pytest.approx(similarity("cosine", q, other), rel=1e-3)


async def test_several_fields_of_a_callers_embed_score_by_the_best_field(
    store: MemexStore,
) -> None:
    """Each text at each field path has its own vector (LangGraph's stores' semantics):
    the item's score is its best text's, so a query equal to one short field scores 1
    however long the other fields are; a field that is not indexed never scores."""
    index = {"dims": 26, "embed": letter_counts, "fields": ["title", "tags[*]"]}
    custom = MemexStore(store.client, store.agent_id, "fields", index=index)
    long_body = "quick brown foxes jump over lazy dogs " * 20
    await custom.aput(("n",), "x", {"title": long_body, "tags": ["kiwi", "plum"], "body": "zebra"})
    await custom.aput(("n",), "y", {"title": "kiwi kiwi plum", "tags": []})
    (best,) = await custom.asearch(("n",), query="plum", limit=1)
    assert (best.key, best.score) == ("x", pytest.approx(1.0))
    scores = {h.key: h.score for h in await custom.asearch(("n",), query="zebra")}
    (q,) = letter_counts(["zebra"])
    texts = {"x": [long_body, "kiwi", "plum"], "y": ["kiwi kiwi plum"]}
    for key, some in texts.items():
        best_field = max(similarity("cosine", q, v) for v in letter_counts(some))
        assert scores[key] == pytest.approx(best_field, rel=1e-5), key
    # a put's own `index` fields replace the store's
    await custom.aput(("n",), "z", {"title": "kiwi", "body": "zebra"}, index=["body"])
    (top,) = await custom.asearch(("n",), query="zebra", limit=1)
    assert (top.key, top.score) == ("z", pytest.approx(1.0))


async def test_several_fields_with_memexdbs_model_score_by_the_best_field(
    store: MemexStore,
) -> None:
    """With memexdb's model, an item of several indexed texts keeps one vector per text
    (the model's, from embed_texts) and scores its best text's cosine similarity to the
    query, not that of the texts joined (LangGraph's stores' semantics); memexdb still
    ranks the joined content; an item of one text scores as before."""
    fields = MemexStore(store.client, store.agent_id, "mfields", index_fields=["title", "body"])
    body = (
        "The quarterly budget review covers hiring plans, vendor contracts, office leases,"
        " travel policy and the timeline for the new accounting system. "
    ) * 3
    await fields.aput(("n",), "trip", {"title": "Weekend hiking trip to the Alps", "body": body})
    await fields.aput(("n",), "solo", {"title": "Grocery list for the week"})
    query = "hiking in the mountains"
    hits = {h.key: h.score for h in await fields.asearch(("n",), query=query, limit=5)}
    joined = "Weekend hiking trip to the Alps\n" + body
    vectors = (
        await store.client.embed_texts(
            [query, "Weekend hiking trip to the Alps", body, joined, "Grocery list for the week"]
        )
    ).vectors
    cos = [sum(a * b for a, b in zip(vectors[0], v, strict=True)) for v in vectors[1:]]
    assert hits["trip"] == pytest.approx(max(cos[0], cos[1]), abs=2e-3)
    assert hits["trip"] > cos[2] + 0.05  # the joined text scores far lower
    assert hits["solo"] == pytest.approx(cos[3], abs=2e-3)
    memory = await store.client.get(store.agent_id, "mfields", fields._id(("n",), "trip"))
    assert len(memory.metadata["langgraph"]["vectors"]["data"]) == 2
    assert memory.content == joined


async def test_sqlite_style_text_fields_and_a_bad_distance(store: MemexStore) -> None:
    """LangGraph's SQLite store names the fields `text_fields` (a list or one path): they
    are the fields embedded; a distance type no LangGraph store has is refused."""
    index = {"dims": 26, "embed": letter_counts, "text_fields": "title"}
    sqlite_style = MemexStore(store.client, store.agent_id, "sqlite-style", index=index)
    assert sqlite_style.index_config["fields"] == ["title"]
    await sqlite_style.aput(("n",), "k", {"title": "kiwi", "body": "zebra"})
    (hit,) = await sqlite_style.asearch(("n",), query="kiwi")
    assert hit.score == pytest.approx(1.0)
    with pytest.raises(ValueError, match="distance_type"):
        MemexStore(store.client, store.agent_id, index={**index, "distance_type": "hamming"})
