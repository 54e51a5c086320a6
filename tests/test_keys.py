"""API keys as an operator and an agent's admin use them: the command line, the admin
endpoints, the audit log, limits per key, a service listening beyond loopback, and the
grants SQL callers get (read back from the catalog)."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import shutil
import signal
import stat
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import psycopg
import pytest

from memexdb import AsyncMemex, cli_keys
from memexdb.embedded import EmbeddedPostgres
from memexdb.embedding import BatchingEmbedder
from memexdb.errors import Forbidden, SetupError, Unauthenticated
from tests.conftest import drop_database, new_database, scratch_dir
from tests.live_service import (
    Service,
    cli_args,
    free_port,
    run_cli,
    service_env,
    uvicorn_args,
)

TOKEN = re.compile(r"mxk_[0-9a-f]{12}_[0-9a-f]{64}")


def _key(dsn: str, access: str, agent_id: str | None = None, **more: object) -> tuple[str, str]:
    """(token, prefix) of a key made as the operator."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        row = conn.execute(
            "select token, prefix from memex.create_key(p_access => %(access)s,"
            " p_agent_id => %(agent_id)s, p_user_ids => %(user_ids)s,"
            " p_expires_at => %(expires_at)s)",
            {"access": access, "agent_id": agent_id, "user_ids": None, "expires_at": None, **more},
        ).fetchone()
    assert row is not None
    return row[0], row[1]


# --- the command line ---------------------------------------------------------------------


async def test_cli_keys_lifecycle(dsn: str, batching_embedder: BatchingEmbedder) -> None:
    env = service_env(MEMEX_DATABASE_URL=dsn)
    code, out = run_cli(
        ["keys", "create", "--access", "write", "--agent-id", "A", "--name", "ci bot"], env
    )
    assert code == 0, out
    token = TOKEN.search(out)
    assert token and "shown only now" in out
    prefix = token.group(0)[4:16]

    code, listing = run_cli(["keys", "list"], env)
    assert code == 0 and prefix in listing and "ci bot" in listing
    assert token.group(0)[17:] not in listing  # never the secret

    memex = await AsyncMemex.connect(dsn, embedder=batching_embedder, key=token.group(0))
    async with memex:
        stored = await memex.store("A", "alice", "The spare key is under the blue flowerpot.")
        with pytest.raises(Forbidden, match="agent B"):
            await memex.store("B", "alice", "not mine")
        code, out = run_cli(["keys", "revoke", prefix], env)  # the last key: not without a yes
        assert code == 2 and "last live key" in out and "--last-key" in out
        code, out = run_cli(["keys", "revoke", prefix, "--last-key"], env)
        assert code == 0 and f"revoked key {prefix}" in out
        with pytest.raises(Unauthenticated, match="revoked"):
            await memex.count("A", "alice")
        events = await memex.as_operator("test").audit_events()
    assert [e.action for e in events][:2] == ["key.revoke", "key.create"]
    assert {e.actor for e in events[:2]} == {"operator:cli"}
    with psycopg.connect(dsn) as conn:
        actor = conn.execute(
            "select actor from memex.memories where id = %s", (stored.id,)
        ).fetchone()
        key_id = conn.execute("select id from memex.api_keys where prefix = %s", (prefix,))
        assert actor == (f"key:{key_id.fetchone()[0]}",)  # type: ignore[index]

    code, out = run_cli(["keys", "create", "--access", "write", "--expires-in", "soon"], env)
    assert code == 2 and "30m, 12h or 90d" in out
    code, out = run_cli(["keys", "revoke", "nosuchprefix"], env)
    assert code == 2 and "not found" in out


def test_serve_refuses_beyond_loopback_without_keys(dsn: str) -> None:
    code, out = run_cli(
        ["serve", "--host", "0.0.0.0", "--port", str(free_port())],
        service_env(MEMEX_DATABASE_URL=dsn),
    )
    assert code == 2, out
    assert "without API keys" in out and "memexdb keys create" in out


