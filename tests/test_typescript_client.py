"""The TypeScript client (clients/typescript, `@memexdb/client`) against a live `memexdb
serve`: its generated sources are current, `tsc` (strict) builds it, its `node --test`
suite passes (service mode against the service; direct-Postgres mode against its database
as SQL roles bound to a tenant), and the packed tarball installed into an empty project
runs the examples of docs/clients.md: service mode with nothing else installed, direct
mode with `pg` beside it (what a user installs is what is tested). Its migrate() runs the
schema in Node and makes the database `memexdb migrate` makes (below)."""

from __future__ import annotations

import contextlib
import fcntl
import filecmp
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import threading
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote, urlencode

import psycopg
import pytest
from psycopg.conninfo import conninfo_to_dict

from memexdb import migrate
from memexdb.embedded import EmbeddedPostgres
from memexdb.migrations import head_revision, read_manifest
from tests.catalog import catalog
from tests.conftest import db_dsn, drop_database, janitor, new_database
from tests.live_service import REPO, Service, required
from tests.sqlapi import bound_login_role
from tests.test_examples import EXPECTED, example
from tests.test_mcp_support import create_admin_key, serve
from tests.test_migrations import _at_revision

PACKAGE = REPO / "clients" / "typescript"
DOCS_PAGE = REPO / "docs" / "clients.md"
TIMEOUT = 300.0


def npm_env(**extra: str) -> dict[str, str]:
    """npm with its cache inside the package (gitignored), as .ci/run does for .ci/node."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMEX_", "npm_"))}
    env.update(npm_config_cache=str(PACKAGE / ".npm-cache"), npm_config_update_notifier="false")
    env.update(extra)
    return env


def run(
    args: list[str], cwd: Path, env: dict[str, str] | None = None, timeout: float = TIMEOUT
) -> str:
    """Run a Node tool to success (bounded); its output, or a failure that shows it."""
    try:
        res = subprocess.run(
            args,
            cwd=cwd,
            env=env or npm_env(),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"{' '.join(args)} ran over {timeout} s: {exc.stdout!r} {exc.stderr!r}")
    output = res.stdout + res.stderr
    assert res.returncode == 0, f"{' '.join(args)} exited {res.returncode}:\n{output[-8000:]}"
    return output


@pytest.fixture(scope="module")
def npm() -> str:
    found = required(shutil.which("npm"), "npm is not installed")
    required(shutil.which("node"), "node is not installed")
    return found


def installed_from_lockfile() -> bool:
    """node_modules holds what package-lock.json pins (npm's record of the last install,
    node_modules/.package-lock.json, names the same packages at the same versions)."""
    record = PACKAGE / "node_modules" / ".package-lock.json"
    if not record.exists():
        return False

    def pinned(lock: Path) -> dict[str, str]:
        packages = json.loads(lock.read_text())["packages"]
        return {name: entry.get("version", "") for name, entry in packages.items() if name}

    return pinned(record) == pinned(PACKAGE / "package-lock.json")


def build_once(npm: str) -> Path:
    """`npm ci` (from the lockfile; .ci/run has just run it, so only when node_modules
    differs from the lockfile) and `npm run build` (tsc, strict, and the type checks of
    test/types.check.ts), once per test run: the modules that use the built package run on
    both xdist workers at once, and a second `npm ci` or build in the same working tree
    would delete or rewrite files the other worker's Node is reading. An exclusive lock
    file serializes the build; a marker names the run that built it."""
    run_id = os.environ.get("PYTEST_XDIST_TESTRUNUID") or f"pid-{os.getpid()}"
    with open(PACKAGE / ".build.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        marker = PACKAGE / ".built-by"
        if not (marker.exists() and marker.read_text() == run_id):
            if not installed_from_lockfile():
                run([npm, "ci", "--no-audit", "--no-fund", "--loglevel=error"], PACKAGE)
            run([npm, "run", "build"], PACKAGE)
            marker.write_text(run_id)
    return PACKAGE / "dist"


@pytest.fixture(scope="module")
def built(npm: str) -> Path:
    """The package built in the working tree (build_once)."""
    return build_once(npm)


@pytest.fixture(scope="module")
def database(pg_server: EmbeddedPostgres, template_db: str) -> Iterator[str]:
    """The service's database (its DSN: the operator's, a superuser)."""
    dsn = new_database(pg_server)
    try:
        yield dsn
    finally:
        drop_database(pg_server, dsn)


@pytest.fixture(scope="module")
def service(
    database: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[Service, str]]:
    """A live service with an admin key (so it refuses calls without one); the key."""
    token = create_admin_key(database, "typescript tests")
    with serve(tmp_path_factory.mktemp("typescript"), dsn=database) as running:
        yield running, token


@pytest.fixture(scope="module")
def direct_roles(database: str) -> Iterator[dict[str, str]]:
    """Two login roles bound to their own tenants, as URLs the direct-mode tests read
    from the environment."""
    with contextlib.ExitStack() as stack:
        alice = stack.enter_context(bound_login_role(database, "direct-agent", ["alice"]))
        bob = stack.enter_context(bound_login_role(database, "other-agent", ["bob"]))
        yield {
            "MEMEX_DIRECT_URL": libpq_url(alice),
            "MEMEX_DIRECT_OTHER_URL": libpq_url(bob),
            "MEMEX_DIRECT_OPERATOR_URL": libpq_url(database),
        }


def libpq_url(conninfo: str) -> str:
    """A URL the `pg` driver reads (it takes no key=value strings): the unix socket's
    directory as the `host` query parameter, as libpq's URLs allow."""
    params = conninfo_to_dict(conninfo)
    user = quote(str(params["user"]), safe="")
    secret = f":{quote(str(params['password']), safe='')}" if params.get("password") else ""
    query = urlencode({"host": params["host"], "port": params.get("port", 5432)})
    return f"postgresql://{user}{secret}@/{quote(str(params['dbname']), safe='')}?{query}"


