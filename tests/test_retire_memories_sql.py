"""memex.retire_memories, as a SQL role bound to a tenant calls it: facts that no longer
hold and have no newer version are superseded with no successor (out of the default
search, kept, in history with the reason), all or none; another tenant's memory is the
404 of an unknown one; a file, an archived memory or one retired already is a 409."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from psycopg.rows import dict_row

from tests.sqlapi import bound_login_role

A, U = "retirer", "alice"
RETIRE = "select * from memex.retire_memories(%s, %s, %s::uuid[], p_reason => %s)"
VECTOR = "array_fill(0.05, array[384])::vector"


@pytest.fixture
def alice(dsn: str) -> Iterator[psycopg.Connection]:
    """A login role bound to tenant (A, U) with write access, connected."""
    with (
        bound_login_role(dsn, A, [U]) as role,
        psycopg.connect(role, autocommit=True) as bound,
    ):
        yield bound


def memory(conn: psycopg.Connection, content: str, user: str = U, **columns: Any) -> uuid.UUID:
    names = ", ".join(["agent_id", "user_id", "content", "embedding", "embedding_model", *columns])
    values = ", ".join(["%s", "%s", "%s", VECTOR, "'test'", *["%s"] * len(columns)])
    row = conn.execute(
        f"insert into memex.memories ({names}) values ({values}) returning id",
        (A, user, content, *columns.values()),
    ).fetchone()
    assert row is not None
    return uuid.UUID(str(row[0]))


def retire(
    bound: psycopg.Connection, ids: list[uuid.UUID], reason: str | None = None
) -> list[dict[str, Any]]:
    cur = bound.cursor(row_factory=dict_row)
    return cur.execute(RETIRE, (A, U, ids, reason)).fetchall()


def test_retired_memories_leave_search_and_stay_in_history(
    conn: psycopg.Connection, alice: psycopg.Connection
) -> None:
    gym, pool, tea = (memory(conn, c) for c in ("gym card", "pool pass", "green tea"))
    rows = retire(alice, [pool, gym], "both cancelled")
    assert [r["id"] for r in rows] == [pool, gym]  # in the order asked
    assert all(r["superseded_at"] is not None and r["superseded_by"] is None for r in rows)
    assert all(r["valid_to"] == r["superseded_at"] for r in rows)
    live = alice.execute(
        "select id from memex.list_memories(%s, %s, p_limit => 10)", (A, U)
    ).fetchall()
    assert [r[0] for r in live] == [tea]
    revisions = alice.execute(
        "select revision, operation, details from memex.list_memory_revisions(%s, %s, %s)",
        (A, U, gym),
    ).fetchall()
    assert revisions[0][:2] == (2, "superseded")
    assert revisions[0][2]["retired"] is True and revisions[0][2]["reason"] == "both cancelled"
    # once only
    with pytest.raises(psycopg.Error) as refused:
        retire(alice, [gym])
    assert refused.value.sqlstate == "MX409"


def test_what_cannot_be_retired_retires_nothing(
    conn: psycopg.Connection, alice: psycopg.Connection
) -> None:
    mine = memory(conn, "Alice has a car")
    theirs = memory(conn, "Bob has a bike", user="bob")
    archived = memory(conn, "an old detail", archived_at="2026-01-01T00:00:00Z")
    file = memory(conn, "# notes", path="user/notes.md")
    cases: list[tuple[list[uuid.UUID], str | None, str]] = [
        ([mine, theirs], None, "MX404"),  # another tenant's: as an unknown id
        ([mine, uuid.uuid4()], None, "MX404"),
        ([mine, archived], None, "MX409"),
        ([mine, file], None, "MX409"),
        ([mine], "x" * 301, "MX422"),
        ([], None, "MX422"),
    ]
    for ids, reason, sqlstate in cases:
        with pytest.raises(psycopg.Error) as refused:
            retire(alice, ids, reason)
        assert refused.value.sqlstate == sqlstate, (ids, refused.value)
    still = conn.execute(
        "select count(*) from memex.memories where superseded_at is not null"
    ).fetchone()
    assert still == (0,)


@pytest.mark.parametrize("ann", [False, True])
def test_include_superseded_shows_retired_memories_on_both_paths(
    conn: psycopg.Connection, alice: psycopg.Connection, ann: bool
) -> None:
    # a tenant whose only superseded memory is retired (no successor lists it: revision
    # 0036's index of successors is empty) still shows it with include_superseded, on the
    # ANN path too (memex.search's "no link" shortcut is not taken for that request)
    gym, tea = (memory(conn, c) for c in ("gym card", "green tea"))
    retire(alice, [gym], "cancelled")
    conn.execute(
        "update memex.tenants set ann = %s where agent_id = %s and user_id = %s", (ann, A, U)
    )

    def found(include: bool) -> set[uuid.UUID]:
        rows = alice.execute(
            f"select id from memex.search(%s, %s, {VECTOR}, p_query_text => 'gym tea',"
            " p_include_superseded => %s)",
            (A, U, include),
        ).fetchall()
        return {uuid.UUID(str(r[0])) for r in rows}

    assert found(False) == {tea}
    assert found(True) == {gym, tea}
