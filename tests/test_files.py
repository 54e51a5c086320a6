"""File memory as its users meet it: the Python API (real embedder), the REST service (a
real uvicorn process) and the MCP tools through the official SDK client over streamable
HTTP. SQL-level behaviour (every error, revisions, budget) is in test_sql_files.py."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import httpx
import pytest
from pydantic import ValidationError

from memexdb import AsyncMemex, Conflict, InvalidArgument, NotFound
from memexdb.embedded import EmbeddedPostgres
from memexdb.files import operations as files
from memexdb.mcp import build_mcp_server
from tests.conftest import drop_database, new_database, scratch_dir
from tests.live_service import Service, client, free_port, service_env, uvicorn_args
from tests.test_mcp_support import call, call_error, connected, http_client_of, serve

WHO = {"agent_id": "files", "user_id": "alice"}
PROFILE = "# Profile\n\n## Preferences\n\n- dark mode\n\n## Work\n\n- writes Rust\n"


async def test_python_api_round_trip(amemex: AsyncMemex) -> None:
    a, u = WHO["agent_id"], WHO["user_id"]
    written = await amemex.write_file(a, u, "user/profile.md", PROFILE, base_revision=0)
    assert written.revision == 1
    with pytest.raises(Conflict):
        await amemex.write_file(a, u, "user/profile.md", "x", base_revision=0)
    patched = await amemex.patch_file(
        a, u, "user/profile.md", heading="## Preferences", append="- green tea"
    )
    assert "- dark mode\n- green tea\n\n## Work" in patched.content
    assert patched.revision == 2
    # search ranks the file by its new meaning (the client embedded the patched content)
    hits = await amemex.search(a, u, "which tea does she like?", top_k=1)
    assert hits[0].id == written.memory_id
    with pytest.raises(Conflict, match="old_text: was not found"):
        await amemex.patch_file(a, u, "user/profile.md", old_text="Python", new_text="Go")
    with pytest.raises(InvalidArgument) as both:
        await amemex.patch_file(a, u, "user/profile.md", append="x", old_text="a", new_text="b")
    assert both.value.field == "body" or "either" in both.value.message
    with pytest.raises(InvalidArgument) as traversal:
        await amemex.read_file(a, u, "user/../secrets")
    assert traversal.value.field == "path"
    replaced = await amemex.patch_file(
        a, u, "user/profile.md", old_text="Rust", new_text="Go", base_revision=2
    )
    diff = await amemex.diff_revisions(a, u, "user/profile.md", 2, 3)
    assert "-- writes Rust\n+- writes Go\n" in diff and diff.startswith("--- user/profile.md@2")
    lines = await amemex.read_file(a, u, "user/profile.md", from_line=3, to_line=3)
    assert lines.content == "## Preferences"
    deleted = await amemex.delete_file(a, u, "user/profile.md", base_revision=replaced.revision)
    assert deleted.revision == 4
    with pytest.raises(NotFound):
        await amemex.read_file(a, u, "user/profile.md")
    restored = await amemex.restore_revision(a, u, "user/profile.md", 3)
    assert (restored.revision, restored.content) == (5, replaced.content)
    revisions = await amemex.list_revisions(a, u, "user/profile.md")
    assert [r.operation for r in revisions] == ["restore", "delete", "patch", "patch", "write"]
    files, after = await amemex.list_files(a, u, prefix="user/")
    assert ([f.path for f in files], after) == (["user/profile.md"], None)
    block = await amemex.smart_read(a, u, "what does Alice write?", budget=120)
    assert block.chars <= 120 and block.sources[0]["path"] == "user/profile.md"
    log = await amemex.access_log(a, u, since=datetime(2026, 1, 1, tzinfo=UTC))
    operations = {e.operation for e in log}
    assert operations >= {"write", "patch", "read", "delete", "restore", "list", "smart_read"}
    assert {e.actor for e in log} == {"open"} or all(e.actor for e in log)
    assert await amemex.access_log(a, u, until=datetime(2000, 1, 1, tzinfo=UTC)) == []


@pytest.fixture(scope="module")
def live(pg_server: EmbeddedPostgres, template_db: str) -> Iterator[httpx.Client]:
    dsn = new_database(pg_server)
    log = scratch_dir("memexdb-files-") / "service.log"
    port = free_port()
    service = Service(uvicorn_args(port), service_env(MEMEX_DATABASE_URL=dsn), port, log)
    try:
        service.wait_healthy()
        with client(service.base_url) as http:
            yield http
        service.stop()
    finally:
        service.close()
        drop_database(pg_server, dsn)
        shutil.rmtree(log.parent, ignore_errors=True)


def _error(r: httpx.Response, status: int, code: str) -> dict[str, object]:
    assert r.status_code == status, r.text
    body: dict[str, object] = r.json()["error"]
    assert body["code"] == code
    return body


def test_rest_files(live: httpx.Client) -> None:
    path = {**WHO, "path": "user/notes.md"}
    r = live.put("/v1/files", json={**path, "content": "# Notes\n\n- one\n", "base_revision": 0})
    assert r.status_code == 200 and r.json()["revision"] == 1
    _error(
        live.put("/v1/files", json={**path, "content": "x", "base_revision": 0}), 409, "conflict"
    )
    r = live.patch("/v1/files", json={**path, "append": "- two", "heading": "# Notes"})
    assert r.json()["content"] == "# Notes\n\n- one\n- two\n"
    body = _error(
        live.patch("/v1/files", json={**path, "old_text": "-", "new_text": "*"}), 409, "conflict"
    )
    assert (
        body["message"]
        == "old_text: appears 2 times in the file; include more context to make it unique"
    )
    body = _error(
        live.patch("/v1/files", json={**path, "old_text": "three", "new_text": "3"}),
        409,
        "conflict",
    )
    assert body["message"] == "old_text: was not found in the file"
    body = _error(
        live.patch("/v1/files", json={**path, "append": "x", "heading": None}),
        422,
        "invalid_argument",
    )
    body = _error(
        live.patch("/v1/files", json={**path, "append": "x", "old_text": "a", "new_text": "b"}),
        422,
        "invalid_argument",
    )
    _error(
        live.patch("/v1/files", json={**path, "append": "x", "base_revision": 1}), 409, "conflict"
    )
    for bad in ("../etc/passwd", "user/../agent/x", "/user/x", "user/.env", "user//x", "home/x"):
        body = _error(
            live.get("/v1/files/read", params={**WHO, "path": bad}), 422, "invalid_argument"
        )
        assert body["fields"][0]["field"] == "path"  # type: ignore[index]
    r = live.get("/v1/files/read", params={**path, "from_line": "3", "to_line": "4"})
    assert r.json()["content"] == "- one\n- two"
    _error(live.get("/v1/files/read", params={**WHO, "path": "user/none.md"}), 404, "not_found")
    r = live.get("/v1/files", params={**WHO, "prefix": "user/", "limit": "10"})
    assert [f["path"] for f in r.json()["files"]] == ["user/notes.md"]
    r = live.get("/v1/files/revisions", params=path)
    assert [v["revision"] for v in r.json()["revisions"]] == [2, 1]
    r = live.get("/v1/files/revision", params={**path, "revision": "1"})
    assert r.json()["content"] == "# Notes\n\n- one\n"
    r = live.get("/v1/files/diff", params={**path, "from_revision": "1", "to_revision": "2"})
    assert "+- two" in r.json()["diff"]
    r = live.delete("/v1/files", params={**path, "base_revision": "2"})
    assert r.json()["revision"] == 3
    r = live.post("/v1/files/restore", json={**path, "revision": 1, "base_revision": 0})
    assert (r.json()["revision"], r.json()["content"]) == (4, "# Notes\n\n- one\n")
    r = live.post("/v1/files/smart-read", json={**WHO, "query": "notes", "budget": 100})
    assert r.status_code == 200 and r.json()["chars"] <= 100
    r = live.get("/v1/access-log", params={**WHO, "limit": "100"})
    logged = [e["operation"] for e in r.json()["events"]]
    for op in (
        "write",
        "patch",
        "read",
        "list",
        "revisions",
        "read_revision",
        "delete",
        "restore",
        "smart_read",
    ):
        assert op in logged, op
    assert (
        live.get("/v1/access-log", params={**WHO, "until": "2000-01-01T00:00:00Z"}).json()["events"]
        == []
    )
    doc = live.get("/openapi.json").json()
    assert {"/v1/files", "/v1/files/read", "/v1/access-log"} <= set(doc["paths"])


FILE_TOOLS = {
    "memory_list",
    "memory_read",
    "memory_write",
    "memory_patch",
    "memory_delete",
    "memory_smart_read",
    "memory_revisions",
    "memory_diff",
    "memory_restore",
}


async def test_mcp_file_tools(
    pg_server: EmbeddedPostgres, template_db: str, tmp_path: Path
) -> None:
    dsn = new_database(pg_server)
    try:
        with serve(tmp_path, dsn=dsn) as service:
            async with connected(http_client_of(f"{service.base_url}/mcp")) as c:
                names = {t.name for t in (await c.list_tools()).tools}
                assert names >= FILE_TOOLS
                p = {**WHO, "path": "user/profile.md"}
                w = await call(c, "memory_write", **p, content=PROFILE)
                assert w["revision"] == 1
                got = await call(c, "memory_read", **p)
                assert got["content"] == PROFILE
                await call(c, "memory_patch", **p, heading="## Work", append="- likes Go")
                err = await call_error(c, "memory_patch", **p, old_text="- ", new_text="* ")
                assert "old_text" in err and "times" in err
                err = await call_error(c, "memory_write", **p, content="x", base_revision=1)
                assert "conflict" in err
                err = await call_error(c, "memory_read", **{**WHO, "path": "user/../x"})
                assert "path" in err
                listed = await call(c, "memory_list", **WHO, prefix="user/")
                assert [f["path"] for f in listed["files"]] == ["user/profile.md"]
                block = await call(c, "memory_smart_read", **WHO, query="dark mode?", budget=150)
                assert block["chars"] <= 150 and "### user/profile.md" in block["context"]
                revisions = await call(c, "memory_revisions", **p)
                assert [r["revision"] for r in revisions["revisions"]] == [2, 1]
                diff = await call(c, "memory_diff", **p, from_revision=1, to_revision=2)
                assert "+- likes Go" in diff["diff"]
                await call(c, "memory_delete", **p)
                err = await call_error(c, "memory_read", **p)
                assert "not found" in err
                restored = await call(c, "memory_restore", **p, revision=2)
                assert restored["revision"] == 4
    finally:
        drop_database(pg_server, dsn)


def test_mcp_patch_takes_null_as_left_out() -> None:
    # memory_patch's schema lets a model send null for the texts it does not use: that
    # is "left out" (the REST body must leave them out: null there is refused)
    bound = build_mcp_server(lambda: None).operation_tools["memory_patch"]  # type: ignore[arg-type,return-value]
    p = {**WHO, "path": "user/profile.md"}
    nulls = {"heading": None, "old_text": None, "new_text": None, "base_revision": None}
    request = bound.request({**p, "append": "- tea", **nulls})
    assert request.model_fields_set == {*p, "append", "base_revision"}
    with pytest.raises(ValidationError, match="heading may not be null"):
        files.PATCH.request.model_validate_json(
            json.dumps({**p, "append": "- tea", "heading": None})
        )
