"""The README and the docs pages its examples moved to tell the truth: the README's curl
examples, the Python snippet of docs/python.md and the file-memory examples of
docs/files.md run as written against a live service, and the README's test command is the
one CI runs."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from memexdb.config import Settings
from memexdb.embedded import EmbeddedPostgres
from tests.conftest import drop_database, new_database

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()
PYTHON_PAGE = (ROOT / "docs" / "python.md").read_text()
FILES_PAGE = (ROOT / "docs" / "files.md").read_text()


def code_blocks(language: str, text: str = README) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", text, flags=re.S)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def service(
    pg_server: EmbeddedPostgres, template_db: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[str, str]]:
    dsn = new_database(pg_server)
    port = free_port()
    env = {**os.environ, "MEMEX_DATABASE_URL": dsn, "MEMEX_PORT": str(port)}
    log = tmp_path_factory.mktemp("readme") / "service.log"
    with log.open("w") as log_file:
        proc = subprocess.Popen(
            [sys.executable, "-m", "memexdb.cli", "serve", "--log-level", "warning"],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=log_file,
        )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"{base}/health", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert proc.poll() is None, log.read_text()
            time.sleep(0.2)
        else:
            pytest.fail("service did not come up in 60 s")
        yield base, dsn
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        drop_database(pg_server, dsn)


def test_quick_start_commands_are_what_ci_runs() -> None:
    commands = [b.strip() for b in code_blocks("bash") if "venv" in b]
    assert commands[0].endswith(".venv/bin/memexdb serve")
    ci = (ROOT / ".ci" / "run").read_text()
    test_command = re.search(r"TEST_COMMAND='(.*)'", ci)
    assert test_command is not None
    assert commands[1] == test_command.group(1)


def test_curl_examples(service: tuple[str, str]) -> None:
    base, _ = service
    block = next(b for b in code_blocks("bash") if "curl" in b)
    script = block.replace("localhost:8000", base.removeprefix("http://"))
    out = subprocess.run(
        ["bash", "-euc", script], capture_output=True, text=True, timeout=120, check=True
    ).stdout
    # curl -s prints the bodies back to back, without newlines
    decoder, documents, index = json.JSONDecoder(), [], 0
    while index < len(out):
        document, index = decoder.raw_decode(out, index)
        documents.append(document)
    stored, search, count = documents[:3], documents[3], documents[4]
    assert all(d["agent_id"] == "assistant" for d in stored)
    assert search["total"] == 2
    best = search["results"][0]
    assert best["content"] == "Alice prefers dark mode in every editor"
    assert {"score", "similarity", "recency", "relevance"} <= best.keys()
    assert count == {"agent_id": "assistant", "user_id": "alice", "memory_type": None, "count": 3}
    # the sample answer the README shows is this one: every field it names, its numbers
    # to the two decimals it writes ("…" stands for what it leaves out)
    shown = next(b for b in code_blocks("json") if '"results"' in b)
    shown = shown.replace('"…"', "null").replace(", …}", "}").replace(", …]", "]")
    sample = json.loads(shown)
    assert (sample["query"], sample["total"]) == (search["query"], search["total"])
    for field, value in sample["results"][0].items():
        if value is None and field == "id":
            continue
        real = best[field]
        shown_as = round(real, 2) if isinstance(real, float) else real
        assert shown_as == value, f"{field}: {json.dumps(best)}"


def test_docs_name_the_services_port() -> None:
    """Every URL of a memexdb service in the docs, the clients' READMEs and docstrings uses
    the port the service listens on by default (8000); other ports are other programs'."""
    others = {"3000": "grafana", "9090": "prometheus", "8001": "mkdocs", "5173": "a web app"}
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    pages += [
        ROOT / "clients" / "python" / "README.md",
        ROOT / "clients" / "typescript" / "README.md",
    ]
    pages += sorted((ROOT / "clients" / "python" / "memexdb_client").glob("*.py"))
    assert Settings.model_fields["port"].default == 8000
    wrong = [
        f"{page.relative_to(ROOT)}: {match.group(0)}"
        for page in pages
        for match in re.finditer(r"(?:127\.0\.0\.1|localhost):(\d+)", page.read_text())
        if match.group(1) != "8000" and match.group(1) not in others
    ]
    assert not wrong, wrong


def test_python_example(service: tuple[str, str]) -> None:
    _, dsn = service
    block = next(b for b in code_blocks("python", PYTHON_PAGE) if "AsyncMemex" in b)
    out = subprocess.run(
        [sys.executable, "-c", block],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "MEMEX_DATABASE_URL": dsn},
        check=True,
    )
    assert out.stdout.startswith("Bob is allergic to peanuts ")


def test_file_memory_examples(service: tuple[str, str]) -> None:
    base, dsn = service
    block = next(b for b in code_blocks("python", FILES_PAGE) if "write_file" in b)
    out = subprocess.run(
        [sys.executable, "-c", block],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "MEMEX_DATABASE_URL": dsn},
        check=True,
    ).stdout
    assert "- dark mode\n- green tea\n" in out and "+- green tea" in out
    assert "user/profile.md ## Preferences\n- dark mode\n- green tea" in out
    script = next(b for b in code_blocks("bash", FILES_PAGE) if "/v1/files" in b)
    out = subprocess.run(
        ["bash", "-euc", script.replace("localhost:8000", base.removeprefix("http://"))],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    ).stdout
    decoder, documents, index = json.JSONDecoder(), [], 0
    while index < len(out):
        document, index = decoder.raw_decode(out, index)
        documents.append(document)
    assert [d.get("revision") for d in documents[:3]] == [1, 2, 2]
    assert documents[2]["content"] == "# Notes\n\n## Todo\n\n- call Bob\n"
    memorized, found = documents[3:]
    assert memorized["mode"] == "fallback"  # the test service has no LLM
    assert found["llm"] == "not_configured" and found["answer"] is None
    assert "Linear" in found["passages"][0]["passage"]
