"""Shared fixtures: one embedded PostgreSQL (real server, real pgvector) per test session,
a migrated template database, a fresh database per test (both made and dropped by
pytest-postgresql's DatabaseJanitor), and the real embedding model.

Two tiers (docs/development.md, "Test tiers"): the default run is the fast tier; tests
marked `e2e` (they boot processes: services, browsers, Node, other PostgreSQL servers,
builds) run only when asked for (`-m e2e`, or everything with `-m "e2e or not e2e"`, as
CI does). A fast-tier test that starts a subprocess fails, so a new end-to-end test
cannot land in the fast tier unnoticed."""

from __future__ import annotations

import contextlib
import functools
import inspect
import re
import shutil
import subprocess
import tempfile
import uuid
from collections.abc import AsyncIterator, Generator, Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg.conninfo import conninfo_to_dict, make_conninfo
from pytest_postgresql.janitor import DatabaseJanitor

from memexdb import AsyncMemex, Memex, migrate
from memexdb.embedded import EmbeddedPostgres
from memexdb.embedding import BatchingEmbedder, Embedder, build_embedder
from memexdb.llm import ChatModel
from tests.scripted_llm import ScriptedLLM, scripted_llm

TEMPLATE = "memex_template"

# -- tiers ---------------------------------------------------------------------------------

E2E = "e2e"
HERE = Path(__file__).resolve()
_guard = {"item": None, "allowed": 0}  # the fast-tier test running now; allowances open
_popen_init = subprocess.Popen.__init__


def _guarded_popen_init(self: subprocess.Popen[Any], *args: Any, **kwargs: Any) -> None:
    item = _guard["item"]
    if item is not None and not _guard["allowed"]:
        command = args[0] if args else kwargs.get("args")
        raise AssertionError(
            f"{item} starts a process ({command!r}) but is not marked e2e: mark it (or its "
            "module) with pytest.mark.e2e, or test the behaviour in process "
            "(docs/development.md, 'Test tiers')"
        )
    _popen_init(self, *args, **kwargs)


@contextlib.contextmanager
def processes_allowed() -> Iterator[None]:
    """Let shared infrastructure (the session's embedded PostgreSQL) start processes while
    a fast-tier test sets it up."""
    _guard["allowed"] += 1
    try:
        yield
    finally:
        _guard["allowed"] -= 1


# What starts a process, as the source of a test or of a fixture it uses says it, directly
# or through the helpers of tests/ that it calls (followed by name).
STARTS_PROCESS = re.compile(
    r"\b(subprocess\.|Popen\(|EmbeddedPostgres\(|webdriver\.|create_subprocess_exec|"
    r"stdio_client\()"
)


def _code_names(code: Any) -> set[str]:
    names = set(code.co_names)
    for const in code.co_consts:
        if inspect.iscode(const):
            names |= _code_names(const)
    return names


_visiting: set[Any] = set()


@functools.cache
def _starts_process(target: Any) -> bool:
    if inspect.isclass(target):
        members = [m for m in vars(target).values() if inspect.isfunction(m)]
        return any(_starts_process(m) for m in members)
    function = inspect.unwrap(target)
    code = getattr(function, "__code__", None)
    if code is None or function in _visiting:
        return False
    where = Path(code.co_filename).resolve()
    if where == HERE or where.parent != HERE.parent:
        return False  # not a helper of tests/, or the session's shared server (see above)
    try:
        source = inspect.getsource(function)
    except (OSError, TypeError):
        return False
    if STARTS_PROCESS.search(source):
        return True
    names = sorted(_code_names(code))
    scopes = [function.__globals__]  # and the modules of tests/ it names (live_service.x)
    scopes += [vars(m) for m in function.__globals__.values() if inspect.ismodule(m)]
    called = [scope[n] for scope in scopes for n in names if n in scope]
    _visiting.add(function)
    try:
        return any(
            _starts_process(target)
            for target in called
            if inspect.isfunction(target) or inspect.isclass(target)
        )
    finally:
        _visiting.discard(function)


def _uses_processes(item: pytest.Item) -> bool:
    function = getattr(item, "function", None)
    if function is not None and _starts_process(function):
        return True
    info = getattr(item, "_fixtureinfo", None)
    if info is None:
        return False
    return any(
        _starts_process(definition.func)
        for definitions in info.name2fixturedefs.values()
        for definition in definitions
    )


