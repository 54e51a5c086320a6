"""Memory that knows time, at the SQL level (issue 36): every change of a memory leaves a
revision (memex.memory_revisions), supersession (p_supersedes), search as of a moment,
validity (valid_from / valid_to, p_valid_at) and restores of consolidation that stick."""

from __future__ import annotations

import concurrent.futures
import contextlib
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
import pytest
from pgvector.psycopg import register_vector
from psycopg.rows import dict_row

from tests.sqlapi import HALF, bound_login_role, unit

A, U = "agent", "user"
Q = unit((0, 1.0))  # the query: each memory below is a cosine of it


def _store(
    conn: psycopg.Connection,
    content: str,
    cos: float = 0.9,
    *,
    agent: str = A,
    user: str = U,
    supersedes: list[Any] | None = None,
    valid_from: datetime | None = None,
    valid_to: datetime | None = None,
    created_at: datetime | None = None,
) -> Any:
    register_vector(conn)
    row = conn.execute(
        "select id from memex.store(p_agent_id => %s, p_user_id => %s, p_content => %s,"
        " p_embedding => %s, p_embedding_model => 'test-model', p_created_at => %s,"
        " p_supersedes => %s::uuid[], p_valid_from => %s, p_valid_to => %s)",
        (
            agent,
            user,
            content,
            unit((0, cos), (1, (1 - cos * cos) ** 0.5 or 1e-9)),
            created_at,
            supersedes,
            valid_from,
            valid_to,
        ),
    ).fetchone()
    assert row is not None
    return row[0]


def _search(conn: psycopg.Connection, **options: Any) -> list[dict[str, Any]]:
    register_vector(conn)
    names = "".join(f", p_{name} => %({name})s" for name in options)
    return (
        conn.cursor(row_factory=dict_row)
        .execute(
            "select * from memex.search(p_agent_id => 'agent', p_user_id => 'user',"
            f" p_query_embedding => %(q)s, p_mode => 'vector'{names})",
            {"q": Q, **options},
        )
        .fetchall()
    )


def _revisions(conn: psycopg.Connection, memory_id: Any) -> list[dict[str, Any]]:
    return (
        conn.cursor(row_factory=dict_row)
        .execute(
            "select * from memex.list_memory_revisions('agent', 'user', %s) order by revision",
            (memory_id,),
        )
        .fetchall()
    )


@contextlib.contextmanager
def _raises(sqlstate: str) -> Iterator[None]:
    with pytest.raises(psycopg.Error) as info:
        yield
    assert info.value.sqlstate == sqlstate, info.value


# --- history ---------------------------------------------------------------------------


def test_every_change_of_a_memory_leaves_a_revision(conn: psycopg.Connection) -> None:
    memory = _store(conn, "Lives in Paris")
    conn.execute(
        "select memex.update_memory('agent', 'user', %s, p_importance => 1.5,"
        ' p_metadata => \'{"city": "Paris"}\')',
        (memory,),
    )
    register_vector(conn)
    conn.execute(
        "select memex.update_memory('agent', 'user', %s, p_content => 'Lives in Lyon',"
        " p_embedding => %s, p_embedding_model => 'test-model')",
        (memory, unit((0, 0.8), (1, 0.6))),
    )
    # re-embedding alone changes nothing a reader sees: no revision
    conn.execute(
        "select memex.update_memory('agent', 'user', %s, p_embedding => %s,"
        " p_embedding_model => 'other-model')",
        (memory, unit((0, 0.7), (1, 0.7))),
    )
    revisions = _revisions(conn, memory)
    assert [(r["revision"], r["operation"], r["changed"]) for r in revisions] == [
        (1, "store", ["content"]),
        (2, "update", ["importance", "metadata"]),
        (3, "update", ["content"]),
    ]
    assert [r["content"] for r in revisions] == [
        "Lives in Paris",
        "Lives in Paris",
        "Lives in Lyon",
    ]
    assert revisions[1]["metadata"] == {"city": "Paris"} and revisions[1]["importance"] == 1.5
    assert all(r["actor"] for r in revisions)
    # paged, newest first
    page = conn.execute(
        "select revision from memex.list_memory_revisions('agent', 'user', %s, 2)", (memory,)
    ).fetchall()
    assert page == [(3,), (2,)]
    assert conn.execute(
        "select revision from memex.list_memory_revisions('agent', 'user', %s, 2, 2)", (memory,)
    ).fetchall() == [(1,)]