def test_generated_sources_are_current(built: Path, tmp_path: Path) -> None:
    subprocess.run(
        [sys.executable, str(PACKAGE / "scripts" / "generate.py"), "--out", str(tmp_path)],
        check=True,
        timeout=TIMEOUT,
    )
    for name in ("openapi.ts", "operations.ts"):
        committed = PACKAGE / "src" / "generated" / name
        assert filecmp.cmp(tmp_path / name, committed, shallow=False), (
            f"{committed} is stale: run `npm run generate` in clients/typescript"
        )


def test_every_rest_operation_has_a_method() -> None:
    from memexdb.operation_table import OPERATIONS

    sys.path.insert(0, str(PACKAGE / "scripts"))
    try:
        from generate import camel
    finally:
        sys.path.remove(str(PACKAGE / "scripts"))
    generated = (PACKAGE / "src" / "generated" / "operations.ts").read_text()
    for op in OPERATIONS:
        if op.rest is not None:
            assert f"\n  {camel(op.name)}(request" in generated, op.name


def error_table_json() -> str:
    """memexdb_client.errors.ERRORS as the TypeScript suite reads it."""
    from memexdb_client.errors import ERRORS

    return json.dumps(
        [
            {"code": k.code, "name": k.name, "status": k.status, "sqlstates": dict(k.sqlstates)}
            for k in ERRORS
        ]
    )


def test_node_suite_against_the_service(
    built: Path, service: tuple[Service, str], direct_roles: dict[str, str], npm: str
) -> None:
    """Service mode, and direct mode against the service's database (its embed worker
    embeds what direct mode queues; its /v1/embeddings embeds direct mode's queries)."""
    running, token = service
    env = npm_env(MEMEX_URL=running.base_url, MEMEX_API_KEY=token, **direct_roles)
    # test/errors.test.mjs checks each row of the Python package's error table
    env["MEMEX_ERROR_TABLE"] = error_table_json()
    node = required(shutil.which("node"), "node is not installed")
    # test/agentic.test.mjs needs a scripted chat model (tests/test_typescript_agentic.py);
    # test/migrate.test.mjs needs databases of its own (test_node_migrates_as_python_does)
    suites = sorted(
        str(p.relative_to(PACKAGE))
        for p in PACKAGE.glob("test/*.test.mjs")
        if p.name not in ("agentic.test.mjs", "migrate.test.mjs")
    )
    assert suites == [
        "test/direct.test.mjs",
        "test/errors.test.mjs",
        "test/retry.test.mjs",
        "test/service.test.mjs",
        "test/session.test.mjs",
    ]
    output = run([node, "--test", *suites], PACKAGE, env)
    assert re.search(r"^# fail 0$", output, flags=re.M), output[-8000:]
    assert re.search(r"^# skipped 0$", output, flags=re.M), output[-8000:]


