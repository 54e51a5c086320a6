"""`memexdb migrate` run by a role that cannot create roles: the owner of its database,
neither a superuser nor CREATEROLE (as a managed PostgreSQL's user is), on a fresh server
where no memex role exists. The first migrate refuses before changing anything and lists
what an administrator runs once (the `vector` extension, the three base roles); after
that it migrates, without the two optional BYPASSRLS roles (revisions 0039 and 0040),
warning on every run of what that costs; the service then stores, searches and updates,
and tenants stay apart (docs/operations.md, "Migrating without a superuser")."""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Iterator
from typing import Any

import httpx
import psycopg
import pytest
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from memexdb.embedded import EmbeddedPostgres
from memexdb.migrations import head_revision
from tests.conftest import scratch_dir
from tests.live_service import in_process_service, run_cli, service_env
from tests.test_typescript_client import PACKAGE, build_once, libpq_url, npm_env, run

OWNER = "memex_managed_owner"
DATABASE = "managed"
OPTIONAL = ("memex_text_lookup", "memex_trigger_owner")


@pytest.fixture(scope="module")
def managed() -> Iterator[tuple[str, str]]:
    """A fresh server (no memex role in its cluster) with database DATABASE owned by a
    login role OWNER that is no superuser and has no CREATEROLE: (superuser's DSN of that
    database, OWNER's DSN of it)."""
    root = scratch_dir("memexdb-managed-")
    server = EmbeddedPostgres(root / "pg")
    server.start()
    try:
        with psycopg.connect(server.dsn, autocommit=True) as admin:
            admin.execute(f"create role {OWNER} login password 'pw' nosuperuser nocreaterole")
            admin.execute(f"create database {DATABASE} owner {OWNER}")
        params = {**conninfo_to_dict(server.dsn), "dbname": DATABASE}
        yield (
            make_conninfo("", **params),
            make_conninfo("", **{**params, "user": OWNER, "password": "pw"}),
        )
    finally:
        server.stop()
        shutil.rmtree(root, ignore_errors=True)


def migrate(dsn: str) -> tuple[int, str]:
    return run_cli(["migrate"], service_env(MEMEX_DATABASE_URL=dsn))


# Node's migrate() (the TypeScript client's direct mode), as its user calls it: what it
# returned or threw, and the warnings it gave.
NODE_MIGRATE = """
import { migrate } from "./dist/direct/index.js";
const warnings = [];
try {
  const head = await migrate(process.env.MEMEX_MIGRATE_URL, { onWarning: (w) => warnings.push(w) });
  console.log(JSON.stringify({ head, warnings }));
} catch (error) {
  console.log(JSON.stringify({ error: error.message, code: error.code, warnings }));
}
"""


def node_migrate(dsn: str) -> dict[str, Any]:
    output = run(
        ["node", "--input-type=module", "-e", NODE_MIGRATE],
        PACKAGE,
        npm_env(MEMEX_MIGRATE_URL=libpq_url(dsn)),
    )
    answer: dict[str, Any] = json.loads(output.strip().splitlines()[-1])
    return answer


def test_a_database_owner_without_createrole_migrates_and_serves(
    managed: tuple[str, str],
) -> None:
    admin_dsn, owner_dsn = managed
    build_once(shutil.which("npm") or pytest.fail("npm is not installed"))  # for Node's migrate
    code, output = migrate(owner_dsn)
    assert code != 0, output
    # what to run, as the message lists it: run as written
    steps = re.findall(r"^  (.+;)", output, re.MULTILINE)
    assert [s.split()[0:3] for s in steps] == [
        ["create", "extension", "vector;"],
        ["create", "role", "memex_app"],
        ["create", "role", "memex_tenant"],
        ["create", "role", "memex_owner"],
        ["grant", "memex_app", "to"],
        ["grant", "memex_owner", "to"],
    ], output
    assert "Nothing was changed" in output and "Migrating without a superuser" in output
    # Node's migrate() refuses the same way, listing the same statements
    refused = node_migrate(owner_dsn)
    assert refused["code"] == "setup", refused
    assert re.findall(r"^  (.+;)", refused["error"], re.MULTILINE) == steps, refused
    assert "Nothing was changed" in refused["error"]
    with psycopg.connect(admin_dsn, autocommit=True) as admin:
        assert admin.execute("select to_regnamespace('memex') is null").fetchone() == (True,)
        for step in steps:
            admin.execute(step)

    for _ in range(2):  # said on every run, not only by the revision that first tried
        code, output = migrate(owner_dsn)
        assert code == 0, output
        for role in OPTIONAL:
            assert f"role {role} is missing" in output, output
        assert "docs/security.md" in output
    # and Node's migrate() (a no-op now) gives the same warnings, word for word
    migrated = node_migrate(owner_dsn)
    assert migrated["head"] == head_revision(), migrated
    assert [w.split()[1] for w in migrated["warnings"]] == list(OPTIONAL), migrated
    for warning in migrated["warnings"]:
        assert warning in " ".join(output.split()), (warning, output)
    with psycopg.connect(admin_dsn, autocommit=True) as admin:
        assert admin.execute(
            "select count(*) from pg_roles where rolname = any(%s)", (list(OPTIONAL),)
        ).fetchone() == (0,)
        # the functions the optional roles would own are memex_owner's, held to row-level
        # security (the fallback revisions 0039 and 0040 describe)
        owners = admin.execute(
            "select distinct pg_get_userbyid(proowner)::text from pg_proc"
            " where pronamespace = 'memex'::regnamespace and proname = any(%s)",
            (["_text_rows", "_tenant_counts", "_memory_revision", "_ann_on_insert"],),
        ).fetchall()
        assert owners == [("memex_owner",)]
        tokens = {
            agent: str(
                admin.execute(
                    "select token from memex.create_key('write', %s)", (agent,)
                ).fetchone()[0]
            )  # type: ignore[index]
            for agent in ("A", "B")
        }

    # the service, connected as the database's owner (a member of memex_app)
    with in_process_service(owner_dsn) as http:

        def call(
            method: str, path: str, agent: str, key: str | None = None, **body: object
        ) -> httpx.Response:
            who = {"agent_id": agent, "user_id": "u"}
            headers = {"Authorization": f"Bearer {tokens[key or agent]}"}
            if method == "get":
                return http.get(path, params=who, headers=headers)
            return http.request(method, path, json={**who, **body}, headers=headers)

        stored = call("post", "/v1/memories", "A", content="The heron nests by the reeds.")
        assert stored.status_code == 201, stored.text
        memory = stored.json()["id"]
        path = f"/v1/memories/{memory}"
        changed = call("patch", path, "A", content="The stork nests on the chimney.")
        assert changed.status_code == 200, changed.text
        found = call("post", "/v1/memories/search", "A", query="where does the stork nest?")
        assert [r["id"] for r in found.json()["results"]] == [memory]
        # B sees none of it, by search or by id, and cannot change it
        found = call("post", "/v1/memories/search", "B", query="where does the stork nest?")
        assert found.json()["results"] == []
        assert call("get", path, "B").status_code == 404
        assert call("patch", path, "B", importance=2.0).status_code == 404
        # nor can A's key act as B
        assert call("post", "/v1/memories", "B", key="A", content="x").status_code == 403
    with psycopg.connect(admin_dsn, autocommit=True) as admin:
        books = admin.execute(
            "select (select count(*) from memex.check_term_stats('A', 'u')),"
            " (select array_agg(operation order by revision) from memex.memory_revisions"
            "  where memory_id = %s)",
            (memory,),
        ).fetchone()
        assert books == (0, ["store", "update"])
