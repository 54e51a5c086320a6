"""Integrity under attack, at the SQL level (issue 21): what a role bound to one tenant, or
the service acting for one tenant, can do to another tenant through the SQL API.

- Every function executable by memex_tenant is called by a role bound to tenant B with
  tenant A's arguments (and every function executable by memex_app by the service with
  B's key entered): A's rows, history, audit entries, keys and rate-limit counters stay
  exactly as they were, and no result carries A's content.
- History (revisions, access log, consolidation runs, audit log) is append-only for
  tenants, per table; `memories.actor` is always the caller; files change only through
  the file functions.
- Locks that serialize a tenant's writes cannot be taken by another tenant, and a request
  waits for a lock at most its server-side lock timeout, then fails and applies nothing.
"""

from __future__ import annotations

import asyncio
import hashlib
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
import psycopg
import pytest
from pgvector.psycopg import register_vector
from prometheus_client import REGISTRY
from psycopg.conninfo import conninfo_to_dict, make_conninfo
from psycopg.types.json import Jsonb

from memexdb import AsyncMemex, Memex, agentic
from memexdb.errors import Busy, Conflict, RateLimited
from memexdb.files import sql as files_sql
from memexdb.metrics import sql_function
from tests.sqlapi import unit

MARKER = "secret-of-agent-A"
A = ("A", "alice")
A_FILE = "user/notes.md"


@dataclass
class Tenants:
    dsn: str
    roles: dict[str, str]  # 'b_ro', 'b_rw', 'a_rw' -> login role
    a_memory: uuid.UUID
    a_key_prefix: str
    a_key: str
    b_key: str
    a_run: int

    def as_role(self, name: str) -> psycopg.Connection:
        return psycopg.connect(make_conninfo(self.dsn, user=self.roles[name]), autocommit=True)


def _vector(axis: int = 0) -> np.ndarray:
    return unit((axis, 1.0))


@pytest.fixture
def tenants(dsn: str) -> Iterator[Tenants]:
    db = str(conninfo_to_dict(dsn)["dbname"])
    roles = {name: f"i_{db}_{name}"[:60] for name in ("b_ro", "b_rw", "a_rw")}
    with psycopg.connect(dsn, autocommit=True) as conn:
        register_vector(conn)
        for name, role in roles.items():
            conn.execute(f'create role "{role}" login')
            agent = "A" if name.startswith("a") else "B"
            access = "read" if name.endswith("ro") else "write"
            conn.execute("select memex.bind_sql_role(%s, %s, null, %s)", (role, agent, access))
        memory = conn.execute(
            "select id from memex.store('A', 'alice', %s, %s, 'test-model')",
            (f"The vault code is {MARKER}.", _vector()),
        ).fetchone()
        assert memory is not None
        for i in range(3):  # old episodic memories for a consolidation run
            conn.execute(
                "select memex.store('A', 'alice', %s, %s, 'test-model', 'episodic', 1.0, '{}',"
                " null, %s)",
                (f"Old day {i}: {MARKER}", _vector(1), datetime.now(UTC) - timedelta(days=90)),
            )
        conn.execute(
            "select memex.write_file('A', 'alice', %s, %s, %s, 'test-model')",
            (A_FILE, f"# Notes\n\n- {MARKER}\n", _vector(2)),
        )
        run = conn.execute(
            "insert into memex.consolidation_runs (agent_id, user_id, kind, status, actor)"
            " values ('A', 'alice', 'condense', 'done', 'test') returning id"
        ).fetchone()
        a_key = conn.execute(
            "select prefix, token from memex.create_key(p_access => 'admin', p_agent_id => 'A')"
        ).fetchone()
        b_key = conn.execute(
            "select token from memex.create_key(p_access => 'admin', p_agent_id => 'B')"
        ).fetchone()
        conn.execute(
            "insert into memex.settings (name, value) values"
            " ('rate_limit_store_per_minute', '1000'), ('rate_limit_search_per_minute', '1000')"
            " on conflict (name) do update set value = excluded.value"
        )
    assert a_key and b_key and run
    yield Tenants(dsn, roles, memory[0], a_key[0], a_key[1], b_key[0], run[0])
    with psycopg.connect(dsn, autocommit=True) as conn:
        for role in roles.values():
            conn.execute("select memex.unbind_sql_role(%s)", (role,))
            conn.execute(f'drop role "{role}"')


