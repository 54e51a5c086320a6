"""Near-duplicates pushed down (memex._duplicates_last, issue 36): a memory whose content
is the same as a higher-ranked one's, or whose embedding is within cosine 0.95 of it, ranks
after the distinct memories, so five copies of one line do not fill the top five; nothing
is dropped (the copies still come back when nothing distinct is left), on the exact path
and through the ANN index, with the default request and memex's (alpha). Real model."""

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
    """The fact, stated once 200 days ago among chatter; the line holding the question's
    only term that any memory holds ("home"), said six times over the last weeks."""
    agent = f"dup-{uuid.uuid4().hex[:8]}"
    rows: list[Any] = [(line, 190 - 9 * i) for i, line in enumerate(CHATTER)]
    rows.insert(1, (FACT, 200))
    rows += [(COPY, 30 - 5 * i) for i in range(6)]
    store(conn, embedder, agent, rows)
    return agent


def check_pushed_down(hits: list[tuple[str, float]]) -> None:
    contents = [c for c, _ in hits]
    scores = [s for _, s in hits]
    assert scores == sorted(scores, reverse=True)
    first = contents.index(COPY)
    # after the first copy, the distinct memories come before every other copy
    later = contents[first + 1 :]
    copies = [i for i, c in enumerate(later) if c == COPY]
    assert copies == list(range(len(later) - len(copies), len(later))), contents


def test_copies_of_one_line_do_not_fill_the_top_five(
    conn: psycopg.Connection, embedder: Embedder
) -> None:
    agent = tenant(conn, embedder)
    hits = search(conn, embedder, agent, QUESTION, top_k=5)
    contents = [c for c, _ in hits]
    assert FACT in contents, contents
    assert contents.count(COPY) == 1, contents
    # all of them: every copy is returned, after the distinct memories
    everything = search(conn, embedder, agent, QUESTION, top_k=30)
    assert len(everything) == 17
    assert [c for c, _ in everything].count(COPY) == 6
    assert [c for c, _ in everything][-5:] == [COPY] * 5
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


def test_a_near_duplicate_is_pushed_down_a_related_memory_is_not(
    conn: psycopg.Connection, embedder: Embedder
) -> None:
    near = "Traffic on the way home was awful."
    related = "Traffic on the way to work was fine."
    a, b, c = embedder.embed([COPY, near, related])
    assert float(np.dot(a, b)) >= 0.95 > float(np.dot(a, c))
    agent = f"dup-{uuid.uuid4().hex[:8]}"
    store(
        conn,
        embedder,
        agent,
        [(COPY, 5), (near, 1), (related, 4), ("The train was late again.", 3)],
    )
    contents = [c for c, _ in search(conn, embedder, agent, "How was the traffic?", top_k=10)]
    assert contents[-1] == near, contents
    assert contents.index(related) < contents.index(near)
