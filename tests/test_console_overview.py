"""The console's overview charts: a real service (sampling its metrics every second
instead of every ten, so a few seconds of traffic draw lines), real traffic through the
REST API (stores, searches, bad requests) and memories of several tenants spread over
past days, a consolidation run; then the page in Debian's headless Chromium, each chart
checked for what it must show, and a screenshot kept as
$MEMEX_TEST_ARTIFACTS/console-overview.png (default test-artifacts/)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import httpx
import pytest
from selenium import webdriver
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from memexdb.console.history import quantile
from memexdb.console.web import KEY_COOKIE
from memexdb.embedded import EmbeddedPostgres
from memexdb.metrics import LATENCY_BUCKETS
from tests.live_service import Service, artifacts_dir, client, service_on_new_database
from tests.test_docs_ui import browser  # noqa: F401  (the fixture: Debian's chromium)

SAMPLE_SECONDS = 1.0
TRAFFIC_SECONDS = 12.0  # a dozen samples: lines, not dots
TENANTS = {("shop-bot", "alice"): 24, ("shop-bot", "bob"): 14, ("tutor", "carol"): 9}
WAIT = 20.0


@pytest.fixture(scope="module")
def service(pg_server: EmbeddedPostgres, template_db: str) -> Iterator[Service]:
    with service_on_new_database(
        pg_server, "overview", MEMEX_METRICS_HISTORY_SECONDS=str(SAMPLE_SECONDS)
    ) as running:
        yield running


def test_quantile_interpolates_within_a_bucket() -> None:
    """As Prometheus' histogram_quantile: linear within the bucket the rank falls in."""
    bounds = len(LATENCY_BUCKETS) + 1
    at = LATENCY_BUCKETS.index(0.01)  # 10 observations in (5 ms, 10 ms], 10 in (10, 25]
    cumulative = [0.0] * at + [10.0] + [20.0] * (bounds - at - 1)
    cumulative[at - 1] = 0.0
    assert quantile(0.5, cumulative) == pytest.approx(0.01)
    assert quantile(0.25, cumulative) == pytest.approx(0.0075)
    assert quantile(0.99, cumulative) == pytest.approx(0.01 + 0.015 * 0.98)
    assert quantile(0.5, [0.0] * bounds) is None
    # beyond the last bound: the last bound (as Prometheus answers)
    assert quantile(0.99, [0.0] * (bounds - 1) + [3.0]) == LATENCY_BUCKETS[-1]


def _seed(http: httpx.Client) -> None:
    """Memories of three tenants, created over the last days, and one consolidation run
    that condenses alice's old episodes."""
    now = datetime.now(UTC)
    for (agent, user), count in TENANTS.items():
        batch = [
            {
                "agent_id": agent,
                "user_id": user,
                "content": f"{user} note {i}: visited the {['market', 'park', 'library'][i % 3]}",
                "created_at": (now - timedelta(days=i % 10, hours=i)).isoformat(),
            }
            for i in range(count)
        ]
        stored = http.post("/v1/memories/batch", json={"memories": batch})
        assert stored.status_code == 201, stored.text
    run = http.post(
        "/v1/admin/dream/run", json={"agent_id": "shop-bot", "user_id": "alice", "force": True}
    )
    assert run.status_code == 200, run.text
    assert any(r["kind"] == "condense" and r["status"] == "done" for r in run.json()["runs"])


def _traffic(http: httpx.Client) -> None:
    """TRAFFIC_SECONDS of requests whose rate rises and falls: searches, stores and a
    few refused ones (4xx)."""
    started = time.monotonic()
    i = 0
    while time.monotonic() - started < TRAFFIC_SECONDS:
        second = int(time.monotonic() - started)
        burst = 2 + (second % 4) * 2
        for _ in range(burst):
            i += 1
            who = {"agent_id": "tutor", "user_id": "dave"}
            if i % 3 == 0:
                r = http.post("/v1/memories", json={**who, "content": f"dave studied {i}"})
                assert r.status_code == 201
            else:
                r = http.post("/v1/memories/search", json={**who, "query": "what did dave study"})
                assert r.status_code == 200
            if i % 7 == 0:
                assert http.post("/v1/memories", json={"content": "no tenant"}).status_code == 422
        time.sleep(max(0.0, started + second + 1 - time.monotonic()))


def _numbers(path_data: str) -> int:
    """How many points a path draws."""
    return path_data.count("L") + path_data.count("M")