# The modules that take longest (seconds of one worker, a full run at load ~8, summed from
# `--durations=0`), longest first: xdist hands them out first so that none of them starts
# last and ends the run alone. Keep it to the few past ~2 minutes; the rest needs no list.
# (test_fuzz_missing_key.py, 240 s, left it on 2026-12-06: 3 fuzzed cases an operation
# instead of 10, 882 s -> 363 s of a worker at load 19.)
LONG_MODULES = (
    "test_cli.py",  # 350 s
    "test_recovery.py",  # 270 s
    "test_docker_image.py",  # 265 s, one test
    # 430 s on a loaded machine, where test_typescript_client.py took 390 s: ~280 s quiet
    "test_node_embeddings.py",
    "test_typescript_client.py",  # 255 s (one tsc build less since)
    "test_distributions.py",  # 230 s
    "test_fuzz_open.py",  # 205 s, one test (its fuzzing sample halved since)
    "test_pg_cron.py",  # 190 s
    "test_user_data.py",  # 160 s
    "test_mcp.py",  # 155 s
    "test_docker_stack.py",  # 150 s
    "test_fuzz_operator_key.py",  # 140 s, one test (its fuzzing sample 25 -> 10 since)
    "test_keys.py",  # 140 s
    "test_security.py",  # 135 s (its MCP stdio matrix one process a key since: 195 -> 112 s)
    # 380 s until its backfill's lines were embedded once each (2026-12-06): alone, 190 ->
    # 84 s at load 2 to 8 (144 s at load ~10); last here, so it does not start late
    "test_writes_under_load.py",
)


def _module_order(items: list[pytest.Item]) -> list[pytest.Item]:
    """Modules in the order xdist should hand them out (pyproject's addopts turn its own
    reordering off with `--no-loadscope-reorder`): LONG_MODULES first, then modules with
    end-to-end tests, then the rest, each group by number of tests, most first (xdist's own
    rule); the fast modules' many short tests then fill the end of the run evenly. Tests
    keep their order within their module."""
    modules: dict[str, list[pytest.Item]] = {}
    for item in items:
        modules.setdefault(item.nodeid.split("::", 1)[0], []).append(item)

    def key(path: str) -> tuple[int, int, int]:
        name = path.rsplit("/", 1)[-1]
        long = LONG_MODULES.index(name) if name in LONG_MODULES else len(LONG_MODULES)
        fast_only = not any(i.get_closest_marker(E2E) for i in modules[path])
        return (long, int(fast_only), -len(modules[path]))

    return [item for path in sorted(modules, key=key) for item in modules[path]]


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """A test that starts a process itself or through a fixture it uses is end-to-end;
    tests marked by hand (`pytestmark = pytest.mark.e2e`) are too. Then the long modules
    go first (`_module_order`)."""
    for item in items:
        if not item.get_closest_marker(E2E) and _uses_processes(item):
            item.add_marker(E2E)
    items[:] = _module_order(items)


def pytest_configure(config: pytest.Config) -> None:
    subprocess.Popen.__init__ = _guarded_popen_init  # type: ignore[method-assign]


def pytest_unconfigure(config: pytest.Config) -> None:
    subprocess.Popen.__init__ = _popen_init  # type: ignore[method-assign]


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Generator[None]:
    """While a fast-tier test runs (setup, call, teardown), no process may start."""
    _guard["item"] = None if item.get_closest_marker(E2E) else item
    try:
        return (yield)
    finally:
        _guard["item"] = None


def scratch_dir(prefix: str) -> Path:
    # /var/tmp is world-traversable, so the embedded server's service user can use it
    # when tests run as root (pytest's tmp_path may sit under a 0700 folder).
    path = Path(tempfile.mkdtemp(prefix=prefix, dir="/var/tmp"))
    path.chmod(0o755)  # our own new folder; mkdtemp makes it 0700
    return path


@pytest.fixture(scope="session")
def pg_server() -> Iterator[EmbeddedPostgres]:
    root = scratch_dir("memexdb-test-")
    server = EmbeddedPostgres(root / "pg")
    with processes_allowed():
        server.start()
        # A scratch server: durability buys nothing here, and each test database is made
        # and dropped (about 0.28 s a test with fsync, 0.1 s without)
        with psycopg.connect(server.dsn, autocommit=True) as admin:
            for setting in ("fsync", "full_page_writes", "synchronous_commit"):
                admin.execute(f"alter system set {setting} = off")
            admin.execute("select pg_reload_conf()")
    try:
        yield server
    finally:
        with processes_allowed():
            server.stop()
        shutil.rmtree(root, ignore_errors=True)


def db_dsn(server: EmbeddedPostgres, name: str) -> str:
    return make_conninfo(server.dsn, dbname=name)


def janitor(server: EmbeddedPostgres, name: str, **options: Any) -> DatabaseJanitor:
    """pytest-postgresql's janitor for database `name` on our embedded server (its own
    `postgresql_proc` refuses to run postgres as root, so the session's server is ours)."""
    params = conninfo_to_dict(server.dsn)
    return DatabaseJanitor(
        user=str(params["user"]),
        host=str(params["host"]),
        port=str(params["port"]),
        password=None,  # the embedded server trusts its own unix socket
        dbname=name,
        maintenance_dbname=str(params["dbname"]),
        connection_timeout=30,
        **options,
    )


