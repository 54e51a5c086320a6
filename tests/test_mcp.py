"""The MCP server with the official SDK client, on real processes: `memexdb mcp` over
stdio (MEMEX_DATABASE_URL, the embedded default, a data dir another process serves) and
`memexdb serve` over streamable HTTP (both protocol eras) and legacy SSE; every error
path; DNS-rebinding protection; and the MCP configs of docs/mcp.md, launched as written."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import httpx2
import psycopg
import pytest
from mcp import Client
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client
from starlette.applications import Starlette

from memexdb import AsyncMemex
from memexdb.embedded import EmbeddedPostgres
from memexdb.mcp import Caller, Tenant, build_mcp_server
from memexdb.mcp.http import McpTransports, transport_security
from tests.conftest import drop_database, new_database, scratch_dir
from tests.live_service import (
    MEMEXDB,
    REPO,
    Service,
    cli_args,
    in_process_service,
    kill_postgres,
    service_env,
    wait_no_postgres,
)
from tests.test_mcp_support import (
    MEMORIES,
    QUERY,
    TOOLS,
    call,
    call_error,
    connected,
    exercise,
    exercise_errors,
    http_client_of,
    node_tools,
    serve,
    sse_client_of,
    stdio_client_of,
    stdio_params,
    text,
)

MCP_PAGE = (REPO / "docs" / "mcp.md").read_text()
OUTAGE_ERROR = "the memory database is unavailable; retry later"


@pytest.fixture(scope="module")
def service(
    pg_server: EmbeddedPostgres, template_db: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Service]:
    """`memexdb serve` on its own fresh database."""
    dsn = new_database(pg_server)
    try:
        with serve(tmp_path_factory.mktemp("mcp-serve"), dsn=dsn) as running:
            yield running
    finally:
        drop_database(pg_server, dsn)


@dataclasses.dataclass(frozen=True)
class InProcess:
    """The service's app in this process (tests.live_service.in_process_service) on its
    own database for this module: MCP's and REST's HTTP behaviour, without a process."""

    http: httpx.Client
    dsn: str
    port: int = 8000  # the TestClient's base URL, http://127.0.0.1:8000


@pytest.fixture(scope="module")
def app(pg_server: EmbeddedPostgres, template_db: str) -> Iterator[InProcess]:
    dsn = new_database(pg_server)
    try:
        with in_process_service(dsn) as http:
            yield InProcess(http, dsn)
    finally:
        drop_database(pg_server, dsn)


@pytest.fixture(scope="module")
def keyed_app(pg_server: EmbeddedPostgres, template_db: str) -> Iterator[tuple[InProcess, str]]:
    """The app in process on a fresh database that has an admin key (every caller needs
    one), and that key."""
    dsn = new_database(pg_server)
    try:
        with psycopg.connect(dsn, autocommit=True) as conn:
            row = conn.execute("select token from memex.create_key(p_access => 'admin')")
            key = str(row.fetchone()[0])  # type: ignore[index]
        with in_process_service(dsn) as http:
            yield InProcess(http, dsn), key
    finally:
        drop_database(pg_server, dsn)


@dataclasses.dataclass(frozen=True)
class Keyed:
    """A running service whose database has an API key (so every caller needs one)."""

    service: Service
    dsn: str
    key: str


@pytest.fixture(scope="module")
def keyed(
    pg_server: EmbeddedPostgres, template_db: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Keyed]:
    """`memexdb serve` on a fresh database that has an admin key of every agent."""
    dsn = new_database(pg_server)
    try:
        with psycopg.connect(dsn, autocommit=True) as conn:
            row = conn.execute("select token from memex.create_key(p_access => 'admin')")
            key = str(row.fetchone()[0])  # type: ignore[index]
        with serve(tmp_path_factory.mktemp("mcp-keyed"), dsn=dsn) as running:
            yield Keyed(running, dsn, key)
    finally:
        drop_database(pg_server, dsn)


@pytest.fixture
def data_dir() -> Iterator[Path]:
    root = scratch_dir("memexdb-mcp-")
    path = root / "data"
    try:
        yield path
    finally:
        kill_postgres(path)  # only after a failed test; the tests check it is clean
        shutil.rmtree(root, ignore_errors=True)


# --- stdio ----------------------------------------------------------------------------


async def test_stdio_on_database_url(dsn: str, tmp_path: Path) -> None:
    with (tmp_path / "stderr.log").open("w") as errlog:
        async with connected(
            stdio_client_of(stdio_params({"MEMEX_DATABASE_URL": dsn}), errlog)
        ) as c:
            assert c.server_info is not None and c.server_info.name == "memexdb"
            await exercise(c, {"agent_id": "stdio", "user_id": "alice"})
            await exercise_errors(c, {"agent_id": "stdio", "user_id": "alice"})


async def test_stdio_on_embedded_default(data_dir: Path, tmp_path: Path) -> None:
    """No MEMEX_DATABASE_URL: `memexdb mcp` starts (and on exit stops) its own server."""
    who = {"agent_id": "desktop", "user_id": "bob"}
    env = {"MEMEX_DATA_DIR": str(data_dir)}
    with (tmp_path / "stderr.log").open("w") as errlog:
        async with connected(stdio_client_of(stdio_params(env), errlog)) as c:
            await call(c, "store_memory", **who, content="Bob is allergic to peanuts")
            found = await call(c, "search_memories", **who, query="what must Bob not eat?")
            assert found["results"][0]["content"] == "Bob is allergic to peanuts"
    assert wait_no_postgres(data_dir) == [], (tmp_path / "stderr.log").read_text()[-3000:]
    # The data outlives the process.
    with (tmp_path / "stderr2.log").open("w") as errlog:
        async with connected(stdio_client_of(stdio_params(env), errlog)) as c:
            assert (await call(c, "count_memories", **who))["count"] == 1
    assert wait_no_postgres(data_dir) == []


@pytest.mark.parametrize(
    ("sig", "embedded"),
    [(signal.SIGTERM, True), (signal.SIGINT, True), (signal.SIGINT, False)],
)
def test_stdio_signal_stops_it_while_stdin_is_open(
    data_dir: Path, dsn: str, tmp_path: Path, sig: signal.Signals, embedded: bool
) -> None:
    """A client (or a terminal's Ctrl-C) may signal `memexdb mcp` without closing stdin:
    it stops its PostgreSQL and exits at once, although the SDK's stdin reader thread is
    still blocked on a read."""
    log_path = tmp_path / "stderr.log"
    where = {"MEMEX_DATA_DIR": str(data_dir)} if embedded else {"MEMEX_DATABASE_URL": dsn}
    env = service_env(**where)
    with (
        log_path.open("w") as errlog,
        subprocess.Popen(
            cli_args("mcp", "-v"),  # -v: it logs "ready on stdio"
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=errlog,
        ) as proc,
    ):
        try:
            for _ in range(1200):  # 120 s at most
                if "ready on stdio" in log_path.read_text() or proc.poll() is not None:
                    break
                time.sleep(0.1)
            assert "ready on stdio" in log_path.read_text(), log_path.read_text()[-3000:]
            proc.send_signal(sig)
            assert proc.wait(timeout=30) == 128 + sig, log_path.read_text()[-3000:]
        finally:
            if proc.poll() is None:
                proc.kill()
    assert wait_no_postgres(data_dir) == [], log_path.read_text()[-3000:]
    assert "Traceback" not in log_path.read_text()


async def test_stdio_shares_and_then_takes_over_a_running_services_server(
    data_dir: Path, tmp_path: Path
) -> None:
    """A desktop client's `memexdb mcp` on the data dir `memexdb serve` runs uses its
    PostgreSQL (instead of failing on the busy data dir), so both see the same memories;
    when the service stops, `memexdb mcp` starts the server itself and carries on."""
    who = {"agent_id": "shared", "user_id": "carol"}
    env = {"MEMEX_DATA_DIR": str(data_dir)}
    with serve(tmp_path, **env) as service, (tmp_path / "stderr.log").open("w") as errlog:
        verbose = stdio_params(env, cli_args("mcp", "-v"))  # -v: it logs the takeover
        async with connected(stdio_client_of(verbose, errlog)) as c:
            await call(c, "store_memory", **who, content="Carol takes the 8:15 train")
            async with httpx.AsyncClient(base_url=service.base_url, timeout=30) as http:
                count = await http.get("/v1/memories/count", params=who)
            assert count.json()["count"] == 1

            service.stop()  # SIGTERM: it stops its PostgreSQL on the way out
            deadline = time.monotonic() + 60
            while True:
                result = await c.call_tool("count_memories", who)
                if not result.is_error or time.monotonic() > deadline:
                    break
                await asyncio.sleep(0.5)
            assert result.structured_content == {**who, "memory_type": None, "count": 1}, result
            await call(c, "store_memory", **who, content="Carol's train was late on Tuesday")
            # The pool reconnects as soon as the server accepts, before the takeover has
            # finished; a client that left now would make the SDK signal the process if
            # finishing it and stopping the server took longer than its 2 s grace period.
            log_path = tmp_path / "stderr.log"
            for _ in range(600):  # 30 s at most
                if "now running the embedded PostgreSQL" in log_path.read_text():
                    break
                await asyncio.sleep(0.05)
    log = (tmp_path / "stderr.log").read_text()
    assert "now running the embedded PostgreSQL" in log, log[-3000:]
    assert wait_no_postgres(data_dir) == [], log[-3000:]  # it stopped what it took over


async def test_stdio_rate_limit_is_a_tool_error(dsn: str, tmp_path: Path) -> None:
    who = {"agent_id": "hasty", "user_id": "dan"}
    env = {"MEMEX_DATABASE_URL": dsn, "MEMEX_RATE_LIMIT_STORE_PER_MINUTE": "2"}
    with (tmp_path / "stderr.log").open("w") as errlog:
        async with connected(stdio_client_of(stdio_params(env), errlog)) as c:
            for n in range(2):
                await call(c, "store_memory", **who, content=f"memory {n}")
            message = await call_error(c, "store_memory", **who, content="one too many")
            assert re.search(r"rate limit exceeded; retry in \d+ s", message), message
            # Other tools (and other agents) are not limited by it.
            assert (await call(c, "count_memories", **who))["count"] == 2


def test_stdio_stdout_carries_protocol_messages_only(dsn: str) -> None:
    """Everything on stdout is JSON-RPC, even while PostgreSQL, migrations and the model
    start; logs go to stderr. The process exits when stdin closes."""
    requests = [
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "raw", "version": "1"},
            },
        },
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
        {
            "jsonrpc": "2.0",
            "id": 3,
            "method": "tools/call",
            "params": {
                "name": "search_memories",
                "arguments": {"agent_id": "raw", "user_id": "eve", "query": "anything"},
            },
        },
    ]
    env = {"PATH": "/usr/bin:/bin", "HOME": os.environ["HOME"], "MEMEX_DATABASE_URL": dsn}
    with tempfile.TemporaryFile("w+") as stderr:
        with subprocess.Popen(
            cli_args("mcp", "-v"),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=stderr,
            text=True,
            env=env,
            cwd=REPO,
        ) as proc:
            watchdog = threading.Timer(180, proc.kill)  # bounds the blocking reads below
            watchdog.start()
            try:
                assert proc.stdin is not None and proc.stdout is not None
                proc.stdin.write("not json{\n")  # a garbled line is skipped, not fatal
                for request in requests:
                    proc.stdin.write(json.dumps(request) + "\n")
                    proc.stdin.flush()
                lines = [proc.stdout.readline() for _ in range(3)]
                proc.stdin.close()  # how a client ends the session
                lines += proc.stdout.readlines()
                code = proc.wait()
            finally:
                watchdog.cancel()
                if proc.poll() is None:
                    proc.kill()
        stderr.seek(0)
        log = stderr.read()
    assert code == 0, log[-3000:]
    answers = [json.loads(line) for line in lines]
    assert [a.get("id") for a in answers] == [1, 2, 3], lines
    assert all(a["jsonrpc"] == "2.0" and "result" in a for a in answers), answers
    assert answers[2]["result"]["structuredContent"]["total"] == 0
    assert "memexdb MCP server ready on stdio" in log


def test_stdio_unreachable_database_is_a_clear_error() -> None:
    res = subprocess.run(
        cli_args("mcp"),
        input="",
        capture_output=True,
        text=True,
        timeout=120,
        env={"PATH": "/usr/bin:/bin", "MEMEX_DATABASE_URL": "postgresql://nobody@127.0.0.1:1/x"},
        cwd=REPO,
        check=False,
    )
    assert res.returncode == 2 and res.stdout == ""
    # The CLI's one-line error (its wording is the CLI's), no traceback.
    assert "\nmemexdb: " in "\n" + res.stderr and "Traceback" not in res.stderr


# --- streamable HTTP and SSE ------------------------------------------------------------


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_streamable_http(service: Service, mode: str) -> None:
    """`legacy`: the initialize handshake (2025-11-25), what desktop clients speak;
    `auto`: the SDK's discovery, which picks the stateless 2026-07-28 protocol."""
    who = {"agent_id": f"http-{mode}", "user_id": "alice"}
    async with connected(http_client_of(f"{service.base_url}/mcp", mode)) as c:
        assert c.protocol_version == ("2025-11-25" if mode == "legacy" else "2026-07-28")
        await exercise(c, who)
        await exercise_errors(c, who)


async def test_sse(service: Service) -> None:
    who = {"agent_id": "sse", "user_id": "alice"}
    async with connected(sse_client_of(f"{service.base_url}/sse")) as c:
        await exercise(c, who)
        await exercise_errors(c, who)


def test_http_endpoints(app: InProcess) -> None:
    """/mcp and /mcp/ answer without a redirect; a stateless server has no GET stream
    (405, not a stream that never ends); each response names its worker."""
    headers = {"accept": "application/json, text/event-stream"}
    ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    http = app.http
    for path in ("/mcp", "/mcp/"):
        r = http.post(path, json=ping, headers=headers, follow_redirects=False)
        assert (r.status_code, r.json()) == (200, {"jsonrpc": "2.0", "id": 1, "result": {}})
        assert r.headers["x-memex-worker"] == str(os.getpid())  # the app's process: ours
    r = http.get("/mcp", headers={"accept": "text/event-stream"})
    assert r.status_code == 405 and r.headers["allow"] == "POST"
    # Malformed messages are protocol errors; the service keeps answering.
    r = http.post(
        "/mcp", content=b"{not json", headers={**headers, "content-type": "application/json"}
    )
    assert r.status_code == 400 and r.json()["error"]["code"] == -32700
    r = http.post("/mcp", json={"jsonrpc": "2.0", "id": 2, "method": "no/such"}, headers=headers)
    assert r.json()["error"]["code"] == -32601
    # REST answers as before, behind the same port.
    assert http.get("/health").status_code == 200
    assert http.get("/v1/nothing-here").json()["error"]["code"] == "not_found"


def test_dns_rebinding_protection(app: InProcess) -> None:
    """MCP and REST answer only requests naming this machine (Host) from its own pages
    (Origin): a web page re-pointing its name at 127.0.0.1 reads no memories."""
    init = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "browser", "version": "1"},
        },
    }
    accept = {"accept": "application/json, text/event-stream"}
    host = f"127.0.0.1:{app.port}"
    http = app.http
    evil_host = {**accept, "host": "evil.example.com"}
    assert http.post("/mcp", json=init, headers=evil_host).status_code == 421
    evil_origin = {**accept, "origin": "http://evil.example.com"}
    assert http.post("/mcp", json=init, headers=evil_origin).status_code == 403
    assert http.get("/sse", headers={"host": "evil.example.com"}).status_code == 421
    posted = http.post("/messages/?session_id=0", json=init, headers=evil_host)
    assert posted.status_code == 421
    for ok in (
        {**accept, "host": host, "origin": f"http://{host}"},
        {**accept, "host": f"localhost:{app.port}", "origin": "http://localhost:3000"},
    ):
        assert http.post("/mcp", json=init, headers=ok).status_code == 200

    # The REST API shares the rules, with its typed JSON errors; /health stays open
    # to probes that address the machine by an IP of its own.
    who = {"agent_id": "rebind", "user_id": "victim"}
    search = {**who, "query": "passwords"}
    refused = http.get("/v1/memories/count", params=who, headers={"host": "evil.example"})
    assert refused.status_code == 421
    assert refused.json()["error"]["code"] == "host_not_allowed"
    refused = http.post("/v1/memories/search", json=search, headers=evil_origin)
    assert refused.status_code == 403
    assert refused.json()["error"]["code"] == "origin_not_allowed"
    assert http.get("/docs", headers={"host": "evil.example"}).status_code == 421
    assert http.get("/health", headers={"host": "10.1.2.3:8000"}).status_code == 200
    local = {"host": f"localhost:{app.port}", "origin": "http://localhost:3000"}
    assert http.post("/v1/memories/search", json=search, headers=local).status_code == 200


