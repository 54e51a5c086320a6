"""Near-duplicates pushed down (memex._duplicates_last, issue 36): a memory whose content
is the same as a higher-ranked one's (case and punctuation aside) ranks after the distinct
memories, so five copies of one line do not fill the top five, and a repeated text lends
context to its neighbours in time from its newest copy only; nothing is dropped (the
copies still come back when nothing distinct is left), on the exact path and through the
ANN index, with the default request and memex's (alpha). A different text is never a
copy, however close its embedding. Real model."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
import psycopg
from pgvector.psycopg import register_vector

from memexdb.embedding import Embedder
from tests.test_vector_index import index_tenant

NOW = datetime(2026, 6, 1, 12, tzinfo=UTC)
QUESTION = "What is my home address?"
FACT = "I live at 59 King's Road in Valencia."
COPY = "Traffic on the way home was terrible."
CHATTER = [
    "The weather was awful this morning.",
    "I made pancakes for breakfast.",
    "Watched a documentary about octopuses last night.",
    "Need to remember to buy milk.",
    "Slept badly, the neighbours were loud.",
    "The train was late again.",
    "I finished a jigsaw puzzle this weekend.",
    "My laptop keeps freezing.",
    "The office coffee machine is broken.",
    "The garden needs weeding.",
]


def store(conn: psycopg.Connection, embedder: Embedder, agent: str, rows: list[Any]) -> None:
    """rows: (content, days ago)."""
    register_vector(conn)
    vectors = embedder.embed([content for content, _ in rows])
    conn.execute(
        "select count(*) from memex.store_many(%s, %s, %s, %s, 'minilm', null, null, null,"
        " null, %s)",
        (
            [agent] * len(rows),
            ["u"] * len(rows),
            [content for content, _ in rows],
            list(vectors),
            [NOW - timedelta(days=days) for _, days in rows],
        ),
    )


def search(
    conn: psycopg.Connection, embedder: Embedder, agent: str, query: str, **options: Any
) -> list[tuple[str, float]]:
    register_vector(conn)
    names = "".join(f", p_{name} => %({name})s" for name in options)
    rows = conn.execute(
        "select content, score from memex.search(p_agent_id => %(agent)s, p_user_id => 'u',"
        " p_query_embedding => %(q)s, p_query_text => %(text)s, p_now => %(now)s"
        f"{names})",
        {"agent": agent, "q": embedder.embed([query])[0], "text": query, "now": NOW, **options},
    ).fetchall()
    return [(r[0], float(r[1])) for r in rows]


def tenant(conn: psycopg.Connection, embedder: Embedder) -> str:
    """The fact, stated once 200 days ago between two remarks; the line holding the
    question's only term that any memory holds ("home"), said in six sessions over the
    last weeks, each time between four other remarks (two minutes apart)."""
    agent = f"dup-{uuid.uuid4().hex[:8]}"
    minute = 1 / 1440
    rows: list[Any] = [(CHATTER[0], 200), (FACT, 200 - 2 * minute), (CHATTER[1], 200 - 4 * minute)]
    for i in range(6):
        session = [CHATTER[(4 * i + k) % len(CHATTER)] for k in range(4)]
        session.insert(2, COPY)
        rows += [(line, 30 - 5 * i - 2 * k * minute) for k, line in enumerate(session)]
    store(conn, embedder, agent, rows)
    return agent


def check_pushed_down(hits: list[tuple[str, float]]) -> None:
    """Scores in order, and every repeated text after every first occurrence."""
    contents = [c for c, _ in hits]
    scores = [s for _, s in hits]
    assert scores == sorted(scores, reverse=True)
    repeated = [c in contents[:i] for i, c in enumerate(contents)]
    assert repeated == sorted(repeated), contents


def test_copies_of_one_line_do_not_fill_the_top_five(
    conn: psycopg.Connection, embedder: Embedder
) -> None:
    agent = tenant(conn, embedder)
    hits = search(conn, embedder, agent, QUESTION, top_k=5)
    contents = [c for c, _ in hits]
    # neither the copies nor the neighbours each copy would lift crowd the fact out
    assert FACT in contents, contents
    assert contents.count(COPY) == 1, contents
    # all of them: every memory is returned, the copies after the distinct ones
    everything = search(conn, embedder, agent, QUESTION, top_k=40)
    assert len(everything) == 33
    assert [c for c, _ in everything].count(COPY) == 6
    check_pushed_down(everything)


def test_the_ann_path_and_memex_request_push_copies_down_too(
    conn: psycopg.Connection, embedder: Embedder
) -> None:
    agent = tenant(conn, embedder)
    exact = search(conn, embedder, agent, QUESTION, top_k=10)
    vector = search(conn, embedder, agent, QUESTION, top_k=10, alpha=0.7)
    assert [c for c, _ in vector].count(COPY) >= 1
    check_pushed_down(vector)
    assert index_tenant(conn, agent) > 0
    ann = search(conn, embedder, agent, QUESTION, top_k=10)
    assert [c for c, _ in ann] == [c for c, _ in exact]
    check_pushed_down(ann)
    assert [c for c, _ in search(conn, embedder, agent, QUESTION, top_k=10, alpha=0.7)] == [
        c for c, _ in vector
    ]


def test_copies_are_returned_when_nothing_distinct_is_left(
    conn: psycopg.Connection, embedder: Embedder
) -> None:
    agent = f"dup-{uuid.uuid4().hex[:8]}"
    store(conn, embedder, agent, [(COPY, 3), (COPY, 2), ("The train was late again.", 1)])
    hits = search(conn, embedder, agent, "How was the way home?", top_k=10)
    # the newer copy first (the same match, more recent), the train, then the older copy
    assert [c for c, _ in hits] == [COPY, "The train was late again.", COPY]
    scores = [s for _, s in hits]
    assert scores == sorted(scores, reverse=True)


def test_a_copy_differing_in_case_and_punctuation_is_pushed_down_a_rewording_is_not(
    conn: psycopg.Connection, embedder: Embedder
) -> None:
    copy = "traffic on the way home -- was terrible!"
    reworded = "Traffic on the way home was awful."
    a, b = embedder.embed([COPY, reworded])
    assert float(np.dot(a, b)) > 0.95  # close, but another text
    agent = f"dup-{uuid.uuid4().hex[:8]}"
    store(
        conn,
        embedder,
        agent,
        [(COPY, 5), (copy, 1), (reworded, 4), ("The train was late again.", 3)],
    )
    contents = [c for c, _ in search(conn, embedder, agent, "How was the traffic?", top_k=10)]
    # the lower-ranked of the two copies comes after the rest, the rewording among them
    assert contents[-1] in (COPY, copy), contents
    assert {COPY, copy} - {contents[-1]} <= set(contents[:3])
    assert contents.index(reworded) < 3