def test_get_memory_as_of_a_moment_and_diff_and_revert(conn: psycopg.Connection) -> None:
    memory = _store(conn, "Drives a Kia Niro\nColour: red")
    time.sleep(0.05)
    between = conn.execute("select clock_timestamp()").fetchone()[0]  # type: ignore[index]
    time.sleep(0.05)
    register_vector(conn)
    conn.execute(
        "select memex.update_memory('agent', 'user', %s, p_content => %s, p_embedding => %s,"
        " p_embedding_model => 'test-model', p_memory_type => 'semantic')",
        (memory, "Drives a Skoda Octavia\nColour: red", unit((0, 0.5), (1, 0.866))),
    )
    then = (
        conn.cursor(row_factory=dict_row)
        .execute(
            "select * from memex.get_memory('agent', 'user', %s, p_as_of => %s)", (memory, between)
        )
        .fetchone()
    )
    assert then is not None
    assert then["content"] == "Drives a Kia Niro\nColour: red"
    assert then["memory_type"] == "episodic"
    now = conn.execute("select content from memex.get_memory('agent', 'user', %s)", (memory,))
    assert now.fetchone() == ("Drives a Skoda Octavia\nColour: red",)
    # before it existed: not found
    with _raises("MX404"):
        conn.execute(
            "select memex.get_memory('agent', 'user', %s, p_as_of => now() - interval '1 day')",
            (memory,),
        )

    diff = conn.execute(
        "select memex.diff_memory_revisions('agent', 'user', %s, 1, 2)", (memory,)
    ).fetchone()[0]  # type: ignore[index]
    assert "-Drives a Kia Niro" in diff["content"] and "+Drives a Skoda Octavia" in diff["content"]
    assert " Colour: red" in diff["content"]
    assert diff["fields"] == {"memory_type": {"from": "episodic", "to": "semantic"}}

    # revert to revision 1: a new revision, the old content, queued for a new embedding
    reverted = conn.execute(
        "select content, memory_type from memex.revert_memory('agent', 'user', %s, 1)", (memory,)
    ).fetchone()
    assert reverted == ("Drives a Kia Niro\nColour: red", "episodic")
    revisions = _revisions(conn, memory)
    assert [r["operation"] for r in revisions] == ["store", "update", "revert"]
    assert revisions[-1]["content"] == revisions[0]["content"]
    assert conn.execute(
        "select count(*) from memex.embed_queue where memory_id = %s", (memory,)
    ).fetchone() == (1,)
    with _raises("MX409"):  # says that already
        conn.execute("select memex.revert_memory('agent', 'user', %s, 1)", (memory,))
    with _raises("MX404"):
        conn.execute("select memex.revert_memory('agent', 'user', %s, 9)", (memory,))


def test_history_is_append_only_and_the_tenants_own(conn: psycopg.Connection, dsn: str) -> None:
    mine = _store(conn, "mine")
    theirs = _store(conn, "theirs", user="other")
    with (
        bound_login_role(dsn, A, [U]) as role,
        psycopg.connect(role, autocommit=True) as tenant,
    ):
        listed = tenant.execute(
            "select revision, content from memex.list_memory_revisions('agent', 'user', %s)",
            (mine,),
        ).fetchall()
        assert listed == [(1, "mine")]
        # another tenant's memory: as missing (the role's binding refuses the user first)
        for user in ("other", "user"):
            with pytest.raises(psycopg.Error) as info:
                tenant.execute(
                    "select * from memex.list_memory_revisions('agent', %s, %s)", (user, theirs)
                )
            assert info.value.sqlstate in ("MX404", "42501"), info.value
        for statement in (
            "select * from memex.memory_revisions",
            "update memex.memory_revisions set content = 'forged'",
            "delete from memex.memory_revisions",
            "insert into memex.memory_revisions (agent_id, user_id, memory_id, revision,"
            " operation, actor, content, memory_type, importance)"
            f" values ('agent', 'user', '{mine}', 9, 'update', 'x', 'forged', 'episodic', 1)",
        ):
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                tenant.execute(statement)
        # nor through the service's role, which may only read it
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute("set role memex_app")
            try:
                conn.execute("delete from memex.memory_revisions")
            finally:
                conn.execute("reset role")
    assert _revisions(conn, mine)[0]["content"] == "mine"