def test_host_names_are_case_insensitive(app: InProcess) -> None:
    """`Host: LOCALHOST` names this machine as `localhost` does (issue 34, item 7); before:
    421 host_not_allowed."""
    init = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "upper", "version": "1"},
        },
    }
    accept = {"accept": "application/json, text/event-stream"}
    who = {"agent_id": "case", "user_id": "alice"}
    http = app.http
    for name in ("LOCALHOST", "LocalHost", "localhost"):
        host = {"host": f"{name}:{app.port}"}
        r = http.get("/v1/memories/count", params=who, headers=host)
        assert r.status_code == 200, (name, r.text)
        origin = {**host, "origin": f"HTTP://{name}:3000"}
        assert http.get("/v1/memories/count", params=who, headers=origin).status_code == 200
        assert http.post("/mcp", json=init, headers={**accept, **host}).status_code == 200
    assert http.get("/v1/memories/count", params=who, headers={"host": "EVIL"}).status_code == 421


NO_SUCH_KEY = "mxk_000000000000_" + "0" * 64
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"},
    },
}


def _bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def test_http_without_a_valid_key_is_a_401_before_any_json_rpc(
    keyed_app: tuple[InProcess, str],
) -> None:
    """Once a key exists, `POST /mcp` and `GET /sse` without a valid one are HTTP 401s
    with `WWW-Authenticate: Bearer` (the MCP authorization spec's signal), not a tool
    error inside a 200; the same request with the key is answered."""
    accept = {"accept": "application/json, text/event-stream"}
    refused: list[dict[str, str]] = [{}, _bearer(NO_SUCH_KEY), {"Authorization": "Basic eA=="}]
    app, key = keyed_app
    http = app.http
    for headers in refused:
        for method, path in (("POST", "/mcp"), ("POST", "/mcp/"), ("GET", "/sse")):
            body = INITIALIZE if method == "POST" else None
            r = http.request(method, path, json=body, headers={**accept, **headers})
            assert r.status_code == 401, (path, headers, r.text)
            assert r.headers["www-authenticate"] == 'Bearer realm="memexdb"'
            assert r.json()["error"]["code"] == "unauthenticated"
            assert "jsonrpc" not in r.json()
    r = http.post("/mcp", json=INITIALIZE, headers={**accept, **_bearer(key)})
    assert r.status_code == 200 and r.json()["result"]["serverInfo"]["name"] == "memexdb"


