"""Quiet, typed failures (issue 33, item 7): SQL calls that print no NOTICE, not-found
reads that log nothing, a concise first start, a bad embedder refused at once, a typed
error when the service is down."""

from __future__ import annotations

import fcntl
import logging
import os
import pty
import select
import shutil
import struct
import subprocess
import sys
import termios
import time
from datetime import UTC, datetime, timedelta
from uuid import uuid4

import httpx
import psycopg
import pytest
from memexdb_client import AsyncMemexClient, MemexClient, MemexError, Retries, Unavailable
from pgvector.psycopg import register_vector

from memexdb import AsyncMemex, Memex, NotFound
from memexdb.embedded import EmbeddedPostgres
from memexdb.memories.models import MemoryCreate
from memexdb.migrations import head_revision
from tests.conftest import scratch_dir
from tests.live_service import (
    Service,
    cli_args,
    client,
    free_port,
    kill_postgres,
    run_cli,
    service_env,
    service_on_new_database,
)
from tests.sqlapi import store, unit

VEC = unit((0, 1.0))


@pytest.mark.parametrize(
    "query",
    [
        "what does Alice drink?",  # lexemes that match some paragraphs and not others
        "the of and",  # stop words only: no lexemes at all
        "zzzqqq",  # a lexeme no paragraph has
    ],
)
def test_search_passages_prints_no_notice(conn: psycopg.Connection, query: str) -> None:
    register_vector(conn)
    notices: list[str] = []
    conn.add_notice_handler(lambda diag: notices.append(f"{diag.severity}: {diag.message_primary}"))
    body = "\n\n".join(f"## Part {i}\n\nLine {i} about tea and coffee." for i in range(30))
    conn.execute(
        "select * from memex.write_file('a', 'u', 'user/drinks.md', %s, %s, 'test-model')",
        ("# Drinks\n\n" + body + "\n", VEC),
    )
    store(conn, "Alice drinks green tea.", VEC, agent="a", user="u")
    rows = conn.execute(
        "select * from memex.search_passages('a', 'u', %s, %s, 'test-model')", (query, VEC)
    ).fetchall()
    assert rows, "the passages were found"
    # and the other calls that take query text
    for sql in (
        "select * from memex.smart_read('a', 'u', %s, %s, 'test-model')",
        "select * from memex.search('a', 'u', %(v)s, p_query_text => %(q)s, p_mode => 'hybrid')",
        "select * from memex.search('a', 'u', %(v)s, p_query_text => %(q)s, p_mode => 'text')",
    ):
        values = (query, VEC) if "%s" in sql else {"q": query, "v": VEC}
        conn.execute(sql, values).fetchall()
    assert notices == []


def _pipeline_noise(records: list[logging.LogRecord], *streams: str) -> list[str]:
    lines = [r.getMessage() for r in records if r.levelno >= logging.WARNING]
    lines += [line for s in streams for line in s.splitlines()]
    return [line for line in lines if "error ignored" in line or "pipeline aborted" in line]


async def test_not_found_reads_in_process_log_nothing(
    amemex: AsyncMemex, caplog: pytest.LogCaptureFixture, capfd: pytest.CaptureFixture[str]
) -> None:
    caplog.set_level(logging.DEBUG)
    await amemex.store("a", "u", "Alice drinks green tea.")
    for _ in range(50):
        with pytest.raises(NotFound):
            await amemex.get("a", "u", uuid4())
        with pytest.raises(NotFound):
            await amemex.read_file("a", "u", "user/missing.md")
    # the connection is still good after all of them
    assert await amemex.count("a", "u") == 1
    out, err = capfd.readouterr()
    assert _pipeline_noise(caplog.records, out, err) == []


def test_not_found_reads_sync_client_log_nothing(
    memex: Memex, caplog: pytest.LogCaptureFixture, capfd: pytest.CaptureFixture[str]
) -> None:
    caplog.set_level(logging.DEBUG)
    for _ in range(100):
        with pytest.raises(NotFound):
            memex.get("a", "u", uuid4())
    out, err = capfd.readouterr()
    assert _pipeline_noise(caplog.records, out, err) == []