TYPED_CALLER = """\
import { MemexClient, NotFoundError, type Results } from "@memexdb/client";

const memex = new MemexClient({ baseUrl: "http://127.0.0.1:8000" });
const who = { agent_id: "a", user_id: "u" };
export async function main(): Promise<string> {
  const found: Results["search"] = await memex.search({ ...who, query: "theme" });
  for await (const file of memex.iterListFiles(who)) console.log(file.path);
  const error: unknown = null;
  return error instanceof NotFoundError ? error.code : (found.results[0]?.content ?? "");
}
"""


def docs_example(entry: str) -> str:
    """The JavaScript example of docs/clients.md that imports `entry` (one per mode), the
    same in the package's README."""
    blocks = re.findall(r"```js\n(.*?)```", DOCS_PAGE.read_text(), flags=re.S)
    assert len(blocks) == 2, "docs/clients.md has one JavaScript example per mode"
    found = [b for b in blocks if f'from "{entry}";' in b]
    assert len(found) == 1, f"docs/clients.md has one example importing {entry}"
    readme = (PACKAGE / "README.md").read_text()
    assert found[0] in readme, "clients/typescript/README.md shows the same example"
    return str(found[0])


def test_packed_tarball_from_an_empty_project(
    built: Path,
    service: tuple[Service, str],
    direct_roles: dict[str, str],
    npm: str,
    tmp_path: Path,
) -> None:
    running, token = service
    # --ignore-scripts: `built` has just run the build `prepack` runs (build:dist);
    # tests/test_npm_package.py packs from a clean checkout with prepack
    pack = [npm, "pack", "--ignore-scripts", "--pack-destination", str(tmp_path)]
    out = run([*pack, "--loglevel=error"], PACKAGE)
    version = json.loads((PACKAGE / "package.json").read_text())["version"]
    tarball = tmp_path / f"memexdb-client-{version}.tgz"
    assert tarball.exists(), out
    listing = run(["tar", "tzf", str(tarball)], tmp_path)
    assert "package/dist/index.d.ts" in listing and "package/src/" not in listing, listing

    project = tmp_path / "app"
    project.mkdir()
    run([npm, "init", "-y", "--loglevel=error"], project)
    # no runtime dependencies: the tarball installs offline
    run([npm, "install", "--offline", "--no-audit", "--no-fund", str(tarball)], project)
    installed = list((project / "node_modules").iterdir())
    assert [p.name for p in installed if not p.name.startswith(".")] == ["@memexdb"]

    # the published declarations type a TypeScript caller (strict, Node's ESM resolution)
    (project / "check.mts").write_text(TYPED_CALLER)
    tsc = PACKAGE / "node_modules" / ".bin" / "tsc"
    check = [str(tsc), "--strict", "--noEmit", "--module", "nodenext", "--target", "es2022"]
    check += ["--lib", "es2022,dom", "check.mts"]
    run(check, project)
    (project / "check.mts").write_text(TYPED_CALLER.replace('query: "theme"', "query: 1"))
    with pytest.raises(AssertionError, match="TS2322"):
        run(check, project)

    (project / "example.mjs").write_text(docs_example("@memexdb/client"))
    node = required(shutil.which("node"), "node is not installed")
    env = npm_env(MEMEX_URL=running.base_url, MEMEX_API_KEY=token)
    output = run([node, "example.mjs"], project, env)
    assert output.startswith("Alice prefers dark mode "), output
    assert re.search(r"^stored [0-9a-f-]{36}$", output, flags=re.M), output

    # direct mode: its own entry point, with the optional peer `pg` beside it. A user runs
    # `npm install pg`; the tests use no network, so pg is linked from the package's own
    # devDependencies (the version package-lock.json pins; node resolves pg's own
    # dependencies from there).
    (project / "node_modules" / "pg").symlink_to(PACKAGE / "node_modules" / "pg")
    (project / "direct.mjs").write_text(docs_example("@memexdb/client/direct"))
    output = run([node, "direct.mjs"], project, npm_env(**direct_roles))
    assert output.startswith("text Alice waters the ferns on Sundays\n"), output
    assert re.search(r"^stored [0-9a-f-]{36}$", output, flags=re.M), output

    # docs/examples.md's TypeScript script prints what the other languages' scripts print
    (project / "examples.mjs").write_text(example("js"))
    env = npm_env(MEMEX_URL=running.base_url, MEMEX_API_KEY=token, MEMEX_USER="typescript")
    assert run([node, "examples.mjs"], project, env) == EXPECTED