def test_http_without_keys_on_loopback_stays_open(app: InProcess) -> None:
    accept = {"accept": "application/json, text/event-stream"}
    http = app.http
    r = http.post("/mcp", json=INITIALIZE, headers=accept)
    assert r.status_code == 200 and "result" in r.json()
    # an invalid key is refused even there: it names no one
    r = http.post("/mcp", json=INITIALIZE, headers={**accept, **_bearer(NO_SUCH_KEY)})
    assert r.status_code == 401 and r.headers["www-authenticate"].startswith("Bearer")


async def test_official_client_with_and_without_a_key(keyed: Keyed, tmp_path: Path) -> None:
    """The SDK client over streamable HTTP and SSE: refused (the 401) without the header,
    served with it; over stdio the key is MEMEX_API_KEY."""
    url = keyed.service.base_url
    who = {"agent_id": "keyed", "user_id": "alice"}
    statuses: list[int] = []

    async def record(response: httpx2.Response) -> None:
        statuses.append(response.status_code)

    async with httpx2.AsyncClient(timeout=30, event_hooks={"response": [record]}) as anonymous:
        with pytest.raises(Exception):  # noqa: B017 (the SDK wraps the 401 in groups)
            transport = streamable_http_client(f"{url}/mcp", http_client=anonymous)
            async with connected(Client(transport, mode="legacy", read_timeout_seconds=30)):
                pass
    assert statuses == [401]  # the initialize request, refused before any JSON-RPC
    async with httpx2.AsyncClient(headers=_bearer(keyed.key), timeout=120) as http:
        transport = streamable_http_client(f"{url}/mcp", http_client=http)
        async with connected(Client(transport, mode="legacy", read_timeout_seconds=120)) as c:
            await call(c, "store_memory", **who, content="Alice keeps her key safe")
    sse = sse_client(f"{url}/sse", headers=_bearer(keyed.key))
    async with connected(Client(sse, mode="legacy", read_timeout_seconds=120)) as c:
        assert (await call(c, "count_memories", **who))["count"] == 1
    for key, works in ((keyed.key, True), (None, False)):
        env = {"MEMEX_DATABASE_URL": keyed.dsn} | ({"MEMEX_API_KEY": key} if key else {})
        with (tmp_path / "stderr.log").open("w") as errlog:
            async with connected(stdio_client_of(stdio_params(env), errlog)) as c:
                if works:
                    assert (await call(c, "count_memories", **who))["count"] == 1
                else:  # stdio has no HTTP status: the tool error says why and what to do
                    error = await call_error(c, "count_memories", **who)
                    assert "not authenticated" in error and "MEMEX_API_KEY" in error, error
                    assert "Authorization" not in error and "as_operator" not in error, error


