"""`@memexdb/client` as npm packs it from a clean checkout (tracked files only: no dist/,
no node_modules/ of this working tree): `npm ci`, then `npm pack`, whose `prepack` builds
dist/ (before, a clean checkout packed package.json and README.md only). The tarball holds
the ES module build and the CommonJS one (dist/cjs, with its package.json) and sql/ (the
repository's, which the build copies in for migrate()); `npm publish
--dry-run` lists the same files. Installed into an empty project, `import` and `require`
both load it, their types check (`.mts` and `.cts`, strict) and each calls a live service.

tests/test_typescript_client.py packs from the package directory after its own build;
this one starts from nothing."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from memexdb import __version__
from memexdb.embedded import EmbeddedPostgres
from tests.clean_install import INSTALL_TIMEOUT, checkout, run
from tests.conftest import drop_database, new_database
from tests.live_service import Service, required
from tests.test_mcp_support import create_admin_key, serve
from tests.test_typescript_client import npm_env

pytestmark = pytest.mark.e2e  # docs/development.md, 'Test tiers'

ENTRIES = ("index", "direct/index")  # the package's "." and "./direct"

ESM = """\
import { MemexClient, NotFoundError } from "@memexdb/client";
import { MemexDirectClient } from "@memexdb/client/direct";

const { MEMEX_URL, MEMEX_API_KEY } = process.env;
const memex = new MemexClient({ baseUrl: MEMEX_URL, apiKey: MEMEX_API_KEY });
const who = { agent_id: "npm-package", user_id: "esm" };
const stored = await memex.store({ ...who, content: "loaded with import" });
const got = await memex.get({ ...who, memory_id: stored.id });
let missing = "";
try {
  await memex.get({ ...who, memory_id: "00000000-0000-0000-0000-000000000000" });
} catch (error) {
  if (error instanceof NotFoundError) missing = error.code;
}
console.log(JSON.stringify({ content: got.content, missing, direct: typeof MemexDirectClient }));
"""

CJS = """\
const { MemexClient, NotFoundError } = require("@memexdb/client");
const { MemexDirectClient } = require("@memexdb/client/direct");