# migrate() in Node (issue 38): the package runs sql/manifest.txt (the frozen revisions, then
# the SQL layer) from the copy of sql/ it ships, and a database it migrates is the database
# `memexdb migrate` makes. test/migrate.test.mjs (`node --test`) migrates an empty database,
# one Python brought to an older revision (with rows), one Python migrated (a no-op), an
# empty one four times at once, and meets a held lock; the tests below prepare those
# databases, then compare each one's catalog with that of a database Python migrated
# (tests/catalog.py, as tests/test_catalog.py compares fresh and upgraded ones), and check
# that Python's migrate finds Node's SQL layer in place. They live in this module so that
# one worker builds the package (`built`) and runs everything that uses it.

OLD_REVISION = "0020"


def _empty_database(server: EmbeddedPostgres, name: str) -> str:
    name = f"{name}_{threading.get_ident() % 10**6}"
    janitor(server, name).drop()
    janitor(server, name).init()
    return db_dsn(server, name)


def _layer_state(dsn: str) -> tuple[str, str, object]:
    with psycopg.connect(dsn) as conn:
        row = conn.execute(
            "select (select version_num from memex.alembic_version), files_sha256, applied_at"
            " from memex.sql_layer_state"
        ).fetchone()
    assert row is not None
    return row


@contextlib.contextmanager
def _databases(server: EmbeddedPostgres, *names: str) -> Iterator[list[str]]:
    made = [_empty_database(server, name) for name in names]
    try:
        yield made
    finally:
        for dsn in made:
            drop_database(server, dsn)


def _differences(expected: dict[str, list[str]], found: dict[str, list[str]]) -> list[str]:
    lines = []
    for part in expected:
        lines += [f"{part}: only Python's: {r}" for r in expected[part] if r not in found[part]]
        lines += [f"{part}: only Node's: {r}" for r in found[part] if r not in expected[part]]
    return lines


def test_node_migrates_as_python_does(built: Path, pg_server: EmbeddedPostgres) -> None:
    names = ("nm_python", "nm_empty", "nm_old", "nm_concurrent", "nm_reference")
    with _databases(pg_server, *names) as (python, empty, old, concurrent, reference):
        head = head_revision()
        assert migrate(python) == head
        assert migrate(reference) == head
        _at_revision(
            old,
            OLD_REVISION,
            (
                "insert into memex.memories (agent_id, user_id, content, embedding,"
                " embedding_model, importance) select 'a', 'u', 'm' || i,"
                " array_fill(0.1, array[384])::vector, 'x', i / 4.0"
                " from generate_series(1, 5) i",
                {},
            ),
            (
                "insert into memex.tenants (agent_id, user_id, memory_count) values ('a', 'u', 5)",
                {},
            ),
        )
        python_layer = _layer_state(python)
        with bound_login_role(python, "node-migrate", ["alice"]) as tenant:
            env = npm_env(
                MEMEX_HEAD=head,
                MEMEX_MIGRATE_EMPTY_URL=libpq_url(empty),
                MEMEX_MIGRATE_OLD_URL=libpq_url(old),
                MEMEX_MIGRATE_OLD_REVISION=OLD_REVISION,
                MEMEX_MIGRATE_PYTHON_URL=libpq_url(python),
                MEMEX_MIGRATE_CONCURRENT_URL=libpq_url(concurrent),
                MEMEX_MIGRATE_TENANT_URL=libpq_url(tenant),
            )
            node = required(shutil.which("node"), "node is not installed")
            output = run([node, "--test", "test/migrate.test.mjs"], PACKAGE, env)
        assert re.search(r"^# pass 7$", output, flags=re.M), output[-8000:]
        assert re.search(r"^# fail 0$", output, flags=re.M), output[-8000:]
        assert re.search(r"^# skipped 0$", output, flags=re.M), output[-8000:]

        # the catalogs of what Node migrated are those of what Python migrated
        with psycopg.connect(reference) as conn:
            expected = catalog(conn)
        assert len(expected["functions"]) > 100 and expected["policies"]
        for dsn in (empty, old, concurrent, python):
            with psycopg.connect(dsn) as conn:
                found = catalog(conn)
            differences = _differences(expected, found)
            assert differences == [], "\n".join(differences)

        # each runner finds the other's SQL layer in place: the same digest of the files,
        # the same catalog fingerprint, so nothing is applied again
        node_layer = _layer_state(empty)
        assert node_layer[:2] == python_layer[:2] == (head, _layer_state(reference)[1])
        assert migrate(empty) == head
        assert _layer_state(empty) == node_layer


