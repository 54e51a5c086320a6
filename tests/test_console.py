"""The admin console without a browser: memex.agent_stats / memex.user_stats (its tenant
pages) through the Python API, and the pages of a live service over HTTP: open on loopback
without keys, every bad input a 4xx HTML page (never a 500), POSTs refused without the
page's CSRF token or from another origin, and once keys exist, the login with its cookie.
tests/test_console_ui.py drives the same pages in a browser."""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import httpx
import pytest

from memexdb import AsyncMemex
from memexdb.console.web import CSRF_COOKIE, KEY_COOKIE, is_loopback, safe_next
from memexdb.embedded import EmbeddedPostgres
from memexdb.errors import Forbidden, InvalidArgument
from memexdb.memories.models import MemoryCreate
from tests.live_service import Service, client, service_on_new_database

A, B = "console-a", "console-b"
PUBLIC_HOST = "memex.example.com"


async def test_agent_and_user_stats_count_what_tenants_hold(amemex: AsyncMemex) -> None:
    start = datetime(2025, 1, 1, tzinfo=UTC)
    await amemex.store_many(
        [
            MemoryCreate(agent_id=A, user_id="u1", content=f"episode {i}", created_at=start)
            for i in range(4)
        ]
        + [
            MemoryCreate(agent_id=A, user_id="u1", content="a fact", memory_type="semantic"),
            MemoryCreate(agent_id=A, user_id="u2", content="a how-to", memory_type="procedural"),
            MemoryCreate(agent_id=B, user_id="u1", content="b's episode"),
        ]
    )
    await amemex.write_file(A, "u1", "user/profile.md", "# Profile\n")
    soon = datetime.now(UTC) + timedelta(seconds=1)
    await amemex.store(A, "u2", "short-lived", expires_at=soon)
    run = await amemex.consolidate(A, "u1", force=True)
    assert run is not None and run.status == "done", run
    archived = run.memories_in
    assert archived and archived >= 2

    rows = {r.agent_id: r for r in await amemex.agent_stats()}
    assert set(rows) == {A, B}
    a = rows[A]
    # the summary is a semantic memory; the file is apart from the type counts
    assert (a.users, a.files, a.archived) == (2, 1, archived)
    assert (a.episodic, a.semantic, a.procedural) == (4 - archived + 1, 2, 1)
    assert a.last_write_at is not None
    assert (rows[B].users, rows[B].episodic, rows[B].files) == (1, 1, 0)
    # keyset pages in agent_id order
    first = await amemex.agent_stats(limit=1)
    assert [r.agent_id for r in first] == [A]
    assert [r.agent_id for r in await amemex.agent_stats(limit=1, after=A)] == [B]
    assert [r.agent_id for r in await amemex.agent_stats(B)] == [B]

    users = {u.user_id: u for u in await amemex.user_stats(A)}
    assert set(users) == {"u1", "u2"}
    assert (users["u1"].files, users["u1"].archived, users["u2"].procedural) == (1, archived, 1)
    assert users["u2"].episodic + users["u2"].expired == 1
    await amemex.set_dream_paused(A, "u2", True)
    assert [u.dream_paused for u in await amemex.user_stats(A)] == [False, True]
    assert [u.user_id for u in await amemex.user_stats(A, limit=1, after="u1")] == ["u2"]

    with pytest.raises(InvalidArgument) as bad:
        await amemex.agent_stats(limit=0)
    assert bad.value.field == "limit"
    with pytest.raises(InvalidArgument) as bad:
        await amemex.user_stats(None)  # type: ignore[arg-type]
    assert bad.value.field == "agent_id"

    # admin only, and an agent's admin sees its agent only
    operator = amemex.as_operator("test")
    admin_a = amemex.with_key((await operator.create_key("admin", agent_id=A)).token)
    reader = amemex.with_key((await operator.create_key("read", agent_id=A)).token)
    assert [r.agent_id for r in await admin_a.agent_stats(A)] == [A]
    assert len(await admin_a.user_stats(A)) == 2
    for call in (
        admin_a.agent_stats(),
        admin_a.agent_stats(B),
        admin_a.user_stats(B),
        reader.agent_stats(A),
        reader.user_stats(A),
    ):
        with pytest.raises(Forbidden):
            await call