def test_serve_beyond_loopback_always_needs_a_key(dsn: str) -> None:
    """Even once every key is revoked: the database looks like one without keys then,
    which a loopback service would serve openly; this one must not."""
    token, prefix = _key(dsn, "write", "A")
    port = free_port()
    log = scratch_dir("memexdb-keys-") / "service.log"
    svc = Service(
        cli_args("serve", "--host", "0.0.0.0", "--port", str(port)),
        service_env(MEMEX_DATABASE_URL=dsn),
        port,
        log,
    )
    try:
        svc.wait_healthy()
        who = {"agent_id": "A", "user_id": "alice"}
        with httpx.Client(base_url=svc.base_url, timeout=60) as http:
            ok = http.get(
                "/v1/memories/count", params=who, headers={"Authorization": f"Bearer {token}"}
            )
            assert ok.status_code == 200, ok.text
            with psycopg.connect(dsn, autocommit=True) as conn:
                conn.execute("select memex.revoke_key(%s, p_confirm_last => true)", (prefix,))
            bare = http.get("/v1/memories/count", params=who)
            assert bare.status_code == 401
            assert "an API key is required" in bare.json()["error"]["message"]
        assert svc.stop() in (0, -signal.SIGTERM)
    finally:
        svc.close()
        shutil.rmtree(log.parent, ignore_errors=True)


def test_the_last_key_revoked_leaves_the_database_closed(
    pg_server: EmbeddedPostgres, template_db: str
) -> None:
    """Before: revoking the last key reopened a loopback service to requests without a
    key (an unauthenticated DELETE /v1/memories erased a user). Now every surface warns
    before revoking it, and the database stays closed until `keys allow-keyless --yes`."""
    dsn = new_database(pg_server)
    env = service_env(MEMEX_DATABASE_URL=dsn)
    log = scratch_dir("memexdb-keys-") / "service.log"
    port = free_port()
    svc = Service(uvicorn_args(port), env, port, log)
    who = {"agent_id": "A", "user_id": "alice"}
    try:
        admin, prefix = _key(dsn, "admin")
        svc.wait_healthy()
        keyed = {"Authorization": f"Bearer {admin}"}
        with httpx.Client(base_url=svc.base_url, timeout=60) as http:
            stored = http.post("/v1/memories", json={**who, "content": "x"}, headers=keyed)
            assert stored.status_code == 201, stored.text
            refused = http.delete(f"/v1/admin/keys/{prefix}", headers=keyed)
            assert refused.status_code == 409, refused.text
            assert "last live key of this database" in refused.json()["error"]["message"]
            revoked = http.delete(
                f"/v1/admin/keys/{prefix}", params={"confirm_last": "true"}, headers=keyed
            )
            assert revoked.status_code == 200, revoked.text

            erase = http.post(  # no key: still refused
                "/v1/users/erase", json={**who, "confirm": who["user_id"]}
            )
            assert erase.status_code == 401, erase.text
            assert "closed" in erase.json()["error"]["message"]
            assert "allow-keyless --yes" in erase.json()["error"]["message"]
            assert http.get("/v1/memories/count", params=who).status_code == 401

            code, out = run_cli(["keys", "allow-keyless"], env)
            assert code == 2 and "--yes" in out
            assert http.get("/v1/memories/count", params=who).status_code == 401
            code, out = run_cli(["keys", "allow-keyless", "--yes"], env)
            assert code == 0 and "without an API key are let in" in out, out
            counted = http.get("/v1/memories/count", params=who)
            assert counted.status_code == 200 and counted.json()["count"] == 1, counted.text
            with psycopg.connect(dsn) as conn:
                entry = conn.execute(
                    "select actor from memex.audit_log where action = 'keys.allow_keyless'"
                ).fetchall()
            assert entry == [("operator:cli",)]

            # a key created since closes it again; allow-keyless refuses while it works
            code, out = run_cli(["keys", "create", "--access", "read", "--agent-id", "A"], env)
            assert code == 0, out
            token = TOKEN.search(out)
            assert token is not None
            assert http.get("/v1/memories/count", params=who).status_code == 401
            code, out = run_cli(["keys", "allow-keyless", "--yes"], env)
            assert code == 2 and token.group(0)[4:16] in out and "revoke them first" in out
            code, out = run_cli(["keys", "revoke", token.group(0)[4:16], "--last-key"], env)
            assert code == 0, out
            assert http.get("/v1/memories/count", params=who).status_code == 401
        assert "Traceback" not in svc.output(), svc.output()[-4000:]
    finally:
        svc.close()
        drop_database(pg_server, dsn)
        shutil.rmtree(log.parent, ignore_errors=True)