def test_forget_and_erase_take_the_history_with_them(conn: psycopg.Connection) -> None:
    memory = _store(conn, "a secret")
    conn.execute("select memex.update_memory('agent', 'user', %s, p_importance => 2)", (memory,))
    conn.execute("select memex.forget('agent', 'user', %s)", (memory,))
    assert conn.execute(
        "select count(*) from memex.memory_revisions where memory_id = %s", (memory,)
    ).fetchone() == (0,)
    with _raises("MX404"):
        conn.execute("select memex.list_memory_revisions('agent', 'user', %s)", (memory,))
    _store(conn, "another secret")
    erase = conn.execute("select memex.erase_user('agent', 'user', 'user')")
    erase.fetchall()
    assert conn.execute(
        "select count(*) from memex.memory_revisions where agent_id = 'agent' and user_id = 'user'"
    ).fetchone() == (0,)


# --- supersession ----------------------------------------------------------------------


def test_a_newer_version_supersedes_the_older_which_stays(conn: psycopg.Connection) -> None:
    paris = _store(conn, "Lives in Paris", 0.95)  # more similar to the query than its successor
    berlin = _store(conn, "Moved to Berlin", 0.80, supersedes=[paris])
    rows = conn.execute(
        "select id, superseded_by, superseded_at is not null, valid_to is not null, supersedes"
        " from memex.memories order by created_at"
    ).fetchall()
    assert rows == [(paris, berlin, True, True, None), (berlin, None, False, False, [paris])]
    # the default search leaves it out
    assert [h["id"] for h in _search(conn)] == [berlin]
    # included, it ranks after its successor, although it is more similar
    hits = _search(conn, include_superseded=True)
    assert [h["id"] for h in hits] == [berlin, paris]
    assert hits[1]["score"] < hits[0]["score"] and hits[1]["superseded_by"] == berlin
    # the successor ranks with the best similarity of its own and its predecessor's: the
    # new version is found by the old one's match (tests/test_supersession_ranking.py)
    assert hits[0]["similarity"] == pytest.approx(0.95, abs=HALF) == hits[1]["similarity"]
    # its history says so; get_memory finds it
    assert [r["operation"] for r in _revisions(conn, paris)] == ["store", "superseded"]
    assert [(r["operation"], r["supersedes"]) for r in _revisions(conn, berlin)] == [
        ("store", [paris])
    ]
    assert conn.execute(
        "select superseded_by from memex.get_memory('agent', 'user', %s)", (paris,)
    ).fetchone() == (berlin,)
    # a chain: each older version after its successor
    munich = _store(conn, "Moved to Munich", 0.5, supersedes=[berlin])
    hits = _search(conn, include_superseded=True)
    assert [h["id"] for h in hits] == [munich, berlin, paris]
    assert hits[0]["score"] > hits[1]["score"] > hits[2]["score"]
    # forgetting the successor brings its predecessor back into the default search
    conn.execute("select memex.forget('agent', 'user', %s)", (munich,))
    assert [h["id"] for h in _search(conn)] == [berlin]


def test_the_superseded_memorys_update_is_heap_only(conn: psycopg.Connection) -> None:
    # issue 36: a superseding store within reach of a plain one. The older memory's update
    # (superseded_by, superseded_at, valid_to) changes no indexed column (revision 0036),
    # so with room on its page it is HOT: no entry in any index of memex.memories, the
    # HNSW and GIN ones among them.
    indexed = conn.execute(
        "select c.relname::text from pg_index i join pg_class c on c.oid = i.indexrelid"
        " where i.indrelid = 'memex.memories'::regclass and exists ("
        "  select from pg_attribute a where a.attrelid = i.indrelid"
        "  and a.attname in ('superseded_by', 'superseded_at', 'valid_to')"
        "  and (a.attnum = any (i.indkey)"
        "       or pg_get_expr(i.indpred, i.indrelid) ~ ('\\m' || a.attname || '\\M')"
        "       or pg_get_expr(i.indexprs, i.indrelid) ~ ('\\m' || a.attname || '\\M')))"
    ).fetchall()
    assert indexed == []
    with conn.transaction():  # the transaction's own counters (a fresh database: room)
        paris = _store(conn, "Lives in Paris", 0.95)
        _store(conn, "Moved to Berlin", 0.80, supersedes=[paris])
        assert conn.execute(
            "select pg_stat_get_xact_tuples_updated('memex.memories'::regclass),"
            " pg_stat_get_xact_tuples_hot_updated('memex.memories'::regclass)"
        ).fetchone() == (1, 1)


