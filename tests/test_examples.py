"""docs/examples.md tells the truth: its table names each main operation in every
language, and its scripts run as written against a live service, with a key and against a
service without keys, each for its own user, printing the same lines and storing what they
say (the file's content after the patch, and every vector the one of its own text); a
script whose requests are refused stops with the service's error, never printing blank
lines (the TypeScript one runs from the client built from the repository's sources here,
and from the packed tarball in tests/test_typescript_client.py)."""

from __future__ import annotations

import json
import math
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

import psycopg
import pytest

from memexdb.embedded import EmbeddedPostgres
from memexdb.embedding import Embedder
from memexdb.operation_table import OPERATIONS
from tests.conftest import drop_database, new_database
from tests.live_service import REPO, Service, required, service_env
from tests.sqlapi import bound_login_role
from tests.test_mcp_support import create_admin_key, serve

PAGE = REPO / "docs" / "examples.md"

# What every language's script prints: the same calls, the same answers.
EXPECTED = """\
store: Alice prefers dark mode
search: Alice prefers dark mode
get: semantic
update: 1.5
list: Alice drinks green tea | Alice prefers dark mode
count: 2
delete: 1
write_file: 1
patch_file: 2
read_file: - dark mode,- green tea
revisions: patch write
memory_search: user/profile.md
"""


def example(language: str) -> str:
    blocks = re.findall(rf"```{language}\n(.*?)```", PAGE.read_text(), flags=re.S)
    assert len(blocks) == 1, f"docs/examples.md has one {language} script"
    return str(blocks[0])


def camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


class Live(NamedTuple):
    service: Service
    key: str | None  # None: a database without keys, whose service wants none
    dsn: str


@pytest.fixture(scope="module", params=["with a key", "without keys"])
def live(
    request: pytest.FixtureRequest,
    pg_server: EmbeddedPostgres,
    template_db: str,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Live]:
    """A live service whose database has an admin key (so it refuses calls without one),
    or has no key at all (so it takes calls without one, and refuses an empty bearer)."""
    dsn = new_database(pg_server)
    try:
        key = create_admin_key(dsn, "examples") if request.param == "with a key" else None
        with serve(tmp_path_factory.mktemp("examples"), dsn=dsn) as running:
            yield Live(running, key, dsn)
    finally:
        drop_database(pg_server, dsn)


def script_env(live: Live, user: str, key: str | None) -> dict[str, str]:
    variables = {"MEMEX_URL": live.service.base_url, "MEMEX_USER": user}
    if key is not None:
        variables["MEMEX_API_KEY"] = key
    return service_env(**variables)


def run_script(args: list[str], live: Live, user: str, stdin: str | None = None) -> str:
    res = subprocess.run(
        args,
        env=script_env(live, user, live.key),
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=REPO,
    )
    assert res.returncode == 0, res.stdout + res.stderr
    return res.stdout