def test_allowed_hosts_and_origins_settings() -> None:
    default = transport_security("127.0.0.1")
    assert default.enable_dns_rebinding_protection
    assert {"127.0.0.1:*", "localhost:*", "[::1]:*", "localhost"} <= set(default.allowed_hosts)
    assert "http://localhost:*" in default.allowed_origins
    lan = transport_security("192.168.1.5")
    assert "192.168.1.5:*" in lan.allowed_hosts and "http://192.168.1.5:*" in lan.allowed_origins
    assert "[fe80::1]:*" in transport_security("fe80::1").allowed_hosts
    wildcard = transport_security("0.0.0.0")
    assert "0.0.0.0:*" not in wildcard.allowed_hosts
    custom = transport_security("0.0.0.0", "mem.example.com:*, mem", "https://app.example.com")
    assert custom.allowed_hosts == ["mem.example.com:*", "mem"]
    assert custom.allowed_origins == ["https://app.example.com"]
    derived = transport_security("0.0.0.0", "mem.example.com:*")
    assert "https://mem.example.com:*" in derived.allowed_origins
    assert "http://localhost:*" not in derived.allowed_origins
    assert not transport_security("0.0.0.0", "*").enable_dns_rebinding_protection


# --- database outage ---------------------------------------------------------------------