def test_loopback_and_redirect_rules() -> None:
    assert is_loopback("127.0.0.1:8000") and is_loopback("localhost") and is_loopback("[::1]:80")
    assert not is_loopback("memex.example.com") and not is_loopback("10.0.0.5:8000")
    assert safe_next("/admin/files?agent_id=a") == "/admin/files?agent_id=a"
    for bad in ("https://evil.example/admin/", "//evil.example", "/admin//evil", "/docs", None):
        assert safe_next(bad) == "/admin/"


@pytest.fixture(scope="module")
def service(pg_server: EmbeddedPostgres, template_db: str) -> Iterator[Service]:
    # a second Host name, as a service behind a TLS proxy answers (MEMEX_ALLOWED_HOSTS)
    hosts = f"127.0.0.1:*,{PUBLIC_HOST}"
    with service_on_new_database(pg_server, "console", MEMEX_ALLOWED_HOSTS=hosts) as running:
        yield running


def _csrf(http: httpx.Client) -> str:
    page = http.get("/admin/dream")  # its settings form
    token = re.search(r'name="csrf" value="([^"]+)"', page.text)
    assert token, page.text[:500]
    assert http.cookies.get(CSRF_COOKIE) == token.group(1)
    return token.group(1)


def _html_error(response: httpx.Response, status: int) -> None:
    assert response.status_code == status, (response.request.url, response.text[:800])
    assert response.headers["content-type"].startswith("text/html")
    assert "Traceback" not in response.text and "psycopg" not in response.text
    assert 'class="error"' in response.text


JUNK = ["", "\x00", "x" * 5000, "-1", "0", "9" * 30, "1e3", "nan", "-inf", "é😀", "<b>", "[1]"]
BASE = {
    "agent_id": "a",
    "user_id": "u",
    "path": "user/p.md",
    "query": "x",
    "id": str(uuid.UUID(int=1)),
    "revision": "1",
    "from_revision": "1",
    "to_revision": "1",
    "access": "root",  # never a valid key request: the service stays open
    "run_id": "1",
    "key": "nope",
    "paused": "true",
}
GET_PAGES = {
    "/admin/": ["agent_id", "after"],
    "/admin/agent": ["agent_id", "after"],
    "/admin/memories": [
        "agent_id",
        "user_id",
        "cursor",
        "memory_type",
        "include_archived",
        "created_after",
        "metadata",
    ],
    "/admin/search": [
        "agent_id",
        "user_id",
        "query",
        "top_k",
        "alpha",
        "half_life_days",
        "mode",
        "memory_type",
        "include_archived",
    ],
    "/admin/memory": ["agent_id", "user_id", "id"],
    "/admin/files": ["agent_id", "user_id", "prefix", "limit", "after"],
    "/admin/file": ["agent_id", "user_id", "path", "limit", "before"],
    "/admin/revision": ["agent_id", "user_id", "path", "revision"],
    "/admin/diff": ["agent_id", "user_id", "path", "from_revision", "to_revision"],
    "/admin/access-log": ["agent_id", "user_id", "since", "until", "limit", "before"],
    "/admin/dream": ["agent_id", "user_id", "limit", "before", "after"],
    "/admin/keys": ["agent_id"],
    "/admin/audit": ["limit", "before"],
    "/admin/login": ["next", "notice"],
}
POST_PAGES = {
    "/admin/restore": ["agent_id", "user_id", "path", "revision"],
    "/admin/dream/config": ["enabled", "threshold", "batch_size"],
    "/admin/dream/pause": ["agent_id", "user_id", "paused", "next"],
    "/admin/dream/restore": ["run_id", "agent_id"],
    "/admin/dream/run": ["agent_id", "user_id"],
    "/admin/keys": ["access", "agent_id", "user_ids", "name", "expires_at"],
    "/admin/keys/revoke": ["key"],
    "/admin/erase": ["agent_id", "user_id", "confirm"],
}