def test_keys_list_shows_iso_timestamps(dsn: str) -> None:
    env = service_env(MEMEX_DATABASE_URL=dsn)
    _key(dsn, "read", "A", expires_at=datetime(2031, 1, 2, 3, 4, 5, tzinfo=UTC))
    code, out = run_cli(["keys", "list", "--json"], env)
    assert code == 0, out
    (row,), _ = json.JSONDecoder().raw_decode(out[out.index("[") :])
    assert row["expires_at"] == "2031-01-02T03:04:05+00:00"
    assert datetime.fromisoformat(row["created_at"]).tzinfo is not None
    assert "T" in row["created_at"]
    code, out = run_cli(["keys", "list"], env)
    assert code == 0 and "\t2031-01-02T03:04:05+00:00\t" in out, out
    code, out = run_cli(["keys", "create", "--help"], env)
    assert code == 0 and "manage keys and read the audit log" in " ".join(out.split())


# --- admin endpoints ----------------------------------------------------------------------


@dataclass
class Keyed:
    service: Service
    dsn: str
    admin_a: str
    reader_a: str


@pytest.fixture(scope="module")
def keyed(pg_server: EmbeddedPostgres, template_db: str) -> Iterator[Keyed]:
    dsn = new_database(pg_server)
    log = scratch_dir("memexdb-keys-") / "service.log"
    port = free_port()
    svc = Service(uvicorn_args(port), service_env(MEMEX_DATABASE_URL=dsn), port, log)
    try:
        admin_a, _ = _key(dsn, "admin", "A")
        reader_a, _ = _key(dsn, "read", "A")
        svc.wait_healthy()
        yield Keyed(svc, dsn, admin_a, reader_a)
        assert "Traceback" not in svc.output(), svc.output()[-4000:]
    finally:
        svc.close()
        drop_database(pg_server, dsn)
        shutil.rmtree(log.parent, ignore_errors=True)


def _http(keyed: Keyed, token: str | None) -> httpx.Client:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return httpx.Client(base_url=keyed.service.base_url, headers=headers, timeout=60)


def test_an_agent_admin_manages_its_agents_keys_only(keyed: Keyed) -> None:
    other, other_prefix = _key(keyed.dsn, "write", "B")
    with _http(keyed, keyed.admin_a) as http:
        made = http.post("/v1/admin/keys", json={"access": "read", "agent_id": "A", "name": "x"})
        assert made.status_code == 201, made.text
        created = made.json()
        assert TOKEN.fullmatch(created["token"]) and created["agent_id"] == "A"
        for body in ({"access": "read", "agent_id": "B"}, {"access": "admin"}):
            refused = http.post("/v1/admin/keys", json=body)
            assert refused.status_code == 403, refused.text
            assert refused.json()["error"]["code"] == "forbidden"
        listed = http.get("/v1/admin/keys").json()["keys"]
        assert {k["agent_id"] for k in listed} == {"A"}
        assert all("token" not in k and "secret" not in str(k) for k in listed)
        assert created["prefix"] in {k["prefix"] for k in listed}
        assert http.get("/v1/admin/keys", params={"agent_id": "B"}).status_code == 403
        assert http.delete(f"/v1/admin/keys/{other_prefix}").status_code == 404
        revoked = http.delete(f"/v1/admin/keys/{created['prefix']}")
        assert revoked.status_code == 200 and revoked.json()["revoked_at"]
        audit = http.get("/v1/admin/audit", params={"limit": "2"}).json()
        assert [e["action"] for e in audit["events"]] == ["key.revoke", "key.create"]
        assert audit["next_before"] == audit["events"][-1]["id"]
        assert all(e["agent_id"] == "A" for e in audit["events"])
    with _http(keyed, created["token"]) as http:
        assert (
            http.get("/v1/memories/count", params={"agent_id": "A", "user_id": "u"})
            .json()["error"]["message"]
            .startswith("API key")
        )
    with _http(keyed, keyed.reader_a) as http:
        refused = http.post("/v1/admin/keys", json={"access": "read", "agent_id": "A"})
        assert refused.status_code == 403 and "admin access is needed" in refused.text
    with _http(keyed, None) as http:
        assert http.get("/v1/admin/keys").status_code == 401
    with _http(keyed, other) as http:
        assert http.get("/v1/admin/audit").status_code == 403


