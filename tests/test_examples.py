"""docs/examples.md tells the truth: its table names each main operation in every
language, and its scripts run as written against a live service with a key, each for its
own user, printing the same lines (the TypeScript one runs from the packed tarball in
tests/test_typescript_client.py)."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from typing import NamedTuple

import pytest

from memexdb.embedded import EmbeddedPostgres
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
    key: str
    dsn: str


@pytest.fixture(scope="module")
def live(
    pg_server: EmbeddedPostgres, template_db: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Live]:
    """A live service whose database has an admin key (so it refuses calls without one)."""
    dsn = new_database(pg_server)
    try:
        key = create_admin_key(dsn, "examples")
        with serve(tmp_path_factory.mktemp("examples"), dsn=dsn) as running:
            yield Live(running, key, dsn)
    finally:
        drop_database(pg_server, dsn)


def run_script(args: list[str], live: Live, user: str, stdin: str | None = None) -> str:
    variables = {"MEMEX_URL": live.service.base_url, "MEMEX_API_KEY": live.key}
    res = subprocess.run(
        args,
        env=service_env(**variables, MEMEX_USER=user),
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=REPO,
    )
    assert res.returncode == 0, res.stdout + res.stderr
    return res.stdout


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


def test_curl_script(live: Live) -> None:
    assert run_script(["bash", "-euc", example("bash")], live, "curl") == EXPECTED


def test_python_client_script(live: Live) -> None:
    assert run_script([sys.executable, "-c", example("python")], live, "python") == EXPECTED


def test_sql_script_as_a_bound_role(live: Live) -> None:
    psql = required(shutil.which("psql"), "psql is not installed")
    with bound_login_role(live.dsn, "assistant", ["sql"]) as role:
        args = [psql, role, "-X", "-q", "-t", "-A", "-v", "ON_ERROR_STOP=1", "-f", "-"]
        assert run_script(args, live, "sql", stdin=example("sql")) == EXPECTED


def test_every_script_shows_every_operation_of_the_table() -> None:
    for language, comment in (("bash", "#"), ("python", "#"), ("js", "//")):
        steps = re.findall(rf"^{comment} (\w[\w ]*)$", example(language), flags=re.M)
        table = re.findall(r"^\| ([a-z ]+) \| `", PAGE.read_text(), flags=re.M)
        assert steps == table, language