const { MEMEX_URL, MEMEX_API_KEY } = process.env;
const memex = new MemexClient({ baseUrl: MEMEX_URL, apiKey: MEMEX_API_KEY });
const who = { agent_id: "npm-package", user_id: "cjs" };
(async () => {
  const stored = await memex.store({ ...who, content: "loaded with require" });
  const got = await memex.get({ ...who, memory_id: stored.id });
  let missing = "";
  try {
    await memex.get({ ...who, memory_id: "00000000-0000-0000-0000-000000000000" });
  } catch (error) {
    if (error instanceof NotFoundError) missing = error.code;
  }
  console.log(JSON.stringify({ content: got.content, missing, direct: typeof MemexDirectClient }));
})().catch((error) => {
  console.error(error);
  process.exit(1);
});
"""

# what a TypeScript caller of each module kind compiles against (the `import` and the
# `require` condition's declarations)
TYPED_ESM = """\
import { MemexClient, type Results } from "@memexdb/client";
const memex = new MemexClient({ baseUrl: "http://127.0.0.1:8000" });
const who = { agent_id: "a", user_id: "u" };
export const found: Promise<Results["search"]> = memex.search({ ...who, query: "q" });
"""
TYPED_CJS = """\
import memexdb = require("@memexdb/client");
const memex = new memexdb.MemexClient({ baseUrl: "http://127.0.0.1:8000" });
const who = { agent_id: "a", user_id: "u" };
export const found: Promise<memexdb.Results["search"]> = memex.search({ ...who, query: "q" });
"""


@pytest.fixture(scope="module")
def npm() -> str:
    found = required(shutil.which("npm"), "npm is not installed")
    required(shutil.which("node"), "node is not installed")
    return found


@pytest.fixture(scope="module")
def service(
    pg_server: EmbeddedPostgres, template_db: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[Service, str]]:
    """A live service with an admin key; the key."""
    dsn = new_database(pg_server)
    try:
        token = create_admin_key(dsn, "npm package tests")
        with serve(tmp_path_factory.mktemp("npm-package"), dsn=dsn) as running:
            yield running, token
    finally:
        drop_database(pg_server, dsn)


@pytest.mark.timeout(INSTALL_TIMEOUT)
def test_pack_from_a_clean_checkout_then_import_and_require(
    npm: str, service: tuple[Service, str], tmp_path: Path
) -> None:
    # the package and the repository's sql/, which its build copies in (migrate() runs it)
    checkout(tmp_path / "repo", "sql")
    package = checkout(tmp_path / "repo", "clients/typescript") / "clients" / "typescript"
    assert not (package / "dist").exists() and not (package / "node_modules").exists()
    manifest = json.loads((package / "package.json").read_text())
    assert manifest["version"] == __version__  # released together (docs/development.md)
    env = npm_env()  # npm's cache: the one tests/test_typescript_client.py fills
    run(
        [npm, "ci", "--prefer-offline", "--no-audit", "--no-fund", "--loglevel=error"], package, env
    )

    out = tmp_path / "packed"
    out.mkdir()
    run([npm, "pack", "--pack-destination", out, "--loglevel=error"], package, env)
    (tarball,) = out.glob("*.tgz")
    assert tarball.name == f"memexdb-client-{__version__}.tgz"
    listing = set(run(["tar", "tzf", tarball], out).split())
    expected = {"package/package.json", "package/README.md", "package/LICENSE"}
    expected.add("package/dist/cjs/package.json")
    expected |= {"package/sql/manifest.txt", "package/sql/revisions/0001_core_schema.sql"}
    for entry in ENTRIES:
        for build in ("dist", "dist/cjs"):
            expected |= {f"package/{build}/{entry}.js", f"package/{build}/{entry}.d.ts"}
    assert expected <= listing, sorted(expected - listing)
    assert not any(name.startswith(("package/src/", "package/test/")) for name in listing)

    # npm publish --dry-run (offline: nothing is sent anywhere) lists the same files
    dry = run(
        [npm, "publish", "--dry-run", "--offline", "--ignore-scripts", "--json"], package, env
    )
    published = json.loads(dry[dry.index("{") : dry.rindex("}") + 1])[manifest["name"]]["files"]
    assert {f"package/{f['path']}" for f in published} == listing

    # an empty project installs the tarball (no runtime dependencies: offline)
    project = tmp_path / "app"
    project.mkdir()
    run([npm, "init", "-y", "--loglevel=error"], project, env)
    run([npm, "install", "--offline", "--no-audit", "--no-fund", tarball], project, env)
    # direct mode's optional peer `pg` (a user runs `npm install pg`): the checkout's copy
    (project / "node_modules" / "pg").symlink_to(package / "node_modules" / "pg")

    tsc = package / "node_modules" / ".bin" / "tsc"
    (project / "typed.mts").write_text(TYPED_ESM)
    (project / "typed.cts").write_text(TYPED_CJS)
    check = [tsc, "--strict", "--noEmit", "--module", "nodenext", "--target", "es2022"]
    run([*check, "--lib", "es2022,dom", "typed.mts", "typed.cts"], project, env)

    running, token = service
    node = required(shutil.which("node"), "node is not installed")
    live = npm_env(MEMEX_URL=running.base_url, MEMEX_API_KEY=token)
    (project / "esm.mjs").write_text(ESM)
    (project / "cjs.cjs").write_text(CJS)
    for script, content in (("esm.mjs", "loaded with import"), ("cjs.cjs", "loaded with require")):
        answer = json.loads(run([node, script], project, live).strip().splitlines()[-1])
        assert answer == {"content": content, "missing": "not_found", "direct": "function"}
