"""A search as of a past moment finds the version of a fact valid then by any wording of the
fact (memex.search, issue 36): a memory shown at as_of that was superseded after it ranks
with the best similarity and BM25 match of its later versions (recorded after as_of, never
returned), as a successor ranks with its predecessors'. The version stated apart from the
question ("Our flat is on Alder Lane in Porto") is first as of its time, above a remark of
then nearer the question ("I grew up on a farm outside Ghent"), because the fact was later
stated in the question's words ("I live in a house on Kestrel Road in Lyon now"). Only
explicit links count: unlinked, nothing is guessed. Real model (bench/RESULTS.md, "The
version valid then is found by its later wording")."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
import pytest
from pgvector.psycopg import register_vector

from memexdb.embedding import Embedder
from tests.sqlapi import store
from tests.test_vector_index import index_tenant

NOW = datetime(2026, 6, 1, 12, tzinfo=UTC)
AS_OF = NOW - timedelta(days=100)
QUESTION = "Where do I live?"
FIRST = "Our flat is on Alder Lane in Porto, small but bright."  # cosine 0.21 (MiniLM)
LATER = "I live in a house on Kestrel Road in Lyon now."  # 0.35, holds "live"
# remarks of before the moment, none holding a query term; the first nearer the question
# than FIRST (0.32), the others about as near (0.18-0.21)
REMARKS = [
    "I grew up on a farm outside Ghent.",
    "My grandparents had a cottage by the sea.",
    "Rent went up again this month.",
    "I'm thinking about repainting the kitchen.",
]
FILLER = [
    "The train was late again.",
    "I made pancakes for breakfast.",
    "Need to remember to buy milk.",
    "My laptop keeps freezing.",
    "The garden needs weeding.",
    "Finished a good book on the weekend.",
]


def tenant(conn: psycopg.Connection, embedder: Embedder, linked: bool = True) -> str:
    """FIRST 200 days ago; the remarks between 180 and 110 days ago (nearer the moment, so
    with more recency than FIRST); LATER 20 days ago, superseding FIRST unless not linked.
    Each memory between two lines of filler, so none is another's neighbour in time."""
    agent = f"asof-{uuid.uuid4().hex[:8]}"
    filler = iter(FILLER * 4)

    def put(content: str, days: float, supersedes: list[Any] | None = None) -> Any:
        vector, when = embedder.embed([content])[0], NOW - timedelta(days=days)
        return store(
            conn,
            content,
            vector,
            agent=agent,
            user="u",
            embedding_model="minilm",
            created_at=when,
            supersedes=supersedes,
        )["id"]

    def between(content: str, days: float, supersedes: list[Any] | None = None) -> Any:
        put(next(filler), days + 1)
        memory = put(content, days, supersedes)
        put(next(filler), days - 1)
        return memory

    first = between(FIRST, 200)
    for i, remark in enumerate(REMARKS):
        between(remark, 180 - 20 * i)
    between(LATER, 20, [first] if linked else None)
    return agent


def search(conn: psycopg.Connection, embedder: Embedder, agent: str, **options: Any) -> list[str]:
    register_vector(conn)
    names = "".join(f", p_{name} => %({name})s" for name in options)
    rows = conn.execute(
        "select content from memex.search(p_agent_id => %(agent)s, p_user_id => 'u',"
        " p_query_embedding => %(q)s, p_query_text => %(text)s, p_top_k => 5,"
        f" p_now => %(now)s{names})",
        {
            "agent": agent,
            "q": embedder.embed([QUESTION])[0],
            "text": QUESTION,
            "now": NOW,
            **options,
        },
    ).fetchall()
    return [str(r[0]) for r in rows]


@pytest.mark.parametrize("ann", [False, True], ids=["exact", "ann"])
def test_the_version_valid_then_is_found_by_its_later_wording(
    conn: psycopg.Connection, embedder: Embedder, ann: bool
) -> None:
    agent = tenant(conn, embedder)
    if ann:
        assert index_tenant(conn, agent) > 0
    # today: the later version, the old one superseded
    top = search(conn, embedder, agent)
    assert top[0] == LATER and FIRST not in top
    # as of 100 days ago: the version valid then, first (before: the remark about growing
    # up, nearer the question, was); the later version is never returned
    top = search(conn, embedder, agent, as_of=AS_OF)
    assert top[0] == FIRST, top
    assert LATER not in top
    # the vector-only request alike
    top = search(conn, embedder, agent, as_of=AS_OF, mode="vector")
    assert top[0] == FIRST, top


def test_without_the_link_nothing_is_guessed(conn: psycopg.Connection, embedder: Embedder) -> None:
    agent = tenant(conn, embedder, linked=False)
    top = search(conn, embedder, agent, as_of=AS_OF)
    assert top[0] == REMARKS[0] and LATER not in top
    assert top.index(FIRST) > 0 if FIRST in top else True