@pytest.mark.parametrize(
    ("header", "message"),
    [
        ("Bearer mxk_short", "malformed API key"),
        (f"Bearer mxk_{'0' * 12}_{'0' * 64}", "invalid API key"),
        ("Basic dXNlcjpwYXNz", "must be 'Bearer <API key>'"),
        ("Bearer", "must be 'Bearer <API key>'"),
    ],
)
def test_bad_credentials_are_401_saying_why(keyed: Keyed, header: str, message: str) -> None:
    with httpx.Client(base_url=keyed.service.base_url, timeout=60) as http:
        r = http.post(
            "/v1/memories/search",
            json={"agent_id": "A", "user_id": "u", "query": "q"},
            headers={"Authorization": header},
        )
    assert r.status_code == 401, r.text
    assert message in r.json()["error"]["message"]
    assert r.headers["www-authenticate"] == 'Bearer realm="memexdb"'


def test_a_right_prefix_with_a_wrong_secret_is_refused(keyed: Keyed) -> None:
    forged = keyed.reader_a[:17] + ("0" if keyed.reader_a[17] != "0" else "1") + keyed.reader_a[18:]
    with _http(keyed, forged) as http:
        r = http.get("/v1/memories/count", params={"agent_id": "A", "user_id": "u"})
    assert r.status_code == 401 and r.json()["error"]["message"] == "invalid API key"


# --- limits per key -----------------------------------------------------------------------


def _set(dsn: str, name: str, value: str) -> None:
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("update memex.settings set value = %s where name = %s", (value, name))


async def test_fifty_clients_under_one_key_get_exactly_its_limit(keyed: Keyed) -> None:
    """An operator key may name any agent: rotating agent ids does not buy more."""
    token, _ = _key(keyed.dsn, "write")
    other, _ = _key(keyed.dsn, "write")
    limit = 10
    _set(keyed.dsn, "rate_limit_store_per_minute", str(limit))
    _set(keyed.dsn, "rate_limit_search_per_minute", "7")
    headers = {"Authorization": f"Bearer {token}"}
    try:
        async with httpx.AsyncClient(
            base_url=keyed.service.base_url, headers=headers, timeout=120
        ) as http:

            async def store(i: int) -> int:
                body = {"agent_id": f"agent-{i}", "user_id": "u", "content": f"note {i}"}
                return (await http.post("/v1/memories", json=body)).status_code

            async def search(i: int) -> int:
                body = {"agent_id": f"agent-{i}", "user_id": "u", "query": "note"}
                return (await http.post("/v1/memories/search", json=body)).status_code

            first = await asyncio.gather(*(store(i) for i in range(50)))
            assert sorted(set(first)) == [201, 429] and first.count(201) == limit
            again = await asyncio.gather(*(store(100 + i) for i in range(50)))
            assert set(again) == {429}
            # reads have their own budget, untouched by the writes
            reads = await asyncio.gather(*(search(i) for i in range(50)))
            assert reads.count(200) == 7 and reads.count(429) == 43
        async with httpx.AsyncClient(
            base_url=keyed.service.base_url, headers={"Authorization": f"Bearer {other}"}
        ) as http:
            body = {"agent_id": "agent-0", "user_id": "u", "content": "another key's budget"}
            assert (await http.post("/v1/memories", json=body)).status_code == 201
    finally:
        _set(keyed.dsn, "rate_limit_store_per_minute", "null")
        _set(keyed.dsn, "rate_limit_search_per_minute", "null")


