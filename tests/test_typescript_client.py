"""The TypeScript client (clients/typescript, `@memexdb/client`) against a live `memexdb
serve`: its generated sources are current, `tsc` (strict) builds it, its `node --test`
suite passes, and the packed tarball installed into an empty project runs the example of
docs/clients.md (what a user installs is what is tested)."""

from __future__ import annotations

import filecmp
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from memexdb.embedded import EmbeddedPostgres
from tests.live_service import REPO, Service, required
from tests.test_examples import EXPECTED, example
from tests.test_mcp_support import serve_with_admin_key

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


@pytest.fixture(scope="module")
def built(npm: str) -> Path:
    """`npm ci` (from the lockfile) and `npm run build` (tsc, strict, and the type checks
    of test/types.check.ts)."""
    run([npm, "ci", "--no-audit", "--no-fund", "--loglevel=error"], PACKAGE)
    run([npm, "run", "build"], PACKAGE)
    return PACKAGE / "dist"


@pytest.fixture(scope="module")
def service(
    pg_server: EmbeddedPostgres, template_db: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[Service, str]]:
    """A live service with an admin key (so it refuses calls without one); the key."""
    with serve_with_admin_key(
        pg_server, tmp_path_factory.mktemp("typescript"), "typescript tests"
    ) as keyed:
        yield keyed


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


def test_node_suite_against_the_service(
    built: Path, service: tuple[Service, str], npm: str
) -> None:
    running, token = service
    env = npm_env(MEMEX_URL=running.base_url, MEMEX_API_KEY=token)
    node = required(shutil.which("node"), "node is not installed")
    suites = sorted(str(p.relative_to(PACKAGE)) for p in PACKAGE.glob("test/*.test.mjs"))
    assert suites == ["test/retry.test.mjs", "test/service.test.mjs"]
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


def docs_example() -> str:
    blocks = re.findall(r"```js\n(.*?)```", DOCS_PAGE.read_text(), flags=re.S)
    assert len(blocks) == 1, "docs/clients.md has one JavaScript example"
    readme = (PACKAGE / "README.md").read_text()
    assert blocks[0] in readme, "clients/typescript/README.md shows the same example"
    return str(blocks[0])


def test_packed_tarball_from_an_empty_project(
    built: Path, service: tuple[Service, str], npm: str, tmp_path: Path
) -> None:
    running, token = service
    out = run([npm, "pack", "--pack-destination", str(tmp_path), "--loglevel=error"], PACKAGE)
    tarball = tmp_path / "memexdb-client-0.1.0.tgz"
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

    (project / "example.mjs").write_text(docs_example())
    node = required(shutil.which("node"), "node is not installed")
    env = npm_env(MEMEX_URL=running.base_url, MEMEX_API_KEY=token)
    output = run([node, "example.mjs"], project, env)
    assert output.startswith("Alice prefers dark mode "), output
    assert re.search(r"^stored [0-9a-f-]{36}$", output, flags=re.M), output

    # docs/examples.md's TypeScript script prints what the other languages' scripts print
    (project / "examples.mjs").write_text(example("js"))
    env = npm_env(MEMEX_URL=running.base_url, MEMEX_API_KEY=token, MEMEX_USER="typescript")
    assert run([node, "examples.mjs"], project, env) == EXPECTED
