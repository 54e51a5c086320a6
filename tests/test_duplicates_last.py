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


# memex._duplicates_last as the single query it was before the second round of issue 39's
# per-request cost (git 9b632ce): every hit normalized, every row rebuilt. The function now
# skips the regular expression for a text repeated as it is, and the sort when nothing
# repeats; its answers must be these, exactly.
_SINGLE_QUERY = r"""
create or replace function pg_temp.duplicates_last_single_query(
    p_hits memex.search_hit[], p_top_k integer)
returns memex.search_hit[] language sql stable as $$
    with flagged as (
        select h.*,
               row_number() over (
                   partition by btrim(lower(regexp_replace(h.content, '[^[:alnum:]]+', ' ',
                                                           'g')))
                   order by h.ordinality) > 1 as duplicate
        from unnest(p_hits) with ordinality as h
    ),
    adjusted as (
        select f.*,
               case when f.duplicate then
                   least(f.score,
                         min(f.score) filter (where not f.duplicate) over ()
                         - greatest(abs(min(f.score) filter (where not f.duplicate) over ())
                                    * 1e-9, 1e-9))
               else f.score end as adjusted
        from flagged f
    )
    select coalesce(array_agg(row(a.id, a.agent_id, a.user_id, a.memory_type, a.content,
                                  a.importance, a.metadata, a.created_at, a.expires_at,
                                  a.similarity, a.text_rank, a.relevance, a.recency,
                                  a.adjusted, a.source_ids, a.superseded_by, a.archived_at,
                                  a.updated_at, a.embedding_model, a.valid_from, a.valid_to,
                                  a.superseded_at, a.supersedes)::memex.search_hit
                              order by a.adjusted desc, a.created_at desc, a.id),
                    '{}')
    from (select * from adjusted a
          order by a.adjusted desc, a.created_at desc, a.id
          limit p_top_k) a
$$
"""

# Hits in search's order (score desc, created_at desc, id) over a few texts: repeats as
# they are, in other case and punctuation, a missing text, tied scores (rounded), negative
# scores; 0 to 39 hits, top k 1 to 11.
_RANDOM_HITS = r"""
create or replace function pg_temp.random_hits(n integer, texts integer)
returns memex.search_hit[] language sql volatile as $$
    select array(
        select h from (
            select row(gen_random_uuid(), 'a', 'u', 'episodic'::memex.memory_type,
                       (array['Traffic on the way home was terrible.',
                              'traffic on the way home was TERRIBLE!',
                              '  Traffic -- on the way home, was terrible  ',
                              'I live at 59 King''s Road', 'I live at 61 King''s Road',
                              'Straße ist groß', 'STRASSE IST GROSS', 'straße ist groß!',
                              null, 'x', ''])[1 + floor(random() * texts)::integer],
                       1.0::float8, '{}'::jsonb,
                       '2026-06-01'::timestamptz - floor(random() * 3) * interval '1 day',
                       null::timestamptz, s, null::float8, s, 0.5::float8,
                       case when random() < 0.3 then round(s::numeric, 1)::float8 else s end,
                       null::uuid[], null::uuid, null::timestamptz, now(), 'm',
                       null::timestamptz, null::timestamptz, null::timestamptz,
                       null::uuid[])::memex.search_hit as h
            from (select random() * 2 - 0.5 as s from generate_series(1, n)) g
        ) x
        order by (h).score desc, (h).created_at desc, (h).id)
$$
"""


def test_duplicates_last_answers_as_the_single_query_did(conn: psycopg.Connection) -> None:
    conn.execute(_SINGLE_QUERY)
    conn.execute(_RANDOM_HITS)
    conn.execute("select setseed(0.39)")
    differ, cases, repeats = conn.execute(
        """
        select count(*) filter (where memex._duplicates_last(z.h, z.k)
                                is distinct from pg_temp.duplicates_last_single_query(z.h, z.k)),
               count(*),
               count(*) filter (where memex._duplicates_last(z.h, 40) is distinct from z.h)
        from (select pg_temp.random_hits(i % 40, 1 + i % 11) as h, 1 + i % 11 as k
              from generate_series(1, 2000) i) z
        """
    ).fetchone()
    assert cases == 2000
    assert repeats > 500  # most cases have repeats whose scores move
    assert differ == 0