def test_a_superseding_store_keeps_its_plans(conn: psycopg.Connection) -> None:
    # issue 36: a superseding store within reach of a plain one, also on a table with
    # statistics. memex._supersede updated its memories by `id = any (...)`: a generic
    # plan estimates ten of them, a custom plan the one it is given, so PL/pgSQL's plan
    # cache kept planning the update anew at every call once the table was analyzed (6-8x
    # a plain store at 20,000 memories, bench/RESULTS.md), or settled on a generic plan
    # that reads an index of every tenant's memories for the ids (a skip scan; this test's
    # table). One update per memory by its primary key: one plan, kept, one index probe.
    # auto_explain shows the plan each call ran (a kept generic plan reads a parameter).
    register_vector(conn)
    n = 400
    conn.execute(
        "select count(*) from memex.store_many(%s::text[], %s::text[], %s::text[],"
        " %s::vector[], 'test-model')",
        ([A] * n, ["someone else"] * n, [f"note {i}" for i in range(n)], [Q] * n),
    )
    conn.execute("analyze memex.memories")
    plans: list[str] = []
    conn.add_notice_handler(
        lambda d: (
            plans.append(d.message_primary or "")
            if "set superseded_by = p_id" in (d.message_primary or "")
            else None
        )
    )
    conn.execute("load 'auto_explain'")
    conn.execute(
        "select set_config('auto_explain.log_min_duration', '0', false),"
        " set_config('auto_explain.log_nested_statements', 'on', false),"
        " set_config('auto_explain.log_level', 'notice', false),"
        " set_config('client_min_messages', 'notice', false)"
    )
    previous = _store(conn, "Version 0")
    for i in range(1, 9):  # PL/pgSQL's plan cache decides after five custom plans
        previous = _store(conn, f"Version {i}", supersedes=[previous])
    conn.execute("select set_config('auto_explain.log_min_duration', '-1', false)")
    assert len(plans) == 8
    assert "Index Scan using memories_pkey on memories m" in plans[-1], plans[-1]
    assert "Index Cond: (id = $" in plans[-1], plans[-1]
    # and the chain is right: each version superseded by the next, one revision each
    assert conn.execute(
        "select count(*), count(superseded_by), count(distinct superseded_by)"
        " from memex.memories where user_id = %s",
        (U,),
    ).fetchone() == (9, 8, 8)
    assert [r["operation"] for r in _revisions(conn, previous)] == ["store"]


def test_two_stores_superseding_one_memory_at_once(conn: psycopg.Connection, dsn: str) -> None:
    # Two writers supersede the same memory at the same time: the second waits for the
    # first (the tenant's history counter, then the memory's row) and, once the first has
    # committed, re-links the memory to its own successor. Both stores stand; the older
    # memory's history records both changes in order, and its successor is the second.
    old = _store(conn, "Drives a Kia")
    with psycopg.connect(dsn) as first, psycopg.connect(dsn) as second:
        kept = _store(first, "Drives a Skoda", supersedes=[old])  # not committed yet
        pid = second.info.backend_pid
        with concurrent.futures.ThreadPoolExecutor(1) as pool:
            later = pool.submit(_store, second, "Drives a Fiat", supersedes=[old])
            deadline = time.monotonic() + 30
            while conn.execute(
                "select wait_event_type is distinct from 'Lock' from pg_stat_activity"
                " where pid = %s",
                (pid,),
            ).fetchone() != (False,):
                assert time.monotonic() < deadline and not later.done(), "it did not wait"
                time.sleep(0.05)
            first.commit()
            newest = later.result(timeout=30)
        second.commit()
    assert conn.execute(
        "select superseded_by, superseded_at is not null from memex.memories where id = %s",
        (old,),
    ).fetchone() == (newest, True)
    history = _revisions(conn, old)
    assert [(r["operation"], r["superseded_by"]) for r in history] == [
        ("store", None),
        ("superseded", kept),
        ("update", newest),
    ]
    assert history[2]["changed"] == ["superseded_by", "superseded_at"]
    # each successor lists it; the default search finds the two successors, not it
    assert [
        r[0]
        for r in conn.execute(
            "select supersedes from memex.memories where id in (%s, %s)", (kept, newest)
        )
    ] == [[old], [old]]
    assert sorted(h["id"] for h in _search(conn)) == sorted([kept, newest])


