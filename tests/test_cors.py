"""CORS (MEMEX_CORS_ORIGINS) on a real service: preflights answered for listed origins,
Access-Control-Allow-Origin for them alone (never `*`, no credentials header), nothing for
other origins, and the host guard's Origin check combined with it (a CORS origin passes
it; an origin neither setting lists is refused). Then in Chromium: a page served on
another loopback origin calls the API with fetch and an Authorization header, which works
for a listed origin and is blocked for an unlisted one."""

from __future__ import annotations

import contextlib
import functools
import http.server
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from selenium import webdriver
from selenium.webdriver.support.ui import WebDriverWait

from memexdb.config import Settings, SettingsError
from memexdb.embedded import EmbeddedPostgres
from memexdb.rest import cors
from tests.live_service import Service, artifacts_dir, service_on_new_database
from tests.test_docs_ui import RENDER_TIMEOUT
from tests.test_docs_ui import browser as browser  # the fixture

TENANT = {"agent_id": "cors-agent", "user_id": "alice"}
FOREIGN = "https://evil.example"


@dataclass
class Page:
    """A static page on its own loopback origin (another port than the service's)."""

    server: http.server.ThreadingHTTPServer

    @property
    def origin(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"


@contextlib.contextmanager
def page_server(directory: Path) -> Iterator[Page]:
    (directory / "index.html").write_text(
        "<!doctype html><html><head><title>app</title></head><body>app</body></html>"
    )
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(directory))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield Page(server)
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


@dataclass
class Setup:
    service: Service
    listed: Page  # in MEMEX_CORS_ORIGINS
    unlisted: Page  # a loopback origin: passes the default Origin check, but no CORS
    token: str  # a write key of TENANT's agent


@pytest.fixture(scope="module")
def setup(
    pg_server: EmbeddedPostgres, template_db: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Setup]:
    with (
        page_server(tmp_path_factory.mktemp("listed")) as listed,
        page_server(tmp_path_factory.mktemp("unlisted")) as unlisted,
        service_on_new_database(
            pg_server, "cors", MEMEX_CORS_ORIGINS=f"{listed.origin}, https://App.Example.com"
        ) as service,
    ):
        created = httpx.post(
            f"{service.base_url}/v1/admin/keys",
            json={"access": "write", "agent_id": TENANT["agent_id"], "name": "cors test"},
            timeout=30,
        )
        assert created.status_code == 201, created.text
        yield Setup(service, listed, unlisted, created.json()["token"])


def preflight(base_url: str, origin: str, path: str = "/v1/memories") -> httpx.Response:
    return httpx.options(
        f"{base_url}{path}",
        headers={
            "Origin": origin,
            "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Headers": "authorization, content-type",
        },
        timeout=30,
    )


def test_preflight_of_a_listed_origin(setup: Setup) -> None:
    for origin in (setup.listed.origin, "https://app.example.com"):
        answer = preflight(setup.service.base_url, origin)
        assert answer.status_code == 200, answer.text
        headers = answer.headers
        assert headers["access-control-allow-origin"] == origin
        methods = {m.strip() for m in headers["access-control-allow-methods"].split(",")}
        assert methods == set(cors.METHODS)
        allowed = {h.strip().lower() for h in headers["access-control-allow-headers"].split(",")}
        assert {"authorization", "content-type", "memex-min-lsn"} <= allowed
        assert headers["access-control-max-age"] == str(cors.MAX_AGE)
        assert "access-control-allow-credentials" not in headers
        assert "origin" in headers.get("vary", "").lower()
    # every API path answers its preflight (the path's methods need not include OPTIONS)
    for path in ("/v1/memories/search", "/v1/files", "/v1/admin/keys", "/health"):
        assert preflight(setup.service.base_url, setup.listed.origin, path).status_code == 200


def test_no_cors_for_other_origins(setup: Setup) -> None:
    base = setup.service.base_url
    # a loopback origin passes the Origin check (the default) but gets no CORS headers
    answer = preflight(base, setup.unlisted.origin)
    assert answer.status_code == 403
    assert answer.json()["error"]["code"] == "origin_not_allowed"
    assert "MEMEX_CORS_ORIGINS" in answer.json()["error"]["message"]
    assert not [h for h in answer.headers if h.startswith("access-control-")]
    # a foreign origin is refused by the host guard before CORS
    answer = preflight(base, FOREIGN)
    assert answer.status_code == 403
    assert "MEMEX_ALLOWED_ORIGINS" in answer.json()["error"]["message"]
    assert "access-control-allow-origin" not in answer.headers
    # an actual request of an unlisted origin: answered, but nothing lets a page read it
    answer = httpx.get(
        f"{base}/v1/memories/count",
        params=TENANT,
        headers={"Origin": setup.unlisted.origin, "Authorization": f"Bearer {setup.token}"},
        timeout=30,
    )
    assert answer.status_code == 200
    assert "access-control-allow-origin" not in answer.headers
    # OPTIONS without a preflight's headers is not a preflight: the path's 405
    assert httpx.options(f"{base}/v1/memories", timeout=30).status_code == 405


