"""The admin console as an operator meets it: Debian's headless Chromium, driven by
Selenium through Debian's chromedriver, against a real service holding real data (stored
through the REST API). The browser logs in with an admin key (after a read key and no key
are refused), searches and reads the score breakdown, opens a memory, a file's revisions
and their diff, restores a revision, pauses a user's consolidation, undoes a run, and
creates and revokes a key; the API confirms every change. A screenshot of each step is
kept in $MEMEX_TEST_ARTIFACTS/console (default test-artifacts/console)."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest
from selenium import webdriver
from selenium.common.exceptions import StaleElementReferenceException, WebDriverException
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webelement import WebElement
from selenium.webdriver.support import expected_conditions
from selenium.webdriver.support.ui import Select, WebDriverWait

from memexdb.embedded import EmbeddedPostgres
from tests.live_service import Service, artifacts_dir, client, service_on_new_database
from tests.test_docs_ui import browser  # noqa: F401  (the fixture: Debian's chromium)

A, U = "console-agent", "alice"
PATH = "user/profile.md"
REV1 = "# Profile\n\nAlice drinks green tea every morning.\nShe lives in Lisbon.\n"
REV2 = "# Profile\n\nAlice switched to espresso.\nShe lives in Lisbon.\nShe plays chess.\n"
MEMORIES = [
    ("Alice ordered a double espresso at the station cafe.", "episodic"),
    ("Alice said the coffee machine at work is broken again.", "episodic"),
    ("Alice went hiking in Sintra on Saturday.", "episodic"),
    ("Alice asked for a reminder about her dentist appointment.", "episodic"),
    ("Alice prefers her coffee black, no sugar.", "semantic"),
    ("To book Alice a table, call the restaurant before noon.", "procedural"),
]
WAIT = 20.0  # seconds for any page of the console (server-rendered, small)


@pytest.fixture(scope="module")
def service(pg_server: EmbeddedPostgres, template_db: str) -> Iterator[Service]:
    with service_on_new_database(pg_server, "console-ui") as running:
        yield running


def seed(http: httpx.Client) -> dict[str, Any]:
    """Memories, a file with two revisions and a consolidation run, stored while the
    loopback service is open; then an admin key and a read key (the service is keyed
    from then on)."""
    batch = [{"agent_id": A, "user_id": U, "content": c, "memory_type": t} for c, t in MEMORIES]
    assert http.post("/v1/memories/batch", json={"memories": batch}).status_code == 201
    for content in (REV1, REV2):
        body = {"agent_id": A, "user_id": U, "path": PATH, "content": content}
        assert http.put("/v1/files", json=body).status_code == 200
    run = http.post("/v1/admin/dream/run", json={"agent_id": A, "user_id": U, "force": True})
    assert run.status_code == 200, run.text
    condensed = [r for r in run.json()["runs"] if r["kind"] == "condense"]
    assert condensed and condensed[0]["status"] == "done", run.text
    admin = http.post("/v1/admin/keys", json={"access": "admin", "name": "console test"})
    token = admin.json()["token"]
    reader = http.post(
        "/v1/admin/keys",
        json={"access": "read", "agent_id": A},
        headers={"Authorization": f"Bearer {token}"},
    )
    return {
        "admin": token,
        "reader": reader.json()["token"],
        "run": condensed[0]["id"],
        "summary": condensed[0]["summary_id"],
        "condensed": condensed[0]["memories_in"],
    }


def _stale(element: WebElement) -> bool:
    """The element's page is gone (expected_conditions.staleness_of, plus the way
    chromedriver sometimes says so mid-navigation: "Node ... does not belong to the
    document", a plain WebDriverException)."""
    try:
        element.is_enabled()
    except StaleElementReferenceException:
        return True
    except WebDriverException as exc:
        if "does not belong to the document" in str(exc):
            return True
        raise
    return False


