"""`/docs` as a person meets it: Debian's headless Chromium, driven by Selenium through
Debian's chromedriver, loads the page from a real service and must render every operation
of the OpenAPI document, with nothing fetched from outside the service. The screenshot is
kept in test-artifacts/docs.png (or $MEMEX_TEST_ARTIFACTS)."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from selenium import webdriver
from selenium.common.exceptions import TimeoutException
from selenium.webdriver.chrome.service import Service as ChromeService
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from memexdb.embedded import EmbeddedPostgres
from tests.live_service import Service, artifacts_dir, service_on_new_database

RENDER_TIMEOUT = 60.0  # Swagger UI parses a 1.5 MB bundle; a loaded 2-core box is slow
METHODS = {"get", "post", "put", "patch", "delete"}


def browser_paths() -> tuple[str, str]:
    """Debian's chromium and chromedriver. Skipped without them, except in CI (CI set),
    where .ci/run installs them."""
    chromium, driver = shutil.which("chromium"), shutil.which("chromedriver")
    if chromium is None or driver is None:
        message = "Debian's chromium and chromium-driver are not installed"
        if os.environ.get("CI"):
            pytest.fail(f"{message}, but CI needs them for the browser test")
        pytest.skip(f"{message} (apt-get install chromium chromium-driver)")
    return chromium, driver


@pytest.fixture(scope="module")
def service(pg_server: EmbeddedPostgres, template_db: str) -> Iterator[Service]:
    with service_on_new_database(pg_server, "docs") as running:
        yield running


@pytest.fixture
def browser(tmp_path: Path) -> Iterator[webdriver.Chrome]:
    chromium, driver_path = browser_paths()
    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for arg in (
        "--headless=new",
        "--no-sandbox",  # tests run as root
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--window-size=1280,1400",
        f"--user-data-dir={tmp_path / 'profile'}",
    ):
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    chrome_service = ChromeService(
        executable_path=driver_path, log_output=str(tmp_path / "chromedriver.log")
    )
    driver = webdriver.Chrome(options=options, service=chrome_service)
    driver.set_page_load_timeout(RENDER_TIMEOUT)
    driver.set_script_timeout(RENDER_TIMEOUT)
    try:
        yield driver
    finally:
        driver.quit()


def operations(document: dict[str, Any]) -> set[tuple[str, str, str]]:
    """(METHOD, path, summary) of every operation of the OpenAPI document."""
    return {
        (method.upper(), path, op["summary"])
        for path, item in document["paths"].items()
        for method, op in item.items()
        if method in METHODS
    }


def rendered_operations(driver: webdriver.Chrome) -> set[tuple[str, str, str]]:
    found = set()
    for block in driver.find_elements(By.CSS_SELECTOR, ".opblock"):
        method = block.find_element(By.CSS_SELECTOR, ".opblock-summary-method").text
        path = block.find_element(By.CSS_SELECTOR, ".opblock-summary-path").get_attribute(
            "data-path"
        )
        summary = block.find_element(By.CSS_SELECTOR, ".opblock-summary-description").text
        found.add((method, path or "", summary))
    return found


def test_docs_render_every_operation(service: Service, browser: webdriver.Chrome) -> None:
    document = httpx.get(f"{service.base_url}/openapi.json", timeout=30).json()
    assert document["openapi"].startswith("3.1")
    expected = operations(document)
    assert "/v1/memories/search" in {path for _, path, _ in expected}

    artifacts = artifacts_dir()
    screenshot = artifacts / "docs.png"
    screenshot.unlink(missing_ok=True)
    browser.get(f"{service.base_url}/docs")
    try:
        # Rendered, or failed visibly: either ends the (bounded) wait.
        WebDriverWait(browser, RENDER_TIMEOUT, poll_frequency=0.2).until(
            lambda d: (
                len(d.find_elements(By.CSS_SELECTOR, ".opblock")) >= len(expected)
                or "Unable to render" in d.find_element(By.TAG_NAME, "body").text
            )
        )
    except TimeoutException:
        pass  # the assertions below say what is missing
    finally:
        browser.save_screenshot(str(screenshot))

    text = browser.find_element(By.TAG_NAME, "body").text
    assert "Unable to render" not in text, text[:2000]
    assert not browser.find_elements(By.CSS_SELECTOR, ".errors-wrapper"), text[:2000]
    assert document["info"]["title"] in browser.find_element(By.CSS_SELECTOR, ".info .title").text
    assert rendered_operations(browser) == expected
    for _, _, summary in expected:
        assert summary in text

    # The schemas render too: open the search operation and read its request body.
    block = browser.find_element(By.ID, "operations-memories-search")
    block.find_element(By.CSS_SELECTOR, ".opblock-summary").click()
    WebDriverWait(browser, RENDER_TIMEOUT, poll_frequency=0.2).until(
        lambda d: '"query"' in block.text
    )
    browser.save_screenshot(str(artifacts / "docs-search.png"))

    # Everything the page loaded came from the service itself (no CDN, no validator).
    loaded = browser.execute_script(
        "return performance.getEntriesByType('resource').map(e => e.name)"
    )
    assert loaded, "the page loaded no resources"
    assert all(url.startswith(f"{service.base_url}/") for url in loaded), loaded
    assert f"{service.base_url}/openapi.json" in loaded
    severe = [e for e in browser.get_log("browser") if e["level"] == "SEVERE"]
    assert not severe, severe
    assert screenshot.stat().st_size > 10_000


def try_it_out(browser: webdriver.Chrome, tag: str, operation_id: str) -> tuple[str, str]:
    """Open an operation on /docs, press "Try it out" and Execute with what the page filled
    in (the document's examples), and read the live response: (status, body)."""
    block = browser.find_element(By.ID, f"operations-{tag}-{operation_id}")
    browser.execute_script("arguments[0].scrollIntoView(true)", block)
    if "is-open" not in (block.get_attribute("class") or ""):
        block.find_element(By.CSS_SELECTOR, ".opblock-summary").click()
    wait = WebDriverWait(browser, RENDER_TIMEOUT, poll_frequency=0.2)
    wait.until(lambda d: block.find_elements(By.CSS_SELECTOR, ".try-out__btn"))
    block.find_element(By.CSS_SELECTOR, ".try-out__btn").click()
    wait.until(lambda d: block.find_elements(By.CSS_SELECTOR, "button.execute"))
    block.find_element(By.CSS_SELECTOR, "button.execute").click()
    wait.until(
        lambda d: block.find_elements(
            By.CSS_SELECTOR, ".live-responses-table tbody .response-col_status"
        )
    )
    status = block.find_element(
        By.CSS_SELECTOR, ".live-responses-table tbody .response-col_status"
    ).text.strip()
    body = block.find_element(
        By.CSS_SELECTOR, ".live-responses-table .response-col_description pre"
    ).text
    return status, body


def test_try_it_out_stores_and_finds_a_memory(service: Service, browser: webdriver.Chrome) -> None:
    # The request examples of the document are requests that succeed: "Try it out" on
    # the store operation and then on search, as the page fills them in, stores a memory
    # (201) and finds it (200), under the example tenant rather than random pattern text.
    document = httpx.get(f"{service.base_url}/openapi.json", timeout=30).json()
    store = document["paths"]["/v1/memories"]["post"]
    example = store["requestBody"]["content"]["application/json"]["example"]
    artifacts = artifacts_dir()
    screenshot = artifacts / "docs-try-it-out.png"
    screenshot.unlink(missing_ok=True)
    browser.get(f"{service.base_url}/docs")
    WebDriverWait(browser, RENDER_TIMEOUT, poll_frequency=0.2).until(
        lambda d: d.find_elements(By.ID, "operations-memories-search")
    )
    try:
        status, body = try_it_out(browser, "memories", "store")
        assert status == "201", body
        stored = json.loads(body)
        assert stored["content"] == example["content"]
        assert (stored["agent_id"], stored["user_id"]) == (example["agent_id"], example["user_id"])

        status, body = try_it_out(browser, "memories", "search")
        assert status == "200", body
        found = json.loads(body)["results"]
        assert stored["id"] in [r["id"] for r in found], found

        # a listing with its query parameters as filled in (the examples of the optional
        # ones, cursor and time bounds included, narrow nothing) lists it too
        status, body = try_it_out(browser, "memories", "list_memories")
        assert status == "200", body
        assert stored["id"] in [m["id"] for m in json.loads(body)["memories"]], body
    finally:
        browser.save_screenshot(str(screenshot))
    assert screenshot.stat().st_size > 10_000
    # the memory is there for every client, not only the page
    listed = httpx.get(
        f"{service.base_url}/v1/memories",
        params={"agent_id": example["agent_id"], "user_id": example["user_id"]},
        timeout=30,
    ).json()
    assert stored["id"] in [m["id"] for m in listed["memories"]]