# --- grants, read back --------------------------------------------------------------------

TENANT_API = {"store", "store_many", "search", "forget", "count", "embedding_dims"} | {
    "list_files",
    "read_file",
    "write_file",
    "preview_patch",
    "patch_file",
    "delete_file",
    "list_revisions",
    "get_revision",
    "diff_revisions",
    "restore_revision",
    "access_events",
    "smart_read",
    "search_passages",
    "consolidate_tenant",
    "restore_consolidation",
    "dream_config",
    "dream_tenant",
    "dream_plan",
    "reserve_rate_limit",
    "memory_cursor",
    "memory_cursor_key",
    "tenant_cursor",
    "tenant_cursor_key",
}
OPERATOR_ONLY = {
    "maintenance",
    "index_tenant",
    "configure_vector_index",
    "rate_limit_hit",
    "create_key",
    "list_keys",
    "revoke_key",
    "audit_events",
    "bind_sql_role",
    "unbind_sql_role",
    "consolidate_due",
    "set_dream_config",
    "dream_due",
    "agent_stats",
    "user_stats",
    "set_setting",
    "has_live_keys",
    "allow_keyless",
    "tenant_stats",
}


def test_grants(conn: psycopg.Connection) -> None:
    rows = conn.execute(
        """
        select p.proname,
               has_function_privilege('memex_tenant', p.oid, 'execute'),
               has_function_privilege('memex_app', p.oid, 'execute'),
               exists (select from aclexplode(coalesce(p.proacl, acldefault('f', p.proowner))) a
                       where a.grantee = 0 and a.privilege_type = 'EXECUTE')
        from pg_proc p where p.pronamespace = 'memex'::regnamespace
        """
    ).fetchall()
    public = {name for name, _, _, to_public in rows if to_public}
    assert public == set(), f"executable by PUBLIC: {public}"
    # every function but the definer helpers (privileges class definer-helper: only
    # memex_owner's definer functions reach them, after authorizing the caller)
    definer_helpers = {"_text_rows", "_ann_neighbour_rows"}
    assert {name for name, _, app, _ in rows if not app} == definer_helpers
    tenant = {name for name, t, _, _ in rows if t}
    assert tenant >= TENANT_API
    assert not (OPERATOR_ONLY & tenant)
    assert not {"_enter", "_enter_operator", "_index_tenant_step"} & tenant
    # the internal writers of history and locks: only through the functions that act
    writers = {"_audit", "_log_access", "_record_revision", "_save_file", "_lock_file"}
    assert not (writers | {"_lock_key"}) & tenant
    definers = conn.execute(
        """
        select p.proname, pg_get_userbyid(p.proowner), p.proconfig
        from pg_proc p where p.pronamespace = 'memex'::regnamespace and p.prosecdef
        """
    ).fetchall()
    assert definers
    for name, owner, config in definers:
        # the text lookup and the neighbour probes are owned by memex_text_lookup
        # (BYPASSRLS, revision 0039) where migrate could create that role, as here
        # (tests/test_sql_privileges.py)
        # the statement triggers on memex.memories by memex_trigger_owner (BYPASSRLS,
        # revision 0040), likewise, and the update path's and the ANN flag's since
        bookkeeping = {"_tenant_counts", "_term_stats", "_memory_revisions_stored"}
        bookkeeping |= {"_memory_revision", "_term_stats_update", "_ann_on_insert"}
        expected = "memex_trigger_owner" if name in bookkeeping else "memex_owner"
        assert owner == ("memex_text_lookup" if name in definer_helpers else expected), name
        paths = [c for c in config or [] if c.startswith("search_path=")]
        assert paths and "public" not in paths[0], (name, config)
    assert conn.execute(
        "select rolsuper, rolbypassrls, rolcanlogin from pg_roles where rolname = 'memex_owner'"
    ).fetchone() == (False, False, False)
    owners = conn.execute(
        "select distinct pg_get_userbyid(relowner) from pg_class"
        " where relnamespace = 'memex'::regnamespace and relkind = 'r'"
    ).fetchall()
    assert owners == [("memex_owner",)]
    tables = conn.execute(
        """
        select c.relname, r.rolname, string_agg(a.privilege_type, ',' order by a.privilege_type)
        from pg_class c, aclexplode(c.relacl) a
        left join pg_roles r on r.oid = a.grantee
        where c.relnamespace = 'memex'::regnamespace and c.relkind = 'r'
          and a.grantee <> c.relowner
        group by 1, 2 order by 1, 2
        """
    ).fetchall()
    assert tables == [
        # history is append-only: read, never written or deleted directly (issue 21); a
        # tenant role holds no table privilege at all, so it can lock and explain nothing
        # (issue 34): it reads and writes through the tenant API's definer functions
        ("access_log", "memex_app", "SELECT"),
        ("consolidation_runs", "memex_app", "SELECT"),
        ("embed_queue", "memex_app", "DELETE,INSERT,SELECT,UPDATE"),
        ("file_revisions", "memex_app", "SELECT"),
        # the triggers' owner (revision 0040; tests/test_sql_privileges.py): the counters
        ("history_ids", "memex_trigger_owner", "INSERT,SELECT,UPDATE"),
        ("memories", "memex_app", "DELETE,INSERT,SELECT,UPDATE"),
        # the text lookup's owner reads memories only (memex._text_rows, revision 0039)
        ("memories", "memex_text_lookup", "SELECT"),
        # the triggers' owner reads them (and may update the ANN flag alone: a column grant)
        ("memories", "memex_trigger_owner", "SELECT"),
        ("memory_revisions", "memex_app", "SELECT"),
        # ... and appends to the history, never rewrites it
        ("memory_revisions", "memex_trigger_owner", "INSERT"),
        ("settings", "memex_app", "INSERT,SELECT,UPDATE"),
        ("tenants", "memex_app", "DELETE,INSERT,SELECT,UPDATE"),
        ("tenants", "memex_trigger_owner", "INSERT,SELECT,UPDATE"),
        ("term_stats", "memex_app", "DELETE,INSERT,SELECT,UPDATE"),
        ("term_stats", "memex_trigger_owner", "DELETE,INSERT,SELECT,UPDATE"),
    ]
    forced = conn.execute(
        "select relname from pg_class where relnamespace = 'memex'::regnamespace"
        " and relrowsecurity and relforcerowsecurity order by 1"
    ).fetchall()
    assert forced == [
        ("access_log",),
        ("consolidation_runs",),
        ("file_revisions",),
        ("memories",),
        ("memory_revisions",),
        ("tenants",),
        ("term_stats",),
    ]


