"""docs/examples.md tells the truth: its table names each main operation in every
language, and its scripts run as written against a live service with a key, each for its
own user, printing the same lines (the TypeScript one runs from the packed tarball in
tests/test_typescript_client.py)."""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Iterator

import pytest

from memexdb.embedded import EmbeddedPostgres
from memexdb.operation_table import OPERATIONS
from tests.live_service import REPO, Service, service_env
from tests.test_mcp_support import serve_with_admin_key

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


@pytest.fixture(scope="module")
def keyed_service(
    pg_server: EmbeddedPostgres, template_db: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[Service, str]]:
    """A live service whose database has an admin key (so it refuses calls without one)."""
    with serve_with_admin_key(pg_server, tmp_path_factory.mktemp("examples"), "examples") as keyed:
        yield keyed


def run_script(args: list[str], running: Service, token: str, user: str) -> str:
    env = service_env(MEMEX_URL=running.base_url, MEMEX_API_KEY=token, MEMEX_USER=user)
    res = subprocess.run(
        args, env=env, capture_output=True, text=True, timeout=120, check=False, cwd=REPO
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


def test_curl_script(keyed_service: tuple[Service, str]) -> None:
    running, token = keyed_service
    assert run_script(["bash", "-euc", example("bash")], running, token, "curl") == EXPECTED


def test_python_client_script(keyed_service: tuple[Service, str]) -> None:
    running, token = keyed_service
    out = run_script([sys.executable, "-c", example("python")], running, token, "python")
    assert out == EXPECTED


def test_every_script_shows_every_operation_of_the_table() -> None:
    for language, comment in (("bash", "#"), ("python", "#"), ("js", "//")):
        steps = re.findall(rf"^{comment} (\w[\w ]*)$", example(language), flags=re.M)
        table = re.findall(r"^\| ([a-z ]+) \| `", PAGE.read_text(), flags=re.M)
        assert steps == table, language