def test_junk_in_any_field_is_never_a_500(service: Service) -> None:
    """Each field of each page, one at a time, set to text that is not what it expects."""
    with client(service.base_url) as http:
        token = _csrf(http)
        sent = 0
        for pages, post in ((GET_PAGES, False), (POST_PAGES, True)):
            for path, names in pages.items():
                for name in names:
                    for junk in JUNK:
                        values = {**BASE, name: junk}
                        if post:
                            answer = http.post(path, data={**values, "csrf": token})
                        else:
                            answer = http.get(path, params=values)
                        sent += 1
                        assert answer.status_code < 500, (path, name, junk, answer.text[:500])
                        if answer.status_code != 303:  # a done action: back to a page
                            assert answer.headers["content-type"].startswith("text/html"), path
                        assert "Traceback" not in answer.text
        assert sent == len(JUNK) * sum(len(n) for p in (GET_PAGES, POST_PAGES) for n in p.values())
        # the service is still open: no junk made a key
        assert http.get("/v1/admin/keys").json()["keys"] == []


BAD_PAGES = [
    ("/admin/memory?agent_id=a&user_id=u&id=not-a-uuid", 422, "id: not a memory id"),
    (f"/admin/memory?agent_id=a&user_id=u&id={uuid.uuid4()}", 404, "not found"),
    ("/admin/memory?agent_id=a", 422, "user_id"),
    ("/admin/search?agent_id=a&user_id=u&query=x&top_k=abc", 422, "top_k"),
    ("/admin/search?agent_id=a&user_id=u&query=x&top_k=1000", 422, "top_k"),
    ("/admin/search?agent_id=a&user_id=u&query=x&mode=psychic", 422, "mode"),
    ("/admin/search?agent_id=a&user_id=u&query=", 422, "query"),
    ("/admin/search?agent_id=a&user_id=u&query=x&alpha=2", 422, "alpha"),
    ("/admin/memories", 422, "agent_id"),
    ("/admin/memories?agent_id=a&user_id=u&cursor=garbage", 422, "cursor"),
    ("/admin/memories?agent_id=a&user_id=u&memory_type=dream", 422, "memory_type"),
    ("/admin/memories?agent_id=" + "x" * 500 + "&user_id=u", 422, "agent_id"),
    ("/admin/agent", 422, "agent_id"),
    ("/admin/file?agent_id=a&user_id=u&path=user/nope.md", 404, "user/nope.md"),
    ("/admin/file?agent_id=a&user_id=u&path=../x", 422, "path"),
    ("/admin/revision?agent_id=a&user_id=u&path=user/x.md&revision=zero", 422, "revision"),
    ("/admin/diff?agent_id=a&user_id=u&path=user/x.md&from_revision=1", 422, "to_revision"),
    ("/admin/diff?agent_id=a&user_id=u&path=user/x.md&from_revision=1&to_revision=2", 404, "x.md"),
    ("/admin/access-log?agent_id=a&user_id=u&since=yesterday", 422, "since"),
    ("/admin/dream?limit=0", 422, "limit"),
    ("/admin/dream?after=zz", 422, "after"),
    ("/admin/audit?before=-5", 422, "before"),
    ("/admin/keys?agent_id=" + "%00", 422, "agent_id"),
    ("/admin/no-such-page", 404, "no console page"),
]


def _bad_fields(answer: httpx.Response) -> list[str]:
    """The fields an error page names (its list of `field: message`)."""
    _html_error(answer, 422)
    return [item.split(":", 1)[0] for item in re.findall(r"<li>([^<]*)</li>", answer.text)]


def test_every_bad_field_is_reported(service: Service) -> None:
    """A query string or form with two bad fields names both (not only the first)."""
    with client(service.base_url) as http:
        token = _csrf(http)
        pages = {
            "/admin/memory?agent_id=a&user_id=&id=42": ["user_id", "id"],
            "/admin/search?agent_id=a&user_id=u&query=x&top_k=1000&alpha=2": ["top_k", "alpha"],
            "/admin/search?agent_id=&user_id=u&query=&top_k=0": ["agent_id", "query", "top_k"],
            "/admin/dream?limit=0&after=zz": ["limit", "after"],
        }
        for path, fields in pages.items():
            assert sorted(_bad_fields(http.get(path))) == sorted(fields), path
        forms = {
            "/admin/dream/config": (
                {"threshold": "1", "batch_size": "0", "enabled": "true"},
                ["threshold", "batch_size"],
            ),
            "/admin/keys": (
                {"access": "root", "agent_id": "x" * 500, "expires_at": "someday"},
                ["access", "agent_id", "expires_at"],
            ),
        }
        for path, (form, fields) in forms.items():
            answer = http.post(path, data={**form, "csrf": token})
            assert sorted(_bad_fields(answer)) == sorted(fields), (path, answer.text[-800:])