def test_the_service_role_sees_nothing_without_a_caller(conn: psycopg.Connection, dsn: str) -> None:
    conn.execute(
        "insert into memex.memories (agent_id, user_id, content, embedding, embedding_model)"
        " values ('A', 'u', 'hidden', array_fill(0.1, array[384])::vector, 'm')"
    )
    conn.commit()
    with psycopg.connect(dsn, autocommit=True) as app:
        app.execute("set role memex_app")
        assert app.execute("select count(*) from memex.memories").fetchone() == (0,)
        with app.transaction():
            app.execute("select memex._enter_operator('test')")
            assert app.execute("select count(*) from memex.memories").fetchone() == (1,)
        assert app.execute("select count(*) from memex.memories").fetchone() == (0,)
        with pytest.raises(psycopg.errors.InvalidAuthorizationSpecification):
            app.execute("select memex.count('A', 'u')")
        # nor inside a security definer function, where current_user is memex_owner
        for definer in (
            "select memex.list_files('A', 'u')",
            "select memex.erase_user('A', 'u', 'u')",
            "select memex.read_file('A', 'u', 'user/x.md')",
        ):
            with pytest.raises(psycopg.errors.InvalidAuthorizationSpecification):
                app.execute(definer)
    assert conn.execute("select count(*) from memex.memories").fetchone() == (1,)