def _set_connections(pg_server: EmbeddedPostgres, dsn: str, allowed: bool) -> None:
    name = psycopg.conninfo.conninfo_to_dict(dsn)["dbname"]
    with psycopg.connect(pg_server.dsn, autocommit=True) as conn:
        conn.execute(f"alter database {name} with allow_connections {str(allowed).lower()}")
        if not allowed:
            conn.execute(
                "select pg_terminate_backend(pid) from pg_stat_activity where datname = %s",
                (name,),
            )


async def test_database_outage_is_a_tool_error_and_recovers(
    pg_server: EmbeddedPostgres, template_db: str, tmp_path: Path
) -> None:
    who = {"agent_id": "outage", "user_id": "frank"}
    dsn = new_database(pg_server)
    try:
        with serve(tmp_path, dsn=dsn) as service:
            async with connected(http_client_of(f"{service.base_url}/mcp")) as c:
                await call(c, "store_memory", **who, content="Frank's bike is blue")
                _set_connections(pg_server, dsn, allowed=False)
                try:
                    started = time.monotonic()
                    for tool, args in (
                        ("count_memories", who),
                        ("search_memories", {**who, "query": "bike"}),
                        ("store_memory", {**who, "content": "lost"}),
                    ):
                        assert await call_error(c, tool, **args) == (
                            f"Error executing tool {tool}: {OUTAGE_ERROR}"
                        )
                    assert time.monotonic() - started < 90  # bounded, no hang
                finally:
                    _set_connections(pg_server, dsn, allowed=True)
                deadline = time.monotonic() + 60
                while True:  # the pool reconnects on its own
                    result = await c.call_tool("count_memories", who)
                    if not result.is_error or time.monotonic() > deadline:
                        break
                    await asyncio.sleep(0.5)
                assert not result.is_error and result.structured_content == {
                    **who,
                    "memory_type": None,
                    "count": 1,
                }
            assert "Traceback" not in service.output()
    finally:
        drop_database(pg_server, dsn)