# A's state, read as the operator: what no call of B's may change.
FINGERPRINT = {
    "memories": "select m.*, m.embedding::text as e from memex.memories m where agent_id = 'A'"
    " order by id",
    "tenants": "select * from memex.tenants where agent_id = 'A' order by user_id",
    "file_revisions": "select * from memex.file_revisions where agent_id = 'A' order by id",
    "access_log": "select * from memex.access_log where agent_id = 'A' order by id",
    "consolidation_runs": "select * from memex.consolidation_runs where agent_id = 'A' order by id",
    "audit_log": "select * from memex.audit_log where agent_id = 'A' order by id",
    "api_keys": "select id, revoked_at, expires_at, access, user_ids from memex.api_keys"
    " where agent_id = 'A' order by id",
    "sql_roles": "select * from memex.sql_roles where agent_id = 'A' order by role_name",
    "settings": "select * from memex.settings order by name",
}


def fingerprint(dsn: str) -> dict[str, str]:
    with psycopg.connect(dsn, autocommit=True) as conn:
        return {
            name: hashlib.sha256(repr(conn.execute(sql).fetchall()).encode()).hexdigest()
            for name, sql in FINGERPRINT.items()
        }


def _value(name: str, type_name: str, t: Tenants) -> Any:
    """A's value for an argument, by name first, then by type."""
    by_name: dict[str, Any] = {
        "p_agent_id": "A",
        "p_user_id": "alice",
        "p_agent_ids": ["A"],
        "p_user_ids": ["alice"],
        "p_path": A_FILE,
        "p_prefix": "user/",
        "p_id": t.a_memory,
        "p_memory_id": t.a_memory,
        "p_ids": [t.a_memory],
        "p_source_ids": [t.a_memory],
        "p_old_text": MARKER,
        "p_new_text": "planted by B",
        "p_append": "planted by B",
        "p_key": t.a_key_prefix,
        "p_role": t.roles["a_rw"],
        "p_run_id": t.a_run,
        "p_revision": 1,
        "p_base_revision": 1,
        "p_after": None,
        "p_passage_chars": 800,
        "p_operation": "write",
        "p_embedding_model": "test-model",
        "p_mode": "hybrid",
        "p_need": "write",
        "p_kind": "file",
        "p_action": "key.revoke",
        "p_access": "write",
        "p_token": None,
        "p_require_key": False,
        "p_changes": Jsonb({"content": "planted by B"}),
        "p_edits": Jsonb([]),
        "p_config": Jsonb({"enabled": False}),
        "p_force": True,
        "p_dry_run": False,
        "p_paused": True,
        "p_limit": 10,
        "p_top_k": 5,
        "p_budget": 1000,
    }
    if name in by_name:
        return by_name[name]
    base = type_name.removesuffix("[]")
    scalar: Any = {
        "text": "planted by B",
        "integer": 1,
        "bigint": 1,
        "double precision": 0.5,
        "real": 0.5,
        "boolean": False,
        "timestamp with time zone": datetime.now(UTC),
        "jsonb": Jsonb({}),
        "uuid": t.a_memory,
        "vector": _vector(3),
        "memex.memory_type": "semantic",
        "bytea": b"\x00",
    }.get(base)
    if type_name.endswith("[]"):
        return [scalar]
    return scalar


