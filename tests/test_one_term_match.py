"""A one-word match needs the vector's agreement (memex.search, issue 36): in the default
request (hybrid), a query of one term (stop words aside) weighs its text part by
min(1, cosine / (0.9 best cosine))^3, so lines holding the question's only word in another
sense ("a friend's new job", "the living room") no longer fill the top five above a fact
worded apart from the question; a one-word match near the query still counts in full, queries of
two terms or more and the text mode rank as before. Exact path and ANN index alike. Real
model (bench/RESULTS.md, "A one-word match needs the vector's agreement")."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
from pgvector.psycopg import register_vector

from memexdb.embedding import Embedder
from tests.test_duplicates_last import store
from tests.test_vector_index import index_tenant

NOW = datetime(2026, 6, 1, 12, tzinfo=UTC)
QUESTION = "What is my job?"
FACT = "I work as a civil engineer at Copperleaf Games."
# the question's only term ("job"), each line a different text (no duplicate rule applies)
OTHERS_JOBS = [
    "Ravi's new job at Northwind Logistics sounds stressful.",
    "Maya's new job at Lumen Labs sounds stressful.",
    "Jonas's new job at Bluefin Analytics sounds stressful.",
    "Aisha's new job at Acorn Health sounds stressful.",
    "Tom's new job at Brightpath Schools sounds stressful.",
]
CHATTER = [
    "The weather was awful this morning.",
    "I made pancakes for breakfast.",
    "Need to remember to buy milk.",
    "The train was late again.",
    "My laptop keeps freezing.",
    "The garden needs weeding.",
]


def tenant(conn: psycopg.Connection, embedder: Embedder) -> str:
    """The fact, stated 200 days ago between two remarks; the five lines about others'
    jobs over the last weeks, each between two remarks."""
    agent = f"one-{uuid.uuid4().hex[:8]}"
    rows: list[Any] = [(CHATTER[0], 200.002), (FACT, 200.001), (CHATTER[1], 200)]
    for i, line in enumerate(OTHERS_JOBS):
        days = 30 - 5 * i
        rows += [
            (CHATTER[(2 * i + 2) % 6], days + 0.002),
            (line, days + 0.001),
            (CHATTER[(2 * i + 3) % 6], days),
        ]
    store(conn, embedder, agent, rows)
    return agent


def search(
    conn: psycopg.Connection, embedder: Embedder, agent: str, query: str, **options: Any
) -> list[str]:
    register_vector(conn)
    names = "".join(f", p_{name} => %({name})s" for name in options)
    rows = conn.execute(
        "select content from memex.search(p_agent_id => %(agent)s, p_user_id => 'u',"
        " p_query_embedding => %(q)s, p_query_text => %(text)s, p_now => %(now)s"
        f"{names})",
        {"agent": agent, "q": embedder.embed([query])[0], "text": query, "now": NOW, **options},
    ).fetchall()
    return [r[0] for r in rows]


def terms(conn: psycopg.Connection, query: str) -> list[str]:
    row = conn.execute("select memex._query_terms(%s)", (query,)).fetchone()
    assert row is not None
    return list(row[0])


def test_a_fact_worded_apart_is_not_buried_by_one_word_matches(
    conn: psycopg.Connection, embedder: Embedder
) -> None:
    assert terms(conn, QUESTION) == ["job"]
    agent = tenant(conn, embedder)
    hits = search(conn, embedder, agent, QUESTION, top_k=5)
    # before: the five lines holding "job" filled the first five (BM25 / best BM25 gave
    # each the full text half of the blend); the fact is the nearest memory to the question
    assert FACT in hits, hits
    # the one-word matches still count: they rank above the chatter holding no term
    assert set(hits[:3]) <= set(OTHERS_JOBS) | {FACT}, hits


def test_the_ann_path_ranks_the_same(conn: psycopg.Connection, embedder: Embedder) -> None:
    agent = tenant(conn, embedder)
    exact = search(conn, embedder, agent, QUESTION, top_k=10)
    assert index_tenant(conn, agent) > 0
    assert search(conn, embedder, agent, QUESTION, top_k=10) == exact
    assert FACT in exact[:5]


def test_a_one_word_match_near_the_query_counts_in_full(
    conn: psycopg.Connection, embedder: Embedder
) -> None:
    agent = tenant(conn, embedder)
    near = "My job is stressful at the moment."
    conn.execute(
        "select memex.store(p_agent_id => %s, p_user_id => 'u', p_content => %s,"
        " p_embedding => %s, p_embedding_model => 'minilm', p_created_at => %s)",
        (agent, near, embedder.embed([near])[0], NOW - timedelta(days=100)),
    )
    hits = search(conn, embedder, agent, QUESTION, top_k=5)
    # the nearest memory to the question and holding its term: first, its text part whole
    assert hits[0] == near, hits
    assert FACT in hits, hits


def test_two_term_queries_and_the_text_mode_are_unchanged(
    conn: psycopg.Connection, embedder: Embedder
) -> None:
    agent = tenant(conn, embedder)
    # text mode: BM25 alone, the lines holding "job" first, the fact (no term) after them
    text = search(conn, embedder, agent, QUESTION, top_k=10, mode="text")
    assert set(text[:5]) == set(OTHERS_JOBS)
    assert FACT not in text[:5]
    # a query of two terms: the blend as before (BM25 / best BM25 in full); a line holding
    # both terms outranks the fact
    question = "Whose new job sounds stressful?"
    assert len(terms(conn, question)) > 1
    hits = search(conn, embedder, agent, question, top_k=5)
    assert set(hits) <= set(OTHERS_JOBS), hits
