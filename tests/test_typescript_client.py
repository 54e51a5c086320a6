"""The TypeScript client (clients/typescript, `@memexdb/client`) against a live `memexdb
serve`: its generated sources are current, `tsc` (strict) builds it, its `node --test`
suite passes (service mode against the service; direct-Postgres mode against its database
as SQL roles bound to a tenant), and the packed tarball installed into an empty project
runs the examples of docs/clients.md: service mode with nothing else installed, direct
mode with `pg` beside it (what a user installs is what is tested)."""

from __future__ import annotations

import contextlib
import filecmp
import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote, urlencode

import pytest
from psycopg.conninfo import conninfo_to_dict

from memexdb.embedded import EmbeddedPostgres
from tests.conftest import drop_database, new_database
from tests.live_service import REPO, Service, required
from tests.sqlapi import bound_login_role
from tests.test_examples import EXPECTED, example
from tests.test_mcp_support import create_admin_key, serve

PACKAGE = REPO / "clients" / "typescript"
DOCS_PAGE = REPO / "docs" / "clients.md"
TIMEOUT = 300.0


def npm_env(**extra: str) -> dict[str, str]:
    """npm with its cache inside the package (gitignored), as .ci/run does for .ci/node."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMEX_", "npm_"))}
    env.update(npm_config_cache=str(PACKAGE / ".npm-cache"), npm_config_update_notifier="false")
    env.update(extra)
    return env


def run(args: list[str], cwd: Path, env: dict[str, str] | None = None) -> str:
    """Run a Node tool to success (bounded); its output, or a failure that shows it."""
    try:
        res = subprocess.run(
            args,
            cwd=cwd,
            env=env or npm_env(),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=TIMEOUT,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"{' '.join(args)} ran over {TIMEOUT} s: {exc.stdout!r} {exc.stderr!r}")
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


@pytest.fixture(scope="module")
def built(npm: str) -> Path:
    """`npm ci` (from the lockfile; .ci/run has just run it, so only when node_modules
    differs from the lockfile) and `npm run build` (tsc, strict, and the type checks of
    test/types.check.ts)."""
    if not installed_from_lockfile():
        run([npm, "ci", "--no-audit", "--no-fund", "--loglevel=error"], PACKAGE)
    run([npm, "run", "build"], PACKAGE)
    return PACKAGE / "dist"


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
            "MEMEX_CLI": str(Path(sys.executable).with_name("memexdb")),
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
    suites = sorted(str(p.relative_to(PACKAGE)) for p in PACKAGE.glob("test/*.test.mjs"))
    assert suites == [
        "test/direct.test.mjs",
        "test/errors.test.mjs",
        "test/retry.test.mjs",
        "test/service.test.mjs",
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