# --- docs/mcp.md (the README's MCP section until it moved) ---------------------------

MCP_SECTION = MCP_PAGE
PLACEHOLDER = "/path/to/memexdb/.venv/bin/memexdb"


def _blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", MCP_SECTION, flags=re.S)


def _configs() -> list[dict[str, Any]]:
    return [json.loads(block)["mcpServers"]["memexdb"] for block in _blocks("json")]


def _local(command: list[str]) -> list[str]:
    """A docs/mcp.md command with this checkout's memexdb for the placeholder path."""
    return [str(MEMEXDB) if part == PLACEHOLDER else part for part in command]


KEY_PLACEHOLDER = "mxk_…"


def _url(url: str, service: Service) -> str:
    return url.replace("127.0.0.1:8000", f"127.0.0.1:{service.port}").replace(
        "localhost:8000", f"127.0.0.1:{service.port}"
    )


def _keyed(text: str, keyed: Keyed) -> str:
    """A docs/mcp.md snippet pointed at `keyed`'s service, with its key for the placeholder."""
    return _url(text, keyed.service).replace(KEY_PLACEHOLDER, keyed.key)


async def _use_stdio(
    command: list[str], env: dict[str, str], log: Path, who: dict[str, str]
) -> None:
    with log.open("w") as errlog:
        async with connected(stdio_client_of(stdio_params(env, command), errlog)) as c:
            await call(c, "store_memory", **who, content=MEMORIES[0][0], memory_type="semantic")
            found = await call(c, "search_memories", **who, query=QUERY)
            assert found["results"][0]["content"] == MEMORIES[0][0]


