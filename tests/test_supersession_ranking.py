"""A newer version ranks with the match of the versions it superseded (issue 36): a query
worded like the old version ("I drive a Kia Niro") finds the new one ("Picked up my new
Skoda Octavia"), through explicit supersession links only, on the exact path and through
the ANN index; never a version recorded after a search's as_of; a superseded memory is
never returned by default."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
import psycopg
import pytest
from pgvector.psycopg import register_vector

from tests.sqlapi import store, unit
from tests.test_vector_index import index_tenant, set_setting

NOW = datetime(2026, 6, 1, 12, tzinfo=UTC)
QUERY = "What car do I drive?"
OLD = "I drive a Kia Niro."
MIDDLE = "Swapped the hatchback for a Tesla Model 3 last week."
NEW = "Picked up my new Skoda Octavia today."


def angled(cos: float, axis: int) -> np.ndarray:
    """A unit vector whose cosine to the query, unit((0, 1)), is `cos`, off along `axis`."""
    return unit((0, cos), (axis, math.sqrt(1 - cos * cos)))


def load(conn: psycopg.Connection, agent: str, chain: list[str], linked: bool = True) -> None:
    """A tenant of chatter more similar to the query than the new versions (cosine 0.5
    against 0.1), none holding a query term, and the versions of one fact, each stored
    superseding the one before (unless not linked): the first, worded like the query, 90
    days ago, then one every 30 days, each followed by three unrelated memories (so that no
    version is another's neighbour in time). The chatter is of the last 10 days."""

    def put(content: str, vector: np.ndarray, days: float, supersedes: Any = None) -> Any:
        when = NOW - timedelta(days=days)
        return store(
            conn, content, vector, agent=agent, user="u", created_at=when, supersedes=supersedes
        )["id"]

    ids: list[Any] = []
    for i, content in enumerate(chain):
        vector = angled(0.9, 1) if i == 0 else angled(0.1, 2 + i)
        days_ago = 90 - 30 * i
        ids.append(put(content, vector, days_ago, ids[-1:] if linked else None))
        for j in range(1, 4):
            note = f"Unrelated note {i}.{j} on the garden hose."
            put(note, angled(0.0, 10 + 3 * i + j), days_ago - j)
    for i in range(20):
        put(f"Chatter {i}: the weather was mild.", angled(0.5, 30 + i), 10 - i / 2)


def search(conn: psycopg.Connection, agent: str, **options: Any) -> list[str]:
    """Contents of the default request's top 5 (query text and embedding, no ranking
    options) at NOW, with the options given."""
    register_vector(conn)
    names = "".join(f", p_{name} => %({name})s" for name in options)
    rows = conn.execute(
        "select content from memex.search(p_agent_id => %(agent)s, p_user_id => 'u',"
        " p_query_embedding => %(q)s, p_query_text => %(text)s, p_top_k => 5,"
        f" p_now => %(now)s{names})",
        {"agent": agent, "q": unit((0, 1.0)), "text": QUERY, "now": NOW, **options},
    ).fetchall()
    return [str(r[0]) for r in rows]


def to_ann(conn: psycopg.Connection, agent: str) -> None:
    """Move the tenant into the ANN index, with so few candidates per branch (5) that the
    new versions are none of the nearest, newest or text-matching memories."""
    set_setting(conn, "ann_candidates", "5")
    assert index_tenant(conn, agent) > 0


@pytest.mark.parametrize("ann", [False, True], ids=["exact", "ann"])
def test_a_query_worded_like_the_old_version_finds_the_new_one(
    conn: psycopg.Connection, ann: bool
) -> None:
    load(conn, "car", [OLD, NEW])
    if ann:
        to_ann(conn, "car")
    top = search(conn, "car")
    assert top[0] == NEW  # inherits the old version's similarity and BM25 match
    assert OLD not in top  # superseded: never returned by default
    # the vector-only request (its own fast path) and a memex-formula one alike
    for options in ({"mode": "vector"}, {"mode": "vector", "alpha": 0.7}):
        top = search(conn, "car", **options)
        assert top[0] == NEW and OLD not in top, options
    # without the link the new version is not found at all (the chatter is nearer)
    load(conn, "unlinked", [OLD, NEW], linked=False)
    if ann:
        assert index_tenant(conn, "unlinked") > 0
    top = search(conn, "unlinked")
    assert top[0] == OLD and NEW not in top  # nothing is guessed


@pytest.mark.parametrize("ann", [False, True], ids=["exact", "ann"])
def test_a_chain_ranks_its_head_and_as_of_never_returns_a_later_version(
    conn: psycopg.Connection, ann: bool
) -> None:
    load(conn, "chain", [OLD, MIDDLE, NEW])  # 90, 60 and 30 days ago
    if ann:
        to_ann(conn, "chain")
    top = search(conn, "chain")
    assert top[0] == NEW and OLD not in top and MIDDLE not in top

    # as of 45 days ago: the middle version was the newest recorded; it takes the old
    # one's match (the old one is returned too, its validity closed: below it) and the
    # newest, recorded after the moment, is never returned nor ranks anything
    top = search(conn, "chain", as_of=NOW - timedelta(days=45))
    assert top[0] == MIDDLE and NEW not in top
    assert top.index(OLD) > top.index(MIDDLE) if OLD in top else True
    # as of 75 days ago only the old version existed
    top = search(conn, "chain", as_of=NOW - timedelta(days=75))
    assert top[0] == OLD and MIDDLE not in top and NEW not in top

    # with the superseded versions included, the head still first (the old one, the match,
    # ranks with half its importance: its validity closed when the middle one came)
    top = search(conn, "chain", include_superseded=True)
    assert top[0] == NEW


def test_the_exact_and_ann_paths_agree_on_superseded_versions(conn: psycopg.Connection) -> None:
    load(conn, "both", [OLD, MIDDLE, NEW])
    exact = search(conn, "both")
    assert index_tenant(conn, "both") > 0
    assert search(conn, "both") == exact


def heads_calls(conn: psycopg.Connection, agent: str) -> int:
    """How many times the default request on `agent` calls memex._supersession_heads (the
    link walk), counted in a transaction of its own (track_functions 'pl')."""
    with conn.transaction():
        conn.execute("set local track_functions = 'pl'")
        search(conn, agent)
        row = conn.execute(
            "select coalesce(pg_stat_get_xact_function_calls(p.oid), 0) from pg_proc p"
            " where p.oid = 'memex._supersession_heads'::regproc"
        ).fetchone()
    assert row is not None
    return int(row[0])


def test_an_ann_tenant_without_links_does_not_walk_them(conn: psycopg.Connection) -> None:
    # one probe of the superseded memories' index decides: without a link the walk (and
    # the steps feeding it) are skipped; with one it runs, and the results do not change
    load(conn, "linked", [OLD, NEW])
    load(conn, "plain", [OLD, NEW], linked=False)
    to_ann(conn, "linked")
    assert index_tenant(conn, "plain") > 0
    assert heads_calls(conn, "plain") == 0
    assert heads_calls(conn, "linked") == 1
    assert search(conn, "linked")[0] == NEW and search(conn, "plain")[0] == OLD