def test_a_key_that_expired_in_the_past_is_expired_from_the_start(dsn: str) -> None:
    past = datetime.now(UTC) - timedelta(days=1)
    token, _ = _key(dsn, "read", "A", expires_at=past)
    with (
        psycopg.connect(dsn) as conn,
        pytest.raises(psycopg.errors.InvalidAuthorizationSpecification, match="expired"),
    ):
        conn.execute("set role memex_app")
        conn.execute("select memex._enter(%s)", (token,))


async def test_admin_actions_and_writers_are_recorded(amemex: AsyncMemex, dsn: str) -> None:
    operator = amemex.as_operator("ops")
    await operator.set_setting("rate_limit_search_per_minute", 600)
    await operator.set_setting("rate_limit_search_per_minute", 600)  # no change: no entry
    created = await operator.create_key("write", agent_id="A")
    writer = amemex.with_key(created.token)
    memory = await writer.store("A", "u", "The boiler is serviced every October.")
    await operator.update("A", "u", memory.id, importance=1.5)
    with psycopg.connect(dsn) as conn:
        assert conn.execute(
            "select actor from memex.memories where id = %s", (memory.id,)
        ).fetchone() == ("operator:ops",)
    erased = {
        "memories": 1,
        "tenants": 1,
        "file_revisions": 0,
        "access_log": 0,
        "consolidation_runs": 0,
    }
    # erasing a user is an admin's (the history is evidence): a write key may not
    with pytest.raises(Forbidden, match="admin access is needed"):
        await writer.erase_user("A", "u", confirm="u")
    admin_key = await operator.create_key("admin", agent_id="A")
    admin = amemex.with_key(admin_key.token)
    assert await admin.erase_user("A", "u", confirm="u") == erased
    events = [(e.action, e.actor, e.details) for e in await operator.audit_events(limit=4)]
    assert events[1][0] == "key.create"
    del events[1]
    assert events == [
        ("user.erase", f"key:{admin_key.id}", {"deleted": erased}),
        (
            "key.create",
            "operator:ops",
            {
                "key": str(created.id),
                "prefix": created.prefix,
                "access": "write",
                "user_ids": None,
                "expires_at": None,
                "name": "",
            },
        ),
        (
            "setting.set",
            "operator:ops",
            {"name": "rate_limit_search_per_minute", "old": None, "new": 600},
        ),
    ]


# --- memexdb keys bootstrap: the operator's own paths (issue 34, item 2) -------------------


def _bootstrap(dsn: str, token_file: Path) -> int:
    args = argparse.Namespace(token_file=str(token_file), name="operator")
    return cli_keys._bootstrap(args, dsn)


def _keys_made(dsn: str) -> int:
    with psycopg.connect(dsn) as conn:
        row = conn.execute("select count(*) from memex.api_keys").fetchone()
    assert row is not None
    return int(row[0])


def test_bootstrap_writes_through_nothing_planted_in_the_folder(dsn: str, tmp_path: Path) -> None:
    """A local user who can write the key file's folder pre-creates the scratch file the
    command used to write through (`.<name>.<pid>`, opened without O_EXCL): a file of
    theirs (the token ended up in it, mode 0666) or a symlink to a file of theirs (root
    wrote the token there). Neither is used now: the scratch file is a fresh random one."""
    folder = tmp_path / "keys"
    folder.mkdir()
    key_file = folder / "admin-key"
    victim = tmp_path / "attacker-owned"
    victim.write_text("theirs\n")
    os.chmod(victim, 0o666)
    planted = folder / f".{key_file.name}.{os.getpid()}"
    planted.symlink_to(victim)
    assert _bootstrap(dsn, key_file) == 0
    token = key_file.read_text().strip()
    assert TOKEN.fullmatch(token), token
    assert victim.read_text() == "theirs\n"
    assert not key_file.is_symlink()
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    assert planted.is_symlink()  # left as it was, not followed, not renamed
    assert sorted(p.name for p in folder.iterdir()) == sorted([key_file.name, planted.name])