def test_readme_lists_the_tools_and_configs() -> None:
    for tool in TOOLS:
        assert f"`{tool}`" in MCP_SECTION
    configs = _configs()
    assert [c["command"] for c in configs] == [PLACEHOLDER, "npx"]
    assert configs[0]["args"] == ["mcp"]
    assert configs[0]["env"] == {"MEMEX_API_KEY": KEY_PLACEHOLDER}
    assert configs[1]["args"][:3] == ["-y", "mcp-remote", "http://127.0.0.1:8000/mcp"]
    # every client snippet says where the key goes
    for block in _blocks("json"):
        assert KEY_PLACEHOLDER in block, block
    for line in "".join(_blocks("bash")).replace("\\\n", "").splitlines():
        assert KEY_PLACEHOLDER in line, line
    assert MEMEXDB.exists(), "docs/mcp.md's stdio configs name the venv's memexdb script"


async def test_readme_claude_desktop_stdio_config(keyed: Keyed, tmp_path: Path) -> None:
    config = _configs()[0]
    command = _local([config["command"], *config["args"]])
    env = {k: _keyed(v, keyed) for k, v in config["env"].items()}
    await _use_stdio(
        command,
        {"MEMEX_DATABASE_URL": keyed.dsn, **env},
        tmp_path / "err.log",
        {"agent_id": "desktop", "user_id": "u1"},
    )


async def test_readme_claude_desktop_http_config(keyed: Keyed, tmp_path: Path) -> None:
    """`npx -y mcp-remote URL --header ...` exactly as Claude Desktop would start it (npx
    finds the pinned mcp-remote in .ci/node, with Node 22 first on PATH), with the
    config's env."""
    tools = node_tools()
    config = _configs()[1]
    args = [config["command"], *[_keyed(a, keyed) for a in config["args"]]]
    env = tools.env()
    config_env = {k: _keyed(v, keyed) for k, v in config["env"].items()}
    params = stdio_params({**{k: env[k] for k in ("PATH", "HOME")}, **config_env}, args)
    params.cwd = str(tools.bin_dir.parent.parent)
    who = {"agent_id": "desktop-http", "user_id": "u2"}
    with (tmp_path / "err.log").open("w") as errlog:
        async with connected(stdio_client_of(params, errlog)) as c:
            await call(c, "store_memory", **who, content=MEMORIES[0][0], memory_type="semantic")
            found = await call(c, "search_memories", **who, query=QUERY)
            assert found["results"][0]["content"] == MEMORIES[0][0]


def _option(line: list[str], name: str) -> str:
    return line[line.index(name) + 1]


async def test_readme_claude_code_commands(keyed: Keyed, tmp_path: Path) -> None:
    """`claude mcp add` lines: the URL and header of the first and the command and env
    of the second work as given."""
    lines = [shlex.split(_keyed(line, keyed)) for line in _blocks("bash")[0].splitlines() if line]
    assert all(line[:3] == ["claude", "mcp", "add"] for line in lines) and len(lines) == 2
    http_line, stdio_line = lines
    assert http_line[3:5] == ["--transport", "http"] and http_line[5] == "memexdb"
    name, _, value = _option(http_line, "--header").partition(": ")
    async with httpx2.AsyncClient(headers={name: value}, timeout=120) as http:
        transport = streamable_http_client(http_line[6], http_client=http)
        async with connected(Client(transport, mode="legacy", read_timeout_seconds=120)) as c:
            assert len((await c.list_tools()).tools) == len(TOOLS)
    variable, _, key = _option(stdio_line, "--env").partition("=")
    command = _local(stdio_line[stdio_line.index("--") + 1 :])
    await _use_stdio(
        command,
        {"MEMEX_DATABASE_URL": keyed.dsn, variable: key},
        tmp_path / "err.log",
        {"agent_id": "code", "user_id": "u3"},
    )