def test_the_packed_package_carries_the_repositorys_sql(built: Path, tmp_path: Path) -> None:
    """npm pack's tarball holds sql/ as the repository has it: every file of the manifest
    (the revisions and the SQL layer) and the manifest, byte for byte, and nothing else."""
    npm = required(shutil.which("npm"), "npm is not installed")
    run([npm, "pack", "--pack-destination", str(tmp_path), "--loglevel=error"], PACKAGE)
    (tarball,) = tmp_path.glob("memexdb-client-*.tgz")
    root = REPO / "sql"
    expected = {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file()}
    with tarfile.open(tarball) as tar:
        packed = {
            m.name.removeprefix("package/sql/"): tar.extractfile(m).read()  # type: ignore[union-attr]
            for m in tar.getmembers()
            if m.isfile() and m.name.startswith("package/sql/")
        }
    assert sorted(packed) == sorted(expected)
    stale = sorted(name for name in expected if packed[name] != expected[name])
    assert stale == [], f"the package's sql/ differs from the repository's: {stale}"
    manifest = read_manifest(root)
    assert "manifest.txt" in packed and len(manifest.revisions) >= 34
    assert {f"revisions/{p.name}" for _, p in manifest.revisions} <= set(packed)


NODE_MIGRATE = """
import { migrate } from "./dist/direct/index.js";
console.log("node migrated to", await migrate(process.env.MEMEX_MIGRATE_URL));
"""


def test_node_and_python_migrating_at_once(built: Path, pg_server: EmbeddedPostgres) -> None:
    """Node's and Python's migrations of one empty database, started together, wait for
    each other on the same lock: both end at head, one of them made it, the catalog is the
    one Python alone makes."""
    with _databases(pg_server, "nm_mixed", "nm_mixed_reference") as (mixed, reference):
        head = head_revision()
        assert migrate(reference) == head
        node = required(shutil.which("node"), "node is not installed")
        env = npm_env(MEMEX_MIGRATE_URL=libpq_url(mixed))
        results: list[str] = []
        start = threading.Barrier(2)

        def python_migrate() -> None:
            start.wait(timeout=30)
            results.append(migrate(mixed))

        thread = threading.Thread(target=python_migrate)
        thread.start()
        start.wait(timeout=30)
        output = run([node, "--input-type=module", "-e", NODE_MIGRATE], PACKAGE, env)
        thread.join(timeout=120)
        assert results == [head]
        assert output.strip() == f"node migrated to {head}"
        with psycopg.connect(mixed) as conn:
            assert conn.execute("select count(*) from memex.alembic_version").fetchone() == (1,)
            found = catalog(conn)
        with psycopg.connect(reference) as conn:
            expected = catalog(conn)
        differences = _differences(expected, found)
        assert differences == [], "\n".join(differences)


