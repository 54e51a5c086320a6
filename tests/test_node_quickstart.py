"""docs/node-quickstart.md, run as written by a Node user with no Python: the two
packages packed from the repository (the session's `node_tarballs`), installed into an
empty project with the page's `npm install` command, then the page's operator script
(migrate an empty database in Node, create and bind a role) and its application script
(store, search, files, memorize and memory search without an LLM) against the test
suite's PostgreSQL, with a PATH holding only `node`, `npm` and `sh` (a preloaded module fails
the run if `python3`, `python` or `memexdb` can be started from inside the Node process).
The code is taken from the page, so the page and the test cannot drift apart; the
output the page shows, and the install size it states, are checked."""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from memexdb.embedded import EmbeddedPostgres
from memexdb.migrations import head_revision
from tests.conftest import db_dsn, janitor
from tests.live_service import REPO, required
from tests.node_packages import node_env, pg_version
from tests.test_node_embeddings import disk_usage
from tests.test_typescript_client import libpq_url, run

pytestmark = pytest.mark.e2e  # docs/development.md, 'Test tiers'

PAGE = REPO / "docs" / "node-quickstart.md"
APP_ROLE = "notes_app"  # the role the page's setup script creates and binds

# Preloaded into every Node process that runs the page's code (`node --import`): Python
# and the memexdb command must not be startable from there.
NO_PYTHON = """\
import { spawnSync } from "node:child_process";
for (const name of ["python3", "python", "memexdb"]) {
  const tried = spawnSync(name, ["--version"]);
  if (tried.error?.code !== "ENOENT") {
    console.error(`${name} can be started from this Node process (PATH=${process.env.PATH})`);
    process.exit(97);
  }
}
"""


def page() -> str:
    return PAGE.read_text()


def fenced(lang: str) -> list[str]:
    return [str(b) for b in re.findall(rf"```{lang}\n(.*?)```", page(), flags=re.S)]


def script(name: str) -> str:
    """The page's JavaScript block that starts with `// <name>:`."""
    found = [b for b in fenced("js") if b.startswith(f"// {name}:")]
    assert len(found) == 1, f"docs/node-quickstart.md has one block `// {name}:`"
    return found[0]


def command(ends_with: str) -> tuple[dict[str, str], list[str]]:
    """The page's shell command ending with `ends_with`: its variables, its arguments."""
    found = [b.strip() for b in fenced("sh") if b.strip().endswith(ends_with)]
    assert len(found) == 1, f"docs/node-quickstart.md has one command ending {ends_with!r}"
    words = shlex.split(found[0])
    env = {}
    while "=" in words[0]:
        key, value = words.pop(0).split("=", 1)
        env[key] = value
    return env, words


def printed() -> str:
    found = re.search(r"It prints:\n\n```text\n(.*?)```", page(), flags=re.S)
    assert found, "docs/node-quickstart.md shows what app.mjs prints"
    return found.group(1)


def stated_install_mb() -> int:
    found = re.search(
        r"`du -sh node_modules` after that command in an empty project: (\d+) MB", page()
    )
    assert found, "docs/node-quickstart.md states the install size"
    return int(found.group(1))