def test_overview_draws_the_service(service: Service, browser: webdriver.Chrome) -> None:  # noqa: F811
    with client(service.base_url) as http:
        _seed(http)
        _traffic(http)
    browser.get(f"{service.base_url}/admin/overview")
    WebDriverWait(browser, WAIT).until(lambda d: d.find_elements(By.ID, "chart-condensed"))
    assert browser.find_element(By.TAG_NAME, "h1").text == "Overview"

    # the figures above the charts
    stats = {
        e.get_attribute("id"): e.find_element(By.CLASS_NAME, "stat-value").text
        for e in browser.find_elements(By.CSS_SELECTOR, ".stat")
    }
    assert stats["stat-tenants"] == "4"  # three seeded, and dave
    assert float(stats["stat-requests"]) > 10, stats
    assert stats["stat-p99"].endswith(" ms"), stats
    assert stats["stat-queue"] == "0", stats  # everything was embedded when stored

    def lines(chart: str) -> dict[str, int]:
        """Each line of a chart by legend position: the points it draws."""
        svg = browser.find_element(By.ID, chart)
        drawn: dict[str, int] = {}
        for path in svg.find_elements(By.CSS_SELECTOR, "path.line"):
            css = (path.get_attribute("class") or "").split()[0]
            drawn[css] = drawn.get(css, 0) + _numbers(path.get_attribute("d") or "")
        return drawn

    def legend(chart: str) -> str:
        svg = browser.find_element(By.ID, chart)
        return " | ".join(t.text for t in svg.find_elements(By.CSS_SELECTOR, "text.legend"))

    # over time: requests (all, 4xx), latency p50 and p99, stores and searches
    requests = lines("chart-requests")
    assert requests.get("s0", 0) >= 8 and requests.get("s1", 0) >= 8, requests
    assert lines("chart-latency").get("s1", 0) >= 8
    assert "p50" in legend("chart-latency") and " ms" in legend("chart-latency")
    traffic = lines("chart-stores-searches")
    assert traffic.get("s0", 0) >= 8 and traffic.get("s1", 0) >= 8, traffic
    assert lines("chart-embed-queue").get("s0", 0) >= 8

    # memories per tenant, largest first, and their growth per day
    tenants = browser.find_element(By.ID, "chart-tenants")
    labels = [t.text for t in tenants.find_elements(By.CSS_SELECTOR, "text.label")]
    values = [int(t.text) for t in tenants.find_elements(By.CSS_SELECTOR, "text.value")]
    expected = {f"{agent} / {user}" for agent, user in TENANTS} | {"tutor / dave"}
    assert set(labels) == expected and values == sorted(values, reverse=True), labels
    assert len(tenants.find_elements(By.CSS_SELECTOR, "rect.bar")) == 4
    growth = browser.find_element(By.ID, "chart-growth")
    assert len(growth.find_elements(By.CSS_SELECTOR, "rect.bar")) >= 10
    assert "tutor / carol 9" in legend("chart-growth")
    # consolidation: the run, and what it condensed
    assert "condense 1" in legend("chart-runs")
    condensed = browser.find_element(By.ID, "chart-condensed")
    assert len(condensed.find_elements(By.CSS_SELECTOR, "rect.bar")) == 1

    shot = artifacts_dir() / "console-overview.png"
    browser.set_window_size(1280, browser.execute_script("return document.body.scrollHeight") + 40)
    browser.save_screenshot(str(shot))
    assert shot.stat().st_size > 20_000
    loaded = browser.execute_script(
        "return performance.getEntriesByType('resource').map(e => e.name)"
    )
    assert all(url.startswith(f"{service.base_url}/") for url in loaded), loaded
    errors = [
        e
        for e in browser.get_log("browser")
        if e["level"] == "SEVERE" and "Failed to load resource" not in e["message"]
    ]
    assert not errors, errors  # no CSP violation: the charts are plain SVG


def test_overview_needs_an_operator_key(service: Service) -> None:
    """An agent's admin key sees its agent's pages, not the whole service's figures."""
    with client(service.base_url) as http:
        operator = http.post("/v1/admin/keys", json={"access": "admin"}).json()["token"]
        agent_admin = http.post(
            "/v1/admin/keys",
            json={"access": "admin", "agent_id": "tutor"},
            headers={"Authorization": f"Bearer {operator}"},
        ).json()["token"]
        for key, status in ((agent_admin, 403), (operator, 200)):
            http.cookies.set(KEY_COOKIE, key, path="/admin")
            page = http.get("/admin/overview")
            assert page.status_code == status, page.text[:800]
