"""memex._held_bm25: BM25 over at most eight query terms as one expression, memex._bm25
written out with each term's frequency read from ts_rank. It must equal the sum of
memex._bm25 over the terms a memory holds, counted from the tsvector's positions, and the
ANN path must score a memory alike whether its query is short enough for it or longer
(scored by the subquery instead)."""

from __future__ import annotations

from datetime import timedelta

import numpy as np
import psycopg
import pytest

from tests.sqlapi import search, store
from tests.test_recall import NOW, clustered
from tests.test_vector_index import index_tenant, set_setting

SUM_OF_BM25 = """
    select sum(memex._bm25(coalesce(cardinality(o.positions), 1), length(%(tsv)s::tsvector),
                           d.df, 1000, 20))
    from unnest(%(tsv)s::tsvector) o
    join unnest(%(terms)s::text[], %(dfs)s::float8[]) d(lexeme, df) on d.lexeme = o.lexeme
"""


def held_bm25(conn: psycopg.Connection, tsv: str, terms: list[str], dfs: list[float]) -> float:
    slots: list[object] = []
    for i in range(8):
        slots += [terms[i], dfs[i]] if i < len(terms) else [None, None]
    row = conn.execute(
        "select memex._held_bm25(%s::tsvector, length(%s::tsvector), 1000, 20, "
        + ", ".join(["%s::tsquery, %s::float8"] * 8)
        + ")",
        [tsv, tsv, *[f"'{s}'" if isinstance(s, str) else s for s in slots]],
    ).fetchone()
    assert row is not None
    return float(row[0])


def sum_of_bm25(conn: psycopg.Connection, tsv: str, terms: list[str], dfs: list[float]) -> float:
    row = conn.execute(SUM_OF_BM25, {"tsv": tsv, "terms": terms, "dfs": dfs}).fetchone()
    assert row is not None
    return float(row[0] or 0.0)


@pytest.mark.parametrize("tf", [1, 2, 3, 7, 40, 255, 256, 300])
def test_the_term_frequency_is_every_position_of_the_term(
    conn: psycopg.Connection, tf: int
) -> None:
    # tsvector keeps at most 256 positions of a lexeme, and cardinality(positions) counts
    # those: 300 occurrences weigh as 256 in both
    tsv = conn.execute(
        "select to_tsvector('simple', repeat('zebra ', %s) || 'lion tiger')::text", (tf,)
    ).fetchone()
    assert tsv is not None
    terms, dfs = ["zebra", "tiger"], [10.0, 500.0]
    assert held_bm25(conn, tsv[0], terms, dfs) == pytest.approx(
        sum_of_bm25(conn, tsv[0], terms, dfs), rel=1e-12
    )


@pytest.mark.parametrize(
    "tsv",
    [
        "'lion':1 'tiger':2,5 'zebra':3A,4B",  # weights do not change the count
        "'lion' 'tiger' 'zebra'",  # stripped: each lexeme counts once
        "'a':1 'b':2",  # none of the terms
    ],
)
def test_weights_stripped_vectors_and_absent_terms_count_as_bm25_does(
    conn: psycopg.Connection, tsv: str
) -> None:
    terms = ["zebra", "tiger", "gnu", "lion", "okapi", "eland", "kudu", "ibex"]
    dfs = [1.0, 2.0, 3.0, 50.0, 70.0, 80.0, 999.0, 1000.0]
    assert held_bm25(conn, tsv, terms, dfs) == pytest.approx(
        sum_of_bm25(conn, tsv, terms, dfs), rel=1e-12
    )


def test_the_ann_path_scores_a_long_query_like_a_short_one(conn: psycopg.Connection) -> None:
    # "zebra lion" is two terms, scored by memex._held_bm25; adding nine words that other
    # memories hold makes eleven held terms, scored by the subquery over the memory's terms.
    # The memory holding only zebra and lion weighs the same in both.
    set_setting(conn, "ann_candidates", "10")
    rng = np.random.default_rng(41)
    others = ["apple", "banana", "cherry", "grape", "lemon", "mango", "olive", "peach", "plum"]
    for i, word in enumerate(others * 3):
        store(
            conn,
            f"a note about {word}",
            clustered(rng, 1)[0],
            agent="long",
            user="u",
            created_at=NOW - timedelta(days=i),
        )
    store(
        conn,
        "a zebra and a lion, the zebra ran",
        clustered(rng, 1)[0],
        agent="long",
        user="u",
        created_at=NOW - timedelta(days=40),
    )
    assert index_tenant(conn, "long") == 28

    def zebra_rank(text: str) -> float:
        hits = search(
            conn,
            clustered(rng, 1)[0],
            agent="long",
            user="u",
            alpha=None,
            query_text=text,
            mode="text",
            now=NOW,
            top_k=30,
        )
        ranks = [h["text_rank"] for h in hits if "zebra" in h["content"]]
        assert len(ranks) == 1
        return float(ranks[0])

    short, long = zebra_rank("zebra lion"), zebra_rank("zebra lion " + " ".join(others))
    assert short > 0 and long == pytest.approx(short, rel=1e-12)