class Steps:
    """The browser, its bounded waits and a numbered screenshot per step."""

    def __init__(self, driver: webdriver.Chrome, base_url: str) -> None:
        self.driver = driver
        self.base_url = base_url
        self.shots = artifacts_dir("console")
        for old in self.shots.glob("*.png"):
            old.unlink()
        self.count = 0

    def shot(self, name: str) -> None:
        self.count += 1
        path = self.shots / f"{self.count:02d}-{name}.png"
        self.driver.save_screenshot(str(path))
        assert path.stat().st_size > 5_000, path

    def wait(self, check: Callable[[webdriver.Chrome], Any]) -> Any:
        return WebDriverWait(self.driver, WAIT, poll_frequency=0.1).until(check)

    def open(self, path: str) -> None:
        self.driver.get(f"{self.base_url}{path}")

    def heading(self) -> str:
        return str(self.driver.find_element(By.TAG_NAME, "h1").text)

    def find(self, css: str) -> WebElement:
        return self.driver.find_element(By.CSS_SELECTOR, css)

    def click_and_load(self, element: WebElement, *, confirm: bool = False) -> None:
        """Click and wait for the next page (accepting the confirm dialog first)."""
        old = self.driver.find_element(By.TAG_NAME, "html")
        element.click()
        if confirm:
            alert = self.wait(expected_conditions.alert_is_present())
            alert.accept()
        self.wait(lambda _: _stale(old))
        self.wait(lambda d: d.execute_script("return document.readyState") == "complete")

    def text(self) -> str:
        return str(self.driver.find_element(By.TAG_NAME, "body").text)

    def login(self, key: str) -> None:
        field = self.find("#key")
        field.clear()
        field.send_keys(key)
        self.click_and_load(self.find("#login"))