def _functions(dsn: str, role: str) -> list[tuple[str, list[tuple[str, str]]]]:
    """(name, [(argument, type)]) of every memex function `role` may execute."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        rows = conn.execute(
            """
            select p.proname, p.oid,
                   array(select format_type(t, null) from unnest(p.proargtypes::oid[]) t),
                   coalesce(p.proargnames, '{}'), coalesce(p.proargmodes::text[], '{}')
            from pg_proc p
            where p.pronamespace = 'memex'::regnamespace and p.prokind = 'f'
              and p.prorettype <> 'trigger'::regtype
              and has_function_privilege(%s, p.oid, 'execute')
            order by 1, 2
            """,
            (role,),
        ).fetchall()
    functions = []
    for name, _, types, names, modes in rows:
        inputs = [n for i, n in enumerate(names) if not modes or modes[i] in ("i", "b", "v")]
        functions.append((name, list(zip(inputs, types, strict=True))))
    return functions


def _call(conn: psycopg.Connection, name: str, args: list[tuple[str, str]], t: Tenants) -> str:
    """Call memex.<name> with A's arguments; the result as text, or the error's SQLSTATE."""
    register_vector(conn)
    sql = "select * from memex.{}({})".format(
        name, ", ".join(f"{arg} => %s::{typ}" for arg, typ in args)
    )
    try:
        with conn.transaction():
            return repr(conn.execute(sql, [_value(a, typ, t) for a, typ in args]).fetchall())
    except psycopg.Error as exc:
        return f"error {exc.sqlstate}: {exc.diag.message_primary}"


def test_internal_writers_refuse_another_tenants_bound_role(tenants: Tenants) -> None:
    """The repro of issue 21: a role bound read-only to B planted a revision in A's file,
    an access-log entry and a forged audit event."""
    before = fingerprint(tenants.dsn)
    with tenants.as_role("b_ro") as conn:
        for sql in (
            "select memex._record_revision('A','alice','user/planted.md', gen_random_uuid(),"
            " 'write', 'planted', '{}')",
            "select memex._log_access('A', 'alice', 'read', 'user/notes.md')",
            "select memex._audit('key.revoke', 'A', null, '{}')",
            "select memex._save_file('A', 'alice', 'user/planted.md', 'planted',"
            " array_fill(0.1, array[384])::vector, 'm', 'write', null)",
            "select memex._lock_file('A', 'alice', 'user/notes.md', null)",
            'select memex._lock_key(\'file\', \'["A", "alice", "user/notes.md"]\')',
        ):
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                conn.execute(sql)
    assert fingerprint(tenants.dsn) == before


@pytest.mark.parametrize("role", ["b_ro", "b_rw"])
def test_every_tenant_function_as_another_tenants_role(tenants: Tenants, role: str) -> None:
    functions = _functions(tenants.dsn, "memex_tenant")
    assert len(functions) > 40
    before = fingerprint(tenants.dsn)
    outcomes: dict[str, str] = {}
    with tenants.as_role(role) as conn:
        for name, args in functions:
            outcomes[name] = _call(conn, name, args, tenants)
            assert MARKER not in outcomes[name], (name, outcomes[name])
            after = fingerprint(tenants.dsn)
            changed = [table for table in before if before[table] != after[table]]
            assert not changed, f"{name} as {role} changed A's {changed}: {outcomes[name]}"
    # the calls did run: most were refused for A, and none reached it
    refused = [n for n, o in outcomes.items() if o.startswith("error 42501")]
    assert len(refused) > 15, outcomes


def test_a_bound_role_searches_its_tenant_in_the_ann_index(tenants: Tenants) -> None:
    """memex._candidates_ann calls memex._ann_bounded, which tenant roles could not run."""
    with psycopg.connect(tenants.dsn, autocommit=True) as conn:
        conn.execute("select memex.index_tenant('A', 'alice')")
    with tenants.as_role("a_rw") as conn:
        register_vector(conn)
        rows = conn.execute(
            "select content from memex.search('A', 'alice', %s, 3, p_alpha => 1.0)",
            (_vector(),),
        ).fetchall()
    assert rows and MARKER in rows[0][0]


# Service plumbing that names no tenant: memex_app is trusted to enter callers honestly
# and to call these only for the work it does (the embed queue, rate-limit counters).
# Tenant roles cannot execute any of them (test_grants).
SERVICE_PLUMBING = {"rate_limit_hit", "_queue_embedding", "_enter_operator"}


def test_every_service_function_with_another_tenants_key(tenants: Tenants) -> None:
    functions = _functions(tenants.dsn, "memex_app")
    before = fingerprint(tenants.dsn)
    with psycopg.connect(tenants.dsn, autocommit=True) as conn:
        conn.execute("set role memex_app")
        for name, args in functions:
            if name in SERVICE_PLUMBING:
                continue
            register_vector(conn)
            with conn.transaction():
                conn.execute("select memex._enter(%s)", (tenants.b_key,))
                outcome = _call(conn, name, args, tenants)
            assert MARKER not in outcome, (name, outcome)
            after = fingerprint(tenants.dsn)
            changed = [table for table in before if before[table] != after[table]]
            assert not changed, f"{name} with B's key changed A's {changed}: {outcome}"


# --- history is append-only --------------------------------------------------------------


def test_history_tables_are_append_only_for_tenants(tenants: Tenants) -> None:
    """A role bound with write access to its own tenant A cannot insert, update or
    delete its revisions, access log, consolidation runs or audit log."""
    with psycopg.connect(tenants.dsn, autocommit=True) as conn:
        conn.execute("select memex.read_file('A', 'alice', %s)", (A_FILE,))
    before = fingerprint(tenants.dsn)
    statements = {
        "file_revisions": (
            "insert into memex.file_revisions (agent_id, user_id, path, revision, operation,"
            " actor) values ('A', 'alice', 'user/x.md', 99, 'write', 'forged')",
            "update memex.file_revisions set content = 'rewritten'",
            "update memex.file_revisions set actor = 'operator:cli'",
            "delete from memex.file_revisions where revision = 1",
        ),
        "access_log": (
            "insert into memex.access_log (agent_id, user_id, actor, operation)"
            " values ('A', 'alice', 'forged', 'read')",
            "update memex.access_log set actor = 'operator:cli'",
            "delete from memex.access_log",
        ),
        "consolidation_runs": (
            "insert into memex.consolidation_runs (agent_id, user_id, kind, status, actor)"
            " values ('A', 'alice', 'condense', 'done', 'forged')",
            "update memex.consolidation_runs set actor = 'forged'",
            "delete from memex.consolidation_runs",
        ),
        "audit_log": (
            "insert into memex.audit_log (actor, action, agent_id) values ('x', 'y', 'A')",
            "update memex.audit_log set actor = 'forged'",
            "delete from memex.audit_log",
        ),
    }
    with tenants.as_role("a_rw") as conn:
        for table, sqls in statements.items():
            for sql in sqls:
                with pytest.raises(psycopg.errors.InsufficientPrivilege):
                    conn.execute(sql)
            # reading too: a tenant role reads its history through the API only (issue 34)
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                conn.execute(f"select count(*) from memex.{table}")
        assert conn.execute("select count(*) from memex.access_events('A', 'alice')").fetchone()
    assert fingerprint(tenants.dsn) == before


def _actor(dsn: str, memory_id: uuid.UUID) -> str:
    with psycopg.connect(dsn, autocommit=True) as conn:
        row = conn.execute("select actor from memex.memories where id = %s", (memory_id,))
        found = row.fetchone()
    assert found is not None
    return str(found[0])


class _Service:
    """The service's role (memex_app) with A's admin key entered per statement: what may
    still write memex.memories directly (a tenant role may not: issue 34)."""

    def __init__(self, tenants: Tenants) -> None:
        self.tenants = tenants
        self.conn = psycopg.connect(tenants.dsn)
        register_vector(self.conn)
        self.conn.execute("set role memex_app")
        self.conn.commit()

    def actor(self) -> str:
        with self.conn.transaction():
            row = self.conn.execute(
                "select memex._enter(%s) ->> 'actor'", (self.tenants.a_key,)
            ).fetchone()
        assert row is not None
        return str(row[0])

    def execute(self, sql: str, args: Any = ()) -> list[Any]:
        with self.conn.transaction():
            self.conn.execute("select memex._enter(%s)", (self.tenants.a_key,))
            cur = self.conn.execute(sql, args)
            return cur.fetchall() if cur.description else []

    def close(self) -> None:
        self.conn.close()


def test_actor_is_always_the_caller(tenants: Tenants) -> None:
    with tenants.as_role("a_rw") as conn:
        register_vector(conn)
        # a bound role writes no table directly at all
        for sql, args in (
            (
                "insert into memex.memories (agent_id, user_id, content, embedding,"
                " embedding_model, actor) values ('A', 'alice', 'direct', %s, 'm',"
                " 'operator:cli')",
                (_vector(4),),
            ),
            ("update memex.memories set actor = 'key:fake' where id = %s", (tenants.a_memory,)),
        ):
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                conn.execute(sql, args)
        # a stored memory through the API records the role
        stored = conn.execute(
            "select id from memex.store('A', 'alice', 'via api', %s, 'm')", (_vector(5),)
        ).fetchone()
        assert stored is not None
        assert _actor(tenants.dsn, stored[0]) == f"role:{tenants.roles['a_rw']}"
        # and so does an update through the API (a security definer function)
        conn.execute(
            "select memex.update_memory('A', 'alice', %s, p_content => 'via api, changed',"
            " p_embedding => %s, p_embedding_model => 'm')",
            (stored[0], _vector(6)),
        )
        assert _actor(tenants.dsn, stored[0]) == f"role:{tenants.roles['a_rw']}"
    # the service's role, which still writes the table directly: the trigger sets the actor
    service = _Service(tenants)
    try:
        me = service.actor()
        assert me.startswith("key:")
        (row,) = service.execute(
            "insert into memex.memories (agent_id, user_id, content, embedding,"
            " embedding_model, actor) values ('A', 'alice', 'direct', %s, 'm', 'operator:cli')"
            " returning id",
            (_vector(4),),
        )
        assert _actor(tenants.dsn, row[0]) == me
        service.execute("update memex.memories set actor = 'key:fake' where id = %s", (row[0],))
        assert _actor(tenants.dsn, row[0]) == me
        # the operator's memory: changing what it says makes the changer its actor
        service.execute(
            "update memex.memories set actor = 'key:fake' where id = %s", (tenants.a_memory,)
        )
        assert _actor(tenants.dsn, tenants.a_memory).startswith("sql:")
        service.execute(
            "update memex.memories set importance = 1.5 where id = %s", (tenants.a_memory,)
        )
        assert _actor(tenants.dsn, tenants.a_memory) == me
    finally:
        service.close()


def test_files_change_only_through_the_file_functions(tenants: Tenants) -> None:
    before = fingerprint(tenants.dsn)
    statements = (
        ("update memex.memories set content = 'rewritten' where path = %s", (A_FILE,)),
        ("update memex.memories set path = 'user/moved.md' where path = %s", (A_FILE,)),
        ("delete from memex.memories where path = %s", (A_FILE,)),
        (
            "insert into memex.memories (agent_id, user_id, path, content, embedding,"
            " embedding_model) values ('A', 'alice', 'user/new.md', 'no revision', %s, 'm')",
            (_vector(6),),
        ),
        (
            "update memex.memories set path = 'user/hidden.md' where id = %s",
            (tenants.a_memory,),
        ),
    )
    with tenants.as_role("a_rw") as conn:
        register_vector(conn)
        for sql, args in statements:  # a bound role: no table privilege at all
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                conn.execute(sql, args)
    service = _Service(tenants)
    try:
        for sql, args in statements:  # the service's role: the trigger refuses
            with pytest.raises(psycopg.errors.InsufficientPrivilege, match="files change only"):
                service.execute(sql, args)
    finally:
        service.close()
    assert fingerprint(tenants.dsn) == before
    with tenants.as_role("a_rw") as conn:
        register_vector(conn)
        # through the file functions: each change is a revision, by this role
        conn.execute(
            "select memex.write_file('A', 'alice', %s, 'rewritten', %s, 'm')", (A_FILE, _vector(7))
        )
        revisions = conn.execute(
            "select revision, actor from memex.list_revisions('A', 'alice', %s) order by revision",
            (A_FILE,),
        ).fetchall()
    assert revisions == [(1, revisions[0][1]), (2, f"role:{tenants.roles['a_rw']}")]
    service = _Service(tenants)
    try:  # a file's importance may still change directly
        service.execute("update memex.memories set importance = 2 where path = %s", (A_FILE,))
    finally:
        service.close()


# --- locks nobody can hold hostage ---------------------------------------------------------


async def test_another_tenant_cannot_hold_a_files_lock(
    tenants: Tenants, amemex: AsyncMemex
) -> None:
    """The repro: B took the advisory lock A's file writes used; A's PUT blocked until
    its client gave up. Keys now come from a secret B cannot read."""
    with tenants.as_role("b_rw") as conn:
        conn.execute(
            "select pg_advisory_lock(hashtext('memex.file'), hashtext('A/alice/user/notes.md'))"
        )
        written = await asyncio.wait_for(
            amemex.with_key(tenants.a_key).write_file("A", "alice", A_FILE, "still writable"),
            timeout=10,
        )
        assert written.content == "still writable"
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute("select memex._lock_key('file', 'x')")
        with pytest.raises(psycopg.errors.InsufficientPrivilege), conn.transaction():
            conn.execute("lock table memex.alembic_version in share row exclusive mode")


async def test_a_request_waits_for_a_lock_only_its_timeout_and_applies_nothing(
    tenants: Tenants, amemex: AsyncMemex
) -> None:
    """A writer that holds the file (here the operator, with the real key) makes a
    request fail with Busy after settings.request_lock_timeout_ms, and the request is
    rolled back: it is not applied when the lock is released."""
    with psycopg.connect(tenants.dsn, autocommit=True) as conn:
        conn.execute(
            "insert into memex.settings (name, value) values ('request_lock_timeout_ms', '700')"
            " on conflict (name) do update set value = excluded.value"
        )
        conn.execute(
            "select pg_advisory_lock(memex._lock_key('file', jsonb_build_array("
            "'A'::text, 'alice'::text, %s::text)::text))",
            (A_FILE,),
        )
        started = asyncio.get_running_loop().time()
        with pytest.raises(Busy):
            await amemex.with_key(tenants.a_key).write_file("A", "alice", A_FILE, "abandoned")
        waited = asyncio.get_running_loop().time() - started
        conn.execute("select pg_advisory_unlock_all()")
    assert 0.5 < waited < 5, waited
    await asyncio.sleep(0.5)
    current = await amemex.as_operator("test").read_file("A", "alice", A_FILE)
    assert "abandoned" not in current.content


async def test_concurrent_unconditional_appends_all_land(amemex: AsyncMemex) -> None:
    """The repro: 20 concurrent patches without base_revision on one file; 16 were
    refused with 409. Unconditional appends now all land, each once."""
    await amemex.write_file("A", "alice", "user/todo.md", "# Todo\n")
    results = await asyncio.gather(
        *(amemex.patch_file("A", "alice", "user/todo.md", append=f"- item {i}") for i in range(20)),
        return_exceptions=True,
    )
    assert [r for r in results if isinstance(r, BaseException)] == []
    content = (await amemex.read_file("A", "alice", "user/todo.md")).content
    assert sorted(line for line in content.splitlines() if line.startswith("- ")) == sorted(
        f"- item {i}" for i in range(20)
    )
    assert len(await amemex.list_revisions("A", "alice", "user/todo.md", limit=100)) == 21
    # a conditional write still loses when the file moved on
    with pytest.raises(Conflict):
        await amemex.patch_file("A", "alice", "user/todo.md", append="- late", base_revision=1)


async def test_concurrent_appends_that_lose_take_turns(amemex: AsyncMemex) -> None:
    """Appends that lost their race try again one at a time (per file, in this process),
    not all at once: 20 concurrent appends write ~2 x 20 times in all, where trying again
    together wrote up to 20 x 21 / 2 (each round's losers all lost again but one), which
    under load outlasted the 15 s a patch may take."""

    def writes() -> float:
        labels = {"function": sql_function(files_sql.PATCH_FILE) or ""}
        return REGISTRY.get_sample_value("memex_sql_call_duration_seconds_count", labels) or 0.0

    await amemex.write_file("A", "alice", "user/turns.md", "# Turns\n")
    before = writes()
    await asyncio.gather(
        *(amemex.patch_file("A", "alice", "user/turns.md", append=f"- turn {i}") for i in range(20))
    )
    content = (await amemex.read_file("A", "alice", "user/turns.md")).content
    assert sorted(line for line in content.splitlines() if line.startswith("- ")) == sorted(
        f"- turn {i}" for i in range(20)
    )
    assert writes() - before <= 2 * 20


async def test_concurrent_memorize_stores_each_text_once(amemex: AsyncMemex) -> None:
    """The repro: 20 concurrent memorize calls (no LLM); 16 answered 409 after storing
    their memory. Now each call is one transaction and all succeed."""
    texts = [f"Memorized fact number {i} about the garden." for i in range(20)]
    results = await asyncio.gather(
        *(agentic.memorize(amemex, "A", "alice", text) for text in texts), return_exceptions=True
    )
    assert [r for r in results if isinstance(r, BaseException)] == []
    assert await amemex.count("A", "alice", memory_type="episodic") == 20
    stored = [m.content for m in (await amemex.list_memories("A", "alice", limit=50)).memories]
    assert sorted(stored) == sorted(texts)  # each once, and (issue 24) no second home
    assert (await amemex.list_files("A", "alice"))[0] == []


async def test_a_refused_memorize_stores_nothing(amemex: AsyncMemex, dsn: str) -> None:
    """A memorize over the store rate limit (here one write a minute: the first memorize
    takes it) is refused whole: nothing of it is stored, so a retry will not duplicate it."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(
            "insert into memex.settings (name, value) values ('rate_limit_store_per_minute', '1')"
            " on conflict (name) do update set value = excluded.value"
        )
    await agentic.memorize(amemex, "A", "alice", "A fact that is stored.")
    with pytest.raises(RateLimited):
        await agentic.memorize(amemex, "A", "alice", "A fact that must not be half stored.")
    with psycopg.connect(dsn, autocommit=True) as conn:
        assert conn.execute("select content from memex.memories").fetchall() == [
            ("A fact that is stored.",)
        ]


def test_the_sync_client_runs_a_transaction(memex: Memex) -> None:
    with pytest.raises(RuntimeError), memex.transaction() as tx:
        tx.store("A", "alice", "rolled back with the block")
        raise RuntimeError("abort")
    with memex.transaction() as tx:
        tx.store("A", "alice", "kept")
        tx.store("A", "alice", "kept too")
    assert memex.count("A", "alice") == 2