def test_supersession_refuses_other_tenants_unknown_ids_itself_and_cycles(
    conn: psycopg.Connection,
) -> None:
    import uuid

    old = _store(conn, "old fact")
    other = _store(conn, "another user's fact", user="other")
    for ids in ([other], [uuid.uuid4()]):
        with _raises("MX404"):
            _store(conn, "new fact", supersedes=ids)
    new = _store(conn, "new fact", supersedes=[old])
    with _raises("MX422"):  # itself
        conn.execute(
            "select memex.update_memory('agent', 'user', %s, p_supersedes => array[%s]::uuid[])",
            (new, new),
        )
    with _raises("MX422"):  # a cycle: old is new's predecessor
        conn.execute(
            "select memex.update_memory('agent', 'user', %s, p_supersedes => array[%s]::uuid[])",
            (old, new),
        )
    # nothing changed by the refused calls
    assert conn.execute(
        "select count(*) from memex.memories where superseded_at is not null"
    ).fetchone() == (1,)
    # update_memory may name what a memory supersedes later
    newest = _store(conn, "newest fact")
    conn.execute(
        "select memex.update_memory('agent', 'user', %s, p_supersedes => array[%s]::uuid[])",
        (newest, new),
    )
    assert [h["id"] for h in _search(conn)] == [newest]


# --- as of, validity, time filters ------------------------------------------------------


def test_search_as_of_a_moment(conn: psycopg.Connection) -> None:
    now = datetime.now(UTC)
    paris = _store(conn, "Lives in Paris", 0.9, created_at=now - timedelta(days=30))
    conn.execute(  # superseded 10 days ago: a store back-dated to then
        "select id from memex.store('agent', 'user', 'Moved to Berlin', %s, 'test-model',"
        " p_created_at => %s, p_supersedes => array[%s]::uuid[])",
        (unit((0, 0.8), (1, 0.6)), now - timedelta(days=10), paris),
    )
    # superseded when its successor was recorded, not when the back-dated store ran
    assert conn.execute(
        "select superseded_at from memex.memories where id = %s", (paris,)
    ).fetchone() == (now - timedelta(days=10),)
    # 20 days ago the tenant knew Paris only
    hits = _search(conn, as_of=now - timedelta(days=20))
    assert [h["content"] for h in hits] == ["Lives in Paris"]
    assert hits[0]["recency"] > 0.99 * 0.5 ** (10 / 30)  # recency from as_of (10 days old)
    # 5 days ago: Berlin only (Paris superseded by then)
    assert [h["content"] for h in _search(conn, as_of=now - timedelta(days=5))] == [
        "Moved to Berlin"
    ]
    # before anything: nothing
    assert _search(conn, as_of=now - timedelta(days=60)) == []


def test_validity_filters_and_the_ranking_factor(conn: psycopg.Connection) -> None:
    now = datetime.now(UTC)
    old_job = _store(
        conn,
        "Works at Acme",
        0.9,
        valid_from=now - timedelta(days=400),
        valid_to=now - timedelta(days=30),
    )
    new_job = _store(conn, "Works at Globex", 0.85, valid_from=now - timedelta(days=30))
    # the default ranking prefers the fact valid now (the old one ranks with half importance)
    hits = _search(conn)
    assert [h["id"] for h in hits] == [new_job, old_job]
    assert hits[1]["importance"] == 1.0  # the stored importance is returned
    # valid_at filters
    assert [h["id"] for h in _search(conn, valid_at=now - timedelta(days=100))] == [old_job]
    assert [h["id"] for h in _search(conn, valid_at=now)] == [new_job]
    # created_after / created_before
    assert len(_search(conn, created_after=now - timedelta(hours=1))) == 2
    assert _search(conn, created_before=now - timedelta(hours=1)) == []
    # supersession closes the older one's validity at the successor's start
    newest = _store(
        conn, "Works at Initech", 0.5, valid_from=now - timedelta(days=1), supersedes=[new_job]
    )
    assert newest is not None
    assert conn.execute(
        "select valid_to from memex.memories where id = %s", (new_job,)
    ).fetchone() == (now - timedelta(days=1),)
    with _raises("MX422"):
        _store(conn, "bad range", valid_from=now, valid_to=now - timedelta(days=1))