def test_not_found_reads_over_rest_log_nothing(
    pg_server: EmbeddedPostgres, template_db: str
) -> None:
    with service_on_new_database(pg_server, "quiet") as service, client(service.base_url) as http:
        tenant = {"agent_id": "a", "user_id": "u"}
        # the noise came with about one read in four, depending on when results arrive:
        # 100 of each make missing it unlikely
        for _ in range(100):
            assert http.get(f"/v1/memories/{uuid4()}", params=tenant).status_code == 404
            missing = http.get("/v1/files/read", params={**tenant, "path": "user/missing.md"})
            assert missing.status_code == 404
        log = service.output()
    assert _pipeline_noise([], log) == [], log[-2000:]


@pytest.mark.parametrize(
    ("env", "says"),
    [
        ({"MEMEX_EMBEDDER": "bogus"}, "MEMEX_EMBEDDER='bogus': "),
        ({"MEMEX_EMBEDDER": "openai:text-embedding-3-small"}, "needs MEMEX_EMBEDDING_URL"),
    ],
)
def test_a_bad_embedder_is_one_line_and_exit_2_before_anything_starts(
    env: dict[str, str], says: str
) -> None:
    """Before: "serving on ...", PostgreSQL started and migrated, then a 30-line traceback
    and exit 3 some 18 s later."""
    root = scratch_dir("memexdb-quiet-")
    data_dir = root / "data"
    started = time.monotonic()
    try:
        code, out = run_cli(
            ["serve", "--port", str(free_port())],
            service_env(MEMEX_DATA_DIR=str(data_dir), **env),
            timeout=120,
        )
    finally:
        kill_postgres(data_dir)  # only if the test failed: a server was started
        shutil.rmtree(root, ignore_errors=True)
    assert code == 2, out
    assert len(out.strip().splitlines()) == 1, out
    assert out.startswith("memexdb: invalid setting: ") and says in out, out
    assert "Traceback" not in out and "serving" not in out, out
    assert not data_dir.exists(), out  # no embedded PostgreSQL was started
    assert time.monotonic() - started < 30, out


# --- the HTTP client when the service is down ------------------------------------------


def _nothing_listens() -> str:
    return f"http://127.0.0.1:{free_port()}"  # a port just freed: connections are refused


async def test_the_async_client_raises_unavailable_naming_the_url() -> None:
    url = _nothing_listens()
    async with AsyncMemexClient(url, retries=Retries(attempts=2, base=0.01)) as memex:
        with pytest.raises(Unavailable) as down:
            await memex.count("a", "u")
    assert isinstance(down.value, MemexError) and down.value.code == "unavailable"
    assert down.value.url == url and url in str(down.value), str(down.value)
    assert "cannot connect" in str(down.value)
    assert isinstance(down.value.__cause__, httpx.ConnectError)


def test_the_sync_client_raises_unavailable_naming_the_url() -> None:
    url = _nothing_listens() + "/"
    with MemexClient(url, retries=1) as memex:
        with pytest.raises(Unavailable) as down:
            memex.store("a", "u", "Alice drinks green tea.")
        with pytest.raises(Unavailable):
            memex.search("a", "u", "tea")
    assert down.value.url == url.rstrip("/") and url.rstrip("/") in str(down.value)


# --- the first start --------------------------------------------------------------------

# Before: 63 lines (alembic's INFO with each revision's docstring) before uvicorn's
# "Uvicorn running". Now: the embedded server (where the data is), the migration in one
# line, the revision, the URL, and uvicorn's own four lines.
FIRST_START_LINES = 10


def test_the_first_start_is_a_few_lines() -> None:
    root = scratch_dir("memexdb-first-start-")
    data_dir = root / "data"
    port = free_port()
    env = service_env(MEMEX_DATA_DIR=str(data_dir))
    service = Service(cli_args("serve", "--port", str(port)), env, port, root / "serve.log")
    try:
        service.wait_healthy()
        assert service.stop() == 0
        out = service.output()
    finally:
        service.close()
        kill_postgres(data_dir)  # only if the test failed: the service stops its server
        shutil.rmtree(root, ignore_errors=True)
    lines = out.splitlines()
    running = next(i for i, line in enumerate(lines) if "Uvicorn running on" in line)
    before = lines[:running]
    assert len(before) <= FIRST_START_LINES, out
    assert not [line for line in before if "alembic" in line], out
    text = "\n".join(before)
    assert f"starting embedded PostgreSQL in {data_dir}" in text, out
    assert f"migrating the database from revision none to {head_revision()}" in text, out
    assert f"serving on http://127.0.0.1:{port}" in text, out