def test_actual_requests_of_a_listed_origin(setup: Setup) -> None:
    base, origin = setup.service.base_url, setup.listed.origin
    headers = {"Origin": origin, "Authorization": f"Bearer {setup.token}"}
    stored = httpx.post(
        f"{base}/v1/memories",
        json={**TENANT, "content": "Alice takes her tea without sugar."},
        headers=headers,
        timeout=60,
    )
    assert stored.status_code == 201, stored.text
    assert stored.headers["access-control-allow-origin"] == origin
    assert "access-control-allow-credentials" not in stored.headers
    exposed = {
        h.strip().lower() for h in stored.headers["access-control-expose-headers"].split(",")
    }
    assert {"retry-after", "x-request-id", "memex-write-lsn"} <= exposed
    # errors are readable by the page too (401, 422)
    for answer in (
        httpx.get(
            f"{base}/v1/memories/count",
            params=TENANT,
            headers={"Origin": origin, "Authorization": "Bearer mxk_not_a_key"},
            timeout=30,
        ),
        httpx.post(f"{base}/v1/memories", json={}, headers=headers, timeout=30),
    ):
        assert answer.status_code in (401, 422), answer.text
        assert answer.headers["access-control-allow-origin"] == origin
    # the console, /docs and /metrics are no part of the API: no CORS there
    for path in ("/docs", "/metrics"):
        answer = httpx.get(f"{base}{path}", headers={"Origin": origin}, timeout=30)
        assert "access-control-allow-origin" not in answer.headers, path


def test_cors_origins_with_allowed_origins(pg_server: EmbeddedPostgres, template_db: str) -> None:
    # MEMEX_ALLOWED_ORIGINS replaces the default (loopback) origins; a CORS origin passes
    # the Origin check without being repeated there; an allowed origin gets no CORS.
    with service_on_new_database(
        pg_server,
        "cors-allowed",
        MEMEX_CORS_ORIGINS="https://app.example.com",
        MEMEX_ALLOWED_ORIGINS="https://other.example.com",
    ) as service:
        base = service.base_url
        listed = preflight(base, "https://app.example.com")
        assert listed.status_code == 200
        assert listed.headers["access-control-allow-origin"] == "https://app.example.com"
        allowed = preflight(base, "https://other.example.com")
        assert allowed.status_code == 403
        assert "MEMEX_CORS_ORIGINS" in allowed.json()["error"]["message"]
        assert "access-control-allow-origin" not in allowed.headers
        for refused in ("http://127.0.0.1:8080", FOREIGN):
            answer = preflight(base, refused)
            assert answer.status_code == 403
            assert "MEMEX_ALLOWED_ORIGINS" in answer.json()["error"]["message"]
        # the MCP endpoint does not take the CORS origin (it answers no preflight)
        mcp = httpx.post(
            f"{base}/mcp",
            json={"jsonrpc": "2.0", "id": 1, "method": "ping"},
            headers={"Origin": "https://app.example.com", "Accept": "application/json"},
            timeout=30,
        )
        assert mcp.status_code == 403


@pytest.mark.parametrize(
    "value",
    ["*", "https://app.example.com/", "app.example.com", "https://app.example.com/path", "ftp://x"],
)
def test_cors_origins_must_be_origins(value: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMEX_CORS_ORIGINS", value)
    with pytest.raises(SettingsError, match="MEMEX_CORS_ORIGINS"):
        Settings.from_env()


def test_cors_origins_are_read_as_a_list(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMEX_CORS_ORIGINS", "https://App.example.com, http://[::1]:3000,,")
    assert Settings.from_env().cors_origin_list == ["https://app.example.com", "http://[::1]:3000"]
    monkeypatch.delenv("MEMEX_CORS_ORIGINS")
    assert Settings.from_env().cors_origin_list == []


FETCH = """
const [url, token, body, done] = arguments;
fetch(url, {
  method: "POST",
  headers: {"Authorization": "Bearer " + token, "Content-Type": "application/json"},
  body: JSON.stringify(body),
}).then(
  (r) => r.json().then((json) => done({status: r.status, body: json})),
  (e) => done({error: String(e)}),
);
"""


def call_from(browser: webdriver.Chrome, page: Page, url: str, token: str, body: Any) -> Any:
    browser.get(f"{page.origin}/index.html")
    WebDriverWait(browser, RENDER_TIMEOUT).until(lambda d: d.title == "app")
    return browser.execute_async_script(FETCH, url, token, body)


def test_a_page_of_a_listed_origin_calls_the_api(setup: Setup, browser: webdriver.Chrome) -> None:
    base = setup.service.base_url
    memory = {**TENANT, "content": "Alice's favourite tea is sencha."}
    stored = call_from(browser, setup.listed, f"{base}/v1/memories", setup.token, memory)
    assert stored.get("status") == 201, stored
    assert stored["body"]["content"] == memory["content"]
    found = call_from(
        browser,
        setup.listed,
        f"{base}/v1/memories/search",
        setup.token,
        {**TENANT, "query": "Which tea does Alice like?"},
    )
    assert found.get("status") == 200, found
    assert stored["body"]["id"] in [r["id"] for r in found["body"]["results"]]
    browser.save_screenshot(str(artifacts_dir() / "cors-listed.png"))

    # the same call from a page of an unlisted origin: the browser blocks it (its
    # preflight gets no CORS headers, so the POST is never sent)
    count_before = httpx.get(
        f"{base}/v1/memories/count",
        params=TENANT,
        headers={"Authorization": f"Bearer {setup.token}"},
        timeout=30,
    ).json()
    blocked = call_from(
        browser,
        setup.unlisted,
        f"{base}/v1/memories",
        setup.token,
        {**TENANT, "content": "This must not be stored."},
    )
    assert "error" in blocked and "Failed to fetch" in blocked["error"], blocked
    console = " ".join(e["message"] for e in browser.get_log("browser"))
    assert "CORS" in console, console
    count_after = httpx.get(
        f"{base}/v1/memories/count",
        params=TENANT,
        headers={"Authorization": f"Bearer {setup.token}"},
        timeout=30,
    ).json()
    assert count_after == count_before
