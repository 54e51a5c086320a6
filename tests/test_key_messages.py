"""Refusals of the key endpoints say what would succeed: a key limited to some users that
asks for the key list hears that admin access is needed (it used to hear "may not access
user (all)"), and revoking the last live key names the exact request that confirms it,
which then works."""

from __future__ import annotations

import re
import shutil
from collections.abc import Iterator
from dataclasses import dataclass

import httpx
import psycopg
import pytest

from memexdb.embedded import EmbeddedPostgres
from tests.conftest import drop_database, new_database, scratch_dir
from tests.live_service import Service, free_port, service_env, uvicorn_args


def _key(dsn: str, access: str, agent_id: str | None, users: list[str] | None = None) -> str:
    with psycopg.connect(dsn, autocommit=True) as conn:
        row = conn.execute(
            "select token from memex.create_key(p_access => %s, p_agent_id => %s,"
            " p_user_ids => %s)",
            (access, agent_id, users),
        ).fetchone()
    assert row is not None
    return str(row[0])


@dataclass
class World:
    service: Service
    admin_b: str  # the only key of agent B
    reader_u: str  # read access to user u of agent A only
    writer_u: str  # write access to user u of agent A only


@pytest.fixture(scope="module")
def world(pg_server: EmbeddedPostgres, template_db: str) -> Iterator[World]:
    dsn = new_database(pg_server)
    log = scratch_dir("memexdb-key-messages-") / "service.log"
    port = free_port()
    svc = Service(uvicorn_args(port), service_env(MEMEX_DATABASE_URL=dsn), port, log)
    try:
        _key(dsn, "admin", None)  # the operator's: agent B's key is not the database's last
        keys = World(
            svc,
            admin_b=_key(dsn, "admin", "B"),
            reader_u=_key(dsn, "read", "A", ["u"]),
            writer_u=_key(dsn, "write", "A", ["u"]),
        )
        svc.wait_healthy()
        yield keys
    finally:
        svc.stop()
        svc.close()
        drop_database(pg_server, dsn)
        shutil.rmtree(log.parent, ignore_errors=True)


def _http(world: World, token: str) -> httpx.Client:
    return httpx.Client(
        base_url=world.service.base_url,
        headers={"Authorization": f"Bearer {token}"},
        timeout=60,
    )


@pytest.mark.parametrize("who", ["reader_u", "writer_u"])
def test_a_key_limited_to_users_listing_keys_hears_admin_is_needed(world: World, who: str) -> None:
    with _http(world, getattr(world, who)) as http:
        refused = http.get("/v1/admin/keys")
        assert refused.status_code == 403, refused.text
        message = refused.json()["error"]["message"]
        assert "admin access is needed" in message and "(all)" not in message, message
        # what it may do, it still may; another user is still refused as one
        assert http.get("/v1/memories/count", params={"agent_id": "A", "user_id": "u"}).is_success
        other = http.get("/v1/memories/count", params={"agent_id": "A", "user_id": "v"})
        assert other.status_code == 403 and "may not access user v" in other.text, other.text


def test_the_last_key_refusal_names_the_request_that_confirms_it(world: World) -> None:
    with _http(world, world.admin_b) as http:
        mine = http.get("/v1/admin/keys").json()["keys"]
        assert len(mine) == 1, mine
        prefix = mine[0]["prefix"]
        refused = http.delete(f"/v1/admin/keys/{prefix}")
        assert refused.status_code == 409, refused.text
        message = refused.json()["error"]["message"]
        assert "last live key of agent B" in message
        confirm = f"DELETE /v1/admin/keys/{prefix}?confirm_last=true"
        assert confirm in message and f"memexdb keys revoke {prefix} --last-key" in message
        method, path = confirm.split(" ")
        revoked = http.request(method, path)
        assert revoked.status_code == 200 and revoked.json()["revoked_at"], revoked.text


def test_the_openapi_document_shows_what_the_service_takes(world: World) -> None:
    """The revoke example has the shape of a real key's prefix (it was `mxk_0123abcd`,
    which no key can have), and the files tag names the paths files may have (it named
    `/session`, which is refused)."""
    with _http(world, world.reader_u) as http:
        document = http.get("/openapi.json").json()
        (key,) = [
            p
            for p in document["paths"]["/v1/admin/keys/{key}"]["delete"]["parameters"]
            if p["name"] == "key"
        ]
        prefix = world.reader_u.split("_")[1]  # mxk_<prefix>_<secret>
        assert len(key["example"]) == len(prefix), key
        assert re.fullmatch(r"[0-9a-f]+", key["example"]) and re.fullmatch(r"[0-9a-f]+", prefix)
        (files,) = [t for t in document["tags"] if t["name"] == "files"]
        assert "/session" not in files["description"]
        refused = http.get(
            "/v1/files/read", params={"agent_id": "A", "user_id": "u", "path": "session/x.md"}
        )
        assert refused.status_code == 422, refused.text
        for root in ("user/", "agent/"):
            assert root in files["description"]
