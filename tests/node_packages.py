"""The two npm packages, packed from the repository by their own recipe (`npm ci`, then
`npm pack`, whose `prepack` builds dist/ and, for @memexdb/minilm, model/ from the Python
package's sha256-checked file): the tarballs a Node user installs. conftest.py's
session fixture `node_tarballs` packs them once for every test that installs them
(tests/test_node_embeddings.py, tests/test_node_quickstart.py); packing also leaves both
packages built in the working tree (dist/, model/), which their `node --test` suites
use."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from tests.live_service import REPO, required
from tests.test_typescript_client import build_once, npm_env, run

MINILM = REPO / "clients" / "minilm"
CLIENT = REPO / "clients" / "typescript"


def node_env(**extra: str) -> dict[str, str]:
    """npm_env, and onnxruntime-node's postinstall skipped (it would fetch GPU libraries
    from outside npm)."""
    return npm_env(ONNXRUNTIME_NODE_INSTALL="skip", **extra)


def tarball_name(package: Path) -> str:
    manifest = json.loads((package / "package.json").read_text())
    return f"{manifest['name'].lstrip('@').replace('/', '-')}-{manifest['version']}.tgz"


def pack(dest: Path) -> dict[str, Path]:
    """`npm ci` and `npm pack` both packages into `dest`: their tarballs by package name
    (`@memexdb/minilm`, `@memexdb/client`)."""
    npm = required(shutil.which("npm"), "npm is not installed")
    required(shutil.which("node"), "node is not installed")
    tarballs = {}
    for package in (MINILM, CLIENT):
        if package == CLIENT:
            # built once for the run (the other worker's modules use it meanwhile), then
            # packed from that build: the same files its `prepack` would write
            build_once(npm)
            packing = [npm, "pack", "--ignore-scripts", "--pack-destination", str(dest)]
        else:
            run([npm, "ci", "--no-audit", "--no-fund", "--loglevel=error"], package, node_env())
            packing = [npm, "pack", "--pack-destination", str(dest)]
        run([*packing, "--loglevel=error"], package, node_env())
        name = json.loads((package / "package.json").read_text())["name"]
        tarballs[name] = dest / tarball_name(package)
        assert tarballs[name].is_file(), tarballs[name]
    return tarballs


def pg_version() -> str:
    """The `pg` driver's version the client is built and tested with (its lockfile's), for
    the `pg` a user installs beside it."""
    return str(json.loads((CLIENT / "node_modules" / "pg" / "package.json").read_text())["version"])
