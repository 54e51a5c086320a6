"""What a request with no ranking options gets (docs/ranking.md): memories from any point
in the past are found, and of two equally relevant memories the newer ranks first. Real
Postgres, real MiniLM embeddings, memories written over months and asked later."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta

import psycopg
import pytest

from memexdb import Memex
from memexdb.memories.models import NewMemory
from tests.sqlapi import search, store, unit

NOW = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)
WHO = ("assistant", "sam")

# Everyday chatter stored after the old facts, one a day: newer, unrelated memories.
CHATTER = [
    "Had a long day, the meetings just kept coming.",
    "The weather was awful this morning.",
    "Watched a documentary about octopuses last night.",
    "Need to remember to buy milk and eggs.",
    "Traffic on the way home was terrible.",
    "I made pancakes for breakfast.",
    "Can you suggest a podcast for my commute?",
    "Slept badly, the neighbours were loud.",
    "The train was late again this morning.",
    "I finished a jigsaw puzzle this weekend.",
    "Work is quiet this week.",
    "I should call my mum tonight.",
    "We had a team lunch at an Italian place.",
    "My laptop keeps freezing during calls.",
    "I'm thinking about painting the living room green.",
    "The cat next door visited again.",
    "Remind me to renew the passport.",
    "It rained all weekend so we stayed in.",
    "The office coffee machine is broken.",
    "I read a few chapters before bed.",
]


def _chatter(days: int) -> list[NewMemory]:
    """One chatter memory a day for the last `days` days."""
    return [
        NewMemory(
            agent_id=WHO[0],
            user_id=WHO[1],
            content=f"{CHATTER[i % len(CHATTER)]} (day {i})",
            created_at=NOW - timedelta(days=days - i),
        )
        for i in range(days)
    ]


def test_old_relevant_memory_is_found_among_many_newer_ones(memex: Memex) -> None:
    old = "My sister's name is Clara and she lives in Lisbon."
    memex.store(*WHO, old, created_at=NOW - timedelta(days=400))
    memex.store_many(_chatter(180))
    hits = memex.search(*WHO, "What is my sister called?", top_k=5, now=NOW)
    assert hits[0].content == old
    # What the memex formula (alpha 0.7, half-life 30 days) makes of the same request: the
    # 400-day-old fact is buried under the last few weeks' chatter.
    memex_hits = memex.search(
        *WHO, "What is my sister called?", top_k=5, now=NOW, alpha=0.7, mode="vector"
    )
    assert old not in [h.content for h in memex_hits]


@pytest.mark.parametrize(
    ("older", "newer", "query"),
    [
        ("My phone is a Pixel 7.", "My phone is a Galaxy S24.", "What phone do I have?"),
        (
            "I work as a nurse at Acorn Health.",
            "I work as a data analyst at Quayside Bank.",
            "What is my job?",
        ),
        (
            "I live at 14 Elm Street in Leeds.",
            "I live at 3 Harbour Road in Bristol.",
            "Where do I live?",
        ),
    ],
)
def test_newer_version_of_an_updated_fact_ranks_first(
    memex: Memex, older: str, newer: str, query: str
) -> None:
    memex.store(*WHO, older, created_at=NOW - timedelta(days=200))
    memex.store_many(_chatter(120))
    memex.store(*WHO, newer, created_at=NOW - timedelta(days=30))
    hits = memex.search(*WHO, query, top_k=5, now=NOW)
    assert hits[0].content == newer
    # asked months later the newer still comes first (recency decays for both alike)
    later = memex.search(*WHO, query, top_k=5, now=NOW + timedelta(days=120))
    assert later[0].content == newer


def test_default_request_in_sql(conn: psycopg.Connection) -> None:
    # The SQL contract for other languages: no p_alpha means the default formula; no
    # p_mode means hybrid when p_query_text is given, vector otherwise.
    store(conn, "equal old", unit((0, 1.0)), created_at=NOW - timedelta(days=300))
    store(conn, "equal new", unit((0, 1.0)), created_at=NOW - timedelta(days=30))
    store(conn, "other", unit((1, 1.0)), created_at=NOW)
    rows = conn.execute(
        "select content, score, relevance, recency, text_rank from memex.search("
        "'agent', 'user', %s, p_now => %s)",
        (unit((0, 1.0)), NOW),
    ).fetchall()
    # vector mode: equal relevance, the newer first; score = relevance * (1 + 0.25 * recency)
    assert [r[0] for r in rows] == ["equal new", "equal old", "other"]
    for _, score, relevance, recency, text_rank in rows:
        assert score == pytest.approx(relevance * (1 + 0.25 * recency), rel=1e-9)
        assert text_rank is None
    # no half-life sent: 90 days for the default formula, 30 (memex's) with an alpha
    assert rows[1][3] == pytest.approx(math.exp(-math.log(2) / 90 * 300))
    with_alpha = conn.execute(
        "select recency from memex.search('agent', 'user', %s, p_alpha => 0.7, p_now => %s)"
        " where content = 'equal old'",
        (unit((0, 1.0)), NOW),
    ).fetchone()
    assert with_alpha is not None
    assert with_alpha[0] == pytest.approx(math.exp(-math.log(2) / 30 * 300))
    hybrid = search(conn, unit((0, 1.0)), alpha=None, mode=None, query_text="equal", now=NOW)
    assert [h["content"] for h in hybrid][:2] == ["equal new", "equal old"]
    assert hybrid[0]["text_rank"] is not None
    # an explicit alpha keeps the memex ranking: vector mode (even with a query text),
    # alpha * similarity + (1 - alpha) * recency
    memex_rows = search(conn, unit((0, 1.0)), alpha=0.7, mode=None, query_text="equal", now=NOW)
    for hit in memex_rows:
        assert hit["text_rank"] is None and hit["relevance"] == hit["similarity"]
        assert hit["score"] == pytest.approx(0.7 * hit["relevance"] + 0.3 * hit["recency"])


def test_passages_and_smart_read_rank_with_the_default(conn: psycopg.Connection) -> None:
    # memory_search (memex.search_passages) and smart_read send no ranking options of their
    # own: they rank exactly as a request with none does (hybrid, the bounded tiebreaker).
    now = conn.execute("select now()").fetchone()
    assert now is not None
    for days, content, axis in (
        (400, "Alice drinks green tea every morning.", 0),
        (200, "Alice drinks coffee after lunch.", 0),
        (20, "Alice went hiking in the hills.", 1),
        (2, "Alice bought a new tea pot.", 2),
    ):
        store(conn, content, unit((0, 1.0), (axis, 0.6)), created_at=now[0] - timedelta(days=days))
    conn.execute(
        "select * from memex.write_file('agent', 'user', 'user/drinks.md',"
        " '# Drinks\n\nGreen tea, no sugar.\n', %s, 'test-model')",
        (unit((0, 1.0), (3, 0.5)),),
    )
    query, vector = "what tea does Alice drink?", unit((0, 1.0))
    # one statement, so that now() (recency's reference) is the same for all three calls
    row = conn.execute(
        "select (select array_agg(array[h.id::text, h.score::text] order by h.score desc, h.id)"
        "        from memex.search('agent', 'user', %(v)s, p_top_k => 20,"
        "                          p_query_text => %(q)s) h),"
        "       (select array_agg(array[p.memory_id::text, p.score::text] order by p.rank)"
        "        from memex.search_passages('agent', 'user', %(q)s, %(v)s, p_top_k => 20) p),"
        "       (select array_agg(array[s->>'id', s->>'score'] order by o)"
        "        from memex.smart_read('agent', 'user', %(q)s, %(v)s) r,"
        "             jsonb_array_elements(r.sources) with ordinality as e(s, o))",
        {"q": query, "v": vector},
    ).fetchone()
    assert row is not None
    default, passages, smart = (
        [(i, float(s)) for i, s in column] for column in (row[0], row[1], row[2])
    )
    assert len(default) == 5
    assert [i for i, _ in passages] == [i for i, _ in default]
    assert [s for _, s in passages] == pytest.approx([s for _, s in default], rel=1e-9)
    # smart_read names files by path: compare the scores, in order
    assert [s for _, s in smart] == pytest.approx([s for _, s in default][: len(smart)], rel=1e-9)