def test_console_in_a_browser(service: Service, browser: webdriver.Chrome) -> None:  # noqa: F811
    with client(service.base_url) as http:
        keys = seed(http)
    api = client(service.base_url)
    api.headers["Authorization"] = f"Bearer {keys['admin']}"
    s = Steps(browser, service.base_url)

    # No key: the console sends the browser to its login page
    s.open("/admin/")
    s.wait(lambda d: "/admin/login" in d.current_url)
    assert s.heading() == "Log in" and "admin" in s.text()
    s.shot("login")
    # a read key is refused
    s.login(keys["reader"])
    assert "not an admin key" in s.find("#error").text
    assert "/admin/login" in browser.current_url
    s.shot("read-key-refused")
    # the admin key opens the tenants page
    s.login(keys["admin"])
    s.wait(lambda d: s.heading() == "Tenants")
    row = s.find("#agents tbody tr").text
    assert row.startswith(f"{A} 1 ")  # the agent, its one user, then the counts
    s.shot("tenants")

    # The agent's users, then alice's memories
    s.click_and_load(browser.find_element(By.LINK_TEXT, A))
    assert s.heading() == f"Agent {A}"
    assert s.find(f"#user-{U} .paused-state").text.startswith("active")
    s.shot("agent")
    s.click_and_load(s.find(f"#user-{U}").find_element(By.LINK_TEXT, "Memories"))
    assert s.heading() == f"Memories of {A} / {U}"
    assert "archived" in s.find("#memories").text or "summary of" in s.find("#memories").text

    # Search with no options, as a user would first: the default ranking, the parts of
    # each score, and the formula it used
    s.find("#query").send_keys("How does Alice take her coffee?")
    assert Select(s.find("select[name=mode]")).first_selected_option.text == "default"
    s.click_and_load(s.find("#search"))
    assert "score = relevance · (1 + 0.25·recency) · importance" in s.text()
    hits = browser.find_elements(By.CSS_SELECTOR, "#results tr.hit")
    assert hits, s.text()
    first = hits[0]
    parts = {
        name: first.find_element(By.CSS_SELECTOR, f"td.{name}").text
        for name in ("similarity", "text-rank", "relevance", "recency", "importance", "score")
    }
    for name in ("similarity", "relevance", "recency", "score"):
        assert 0.0 <= float(parts[name]) <= 1.5, parts
    assert float(parts["importance"]) == 1.0
    # the default formula, from the parts shown (4 decimals each)
    expected = float(parts["relevance"]) * (1 + 0.25 * float(parts["recency"]))
    assert abs(float(parts["score"]) - expected) < 1e-3, parts
    assert "coffee" in first.text.lower(), first.text
    scores = [float(h.find_element(By.CSS_SELECTOR, "td.score").text) for h in hits]
    assert scores == sorted(scores, reverse=True)
    s.shot("search")

    # Open the best hit: its content, metadata and lineage
    title = first.find_element(By.CSS_SELECTOR, "td a").text
    s.click_and_load(first.find_element(By.CSS_SELECTOR, "td a"))
    assert s.heading().startswith("Memory of")
    content = s.find("#memory-content").text
    assert content.startswith(title.rstrip(".…").rstrip())
    assert s.find("#archived").text == "no"
    s.shot("memory")

    # Lineage: the consolidation summary names its sources; a source, archived, its summary
    s.open(f"/admin/memory?agent_id={A}&user_id={U}&id={keys['summary']}")
    sources = s.find("#source-ids").find_elements(By.TAG_NAME, "a")
    assert len(sources) == keys["condensed"] >= 2
    s.click_and_load(sources[0])
    assert s.find("#archived").text != "no"
    assert s.find("#superseded-by").text == keys["summary"]
    s.shot("archived-source")

    # The file, its two revisions, and the diff between them
    s.click_and_load(browser.find_element(By.LINK_TEXT, "Files"))
    s.click_and_load(browser.find_element(By.LINK_TEXT, PATH))
    assert s.heading() == PATH
    assert s.find("#current-revision").text == "2"
    assert "espresso" in s.find("#file-content").text
    assert len(browser.find_elements(By.CSS_SELECTOR, "#revisions tbody tr")) == 2
    s.shot("file")
    s.click_and_load(s.find("#diff"))
    diff = s.find("#diff-text")
    assert "-Alice drinks green tea every morning." in diff.text
    assert "+Alice switched to espresso." in diff.text
    assert "+She plays chess." in diff.text
    assert diff.find_elements(By.CSS_SELECTOR, "span.add") and diff.find_elements(
        By.CSS_SELECTOR, "span.del"
    )
    # one line box per line: each line starts where the one above ends (no blank between)
    boxes = browser.execute_script(
        "return [...arguments[0].querySelectorAll('span')]"
        ".map(e => [e.getBoundingClientRect().top, e.getBoundingClientRect().height])",
        diff,
    )
    assert len(boxes) >= 5 and all(height > 0 for _, height in boxes), boxes
    for (top, height), (next_top, _) in itertools.pairwise(boxes):
        assert abs(next_top - (top + height)) < 1, boxes
    s.shot("diff")

    # Restore revision 1 (after the confirm dialog): a new revision with its content
    s.click_and_load(browser.find_element(By.LINK_TEXT, "Back to the file"))
    s.click_and_load(s.find("#revision-1 button.restore"), confirm=True)
    assert "Revision restored" in s.find("#notice").text
    assert s.find("#current-revision").text == "3"
    s.shot("restored")
    read = api.get("/v1/files/read", params={"agent_id": A, "user_id": U, "path": PATH})
    assert read.status_code == 200 and read.json()["content"] == REV1
    revisions = api.get(
        "/v1/files/revisions", params={"agent_id": A, "user_id": U, "path": PATH}
    ).json()["revisions"]
    assert [r["revision"] for r in revisions] == [3, 2, 1]
    assert revisions[0]["operation"] == "restore"
    access = api.get("/v1/access-log", params={"agent_id": A, "user_id": U}).json()["events"]
    assert any(e["operation"] == "restore" for e in access)
    s.click_and_load(browser.find_element(By.LINK_TEXT, "Access log"))
    assert "restore" in s.find("#access-log").text
    s.shot("access-log")

    # Pause alice's consolidation from the agent page
    s.open(f"/admin/agent?agent_id={A}")
    s.click_and_load(s.find(f"#user-{U} button.pause"))
    assert "paused" in s.find("#notice").text
    assert s.find(f"#user-{U} .paused-state").text.startswith("paused")
    s.shot("paused")
    users = api.get("/v1/admin/dream/users", params={"agent_id": A}).json()["users"]
    assert [(u["user_id"], u["paused"]) for u in users] == [(U, True)]

    # Consolidation: the run is listed; undo it
    s.click_and_load(browser.find_element(By.LINK_TEXT, "Consolidation"))
    run_row = s.find(f"#run-{keys['run']}")
    assert (
        "condense" in run_row.text
        and run_row.find_element(By.CSS_SELECTOR, ".status").text == "done"
    )
    s.shot("consolidation")
    s.click_and_load(run_row.find_element(By.CSS_SELECTOR, "button.undo"), confirm=True)
    assert "Run undone" in s.find("#notice").text
    assert s.find(f"#run-{keys['run']} .status").text == "restored"
    runs = api.get("/v1/admin/dream/runs", params={"agent_id": A, "user_id": U}).json()["runs"]
    assert {r["id"]: r["status"] for r in runs}[keys["run"]] == "restored"
    s.shot("run-undone")

    # Keys: create one (its token shown once, and it works), then revoke it
    s.click_and_load(browser.find_element(By.LINK_TEXT, "Keys"))
    Select(s.find("#new-access")).select_by_visible_text("read")
    s.find("#new-agent").send_keys(A)
    s.find("#new-users").send_keys(U)
    s.find("#new-name").send_keys("made in the browser")
    s.click_and_load(s.find("#create"))
    assert s.heading() == "Key created"
    token = s.find("#token").text
    prefix = s.find("#created-prefix").text
    assert token.startswith(f"mxk_{prefix}_")
    # its copy button puts the token on the clipboard
    browser.execute_cdp_cmd(
        "Browser.grantPermissions",
        {
            "origin": service.base_url,
            "permissions": ["clipboardReadWrite", "clipboardSanitizedWrite"],
        },
    )
    s.find("#copy-token").click()
    WebDriverWait(browser, WAIT).until(lambda _: s.find("#copy-token").text == "Copied")
    pasted = browser.execute_async_script(
        "const done = arguments[arguments.length - 1];"
        "navigator.clipboard.readText().then(done, (e) => done('unreadable: ' + e));"
    )
    assert pasted == token
    s.shot("key-created")
    count = {"agent_id": A, "user_id": U}
    bearer = {"Authorization": f"Bearer {token}"}
    assert (
        httpx.get(f"{service.base_url}/v1/memories/count", params=count, headers=bearer).status_code
        == 200
    )
    s.click_and_load(s.find("#back-to-keys"))
    assert token not in s.text()  # never shown again
    s.click_and_load(s.find(f"#key-{prefix} button.revoke"), confirm=True)
    assert "Key revoked" in s.find("#notice").text
    assert s.find(f"#key-{prefix} .state").text.startswith("revoked")
    s.shot("key-revoked")
    refused = httpx.get(f"{service.base_url}/v1/memories/count", params=count, headers=bearer)
    assert refused.status_code == 401

    # Erase the user from its memories page: a confirmation that is not the user id erases
    # nothing; the user id typed again erases every memory of the user
    def remaining() -> int:
        answer = api.get("/v1/memories/count", params=count)
        assert answer.status_code == 200, answer.text
        return int(answer.json()["count"])

    before = remaining()
    assert before > 0
    s.open(f"/admin/memories?agent_id={A}&user_id={U}")
    s.find("#erase-confirm").send_keys(f"{U}-not")
    s.click_and_load(s.find("#erase"))
    assert "User erased" not in s.text()
    assert remaining() == before
    s.open(f"/admin/memories?agent_id={A}&user_id={U}")
    s.find("#erase-confirm").send_keys(U)
    s.click_and_load(s.find("#erase"))
    assert "User erased" in s.find("#notice").text
    assert remaining() == 0
    s.shot("user-erased")

    # Bad input is a page that says what is wrong
    s.open(f"/admin/memory?agent_id={A}&user_id={U}&id=42")
    assert s.heading() == "Invalid input" and "not a memory id" in s.find(".error-fields").text
    s.shot("bad-input")

    # Log out: back to the login page, and the console is closed again
    s.open("/admin/")
    s.click_and_load(s.find("#logout"))
    assert s.heading() == "Log in"
    s.open("/admin/keys")
    s.wait(lambda d: "/admin/login" in d.current_url)
    s.shot("logged-out")

    # Everything came from the service itself; no script error, no CSP violation
    loaded = browser.execute_script(
        "return performance.getEntriesByType('resource').map(e => e.name)"
    )
    assert all(url.startswith(f"{service.base_url}/") for url in loaded), loaded
    errors = [
        e
        for e in browser.get_log("browser")
        if e["level"] == "SEVERE" and "Failed to load resource" not in e["message"]
    ]
    assert not errors, errors
    api.close()