def test_erasing_a_user_takes_the_user_id_typed_again(service: Service) -> None:
    """Issue 33: the console's erase button posts the confirmation (the user id typed
    again), which memex.erase_user checks: a wrong one erases nothing."""
    who = {"agent_id": "erase-agent", "user_id": "ivy"}
    with client(service.base_url) as http:
        for content in ("Ivy likes tea.", "Ivy lives in Oslo."):
            assert http.post("/v1/memories", json={**who, "content": content}).status_code == 201
        page = http.get("/admin/memories", params=who)
        assert 'id="erase-user"' in page.text and 'name="confirm"' in page.text
        token = _csrf(http)
        for confirm in ("", "IVY", "someone"):
            wrong = http.post("/admin/erase", data={**who, "confirm": confirm, "csrf": token})
            _html_error(wrong, 422)
            assert "confirm" in wrong.text
        assert http.get("/v1/memories/count", params=who).json()["count"] == 2
        done = http.post(
            "/admin/erase", data={**who, "confirm": "ivy", "csrf": token}, follow_redirects=False
        )
        assert done.status_code == 303, done.text[:800]
        assert done.headers["location"] == "/admin/agent?agent_id=erase-agent&notice=erased"
        assert "User erased" in http.get(done.headers["location"]).text
        assert http.get("/v1/memories/count", params=who).json()["count"] == 0