# --- consolidation restores stick --------------------------------------------------------


def test_a_restored_consolidation_is_not_condensed_again_until_something_new(
    conn: psycopg.Connection,
) -> None:
    register_vector(conn)
    start = datetime(2026, 1, 1, tzinfo=UTC)
    n = 30
    conn.execute(
        "select count(*) from memex.store_many(%s, %s, %s, %s, 'test-model', null, null, null,"
        " null, %s)",
        (
            [A] * n,
            [U] * n,
            [f"Fact number {i}: the code word is w{i}x." for i in range(n)],
            [unit((i % 300, 1.0), (383, 0.3)) for i in range(n)],
            [start + timedelta(days=i) for i in range(n)],
        ),
    )
    conn.execute('select memex.set_dream_config(\'{"threshold": 10, "batch_size": 10}\')')
    run = (
        conn.cursor(row_factory=dict_row)
        .execute("select * from memex.consolidate_tenant('agent', 'user')")
        .fetchone()
    )
    assert run is not None and run["status"] == "done"
    conn.execute("select memex.restore_consolidation(%s)", (run["id"],))
    archived = "select count(*) from memex.memories where archived_at is not null and id <> %s"
    assert conn.execute(archived, (run["summary_id"],)).fetchone() == (0,)
    # the next tick: the restored sources stay (the 20 others may be condensed; not these)
    for _ in range(3):
        conn.execute("select memex.consolidate_tenant('agent', 'user')")
    restored_again = conn.execute(
        "select count(*) from memex.memories where restored_at is not null"
        " and archived_at is not null"
    ).fetchone()
    assert restored_again == (0,)
    # something new arrives: they may be condensed again
    _store(conn, "a new memory", created_at=None)
    for _ in range(5):
        conn.execute("select memex.consolidate_tenant('agent', 'user')")
    assert conn.execute(
        "select count(*) from memex.memories where restored_at is not null"
        " and archived_at is not null"
    ).fetchone() != (0,)
    # the sources' history shows the archive and the restore
    source = conn.execute(
        "select id from memex.memories where restored_at is not null limit 1"
    ).fetchone()
    assert source is not None
    operations = [r["operation"] for r in _revisions(conn, source[0])]
    assert operations[:3] == ["store", "archive", "restore"]


# --- export and import -------------------------------------------------------------------