@pytest.fixture(scope="module")
def node_only(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A PATH of one directory holding `node`, `npm` and `sh` (links to the installed
    ones; npm runs packages' install scripts with `sh`, which every system has)."""
    bin_dir = tmp_path_factory.mktemp("node-only-bin")
    for tool in ("node", "npm", "sh"):
        (bin_dir / tool).symlink_to(required(shutil.which(tool), f"{tool} is not installed"))
    return str(bin_dir)


@pytest.fixture
def empty_database(pg_server: EmbeddedPostgres) -> Iterator[str]:
    """A database with nothing in it (not cloned from the migrated template), as the
    operator (the server's superuser); the page's role is dropped afterwards (roles
    belong to the cluster)."""
    name = f"t_{uuid.uuid4().hex[:12]}"
    with janitor(pg_server, name):
        try:
            yield db_dsn(pg_server, name)
        finally:
            with psycopg.connect(pg_server.dsn, autocommit=True) as conn:
                conn.execute(sql.SQL("drop role if exists {}").format(sql.Identifier(APP_ROLE)))


def test_the_guard_finds_python_on_a_full_path(tmp_path: Path) -> None:
    """The preloaded check fails where Python is on the PATH (so passing it below means
    something), and passes on a PATH of node alone."""
    node = required(shutil.which("node"), "node is not installed")
    required(shutil.which("python3"), "python3 is not on this PATH")
    (tmp_path / "no-python.mjs").write_text(NO_PYTHON)
    (tmp_path / "empty.mjs").write_text("")
    args = [node, "--import", "./no-python.mjs", "empty.mjs"]
    caught = subprocess.run(args, cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert caught.returncode == 97 and "can be started" in caught.stderr, caught
    alone = tmp_path / "bin"
    alone.mkdir()
    (alone / "node").symlink_to(node)
    run(args, tmp_path, node_env(PATH=str(alone)))


def test_node_quickstart_without_python(
    node_tarballs: dict[str, Path], node_only: str, empty_database: str, tmp_path: Path
) -> None:
    project = tmp_path / "app"
    project.mkdir()
    env = node_env(PATH=node_only)
    npm = str(Path(node_only) / "npm")
    run([npm, "init", "-y", "--loglevel=error"], project, env)

    # the page's install command, the packed tarballs for the names not yet published
    install_env, words = command("npm install @memexdb/client @memexdb/minilm pg")
    assert words[:2] == ["npm", "install"]
    packages = {name: str(path) for name, path in node_tarballs.items()}
    packages["pg"] = f"pg@{pg_version()}"  # the client's tested driver, from the registry
    install = [npm, "install", "--no-audit", "--no-fund", "--loglevel=error"]
    run([*install, *(packages[w] for w in words[2:])], project, {**env, **install_env})

    (project / "no-python.mjs").write_text(NO_PYTHON)
    node = [str(Path(node_only) / "node"), "--import", "./no-python.mjs"]

    # once, as the operator: migrate the empty database in Node, create and bind the role
    (project / "setup.mjs").write_text(script("setup.mjs"))
    setup_env, words = command("node setup.mjs")
    assert words == ["node", "setup.mjs"] and set(setup_env) == {
        "MEMEX_OPERATOR_URL",
        "NOTES_APP_PASSWORD",
    }
    password = uuid.uuid4().hex
    operator = {"MEMEX_OPERATOR_URL": libpq_url(empty_database), "NOTES_APP_PASSWORD": password}
    for _ in range(2):  # a second run finds nothing to migrate and the role bound
        output = run([*node, "setup.mjs"], project, {**env, **operator})
        assert output == f"schema at revision {head_revision()}\n", output
    with psycopg.connect(empty_database) as conn:
        bound = conn.execute(
            "select agent_id, user_ids, access from memex.sql_roles where role_name = %s",
            (APP_ROLE,),
        ).fetchall()
    assert bound == [("notes-agent", ["alice"], "write")], bound

    # the application, as the bound role
    (project / "app.mjs").write_text(script("app.mjs"))
    app_env, words = command("node app.mjs")
    assert words == ["node", "app.mjs"] and set(app_env) == {"MEMEX_DIRECT_URL"}
    role = {**conninfo_to_dict(empty_database), "user": APP_ROLE, "password": password}
    direct = {"MEMEX_DIRECT_URL": libpq_url(make_conninfo("", **role))}
    output = run([*node, "app.mjs"], project, {**env, **direct})
    assert output == printed(), output

    # what the application wrote is its tenant's, written as the bound role
    with psycopg.connect(empty_database) as conn:
        rows = conn.execute(
            "select agent_id, user_id, actor, embedding_model from memex.memories"
        ).fetchall()
    assert rows and {r[:3] for r in rows} <= {
        ("notes-agent", "alice", f"role:{APP_ROLE}"),
        ("notes-agent", "alice", "memorize-agent"),
    }, rows
    assert {r[3] for r in rows} == {"all-MiniLM-L6-v2-int8"}, rows  # embedded before commit

    measured_mb = disk_usage(project / "node_modules") / 2**20
    assert abs(measured_mb - stated_install_mb()) <= 0.1 * stated_install_mb(), measured_mb