def test_readme_one_request_commands(keyed: Keyed) -> None:
    """The curl call (after storing what the README's "Try it" stores) and the
    Inspector line."""
    who = {"agent_id": "assistant", "user_id": "alice"}
    with httpx.Client(
        base_url=keyed.service.base_url, timeout=60, headers=_bearer(keyed.key)
    ) as http:
        for content, kind, importance in MEMORIES:
            body = {**who, "content": content, "memory_type": kind, "importance": importance}
            assert http.post("/v1/memories", json=body).status_code == 201
    curl_line, npx_line = _blocks("bash")[1].replace("\\\n", "").strip().splitlines()
    out = subprocess.run(
        ["bash", "-euc", _keyed(curl_line, keyed)],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout
    result = json.loads(out)["result"]
    assert not result["isError"]
    assert result["structuredContent"]["results"][0]["content"] == MEMORIES[0][0]

    tools = node_tools()
    args = shlex.split(_keyed(npx_line, keyed))
    assert args[:3] == ["npx", "@modelcontextprotocol/inspector", "--cli"]
    res = tools.run([*args, "--format", "json"])
    assert res.returncode == 0, res.stderr[-2000:]
    assert len(json.loads(res.stdout)["result"]["tools"]) == len(TOOLS)


# --- the tenant seam -----------------------------------------------------------------------


class HeaderBoundAgent:
    """A resolver such as the security work could plug in: the agent is whoever the
    (here: unverified, for the test) `x-agent` header names; the arguments cannot
    override it."""

    async def resolve(self, agent_id: str, user_id: str, caller: Caller) -> Tenant:
        agent = (caller.headers or {}).get("x-agent")
        if not agent:
            raise PermissionError("no agent credential on this request")
        return Tenant(agent, user_id)


async def test_tenant_resolver_decides_whose_memories(amemex: AsyncMemex) -> None:
    """The same tools with another TenantResolver, served over streamable HTTP in-process:
    the resolver sees the HTTP headers, overrides the arguments and can refuse a call."""
    server = build_mcp_server(lambda: amemex, HeaderBoundAgent())
    transports = McpTransports(server, transport_security("127.0.0.1"))
    app = Starlette(routes=transports.routes)
    who = {"agent_id": "spoofed", "user_id": "grace"}
    async with transports.lifespan():
        for agent, expected in (("bound-agent", None), (None, "no agent credential")):
            headers = {"x-agent": agent} if agent else {}
            http = httpx2.AsyncClient(
                transport=httpx2.ASGITransport(app=app),
                base_url="http://127.0.0.1",
                headers=headers,
            )
            async with http:
                transport = streamable_http_client("http://127.0.0.1/mcp", http_client=http)
                async with connected(Client(transport, mode="legacy")) as c:
                    if expected is None:
                        stored = await call(c, "store_memory", **who, content="Grace likes tea")
                        assert (stored["agent_id"], stored["user_id"]) == ("bound-agent", "grace")
                    else:
                        assert expected in await call_error(c, "count_memories", **who)
    assert await amemex.count("bound-agent", "grace") == 1
    assert await amemex.count("spoofed", "grace") == 0


def _argument(schema: dict[str, Any]) -> Any:
    """A value the schema of one required argument allows (the shapes memexdb's tools use)."""
    if schema.get("type") == "integer":
        return max(1, schema.get("minimum", 1))
    assert schema.get("type") == "string", schema
    if schema.get("format") == "uuid":
        return "00000000-0000-4000-8000-000000000000"
    if schema.get("pattern", "").startswith("^(user|agent)"):
        return "user/notes.md"
    return "schema-built"


async def test_every_tool_schema_says_no_unknown_arguments_as_the_server_enforces(
    amemex: AsyncMemex,
) -> None:
    """Each tool's input schema says `additionalProperties: false`, and it is true: a call
    built from the schema (its required arguments) with one property more is a tool error
    naming it, while the same call without it gets past the arguments' check."""
    server = build_mcp_server(lambda: amemex)
    async with connected(Client(server)) as c:
        tools = (await c.list_tools()).tools
        assert {tool.name for tool in tools} == set(TOOLS)
        for tool in tools:
            schema = tool.input_schema
            assert schema.get("additionalProperties") is False, tool.name
            arguments = {name: _argument(schema["properties"][name]) for name in schema["required"]}
            assert "unknown_argument" not in schema["properties"]
            valid = await c.call_tool(tool.name, arguments)
            if valid.is_error:  # refused by the operation (not found, no LLM), or by a rule
                # across arguments (update_memory must change something), not per argument
                problem = text(valid).partition("invalid arguments: ")[2]
                assert problem == "" or problem.startswith("arguments: "), (tool.name, problem)
            message = await call_error(c, tool.name, **arguments, unknown_argument=1)
            assert "invalid arguments: unknown_argument: " in message, (tool.name, message)