def test_console_over_http(service: Service) -> None:
    with client(service.base_url) as http:
        # open: loopback without keys
        moved = http.get("/admin", follow_redirects=False)
        assert (moved.status_code, moved.headers["location"]) == (307, "/admin/")
        home = http.get("/admin/")
        assert home.status_code == 200 and "<h1>Tenants</h1>" in home.text
        cookie = home.headers["set-cookie"].lower()
        assert CSRF_COOKIE in cookie and "httponly" in cookie and "samesite=strict" in cookie
        assert "secure" not in cookie  # loopback: plain http
        assert "frame-ancestors 'none'" in home.headers["content-security-policy"]
        css = http.get("/admin/static/console.css")
        assert css.status_code == 200 and css.headers["content-type"].startswith("text/css")
        stored = http.post(
            "/v1/memories", json={"agent_id": "a", "user_id": "u", "content": "<b>hi</b>"}
        )
        assert stored.status_code == 201
        home = http.get("/admin/")
        assert '<a href="/admin/agent?agent_id=a">a</a>' in home.text
        page = http.get("/admin/memories", params={"agent_id": "a", "user_id": "u"})
        assert "&lt;b&gt;hi&lt;/b&gt;" in page.text and "<b>hi</b>" not in page.text  # escaped

        for path, status, words in BAD_PAGES:
            answer = http.get(path)
            _html_error(answer, status)
            assert words in answer.text, (path, answer.text[:1500])
        wrong = http.delete("/admin/keys")
        _html_error(wrong, 405)
        assert wrong.headers["allow"] == "GET, HEAD, POST"
        _html_error(http.get("/admin/dream/pause"), 405)

        # POSTs: the page's token, from this origin, as a form
        token = _csrf(http)
        form = {"agent_id": "a", "user_id": "u", "paused": "true", "next": "/admin/"}
        _html_error(http.post("/admin/dream/pause", data=form), 403)  # no token
        _html_error(http.post("/admin/dream/pause", data={**form, "csrf": "x" * 43}), 403)
        evil = http.post(
            "/admin/dream/pause",
            data={**form, "csrf": token},
            headers={"Origin": "http://evil.example"},
        )
        assert evil.status_code == 403
        cross = http.post(
            "/admin/dream/pause",
            data={**form, "csrf": token},
            headers={"Sec-Fetch-Site": "cross-site"},
        )
        _html_error(cross, 403)
        _html_error(http.post("/admin/dream/pause", json={**form, "csrf": token}), 415)
        _html_error(
            http.post("/admin/dream/pause", data={**form, "csrf": token, "user_id": ""}), 422
        )
        _html_error(http.post("/admin/dream/restore", data={"csrf": token, "run_id": "x"}), 422)
        _html_error(http.post("/admin/dream/restore", data={"csrf": token, "run_id": "99"}), 404)
        _html_error(http.post("/admin/dream/config", data={"csrf": token, "threshold": "1"}), 422)
        _html_error(http.post("/admin/keys", data={"csrf": token, "access": "root"}), 422)
        _html_error(http.post("/admin/keys/revoke", data={"csrf": token, "key": "nope"}), 404)
        _html_error(
            http.post("/admin/restore", data={"csrf": token, "agent_id": "a", "user_id": "u"}), 422
        )
        before = http.get("/v1/admin/dream/config").json()
        saved = http.post(
            "/admin/dream/config",
            data={"csrf": token, "threshold": "50", "enabled": "false", "batch_size": ""},
            follow_redirects=False,
        )
        assert (saved.status_code, saved.headers["location"]) == (
            303,
            "/admin/dream?notice=config_saved",
        )
        config = http.get("/v1/admin/dream/config").json()
        assert (config["threshold"], config["enabled"]) == (50, False)
        assert config["batch_size"] == before["batch_size"]  # an empty field: unchanged
        ok = http.post(
            "/admin/dream/pause",
            data={**form, "csrf": token},
            headers={"Origin": service.base_url},
            follow_redirects=False,
        )
        assert (ok.status_code, ok.headers["location"]) == (303, "/admin/?notice=paused")
        users = http.get("/v1/admin/dream/users", params={"agent_id": "a"}).json()["users"]
        assert users[0]["paused"] is True

        # the host guard covers the console as it covers the API
        assert http.get("/admin/", headers={"Host": "evil.example"}).status_code == 421

        # once a key exists: the login page, admin keys only, an HttpOnly strict cookie
        admin = http.post("/v1/admin/keys", json={"access": "admin"}).json()["token"]
        reader = http.post(
            "/v1/admin/keys",
            json={"access": "read", "agent_id": "a"},
            headers={"Authorization": f"Bearer {admin}"},
        ).json()
    with client(service.base_url) as http:
        gone = http.get("/admin/files?agent_id=a&user_id=u", follow_redirects=False)
        assert gone.status_code == 303
        assert (
            gone.headers["location"]
            == "/admin/login?next=%2Fadmin%2Ffiles%3Fagent_id%3Da%26user_id%3Du"
        )
        assert http.get("/v1/admin/keys").status_code == 401  # the API agrees
        token = re.search(r'name="csrf" value="([^"]+)"', http.get("/admin/login").text)
        assert token
        login = {"csrf": token.group(1), "next": "/admin/keys"}
        for key, status in (("", 422), ("mxk_nope_nope", 401), (reader["token"], 403)):
            refused = http.post("/admin/login", data={**login, "key": key})
            _html_error(refused, status)
            assert KEY_COOKIE not in refused.headers.get("set-cookie", "")
        assert "not an admin key" in refused.text
        _html_error(http.post("/admin/login", data={"key": admin, "next": "/admin/"}), 403)
        welcome = http.post("/admin/login", data={**login, "key": admin}, follow_redirects=False)
        assert (welcome.status_code, welcome.headers["location"]) == (303, "/admin/keys")
        cookie = next(
            c for c in welcome.headers.get_list("set-cookie") if c.startswith(KEY_COOKIE)
        ).lower()
        assert "httponly" in cookie and "samesite=strict" in cookie and "path=/admin" in cookie
        # beyond loopback the cookie is Secure, and plain HTTP is called out
        public = {"Host": PUBLIC_HOST, "Origin": f"https://{PUBLIC_HOST}"}
        assert 'id="plain-http"' in http.get("/admin/login", headers=public).text
        assert 'id="plain-http"' not in http.get("/admin/login").text
        behind_tls = httpx.post(  # its own cookie jar: a Secure cookie goes over https only
            f"{service.base_url}/admin/login",
            data={**login, "key": admin},
            headers={**public, "Cookie": f"{CSRF_COOKIE}={login['csrf']}"},
            follow_redirects=False,
        )
        assert behind_tls.status_code == 303
        secure = [c.lower() for c in behind_tls.headers.get_list("set-cookie")]
        assert secure and all("; secure" in c for c in secure), secure
        keys = http.get("/admin/keys")
        assert keys.status_code == 200 and reader["prefix"] in keys.text
        assert admin not in keys.text
        # a revoked key's cookie leads back to the login page
        revoke = http.delete(
            "/v1/admin/keys/" + reader["id"], headers={"Authorization": f"Bearer {admin}"}
        )
        assert revoke.status_code == 200
        # an agent's admin key: its agent, once named
        agent_admin = http.post(
            "/v1/admin/keys",
            json={"access": "admin", "agent_id": "a"},
            headers={"Authorization": f"Bearer {admin}"},
        ).json()["token"]
        with client(service.base_url) as scoped:
            token_page = scoped.get("/admin/login").text
            csrf = re.search(r'name="csrf" value="([^"]+)"', token_page)
            assert csrf
            scoped.post("/admin/login", data={"csrf": csrf.group(1), "key": agent_admin})
            hint = scoped.get("/admin/")
            assert hint.status_code == 200 and 'id="scoped"' in hint.text
            mine = scoped.get("/admin/", params={"agent_id": "a"})
            assert '<a href="/admin/agent?agent_id=a">a</a>' in mine.text
            _html_error(scoped.get("/admin/", params={"agent_id": "b"}), 403)
            _html_error(scoped.get("/admin/agent", params={"agent_id": "b"}), 403)
            assert scoped.get("/admin/agent", params={"agent_id": "a"}).status_code == 200
        out = http.post("/admin/logout", data={"csrf": token.group(1)}, follow_redirects=False)
        assert out.status_code == 303 and out.headers["location"].startswith("/admin/login")
        assert http.get("/admin/", follow_redirects=False).status_code == 303
        http.cookies.set(KEY_COOKIE, reader["token"], path="/admin")
        stale = http.get("/admin/", follow_redirects=False)
        assert stale.status_code == 303 and KEY_COOKIE in stale.headers["set-cookie"]


