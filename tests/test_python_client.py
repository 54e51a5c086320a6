"""memexdb-client (clients/python) against a real `memexdb` service: every method, the
retries (a real TCP proxy that loses a committed store's answer, or answers 503 once),
the Protocol both clients satisfy (mypy --strict), the generated routes, and the wheel
installed alone into a new venv."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from memexdb_client import (
    AsyncMemexClient,
    Conflict,
    Forbidden,
    InvalidArgument,
    MemexClient,
    NotFound,
)
from memexdb_client.types import File, Memory, MemoryPage, SearchHit

from memexdb.embedded import EmbeddedPostgres
from memexdb.operation_table import OPERATIONS
from tests.live_service import REPO, service_on_new_database

CLIENT_DIR = REPO / "clients" / "python"
A, U = "client-agent", "client-user"


@dataclass
class Live:
    base_url: str
    token: str  # an admin key for every agent (made first, by the keyless operator)


@pytest.fixture(scope="module")
def live(pg_server: EmbeddedPostgres, template_db: str) -> Iterator[Live]:
    with service_on_new_database(pg_server, "pyclient") as service:
        with MemexClient(service.base_url) as operator:
            token = operator.create_key("admin", name="client tests").token
        yield Live(service.base_url, token)


# --- without a service ---


def test_the_generated_routes_are_current() -> None:
    sys.path.insert(0, str(CLIENT_DIR / "tools"))
    try:
        import generate_routes
    finally:
        sys.path.pop(0)
    committed = (CLIENT_DIR / "memexdb_client" / "_routes.py").read_text()
    assert generate_routes.render() == committed, (
        "run .venv/bin/python clients/python/tools/generate_routes.py"
    )


@pytest.mark.parametrize("op", [op for op in OPERATIONS if op.rest is not None], ids=str)
def test_every_rest_operation_has_a_client_method(op: Any) -> None:
    for cls in (AsyncMemexClient, MemexClient):
        assert callable(getattr(cls, op.name, None)), f"{cls.__name__}.{op.name} is missing"


def test_the_client_package_does_not_import_the_server() -> None:
    for path in (CLIENT_DIR / "memexdb_client").glob("*.py"):
        text = path.read_text()
        assert "import memexdb\n" not in text and "from memexdb." not in text, path
        assert "from memexdb import" not in text, path


def test_both_clients_satisfy_the_protocol(tmp_path: Path) -> None:
    checked = tmp_path / "protocol_check.py"
    checked.write_text(
        textwrap.dedent(
            """
            from memexdb.client import AsyncMemex
            from memexdb_client import AsyncMemexClient
            from memexdb_client.api import AsyncMemoryAPI


            def in_process(memex: AsyncMemex) -> AsyncMemoryAPI:
                return memex


            def over_http(client: AsyncMemexClient) -> AsyncMemoryAPI:
                return client
            """
        )
    )
    result = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", str(checked)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    # and a client without a method of the Protocol fails the same check
    checked.write_text(
        checked.read_text()
        + "\n\nclass Partial:\n    async def count(self, agent_id: str, user_id: str) -> int:"
        "\n        return 0\n\n\ndef partial(p: Partial) -> AsyncMemoryAPI:\n    return p\n"
    )
    result = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", str(checked)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 1 and "Partial" in result.stdout, result.stdout


# --- every method against the live service ---


async def test_memories(live: Live) -> None:
    async with AsyncMemexClient(live.base_url, live.token) as memex:
        dog = await memex.store(A, U, "I adopted a golden retriever named Max", importance=1.5)
        assert isinstance(dog, Memory) and dog.importance == 1.5
        tax = await memex.store(A, U, "The tax report is due on April 15", memory_type="semantic")
        hits = await memex.search(A, U, "what pet do I have?", top_k=1)
        assert isinstance(hits[0], SearchHit) and hits[0].id == dog.id
        assert await memex.count(A, U) == 2
        assert await memex.count(A, U, "semantic") == 1
        assert (await memex.get(A, U, dog.id)).content == dog.content
        changed = await memex.update(A, U, dog.id, content="I adopted a retriever named Max")
        assert changed.content.startswith("I adopted a retriever")
        page = await memex.list_memories(A, U, limit=1)
        assert isinstance(page, MemoryPage) and len(page.memories) == 1 and page.next_cursor
        listed = [m.id async for m in memex.iter_memories(A, U, limit=1)]
        assert sorted(listed) == sorted([dog.id, tax.id])
        many = await memex.store_many(
            [
                {"agent_id": A, "user_id": U, "content": "first of a batch"},
                {"agent_id": A, "user_id": U, "content": "second of a batch"},
            ]
        )
        assert [m.content for m in many] == ["first of a batch", "second of a batch"]
        exported = [row async for row in memex.export(A, U)]
        assert {row["id"] for row in exported} == {
            str(m) for m in [dog.id, tax.id, *[m.id for m in many]]
        }
        assert await memex.forget(A, U, tax.id) is None
        with pytest.raises(NotFound):
            await memex.get(A, U, tax.id)
        with pytest.raises(InvalidArgument) as bad:
            await memex.store(A, U, "x", importance=7)
        assert bad.value.field == "importance"
        embedded = await memex.embed_texts(["one", "two"])
        assert len(embedded.vectors) == 2 and len(embedded.vectors[0]) == 384
        erased = await memex.erase_user(A, "someone-else")
        assert isinstance(erased, dict)


async def test_a_store_with_an_id_stores_once(live: Live) -> None:
    async with AsyncMemexClient(live.base_url, live.token) as memex:
        given = uuid.uuid4()
        first = await memex.store(A, "idem", "stored once", id=given)
        again = await memex.store(A, "idem", "stored once", id=given)
        assert first == again and first.id == given
        with pytest.raises(Conflict):
            await memex.store(A, "idem", "other content", id=given)
        assert await memex.count(A, "idem") == 1


async def test_files(live: Live) -> None:
    async with AsyncMemexClient(live.base_url, live.token) as memex:
        written = await memex.write_file(A, U, "user/plan.md", "# Plan\n\nship it\n")
        assert isinstance(written, File) and written.revision == 1
        with pytest.raises(Conflict):
            await memex.write_file(A, U, "user/plan.md", "# Other\n", base_revision=0)
        patched = await memex.patch_file(A, U, "user/plan.md", heading="Later", append="rest")
        assert "rest" in patched.content
        assert (await memex.read_file(A, U, "user/plan.md", from_line=1, to_line=1)).content
        await memex.write_file(A, U, "user/other.md", "another file\n")
        files, after = await memex.list_files(A, U, limit=1)
        assert len(files) == 1 and after is not None
        assert [f.path async for f in memex.iter_files(A, U, limit=1)] == [
            "user/other.md",
            "user/plan.md",
        ]
        revisions = await memex.list_revisions(A, U, "user/plan.md")
        assert [r.revision for r in revisions] == [2, 1]
        assert [r.revision async for r in memex.iter_revisions(A, U, "user/plan.md", limit=1)] == [
            2,
            1,
        ]
        assert (await memex.get_revision(A, U, "user/plan.md", 1)).content == "# Plan\n\nship it\n"
        diff = await memex.diff_revisions(A, U, "user/plan.md", 1, 2)
        assert "+rest" in diff
        restored = await memex.restore_revision(A, U, "user/plan.md", 1)
        assert restored.revision == 3
        block = await memex.smart_read(A, U, "what is the plan?", budget=500)
        assert block.chars <= 500
        deleted = await memex.delete_file(A, U, "user/other.md")
        assert deleted.path == "user/other.md"
        events = await memex.access_log(A, U, limit=2)
        assert len(events) == 2
        assert len([e async for e in memex.iter_access_log(A, U, limit=2)]) > 2
        passages = await memex.search_passages(A, U, "plan")
        assert passages["passages"] and passages["llm"] == "not_asked"
        memorized = await memex.memorize(A, U, "I moved to Lisbon last week.")
        assert memorized["mode"] == "fallback"


async def test_admin(live: Live) -> None:
    async with AsyncMemexClient(live.base_url, live.token) as memex:
        config = await memex.dream_config()
        assert "threshold" in config
        after = await memex.set_dream_config(threshold=config["threshold"])
        assert after == config
        assert await memex.set_dream_paused(A, U, True) is True
        users = await memex.dream_users(A)
        assert any(u.user_id == U and u.paused for u in users)
        assert [u async for u in memex.iter_dream_users(A, limit=1)]
        assert await memex.set_dream_paused(A, U, False) is False
        runs = await memex.run_now(A, U, force=True, dry_run=True)
        assert isinstance(runs, list)
        assert isinstance(await memex.consolidation_runs(A, U), list)
        assert isinstance([r async for r in memex.iter_consolidation_runs(A)], list)
        with pytest.raises(NotFound):
            await memex.restore_consolidation(999_999)
        assert isinstance(await memex.audit_events(limit=5), list)
        assert isinstance([e async for e in memex.iter_audit_events(limit=2)], list)
        created = await memex.create_key("read", agent_id=A, user_ids=[U], name="reader")
        assert created.token
        assert created.id in {k.id for k in await memex.list_keys()}
        async with AsyncMemexClient(live.base_url, created.token) as reader:
            assert await reader.count(A, U) >= 1
            with pytest.raises(Forbidden):
                await reader.store(A, U, "a reader cannot write")
        revoked = await memex.revoke_key(created.prefix)
        assert revoked.id == created.id


def test_the_sync_client(live: Live) -> None:
    with MemexClient(live.base_url, api_key=live.token) as memex:
        stored = memex.store(A, "sync", "a synchronous memory")
        assert memex.search(A, "sync", "synchronous")[0].id == stored.id
        assert [m.id for m in memex.iter_memories(A, "sync")] == [stored.id]
        assert [row["id"] for row in memex.export(A, "sync")] == [str(stored.id)]