def cosine(a: list[float], b: list[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    return dot / math.sqrt(sum(x * x for x in a) * sum(y * y for y in b))


def assert_stored(live: Live, user: str, embedder: Embedder) -> None:
    """What the script left in the database (read as the operator): the tea memory and
    the patched file, each with its own text's vector, and the file's two revisions."""
    with psycopg.connect(live.dsn) as conn:
        memories = conn.execute(
            "select content, path, embedding::text, embedding_model from memex.memories"
            " where agent_id = 'assistant' and user_id = %s order by created_at",
            [user],
        ).fetchall()
        revisions = conn.execute(
            "select revision, operation, content from memex.file_revisions"
            " where agent_id = 'assistant' and user_id = %s order by revision",
            [user],
        ).fetchall()
    patched = "## Preferences\n- dark mode\n- green tea\n"
    assert [(content, path) for content, path, _, _ in memories] == [
        ("Alice drinks green tea", None),
        (patched, "user/profile.md"),
    ]
    assert revisions == [(1, "write", "## Preferences\n- dark mode\n"), (2, "patch", patched)]
    for content, _, vector, model in memories:
        assert model == embedder.model_id
        expected = [float(x) for x in embedder.embed([content])[0]]
        similarity = cosine(json.loads(vector), expected)
        assert similarity > 0.99, f"the vector stored for {content!r}: cosine {similarity}"


def test_the_table_names_every_operation_as_each_surface_does() -> None:
    names = {op.name: op for op in OPERATIONS}
    rows = re.findall(
        r"^\| [a-z ]+ \| `(\w+) ([^`]+)` \| `(\w+)` \| `(\w+)` \| `([\w.]+)` \|$",
        PAGE.read_text(),
        flags=re.M,
    )
    assert len(rows) >= 12
    for method, path, python, typescript, sql in rows:
        op = names[python]
        assert op.rest is not None
        assert (method, path) == (
            op.rest.method,
            re.sub(r":\w+}", "}", op.rest.path).replace("{memory_id}", "{id}"),
        ), python
        assert typescript == camel(python)
        assert sql in op.sql, (python, sql, op.sql)


def test_curl_script(live: Live, embedder: Embedder) -> None:
    assert run_script(["bash", "-c", example("bash")], live, "curl") == EXPECTED
    assert_stored(live, "curl", embedder)


def test_python_client_script(live: Live, embedder: Embedder) -> None:
    assert run_script([sys.executable, "-c", example("python")], live, "python") == EXPECTED
    assert_stored(live, "python", embedder)


@pytest.fixture(scope="module")
def typescript_project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An empty project with @memexdb/client, built from the repository's sources in a
    copy of its own (npm ci, tsc), so that nothing is written to clients/typescript while
    tests/test_typescript_client.py builds and packs it there."""
    npm = required(shutil.which("npm"), "npm is not installed")
    required(shutil.which("node"), "node is not installed")
    source = REPO / "clients" / "typescript"
    package = tmp_path_factory.mktemp("typescript-client")
    for name in ("package.json", "package-lock.json", "tsconfig.json", "README.md"):
        shutil.copy(source / name, package / name)
    shutil.copytree(source / "src", package / "src")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMEX_", "npm_"))}
    env.update(npm_config_cache=str(source / ".npm-cache"), npm_config_update_notifier="false")
    for args in (
        [npm, "ci", "--ignore-scripts", "--no-audit", "--no-fund", "--loglevel=error"],
        [str(package / "node_modules" / ".bin" / "tsc"), "-p", "tsconfig.json"],
    ):
        done = subprocess.run(
            args, cwd=package, env=env, capture_output=True, text=True, timeout=300, check=False
        )
        assert done.returncode == 0, done.stdout + done.stderr
    project = tmp_path_factory.mktemp("typescript-examples")
    (project / "package.json").write_text('{"type": "module"}\n')
    (project / "node_modules" / "@memexdb").mkdir(parents=True)
    (project / "node_modules" / "@memexdb" / "client").symlink_to(package)
    (project / "examples.mjs").write_text(example("js"))
    return project


def test_typescript_script(live: Live, embedder: Embedder, typescript_project: Path) -> None:
    """The packed tarball runs it with a key in tests/test_typescript_client.py; here the
    client built from the same sources runs it with a key and without keys."""
    node = required(shutil.which("node"), "node is not installed")
    script = [node, str(typescript_project / "examples.mjs")]
    assert run_script(script, live, "typescript") == EXPECTED
    assert_stored(live, "typescript", embedder)


def sql_script_args(role: str) -> list[str]:
    psql = required(shutil.which("psql"), "psql is not installed")
    return [psql, role, "-X", "-q", "-t", "-A", "-v", "ON_ERROR_STOP=1", "-f", "-"]


def test_sql_script_as_a_bound_role(live: Live, embedder: Embedder) -> None:
    with bound_login_role(live.dsn, "assistant", ["sql"]) as role:
        assert run_script(sql_script_args(role), live, "sql", stdin=example("sql")) == EXPECTED
    assert_stored(live, "sql", embedder)


@pytest.mark.parametrize("live", ["with a key"], indirect=True)
def test_a_refused_request_stops_the_scripts_with_its_error(live: Live) -> None:
    """Against a service with keys, without one (the curl script used to send an empty
    bearer, hide the 401 with `curl -sf`, print twelve blank lines and exit 0)."""
    refused = subprocess.run(
        ["bash", "-c", example("bash")],
        env=script_env(live, "refused", None),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert refused.returncode != 0 and refused.stdout == "", refused
    assert "memexdb request failed" in refused.stderr and "API key" in refused.stderr
    with bound_login_role(live.dsn, "assistant", ["refused"]) as role:
        psql = subprocess.run(
            sql_script_args(role),
            env=script_env(live, "refused", None),
            input=example("sql"),
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
    assert psql.returncode != 0 and psql.stdout == "", psql
    assert "401" in psql.stderr, psql.stderr
    with psycopg.connect(live.dsn) as conn:
        stored = conn.execute(
            "select count(*) from memex.memories where user_id = 'refused'"
        ).fetchone()
    assert stored == (0,)


def test_every_script_shows_every_operation_of_the_table() -> None:
    for language, comment in (("bash", "#"), ("python", "#"), ("js", "//")):
        steps = re.findall(rf"^{comment} (\w[\w ]*)$", example(language), flags=re.M)
        table = re.findall(r"^\| ([a-z ]+) \| `", PAGE.read_text(), flags=re.M)
        assert steps == table, language