@pytest.fixture(scope="session")
def template_db(pg_server: EmbeddedPostgres) -> Iterator[str]:
    """The database every test database is cloned from, migrated once per session."""
    with janitor(pg_server, TEMPLATE, as_template=True):
        migrate(db_dsn(pg_server, TEMPLATE))
        yield TEMPLATE


def new_database(server: EmbeddedPostgres) -> str:
    """A fresh, migrated database cloned from the template; returns its DSN."""
    name = f"t_{uuid.uuid4().hex[:12]}"
    janitor(server, name, template_dbname=TEMPLATE).init()
    return db_dsn(server, name)


def drop_database(server: EmbeddedPostgres, dsn: str) -> None:
    """Drop the database of `dsn` (if it exists), ending any session still using it."""
    janitor(server, str(conninfo_to_dict(dsn)["dbname"])).drop()


@pytest.fixture
def dsn(pg_server: EmbeddedPostgres, template_db: str) -> Iterator[str]:
    """DSN of a fresh migrated database for this test only."""
    name = f"t_{uuid.uuid4().hex[:12]}"
    with janitor(pg_server, name, template_dbname=template_db):
        yield db_dsn(pg_server, name)


@pytest.fixture(scope="module")
def module_dsn(pg_server: EmbeddedPostgres, template_db: str) -> Iterator[str]:
    """DSN of one fresh migrated database for the whole module: only for tests that leave
    it as they found it (`rolled_back_conn`). A clone costs ~0.1 s on a quiet machine and
    several times that on a loaded one; a module of a hundred small cases pays it once."""
    name = f"t_{uuid.uuid4().hex[:12]}"
    with janitor(pg_server, name, template_dbname=template_db):
        yield db_dsn(pg_server, name)


@pytest.fixture
def rolled_back_conn(module_dsn: str) -> Iterator[psycopg.Connection]:
    """A connection to the module's database inside one transaction that is rolled back
    after the test: what the test wrote (or the error it provoked) is gone for the next.
    Not for tests that commit, or whose SQL runs outside the transaction (other sessions,
    `dblink`, background workers): those take `conn`."""
    with psycopg.connect(module_dsn) as connection:
        try:
            yield connection
        finally:
            connection.rollback()


@pytest.fixture
def conn(dsn: str) -> Iterator[psycopg.Connection]:
    """A plain autocommit connection, as any non-Python client of the SQL API has."""
    with psycopg.connect(dsn, autocommit=True) as connection:
        yield connection


@pytest.fixture(scope="session")
def embedder() -> Embedder:
    return build_embedder("minilm")


@pytest.fixture(scope="session")
def batching_embedder(embedder: Embedder) -> Iterator[BatchingEmbedder]:
    batching = BatchingEmbedder(embedder)
    yield batching
    batching.close()


@pytest.fixture
async def amemex(dsn: str, batching_embedder: BatchingEmbedder) -> AsyncIterator[AsyncMemex]:
    client = await AsyncMemex.connect(dsn, embedder=batching_embedder)
    yield client
    await client.aclose()


@pytest.fixture
async def one_connection(
    dsn: str, batching_embedder: BatchingEmbedder
) -> AsyncIterator[AsyncMemex]:
    """A client whose pool holds one connection: every call reuses it."""
    client = await AsyncMemex.connect(dsn, embedder=batching_embedder, min_size=1, max_size=1)
    yield client
    await client.aclose()


@pytest.fixture
def memex(dsn: str, embedder: Embedder) -> Iterator[Memex]:
    with Memex.connect(dsn, embedder=embedder) as client:
        yield client


@pytest.fixture
def llm() -> Iterator[ScriptedLLM]:
    """An OpenAI-compatible chat endpoint on loopback answering from a script
    (tests/scripted_llm.py)."""
    with scripted_llm() as server:
        yield server


@pytest.fixture
async def with_llm(
    dsn: str, batching_embedder: BatchingEmbedder, llm: ScriptedLLM
) -> AsyncIterator[AsyncMemex]:
    """An AsyncMemex whose LLM is the scripted one."""
    client = await AsyncMemex.connect(
        dsn, embedder=batching_embedder, llm=ChatModel(llm.url, "scripted", timeout=10)
    )
    yield client
    await client.aclose()


@pytest.fixture(scope="session")
def node_tarballs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """@memexdb/minilm and @memexdb/client packed once per session (tests/node_packages.py):
    their tarballs by package name."""
    from tests.node_packages import pack  # imports the Node tests' helpers only when used

    return pack(tmp_path_factory.mktemp("node-tarballs"))