# --- consolidation from the command line shows its progress ---------------------------

OLD = datetime(2025, 3, 1, 9, tzinfo=UTC)


def _old_memories(memex: Memex, user: str, n: int) -> None:
    memex.store_many(
        [
            MemoryCreate(
                agent_id="a",
                user_id=user,
                content=f"Day {i}: {user} talked about the weather and lunch.",
                created_at=OLD + timedelta(days=i),
            )
            for i in range(n)
        ]
    )


def test_consolidate_prints_a_line_per_step_without_a_terminal(memex: Memex, dsn: str) -> None:
    _old_memories(memex, "busy", 130)
    _old_memories(memex, "quiet", 3)
    code, out = run_cli(
        ["consolidate", "--job", "condense", "--force"], service_env(MEMEX_DATABASE_URL=dsn)
    )
    assert code == 0, out
    assert "condense a/busy: done, 50 memories -> 1" in out, out
    assert "condense a/quiet: " in out, out
    assert "2 tenant(s): " in out, out


def test_consolidate_shows_a_progress_bar_on_a_terminal(memex: Memex, dsn: str) -> None:
    _old_memories(memex, "busy", 130)
    for user in ("b", "c", "d"):
        memex.write_file("a", user, "user/notes.md", "# Notes\n\n- tea\n- tea\n")
    main, terminal = pty.openpty()
    # a terminal 100 columns wide (a new pseudo-terminal is 0 x 0)
    fcntl.ioctl(terminal, termios.TIOCSWINSZ, struct.pack("HHHH", 30, 100, 0, 0))
    try:
        proc = subprocess.Popen(
            cli_args("consolidate", "--force"),
            env=service_env(MEMEX_DATABASE_URL=dsn),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=terminal,
            text=True,
        )
        os.close(terminal)
        terminal = -1
        shown = b""
        while True:  # until the child closes the terminal (it ends), bounded by the test
            ready, _, _ = select.select([main], [], [], 120)
            if not ready:
                break
            try:
                chunk = os.read(main, 4096)
            except OSError:  # EIO: the child is gone
                break
            if not chunk:
                break
            shown += chunk
        out, _ = proc.communicate(timeout=120)
    finally:
        os.close(main)
        if terminal != -1:
            os.close(terminal)
    text = shown.decode(errors="replace")
    assert proc.returncode == 0, text + out
    assert "\r" in text and "8/8" in text and "steps" in text, text  # the bar, at its end
    assert "condense a/busy: done, 50 memories -> 1" in text, text  # a run, above the bar
    assert "dream a/b: done" in text, text
    assert "condense a/b:" not in text, text  # nothing to condense: counted by the bar only
    assert "4 tenant(s): " in out, out


def test_not_found_reads_print_nothing_in_a_plain_script(dsn: str) -> None:
    """A script that configures no logging: psycopg's warning went to its stderr (Python's
    last-resort handler) on about one NotFound in four."""
    script = (
        "import uuid\n"
        "from memexdb import Memex, NotFound\n"
        "with Memex.connect(__import__('sys').argv[1]) as memex:\n"
        "    for _ in range(100):\n"
        "        try:\n"
        "            memex.get('a', 'u', uuid.uuid4())\n"
        "        except NotFound:\n"
        "            pass\n"
        "        else:\n"
        "            raise SystemExit('found?')\n"
        "print('done')\n"
    )
    res = subprocess.run(
        [sys.executable, "-c", script, dsn],
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
        env=service_env(),
    )
    assert (res.returncode, res.stdout, res.stderr) == (0, "done\n", ""), res.stderr[-2000:]


def test_consolidate_refuses_a_user_without_an_agent() -> None:
    root = scratch_dir("memexdb-quiet-")
    data_dir = root / "data"
    try:
        code, out = run_cli(
            ["consolidate", "--user-id", "u"],
            service_env(MEMEX_DATA_DIR=str(data_dir)),
            timeout=120,
        )
        started = data_dir.exists()
    finally:
        kill_postgres(data_dir)  # only if the test failed
        shutil.rmtree(root, ignore_errors=True)
    assert (code, out.strip()) == (2, "memexdb: --user-id needs --agent-id"), out
    assert not started  # refused before any database was started
