"""Who may read what, tried from every entry point: REST, MCP over HTTP, MCP over stdio,
the Python API and direct SQL as a role bound to one tenant. Each entry point x each
operation x each way of reaching past one's scope (another agent, another user, no key,
a revoked key, an expired key, a read-only key writing) must be refused with 401/403 (a
tool error naming it over MCP) and show nothing of the other tenant; the same calls
within scope succeed. Postgres enforces it (memex._authorize and row-level security), so
the frontends are only messengers."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import shutil
import signal
import uuid
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import httpx2
import psycopg
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp_types import CallToolResult

from memexdb import AsyncMemex, Memex, agentic
from memexdb.embedded import EmbeddedPostgres
from memexdb.embedding import BatchingEmbedder, Embedder
from memexdb.errors import Forbidden, MemexError, Unauthenticated
from tests.conftest import drop_database, new_database, scratch_dir
from tests.live_service import Service, free_port, service_env, uvicorn_args
from tests.test_mcp_support import connected, stdio_client_of, stdio_params

pytestmark = pytest.mark.e2e  # docs/development.md, 'Test tiers'

# Three tenants; each memory carries a marker that must never reach another tenant's caller.
TENANTS = {("A", "alice"), ("A", "bob"), ("B", "alice")}
MINE = ("A", "alice")


def marker(agent: str, user: str) -> str:
    return f"secret-{agent}-{user}"


def content(agent: str, user: str) -> str:
    return f"The garden gate code of {user} is {marker(agent, user)}."


# key name -> (create_key arguments, or None for "no key")
KEYS: dict[str, dict[str, Any] | None] = {
    "writer": {"access": "write", "agent_id": "A"},
    "alice_reader": {"access": "read", "agent_id": "A", "user_ids": ["alice"]},
    "revoked": {"access": "write", "agent_id": "A"},
    "expired": {"access": "write", "agent_id": "A"},
    "admin_a": {"access": "admin", "agent_id": "A"},
}

READS = ("search", "count", "list", "get", "export", "file_read", "file_list", "passages")
WRITES = ("store", "update", "delete", "file_write", "file_patch", "memorize")
# admin only (the history is evidence: a write key may forget memories, not erase a user);
# last: an erase that is allowed empties the tenant, which is then written again
ERASE = ("erase",)
SECRET_FILE = "user/secret.md"
OPERATIONS = READS + WRITES + ERASE
BY_ID = {"get", "update", "delete"}


@dataclass(frozen=True)
class Attempt:
    """One way of reaching: with `key`, on `tenant`; `refused` is 401, 403 or None (ok)."""

    name: str
    key: str | None
    tenant: tuple[str, str]
    refused: int | None
    operations: tuple[str, ...] = OPERATIONS


ATTEMPTS = (
    Attempt("other agent", "writer", ("B", "alice"), 403),
    Attempt("other user", "alice_reader", ("A", "bob"), 403),
    Attempt("no key", None, MINE, 401),
    Attempt("revoked key", "revoked", MINE, 401),
    Attempt("expired key", "expired", MINE, 401),
    Attempt("read-only key writing", "alice_reader", MINE, 403, WRITES + ERASE),
    Attempt("write key erasing a user", "writer", MINE, 403, ERASE),
    # controls: the same calls within scope succeed
    Attempt("own tenant", "writer", MINE, None, READS + WRITES),
    Attempt("admin key erasing a user", "admin_a", MINE, None, ERASE),
    Attempt("read-only key reading", "alice_reader", MINE, None, READS),
)


@dataclass
class Outcome:
    status: int | None  # None: succeeded; else 401 / 403 / another failure code
    text: str


@dataclass
class World:
    dsn: str
    operator: Memex  # writes the tenants' memories (again, after an allowed erase)
    tokens: dict[str, str | None] = field(default_factory=dict)
    ids: dict[tuple[str, str], list[uuid.UUID]] = field(default_factory=dict)
    tally: dict[str, int] = field(default_factory=dict)

    def seed(self, agent: str, user: str) -> None:
        self.ids[agent, user] = [
            self.operator.store(agent, user, f"{content(agent, user)} ({i})").id for i in range(10)
        ]
        self.operator.write_file(agent, user, SECRET_FILE, f"# Secret\n\n{content(agent, user)}\n")


def _create_keys(dsn: str) -> dict[str, str | None]:
    tokens: dict[str, str | None] = {}
    with psycopg.connect(dsn, autocommit=True) as conn:
        for name, spec in KEYS.items():
            assert spec is not None
            row = conn.execute(
                "select token, id from memex.create_key(p_access => %(access)s,"
                " p_agent_id => %(agent_id)s, p_user_ids => %(user_ids)s, p_name => %(name)s)",
                {"user_ids": None, **spec, "name": name},
            ).fetchone()
            assert row is not None
            tokens[name] = row[0]
            if name == "revoked":
                conn.execute("select memex.revoke_key(%s)", (str(row[1]),))
            if name == "expired":
                conn.execute(
                    "update memex.api_keys set expires_at = now() - interval '1 second'"
                    " where id = %s",
                    (row[1],),
                )
    return tokens


@pytest.fixture(scope="module")
def world(pg_server: EmbeddedPostgres, template_db: str, embedder: Embedder) -> Iterator[World]:
    dsn = new_database(pg_server)
    try:
        with Memex.connect(dsn, embedder=embedder) as memex:
            world = World(dsn, memex.as_operator("seed"))
            for tenant in sorted(TENANTS):
                world.seed(*tenant)
            world.tokens = _create_keys(dsn)
            yield world
    finally:
        drop_database(pg_server, dsn)


@pytest.fixture(scope="module")
def service(world: World) -> Iterator[Service]:
    log = scratch_dir("memexdb-security-") / "service.log"
    port = free_port()
    svc = Service(uvicorn_args(port), service_env(MEMEX_DATABASE_URL=world.dsn), port, log)
    try:
        svc.wait_healthy()
        yield svc
        assert svc.stop() in (0, -signal.SIGTERM)
        assert "Traceback" not in svc.output(), svc.output()[-4000:]
    finally:
        svc.close()
        shutil.rmtree(log.parent, ignore_errors=True)


def _others(tenant: tuple[str, str]) -> list[str]:
    return [marker(*t) for t in TENANTS if t != tenant]


def _judge(world: World, entry: str, attempt: Attempt, op: str, outcome: Outcome) -> None:
    expected = attempt.refused if op in attempt.operations else None
    assert outcome.status == expected, (entry, attempt.name, op, outcome)
    # a refusal shows no tenant's memories; a success only the tenant asked for
    allowed = {marker(*attempt.tenant)} if outcome.status is None else set()
    leaked = [
        m for m in map(lambda t: marker(*t), TENANTS) if m in outcome.text and m not in allowed
    ]
    assert not leaked, (entry, attempt.name, op, outcome.text[:500])
    world.tally[entry] = world.tally.get(entry, 0) + 1


Do = Callable[[str, tuple[str, str], str | None], Awaitable[Outcome]]


async def _matrix_one(
    world: World, entry: str, attempt: Attempt, do: Do, supported: tuple[str, ...] = OPERATIONS
) -> None:
    """The operations of one attempt through one entry point."""
    for op in (o for o in attempt.operations if o in supported):
        # by id: one of the tenant's memories (a refused delete leaves it there)
        target = str(world.ids[attempt.tenant][-1]) if op in BY_ID else None
        outcome = await do(op, attempt.tenant, target)
        _judge(world, entry, attempt, op, outcome)
        if outcome.status is None and op == "delete":
            world.ids[attempt.tenant].pop()
        if outcome.status is None and op == "erase":
            world.seed(*attempt.tenant)


async def _matrix(
    world: World,
    entry: str,
    make: Callable[[str | None], Do],
    supported: tuple[str, ...] = OPERATIONS,
) -> None:
    """Every attempt through one entry point; `make(token)` gives the function that runs
    (operation, tenant, memory id) as the holder of that token."""
    for attempt in ATTEMPTS:
        token = world.tokens[attempt.key] if attempt.key else None
        await _matrix_one(world, entry, attempt, make(token), supported)


# --- REST ---------------------------------------------------------------------------------


def _rest(service: Service) -> Callable[[str | None], Do]:
    def make(token: str | None) -> Do:
        headers = {"Authorization": f"Bearer {token}"} if token else {}

        async def do(op: str, tenant: tuple[str, str], target: str | None) -> Outcome:
            who = {"agent_id": tenant[0], "user_id": tenant[1]}
            async with httpx.AsyncClient(base_url=service.base_url, headers=headers) as http:
                if op == "search":
                    r = await http.post(
                        "/v1/memories/search", json={**who, "query": "garden gate code"}
                    )
                elif op == "count":
                    r = await http.get("/v1/memories/count", params=who)
                elif op == "list":
                    r = await http.get("/v1/memories", params=who)
                elif op == "get":
                    r = await http.get(f"/v1/memories/{target}", params=who)
                elif op == "export":
                    r = await http.get("/v1/export", params=who)
                elif op == "file_read":
                    r = await http.get("/v1/files/read", params={**who, "path": SECRET_FILE})
                elif op == "file_list":
                    r = await http.get("/v1/files", params=who)
                elif op == "file_write":
                    body = {**who, "path": "user/new.md", "content": "a new note"}
                    r = await http.put("/v1/files", json=body)
                elif op == "file_patch":
                    body = {**who, "path": SECRET_FILE, "heading": "## Log", "append": "more"}
                    r = await http.patch("/v1/files", json=body)
                elif op == "passages":
                    body = {**who, "query": "garden gate code"}
                    r = await http.post("/v1/memory-search", json=body)
                elif op == "memorize":
                    r = await http.post("/v1/memorize", json={**who, "text": "a new note"})
                elif op == "store":
                    r = await http.post("/v1/memories", json={**who, "content": "a new note"})
                elif op == "update":
                    r = await http.patch(f"/v1/memories/{target}", json={**who, "importance": 1.5})
                elif op == "delete":
                    r = await http.delete(f"/v1/memories/{target}", params=who)
                else:
                    body = {**who, "confirm": tenant[1]}
                    r = await http.post("/v1/users/erase", json=body)
            if r.status_code < 300:
                return Outcome(None, r.text)
            body = r.json()["error"]
            assert body["code"] == {401: "unauthenticated", 403: "forbidden"}.get(
                r.status_code, body["code"]
            )
            assert body["message"], body
            if r.status_code == 401:
                assert r.headers["www-authenticate"].startswith("Bearer")
            return Outcome(r.status_code, r.text)

        return do

    return make


async def test_rest_matrix(world: World, service: Service) -> None:
    await _matrix(world, "REST", _rest(service))


# --- MCP (HTTP and stdio) -----------------------------------------------------------------

MCP_TOOLS = {
    "search": ("search_memories", {"query": "garden gate code"}),
    "count": ("count_memories", {}),
    "list": ("list_memories", {}),
    "get": ("get_memory", {}),
    "store": ("store_memory", {"content": "a new note"}),
    "update": ("update_memory", {"importance": 1.5}),
    "delete": ("delete_memory", {}),
    "file_read": ("memory_read", {"path": SECRET_FILE}),
    "file_list": ("memory_list", {}),
    "file_write": ("memory_write", {"path": "user/new.md", "content": "a new note"}),
    "file_patch": ("memory_patch", {"path": SECRET_FILE, "heading": "## Log", "append": "more"}),
    "passages": ("memory_search", {"query": "garden gate code"}),
    "memorize": ("memory_memorize", {"text": "a new note"}),
}
# erasing a user and exporting are not agent tools
MCP_OPERATIONS = tuple(op for op in OPERATIONS if op in MCP_TOOLS)


def _mcp_outcome(result: Any) -> Outcome:
    text = result.content[0].text if result.content else ""
    if not result.is_error:
        return Outcome(None, text)
    message = text.split(": ", 1)[1] if text.startswith("Error executing tool") else text
    if message.startswith("not authenticated: "):
        return Outcome(401, text)
    if message.startswith("permission denied: "):
        return Outcome(403, text)
    return Outcome(500, text)


def _mcp_do(session: Client) -> Do:
    async def do(op: str, tenant: tuple[str, str], target: str | None) -> Outcome:
        tool, extra = MCP_TOOLS[op]
        arguments = {"agent_id": tenant[0], "user_id": tenant[1], **extra}
        if target:
            arguments["id"] = target
        return _mcp_outcome(await session.call_tool(tool, arguments))

    return do


async def test_mcp_http_matrix(world: World, service: Service) -> None:
    """Through the SDK client; a key the service refuses never gets a session: every
    request (the handshake, a tools/call posted directly) is an HTTP 401."""
    async with contextlib.AsyncExitStack() as stack:
        sessions: dict[str | None, Client | None] = {}

        async def session_for(token: str | None) -> Client | None:
            if token not in sessions:
                headers = {"Authorization": f"Bearer {token}"} if token else {}
                http = await stack.enter_async_context(
                    httpx2.AsyncClient(headers=headers, timeout=120)
                )
                transport = streamable_http_client(f"{service.base_url}/mcp", http_client=http)
                client = Client(transport, mode="legacy", read_timeout_seconds=120)
                try:
                    sessions[token] = await stack.enter_async_context(connected(client))
                except Exception:  # refused: the calls below say how
                    sessions[token] = None
            return sessions[token]

        def make(token: str | None) -> Do:
            async def do(op: str, tenant: tuple[str, str], target: str | None) -> Outcome:
                session = await session_for(token)
                if session is not None:
                    return await _mcp_do(session)(op, tenant, target)
                return await _mcp_post(service, token, op, tenant, target)

            return do

        await _matrix(world, "MCP HTTP", make, MCP_OPERATIONS)


async def _mcp_post(
    service: Service, token: str | None, op: str, tenant: tuple[str, str], target: str | None
) -> Outcome:
    """One tools/call as a plain HTTP request; a refusal is its HTTP status."""
    tool, extra = MCP_TOOLS[op]
    arguments = {"agent_id": tenant[0], "user_id": tenant[1], **extra}
    if target:
        arguments["id"] = target
    message = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": tool, "arguments": arguments},
    }
    headers = {"accept": "application/json, text/event-stream"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    async with httpx.AsyncClient(timeout=120) as http:
        r = await http.post(f"{service.base_url}/mcp", json=message, headers=headers)
    if r.status_code == 401:
        assert r.headers["www-authenticate"].startswith("Bearer"), r.headers
        return Outcome(401, r.text)
    return _mcp_outcome(CallToolResult.model_validate(r.json()["result"]))


async def test_mcp_stdio_matrix(world: World, tmp_path: Path) -> None:
    """`memexdb mcp` takes its key from MEMEX_API_KEY: one process per key, started when an
    attempt first needs it and kept for the key's later attempts (which keep their
    order): five processes for the eight attempts that reach MCP tools, not eight."""
    async with contextlib.AsyncExitStack() as stack:
        sessions: dict[str | None, Client] = {}

        async def session_for(key: str | None) -> Client:
            if key not in sessions:
                env = {"MEMEX_DATABASE_URL": world.dsn, "MEMEX_MAINTENANCE_INTERVAL_SECONDS": "0"}
                if key:
                    env["MEMEX_API_KEY"] = world.tokens[key]
                errlog = stack.enter_context((tmp_path / f"stderr-{key}.log").open("w"))
                client = stdio_client_of(stdio_params(env), errlog)
                sessions[key] = await stack.enter_async_context(connected(client))
            return sessions[key]

        for attempt in ATTEMPTS:
            if not set(attempt.operations) & set(MCP_OPERATIONS):
                continue  # (erasing a user is no MCP tool)
            session = await session_for(attempt.key)
            await _matrix_one(world, "MCP stdio", attempt, _mcp_do(session), MCP_OPERATIONS)


# --- Python API ---------------------------------------------------------------------------


def _python(memex: AsyncMemex) -> Callable[[str | None], Do]:
    def make(token: str | None) -> Do:
        client = memex.with_key(token)

        async def do(op: str, tenant: tuple[str, str], target: str | None) -> Outcome:
            try:
                if op == "search":
                    hits = await client.search(*tenant, "garden gate code")
                    return Outcome(None, " ".join(h.content for h in hits))
                if op == "count":
                    return Outcome(None, str(await client.count(*tenant)))
                if op == "list":
                    page = await client.list_memories(*tenant)
                    return Outcome(None, " ".join(m.content for m in page.memories))
                if op == "export":
                    rows = [r async for r in client.export(*tenant)]
                    return Outcome(None, json.dumps(rows, default=str))
                if op == "store":
                    return Outcome(None, (await client.store(*tenant, "a new note")).content)
                if op == "erase":
                    erased = await client.erase_user(*tenant, confirm=tenant[1])
                    return Outcome(None, str(erased))
                if op == "file_read":
                    return Outcome(None, (await client.read_file(*tenant, SECRET_FILE)).content)
                if op == "file_list":
                    files, _ = await client.list_files(*tenant)
                    return Outcome(None, " ".join(f.path for f in files))
                if op == "file_write":
                    written = await client.write_file(*tenant, "user/new.md", "a new note")
                    return Outcome(None, written.content)
                if op == "passages":
                    found = await agentic.search_passages(client, *tenant, "garden gate code")
                    return Outcome(None, " ".join(p.passage for p in found.passages))
                if op == "memorize":
                    return Outcome(None, str(await agentic.memorize(client, *tenant, "a new note")))
                if op == "file_patch":
                    patched = await client.patch_file(
                        *tenant, SECRET_FILE, heading="## Log", append="more"
                    )
                    return Outcome(None, patched.content)
                assert target is not None
                memory_id = uuid.UUID(target)
                if op == "get":
                    return Outcome(None, (await client.get(*tenant, memory_id)).content)
                if op == "update":
                    updated = await client.update(*tenant, memory_id, importance=1.5)
                    return Outcome(None, updated.content)
                return Outcome(None, (await client.forget(*tenant, memory_id)).content)
            except Unauthenticated as exc:
                return Outcome(401, str(exc))
            except Forbidden as exc:
                return Outcome(403, str(exc))
            except MemexError as exc:
                return Outcome(500, repr(exc))

        return do

    return make


async def test_python_matrix(world: World, batching_embedder: BatchingEmbedder) -> None:
    memex = await AsyncMemex.connect(world.dsn, embedder=batching_embedder)
    async with memex:
        await _matrix(world, "Python", _python(memex))


# --- direct SQL as a role bound to one tenant ---------------------------------------------


def _with_user(dsn: str, user: str) -> str:
    params = psycopg.conninfo.conninfo_to_dict(dsn)
    params["user"] = user
    params.pop("password", None)
    return psycopg.conninfo.make_conninfo(**{k: str(v) for k, v in params.items()})


SQL_OPS = {
    "search": "select content from memex.search(%(agent)s, %(user)s, %(vec)s::vector,"
    " p_query_text => 'garden gate code', p_mode => 'hybrid')",
    "count": "select memex.count(%(agent)s, %(user)s)::text",
    "store": "select content from memex.store(%(agent)s, %(user)s, 'a new note', %(vec)s::vector,"
    " 'test-model')",
    "delete": "select content from memex.forget(%(agent)s, %(user)s, %(target)s::uuid)",
    "list": "select content from memex.list_memories(%(agent)s, %(user)s)",
    "get": "select content from memex.get_memory(%(agent)s, %(user)s, %(target)s::uuid)",
    "export": "select content from memex.export_memories(%(agent)s, %(user)s)",
    "update": "select content from memex.update_memory(%(agent)s, %(user)s, %(target)s::uuid,"
    " p_importance => 1.5)",
    "erase": "select table_name || deleted from memex.erase_user(%(agent)s, %(user)s, %(user)s)",
    "file_read": "select content from memex.read_file(%(agent)s, %(user)s, 'user/secret.md')",
    "passages": "select passage from memex.search_passages(%(agent)s, %(user)s,"
    " 'garden gate code', %(vec)s::vector)",
    "file_list": "select path from memex.list_files(%(agent)s, %(user)s)",
    "file_write": "select content from memex.write_file(%(agent)s, %(user)s, 'user/new.md',"
    " 'a new note', %(vec)s::vector, 'test-model')",
    "file_patch": "select content from memex.patch_file(%(agent)s, %(user)s, 'user/secret.md',"
    " %(vec)s::vector, 'test-model', (select p.revision from memex.preview_patch(%(agent)s,"
    " %(user)s, 'user/secret.md', p_append => 'more') p), p_append => 'more')",
}


def _sql(dsn: str, embedding: list[float]) -> Do:
    async def do(op: str, tenant: tuple[str, str], target: str | None) -> Outcome:
        values = {"agent": tenant[0], "user": tenant[1], "vec": str(embedding), "target": target}
        try:
            with psycopg.connect(dsn, autocommit=True) as conn:
                rows = conn.execute(SQL_OPS[op], values).fetchall()
            return Outcome(None, " ".join(str(r[0]) for r in rows))
        except psycopg.Error as exc:
            status = {"28000": 401, "42501": 403}.get(exc.sqlstate or "", 500)
            return Outcome(status, str(exc))

    return do


async def test_sql_role_matrix(world: World, embedder: Embedder) -> None:
    """Login roles bound to (A, alice): one with write, one with read access, one bound
    and then unbound (a revoked credential). Keys do not apply: no key and an expired key
    have no SQL counterpart."""
    vec = [float(x) for x in embedder.embed(["garden gate code"])[0]]
    writer, reader, unbound = (_role(world, suffix) for suffix in ("w", "r", "u"))
    _bind(world, writer, "write")
    _bind(world, reader, "read")
    _bind(world, unbound, "write")
    _unbind(world, unbound)
    roles = {
        "other agent": writer,
        "other user": writer,
        "own tenant": writer,
        "write key erasing a user": writer,
        "read-only key writing": reader,
        "read-only key reading": reader,
        "revoked key": unbound,
    }
    for attempt in ATTEMPTS:
        if attempt.name in roles:
            if attempt.name == "revoked key":
                # an unbound role has no privileges left at all: a plain 42501
                attempt = dataclasses.replace(attempt, refused=403)
            dsn = _with_user(world.dsn, roles[attempt.name])
            await _matrix_one(world, "SQL role", attempt, _sql(dsn, vec), tuple(SQL_OPS))
    writer_dsn = _with_user(world.dsn, writer)
    # no table at all: a bound role reads and writes through the tenant API only, so it
    # can neither lock a tenant table nor read the planner's estimates of other tenants
    with psycopg.connect(writer_dsn, autocommit=True) as conn:
        for table in ("memories", "tenants", "term_stats", "file_revisions", "access_log"):
            for probe in (
                f"select agent_id, user_id from memex.{table}",
                f"explain select 1 from memex.{table} where agent_id = 'B'",
                f"lock table memex.{table} in access share mode",
                f"lock table memex.{table} in access exclusive mode",
            ):
                with pytest.raises(psycopg.errors.InsufficientPrivilege):
                    if probe.startswith("lock"):
                        with conn.transaction():
                            conn.execute(probe)
                    else:
                        conn.execute(probe)
        # the tenant API (security definer functions) shows the bound tenant only
        mine = conn.execute(
            "select agent_id, user_id from memex.list_memories('A', 'alice', 100)"
        ).fetchall()
        assert mine and set(mine) == {MINE}
        # forging the service's caller setting changes nothing for a bound role
        conn.execute(
            'select set_config(\'memex.caller\', \'{"all": true, "access": "admin"}\', false)'
        )
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute("select count(*) from memex.list_memories('A', 'bob', 100)")
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute("select count(*) from memex.list_memories('B', 'alice', 100)")
        for forbidden in (
            "select * from memex.api_keys",
            "select * from memex.audit_log",
            "select * from memex.rate_limits",
            "select memex.maintenance()",
            "select memex._enter(null)",
            "select * from memex.list_keys()",
            # the text step's lookup (owner memex_text_lookup, BYPASSRLS; issue 39):
            # memex_owner's alone, it authorizes nobody
            "select count(*) from memex._text_rows('A', 'bob', now(), false, null,"
            " 'x'::tsquery, 10)",
            # and the neighbour probes' (likewise)
            "select count(*) from memex._ann_neighbour_rows('A', 'bob', null, now(), false,"
            " null, array[now()], array[gen_random_uuid()], 2)",
            "insert into memex.access_log (agent_id, user_id, actor, operation)"
            " values ('A', 'alice', 'forged', 'read')",
            "insert into memex.file_revisions (agent_id, user_id, path, revision, operation,"
            " actor) values ('A', 'alice', 'user/x', 99, 'write', 'forged')",
        ):
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                conn.execute(forbidden)
        # delegating to memorize-agent (memorize in direct mode, issue 38) names the agent
        # as actor, on behalf of the role, and widens nothing
        with conn.transaction():
            row = conn.execute("select memex._delegate('memorize-agent')").fetchone()
            assert row is not None
            assert (row[0]["actor"], row[0]["on_behalf_of"]) == ("memorize-agent", f"role:{writer}")
            assert (row[0]["agent"], row[0]["users"]) == ("A", ["alice"])
            with pytest.raises(psycopg.errors.InsufficientPrivilege), conn.transaction():
                conn.execute("select count(*) from memex.list_memories('A', 'bob', 100)")
            with pytest.raises(psycopg.Error) as refused, conn.transaction():
                conn.execute("select memex._delegate('operator')")
            assert refused.value.sqlstate == "MX422"
        # and ends with its transaction
        row = conn.execute("select memex._actor()").fetchone()
        assert row is not None and row[0] == f"role:{writer}"
    world.tally["SQL role"] = world.tally.get("SQL role", 0) + 9


def _role(world: World, suffix: str) -> str:
    # roles are cluster-wide: named after this test's database
    return f"sec_{psycopg.conninfo.conninfo_to_dict(world.dsn)['dbname']}_{suffix}"[:60]


def _bind(world: World, role: str, access: str) -> None:
    with psycopg.connect(world.dsn, autocommit=True) as conn:
        if not conn.execute("select from pg_roles where rolname = %s", (role,)).fetchone():
            conn.execute(f'create role "{role}" login')
        conn.execute("select memex.bind_sql_role(%s, 'A', array['alice'], %s)", (role, access))


def _unbind(world: World, role: str) -> None:
    with psycopg.connect(world.dsn, autocommit=True) as conn:
        conn.execute("select memex.unbind_sql_role(%s)", (role,))


def test_matrix_counted(world: World) -> None:
    """Runs last in this module: how many cases the matrices above tried, none leaking."""
    print(f"cross-tenant cases: {sum(world.tally.values())} {world.tally}")
    assert set(world.tally) == {"REST", "MCP HTTP", "MCP stdio", "Python", "SQL role"}