def test_export_and_import_keep_history_supersession_and_validity(
    conn: psycopg.Connection,
) -> None:
    now = datetime.now(UTC)
    old = _store(conn, "Lives in Paris", valid_from=now - timedelta(days=300))
    conn.execute("select memex.update_memory('agent', 'user', %s, p_importance => 1.5)", (old,))
    new = _store(conn, "Moved to Berlin", supersedes=[old])
    state = (
        "select id, content, importance, valid_from, valid_to, supersedes, superseded_by,"
        " superseded_at from memex.memories order by created_at"
    )
    before = conn.execute(state).fetchall()
    history = "select * from memex.memory_revisions order by memory_id, revision"
    revisions_before = [
        {k: v for k, v in r.items() if k != "id"}
        for r in conn.cursor(row_factory=dict_row).execute(history).fetchall()
    ]
    assert len(revisions_before) == 4  # old: store, update, superseded; new: store
    # memexdb's export leaves the memory revisions out unless asked (its format lacks them)
    kinds = "select distinct kind from memex.export_history('agent', 'user'{})"
    assert conn.execute(kinds.format("")).fetchall() == []
    records = [
        row[0]
        for row in conn.execute(
            "select record from memex.export_history('agent', 'user',"
            " p_include_memory_revisions => true) where kind = 'memory_revision'"
        ).fetchall()
    ]
    assert len(records) == 4
    memories = (
        conn.cursor(row_factory=dict_row)
        .execute("select * from memex.export_memories('agent', 'user', true) order by created_at")
        .fetchall()
    )
    conn.execute("select memex.erase_user('agent', 'user', 'user')").fetchall()
    assert conn.execute("select count(*) from memex.memory_revisions").fetchone() == (0,)

    register_vector(conn)
    conn.execute(
        "select count(*) from memex.import_memories(%s, %s, %s, %s, %s, 'test-model',"
        " %s::text[]::memex.memory_type[], %s, %s, %s, %s, %s, %s, null, %s, 'admin')",
        (
            [m["id"] for m in memories],
            [m["agent_id"] for m in memories],
            [m["user_id"] for m in memories],
            [m["content"] for m in memories],
            [m["embedding"] for m in memories],
            [m["memory_type"] for m in memories],
            [m["importance"] for m in memories],
            [psycopg.types.json.Jsonb(m["metadata"]) for m in memories],
            [m["created_at"] for m in memories],
            [m["updated_at"] for m in memories],
            [m["expires_at"] for m in memories],
            [
                psycopg.types.json.Jsonb(
                    {
                        "source_ids": [],
                        "superseded_by": m["superseded_by"] and str(m["superseded_by"]),
                    }
                )
                for m in memories
            ],
            [m["actor"] for m in memories],
        ),
    )
    stand_ins = conn.execute("select operation, count(*) from memex.memory_revisions group by 1")
    assert stand_ins.fetchall() == [("import", 2)]
    # incoherent history is refused, nothing inserted: a gap, or a last revision that is
    # not the memory as it is
    gap = [r for r in records if not (r["memory_id"] == str(old) and r["revision"] == 2)]
    stale = [r for r in records if not (r["memory_id"] == str(old) and r["revision"] > 1)]
    for bad in (gap, stale):
        with _raises("MX409"):
            conn.execute(
                "select memex.import_memory_revisions(%s)", (psycopg.types.json.Jsonb(bad),)
            )
    assert conn.execute(
        "select memex.import_memory_revisions(%s)", (psycopg.types.json.Jsonb(records),)
    ).fetchone() == (4,)
    assert conn.execute(state).fetchall() == before
    revisions_after = [
        {k: v for k, v in r.items() if k != "id"}
        for r in conn.cursor(row_factory=dict_row).execute(history).fetchall()
    ]
    assert revisions_after == revisions_before
    # again: nothing more
    assert conn.execute(
        "select memex.import_memory_revisions(%s)", (psycopg.types.json.Jsonb(records),)
    ).fetchone() == (0,)
    # and search sees the supersession as before
    assert [h["id"] for h in _search(conn)] == [new]


def _ids(conn: psycopg.Connection, agent: str, user: str) -> list[int]:
    rows = conn.execute(
        "select id from memex.memory_revisions where agent_id = %s and user_id = %s order by id",
        (agent, user),
    ).fetchall()
    return [r[0] for r in rows]