def test_keys_page_names_creators_by_prefix_and_confirms_the_last_key(
    pg_server: EmbeddedPostgres, template_db: str
) -> None:
    """A key made by another key shows that key's prefix as its creator, as keys are
    listed; revoking the last live key shows a page saying what it does, and only its
    confirmation revokes it (before: revoked at once, and the database reopened)."""
    with (
        service_on_new_database(pg_server, "console_keys") as service,
        client(service.base_url) as http,
    ):
        admin = http.post("/v1/admin/keys", json={"access": "admin"}).json()
        bearer = {"Authorization": f"Bearer {admin['token']}"}
        reader = http.post("/v1/admin/keys", json={"access": "read"}, headers=bearer).json()
        page = http.get("/admin/login").text
        csrf = re.search(r'name="csrf" value="([^"]+)"', page)
        assert csrf
        http.post("/admin/login", data={"csrf": csrf.group(1), "key": admin["token"]})
        keys = http.get("/admin/keys")
        assert keys.status_code == 200, keys.text[:500]
        row = re.search(rf'<tr id="key-{reader["prefix"]}">.*?</tr>', keys.text, re.S)
        assert row and f"<td>key {admin['prefix']}</td>" in row.group(0), keys.text
        assert f"key:{admin['id']}" not in keys.text
        form = {"csrf": csrf.group(1)}
        done = http.post(
            "/admin/keys/revoke", data={**form, "key": reader["id"]}, follow_redirects=False
        )
        assert done.status_code == 303  # another key is live: no question asked
        asked = http.post("/admin/keys/revoke", data={**form, "key": admin["id"]})
        assert asked.status_code == 409, asked.text[:500]
        assert 'id="last-key-warning"' in asked.text and "last live key" in asked.text
        assert 'name="confirm_last" value="yes"' in asked.text
        assert http.get("/v1/admin/keys", headers=bearer).status_code == 200  # still live
        confirmed = http.post(
            "/admin/keys/revoke",
            data={**form, "key": admin["id"], "confirm_last": "yes"},
            follow_redirects=False,
        )
        assert confirmed.status_code == 303, confirmed.text[:500]
        assert http.get("/v1/admin/keys", headers=bearer).status_code == 401
        assert (
            http.get("/v1/memories/count", params={"agent_id": "a", "user_id": "u"}).status_code
            == 401
        )