# Issue 37's acceptance for the TypeScript client: 2,000 concurrent calls, each answered
# (its result, or a typed BusyError), none lost to the client (a socket, undici or fetch
# error, a TimeoutError, a promise that never settles). The script prints what each call
# settled with, counted; the test reads the counts.
NODE_LOAD = """
import { randomUUID } from "node:crypto";
import { BusyError, MemexClient } from "./dist/index.js";
import { MemexDirectClient } from "./dist/direct/index.js";

const CALLS = 2000;
const mode = process.argv[1];
const answered = { ok: 0, busy: 0, lost: {} };
const lostExamples = [];
const tenant = mode === "service"
  ? { agent_id: `load-${randomUUID().slice(0, 8)}`, user_id: "u" }
  : { agent_id: "direct-agent", user_id: "alice" }; // the role's tenant
const client = mode === "service"
  ? new MemexClient({
      baseUrl: process.env.MEMEX_URL,
      apiKey: process.env.MEMEX_API_KEY,
    })
  : new MemexDirectClient({ connectionString: process.env.MEMEX_DIRECT_URL });
const countOf = async () => {
  const counted = await client.count({ ...tenant });
  return typeof counted === "number" ? counted : counted.count;
};
const before = await countOf();
const first = await client.store({ ...tenant, content: "the lighthouse keeper logs the storm" });
// searches, stores, gets and listings, all at once (the defaults: no option tuned)
const kinds = ["search", "store", "get", "listMemories"];
function call(i) {
  switch (kinds[i % 4]) {
    case "search": return client.search({ ...tenant, query: `the storm ${i}` });
    case "store": return client.store({ ...tenant, content: `note ${i} about the storm` });
    case "get": return client.get({ ...tenant, memory_id: first.id });
    default: return client.listMemories({ ...tenant, limit: 5 });
  }
}
const started = Date.now();
const settled = await Promise.allSettled(Array.from({ length: CALLS }, (_, i) => call(i)));
const seconds = (Date.now() - started) / 1000;
for (const answer of settled) {
  if (answer.status === "fulfilled") answered.ok++;
  else if (answer.reason instanceof BusyError) answered.busy++;
  else {
    const why = answer.reason?.code ?? answer.reason?.cause?.code ?? "";
    const name = `${answer.reason?.name}:${why}`;
    answered.lost[name] = (answered.lost[name] ?? 0) + 1;
    if (lostExamples.length < 3) lostExamples.push(String(answer.reason));
  }
}
const stores = settled.filter((a, i) => kinds[i % 4] === "store" && a.status === "fulfilled")
  .length;
const stored = (await countOf()) - before;
await client.close?.();
console.log(JSON.stringify({
  calls: CALLS, settled: settled.length, seconds, ...answered, lostExamples, stores,
  stored,
}));
"""


def node_load(env: dict[str, str], mode: str) -> dict[str, object]:
    node = required(shutil.which("node"), "node is not installed")
    # 2,000 calls through 64 slots take minutes on a loaded 2-core machine
    output = run([node, "--input-type=module", "-e", NODE_LOAD, mode], PACKAGE, env, 900)
    result: dict[str, object] = json.loads(output.strip().splitlines()[-1])
    print(f"2,000 concurrent calls from Node ({mode}): {result}")
    return result


@pytest.mark.timeout(2400)
def test_two_thousand_concurrent_calls_from_node_are_all_answered(
    built: Path, service: tuple[Service, str], direct_roles: dict[str, str]
) -> None:
    """Searches, stores, gets and listings, 500 of each at once, through one client with
    its defaults: the service client (maxConcurrent 64, retries 3, 30 s per attempt)
    answers each with its result or a BusyError, and the direct client (a pg pool of 4
    connections, which queues its callers) with its result; every store that succeeded is
    stored once."""
    running, token = service
    env = npm_env(MEMEX_URL=running.base_url, MEMEX_API_KEY=token, **direct_roles)
    for mode in ("service", "direct"):
        result = node_load(env, mode)
        assert result["settled"] == result["calls"] == 2000, result
        assert result["lost"] == {}, result
        assert result["ok"] + result["busy"] == 2000, result  # type: ignore[operator]
        if mode == "direct":
            assert result["busy"] == 0, result  # no service to be busy: the pool queues
        # the first memory and each store answered (a retried store is stored once)
        assert result["stored"] == 1 + result["stores"], result  # type: ignore[operator]