def test_memory_revision_ids_count_each_users_own_history(conn: psycopg.Connection) -> None:
    """Issue 34 section 4 applied to memory revisions: a revision's id is a number within
    its (agent, user)'s history, whatever other users (of the agent or not) do in between,
    in one store_many across users as in single stores and updates; export pages them by
    (user_id, id) and its cursor needs the user; an import numbers them anew."""
    register_vector(conn)
    # one batch across three tenants, interleaved, then single stores and updates
    tenants = [(A, "u1"), (A, "u2"), ("other", "u1")] * 5
    conn.execute(
        "select count(*) from memex.store_many(%s, %s, %s, %s, 'test-model')",
        (
            [t[0] for t in tenants],
            [t[1] for t in tenants],
            [f"fact {i}" for i in range(len(tenants))],
            [unit((0, 1.0))] * len(tenants),
        ),
    )
    first = _store(conn, "Lives in Paris", agent=A, user="u1")
    for i in range(3):
        _store(conn, f"other's note {i}", agent="other", user="u1")
        _store(conn, f"u2's note {i}", agent=A, user="u2")
        conn.execute(
            "select memex.update_memory(%s, 'u1', %s, p_importance => %s)", (A, first, 1.2 + i / 5)
        )
    assert _ids(conn, A, "u1") == list(range(1, 5 + 1 + 3 + 1))
    assert _ids(conn, A, "u2") == list(range(1, 5 + 3 + 1))
    assert _ids(conn, "other", "u1") == list(range(1, 5 + 3 + 1))
    listed = conn.execute(
        "select id, revision from memex.list_memory_revisions(%s, 'u1', %s)", (A, first)
    ).fetchall()
    assert listed == [(9, 4), (8, 3), (7, 2), (6, 1)]
    counters = conn.execute(
        "select agent_id, user_id, last_id from memex.history_ids"
        " where kind = 'memory_revisions' order by 1, 2"
    ).fetchall()
    assert counters == [(A, "u1", 9), (A, "u2", 8), ("other", "u1", 8)]

    # the agent's export, a row a page: every revision once, by (user_id, id)
    page = (
        "select kind, id, record from memex.export_history(%s, null, %s, %s, %s, 1,"
        " p_include_memory_revisions => true)"
    )
    seen: list[tuple[str, int]] = []
    cursor: tuple[Any, Any, Any] = (None, None, None)
    while rows := conn.execute(page, (A, *cursor)).fetchall():
        kind, id_, record = rows[0]
        assert kind == "memory_revision"
        seen.append((record["user_id"], id_))
        cursor = (kind, record["user_id"], id_)
    assert seen == [("u1", i) for i in range(1, 10)] + [("u2", i) for i in range(1, 9)]
    with _raises("MX422"):
        conn.execute(page, (A, "memory_revision", None, 3)).fetchall()

    # an import numbers the revisions anew, in the user's history
    records = [
        row[0]
        for row in conn.execute(
            "select record from memex.export_history(%s, 'u1',"
            " p_include_memory_revisions => true) where kind = 'memory_revision'",
            (A,),
        ).fetchall()
    ]
    conn.execute(
        "delete from memex.memory_revisions where memory_id = %s and revision > 1", (first,)
    )
    assert conn.execute(
        "select memex.import_memory_revisions(%s)", (psycopg.types.json.Jsonb(records),)
    ).fetchone() == (3,)
    assert _ids(conn, A, "u1") == [*range(1, 7), 10, 11, 12]
    assert _ids(conn, A, "u2") == list(range(1, 9))


def test_as_of_reads_a_back_dated_memory_as_search_finds_it(conn: psycopg.Connection) -> None:
    # created (p_created_at) long before it was recorded: as of a moment in between, search
    # finds it, and get_memory reads its first revision
    now = datetime.now(UTC)
    memory = _store(conn, "Was born in Lisbon", created_at=now - timedelta(days=3000))
    moment = now - timedelta(days=1000)
    assert [h["id"] for h in _search(conn, as_of=moment)] == [memory]
    assert conn.execute(
        "select content from memex.get_memory('agent', 'user', %s, p_as_of => %s)",
        (memory, moment),
    ).fetchone() == ("Was born in Lisbon",)


def test_a_back_dated_batch_supersedes_at_its_recording(conn: psycopg.Connection) -> None:
    # memex.store_many as memex.store: an item back-dated with p_created_at supersedes at
    # its created_at (never before the older memory's own), so as of a moment between the
    # two the older version alone is held
    now = datetime.now(UTC)
    paris = _store(conn, "Lives in Paris", 0.9, created_at=now - timedelta(days=30))
    register_vector(conn)
    conn.execute(
        "select count(*) from memex.store_many(%s, %s, %s, %s, 'test-model',"
        " p_created_at => %s, p_supersedes => %s::jsonb[])",
        (
            [A, A],
            [U, U],
            ["Moved to Berlin", "Bought a bike"],
            [unit((0, 0.8), (1, 0.6)), unit((0, 0.5), (1, 0.5 * 3**0.5))],
            [now - timedelta(days=10), now - timedelta(days=40)],
            [f'["{paris}"]', None],
        ),
    )
    assert conn.execute(
        "select superseded_at from memex.memories where id = %s", (paris,)
    ).fetchone() == (now - timedelta(days=10),)
    held = [h["content"] for h in _search(conn, as_of=now - timedelta(days=20))]
    assert "Lives in Paris" in held and "Moved to Berlin" not in held
    assert "Moved to Berlin" in [h["content"] for h in _search(conn, as_of=now - timedelta(days=5))]