def test_bootstrap_keeps_no_pre_created_file_of_another_user(dsn: str, tmp_path: Path) -> None:
    key_file = tmp_path / "admin-key"
    planted = tmp_path / f".{key_file.name}.{os.getpid()}"
    planted.write_text("")
    os.chmod(planted, 0o666)
    assert _bootstrap(dsn, key_file) == 0
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    assert key_file.stat().st_ino != planted.stat().st_ino
    assert planted.read_text() == ""  # the token never went into it


def test_bootstrap_refuses_a_key_file_that_is_a_symlink(dsn: str, tmp_path: Path) -> None:
    victim = tmp_path / "elsewhere"
    victim.write_text("theirs\n")
    key_file = tmp_path / "admin-key"
    key_file.symlink_to(victim)
    with pytest.raises(SetupError, match="symbolic link"):
        _bootstrap(dsn, key_file)
    assert victim.read_text() == "theirs\n"
    assert key_file.is_symlink()
    assert _keys_made(dsn) == 0  # no key without its token written


def test_no_bound_role_can_hold_bootstrap(dsn: str, tmp_path: Path) -> None:
    """A bound role used to hang every container start by holding the fixed advisory key
    bootstrap took; the lock it takes now is one on memex.api_keys, which no tenant role
    may take, and a database with keys is answered before any lock."""
    role = f"boot_{psycopg.conninfo.conninfo_to_dict(dsn)['dbname']}"[:60]
    with psycopg.connect(dsn, autocommit=True) as conn:
        if not conn.execute("select from pg_roles where rolname = %s", (role,)).fetchone():
            conn.execute(f'create role "{role}" login')
        conn.execute("select memex.bind_sql_role(%s, 'B', null, 'write')", (role,))
    info = psycopg.conninfo.conninfo_to_dict(dsn)
    info["user"] = role
    role_dsn = psycopg.conninfo.make_conninfo(**{k: v for k, v in info.items() if v is not None})
    with psycopg.connect(role_dsn) as squatter:
        # every lock it can think of: the old fixed key, and the table (refused)
        squatter.execute("select pg_advisory_lock(7882827005361350009)")
        squatter.execute("select pg_advisory_xact_lock(7882827005361350009)")
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            squatter.execute("lock table memex.api_keys in access share mode")
        squatter.rollback()
        squatter.execute("select pg_advisory_lock(7882827005361350009)")
        outcome: dict[str, object] = {}
        first = threading.Thread(
            target=lambda: outcome.update(code=_bootstrap(dsn, tmp_path / "one")), daemon=True
        )
        first.start()
        first.join(60)
        assert outcome.get("code") == 0, "bootstrap waited for a lock a tenant role holds"
        # a second start finds the key and returns at once
        started = time.monotonic()
        assert _bootstrap(dsn, tmp_path / "two") == 0
        assert time.monotonic() - started < 30
        assert not (tmp_path / "two").exists()
    assert _keys_made(dsn) == 1
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("select memex.unbind_sql_role(%s)", (role,))


def test_concurrent_bootstraps_make_one_key(dsn: str, tmp_path: Path) -> None:
    codes: list[int] = []
    threads = [
        threading.Thread(target=lambda i=i: codes.append(_bootstrap(dsn, tmp_path / f"k{i}")))
        for i in range(3)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert codes == [0, 0, 0]
    assert _keys_made(dsn) == 1
    assert len([p for p in tmp_path.iterdir() if p.name.startswith("k")]) == 1
