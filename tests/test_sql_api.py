"""The SQL API as any language sees it: memex.store / search / forget / count called
directly with psycopg, vectors chosen so that every expected score can be computed."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta

import psycopg
import pytest

from tests.sqlapi import HALF, angled, search, store, store_expired, unit

NOW = datetime(2026, 6, 1, tzinfo=UTC)
QUERY = unit((0, 1.0))


def recency(age_days: float, half_life: float = 30.0) -> float:
    return math.exp(-math.log(2) / half_life * age_days)


def test_score_is_the_memex_formula(conn: psycopg.Connection) -> None:
    store(conn, "close and old", angled(0.9), created_at=NOW - timedelta(days=30))
    store(conn, "far and new", angled(0.2), created_at=NOW - timedelta(days=1))
    store(conn, "mid", angled(0.6), created_at=NOW - timedelta(days=10))
    hits = search(conn, QUERY, alpha=0.7, half_life_days=30, now=NOW)
    by_content = {h["content"]: h for h in hits}
    for content, cos, age in [
        ("close and old", 0.9, 30),
        ("far and new", 0.2, 1),
        ("mid", 0.6, 10),
    ]:
        hit = by_content[content]
        assert hit["similarity"] == pytest.approx(cos, abs=HALF)
        assert hit["recency"] == pytest.approx(recency(age), rel=1e-9)
        assert hit["relevance"] == hit["similarity"]
        # importance 1.0 leaves alpha*similarity + (1-alpha)*recency unchanged
        assert hit["score"] == pytest.approx(0.7 * cos + 0.3 * recency(age), abs=HALF)
    assert [h["score"] for h in hits] == sorted((h["score"] for h in hits), reverse=True)
    assert by_content["close and old"]["recency"] == pytest.approx(0.5)


def test_half_life_controls_decay(conn: psycopg.Connection) -> None:
    store(conn, "a", angled(0.5), created_at=NOW - timedelta(days=7))
    hit = search(conn, QUERY, half_life_days=7, now=NOW)[0]
    assert hit["recency"] == pytest.approx(0.5)
    hit = search(conn, QUERY, half_life_days=14, now=NOW)[0]
    assert hit["recency"] == pytest.approx(math.sqrt(0.5))


def test_future_memories_count_as_new(conn: psycopg.Connection) -> None:
    store(conn, "scheduled", angled(0.5), created_at=NOW + timedelta(days=3))
    assert search(conn, QUERY, now=NOW)[0]["recency"] == pytest.approx(1.0)


def test_importance_scales_the_score(conn: psycopg.Connection) -> None:
    store(conn, "plain", angled(0.8), importance=1.0, created_at=NOW)
    store(conn, "important", angled(0.6), importance=2.0, created_at=NOW)
    store(conn, "trivial", angled(0.95), importance=0.25, created_at=NOW)
    hits = search(conn, QUERY, alpha=0.7, now=NOW)
    assert [h["content"] for h in hits] == ["important", "plain", "trivial"]
    important = hits[0]
    assert important["score"] == pytest.approx((0.7 * 0.6 + 0.3) * 2.0, abs=HALF)
    assert important["importance"] == 2.0


def test_alpha_one_is_pure_similarity(conn: psycopg.Connection) -> None:
    store(conn, "best but ancient", angled(0.95), created_at=NOW - timedelta(days=3650))
    store(conn, "worse but fresh", angled(0.5), created_at=NOW)
    hits = search(conn, QUERY, alpha=1.0, now=NOW)
    assert [h["content"] for h in hits] == ["best but ancient", "worse but fresh"]
    assert hits[0]["score"] == pytest.approx(0.95, abs=HALF)


def test_alpha_zero_is_pure_recency_even_for_dissimilar_memories(conn: psycopg.Connection) -> None:
    for i in range(30):
        store(conn, f"similar {i}", angled(0.99), created_at=NOW - timedelta(days=30 + i))
    store(conn, "newest, unrelated", unit((5, 1.0)), created_at=NOW)
    store(conn, "second newest, opposite", -QUERY, created_at=NOW - timedelta(hours=1))
    hits = search(conn, QUERY, alpha=0.0, top_k=2, now=NOW)
    assert [h["content"] for h in hits] == ["newest, unrelated", "second newest, opposite"]
    assert hits[0]["score"] == pytest.approx(1.0)


def test_memory_type_filter(conn: psycopg.Connection) -> None:
    store(conn, "fact", angled(0.9), memory_type="semantic")
    store(conn, "event", angled(0.9), memory_type="episodic")
    store(conn, "howto", angled(0.9), memory_type="procedural")
    hits = search(conn, QUERY, memory_types=["semantic", "procedural"])
    assert sorted(h["content"] for h in hits) == ["fact", "howto"]
    assert {h["memory_type"] for h in search(conn, QUERY, memory_types=["episodic"])} == {
        "episodic"
    }


def test_tenants_are_isolated(conn: psycopg.Connection) -> None:
    store(conn, "mine", angled(0.5), agent="a", user="u1")
    store(conn, "same agent, other user", angled(0.99), agent="a", user="u2")
    store(conn, "other agent, same user id", angled(0.99), agent="b", user="u1")
    hits = search(conn, QUERY, agent="a", user="u1")
    assert [h["content"] for h in hits] == ["mine"]
    assert conn.execute("select memex.count('a', 'u1')").fetchone() == (1,)
    assert conn.execute("select memex.count('a', 'nobody')").fetchone() == (0,)


def test_results_never_fewer_than_top_k_or_matching_rows(conn: psycopg.Connection) -> None:
    for i in range(7):
        store(conn, f"m{i}", unit((i, 1.0)))
    assert len(search(conn, QUERY, top_k=5)) == 5
    assert len(search(conn, QUERY, top_k=50)) == 7


def test_ties_break_newest_first(conn: psycopg.Connection) -> None:
    store(conn, "older", angled(0.5), created_at=NOW - timedelta(days=2))
    store(conn, "newer", angled(0.5), created_at=NOW - timedelta(days=1))
    hits = search(conn, QUERY, alpha=1.0, now=NOW)
    assert [h["content"] for h in hits] == ["newer", "older"]


def test_store_returns_the_memory(conn: psycopg.Connection) -> None:
    row = store(
        conn,
        "hello",
        angled(0.5),
        memory_type="semantic",
        importance=1.5,
        metadata={"source": "chat"},
    )
    assert row["content"] == "hello"
    assert row["memory_type"] == "semantic"
    assert row["importance"] == 1.5
    assert row["metadata"] == {"source": "chat"}
    assert row["embedding_model"] == "test-model"
    assert row["created_at"] == row["updated_at"]


def test_store_many_keeps_input_order(conn: psycopg.Connection) -> None:
    rows = conn.execute(
        "select content, memory_type::text, importance from memex.store_many("
        " array['a','a','b'], array['u','u','u'], array['one','two','three'],"
        " array[%s, %s, %s]::vector[], 'test-model',"
        " array['semantic','episodic','procedural']::memex.memory_type[], array[0.5, 1, 2])",
        (str(unit((0, 1.0)).tolist()), str(unit((1, 1.0)).tolist()), str(unit((2, 1.0)).tolist())),
    ).fetchall()
    assert rows == [
        ("one", "semantic", 0.5),
        ("two", "episodic", 1.0),
        ("three", "procedural", 2.0),
    ]
    assert conn.execute("select memex.count('a', 'u'), memex.count('b', 'u')").fetchone() == (2, 1)
    tenants = conn.execute("select agent_id, memory_count from memex.tenants order by 1").fetchall()
    assert tenants == [("a", 2), ("b", 1)]


def test_store_many_names_the_bad_item_and_stores_nothing(conn: psycopg.Connection) -> None:
    with pytest.raises(psycopg.Error) as info:
        conn.execute(
            "select * from memex.store_many(array['a','a'], array['u','u'], array['ok', ''],"
            " array[%s, %s]::vector[], 'test-model')",
            (str(unit((0, 1.0)).tolist()), str(unit((1, 1.0)).tolist())),
        )
    assert info.value.sqlstate == "MX422"
    assert info.value.diag.column_name == "memories[1].content"
    assert conn.execute("select count(*) from memex.memories").fetchone() == (0,)


def test_forget_only_touches_the_owners_row(conn: psycopg.Connection) -> None:
    mine = store(conn, "mine", angled(0.5), agent="a", user="u")
    with pytest.raises(psycopg.Error) as info:
        conn.execute("select * from memex.forget('a', 'someone else', %s)", (mine["id"],))
    assert info.value.sqlstate == "MX404"
    assert conn.execute("select memex.count('a', 'u')").fetchone() == (1,)
    deleted = conn.execute(
        "select content from memex.forget('a', 'u', %s)", (mine["id"],)
    ).fetchone()
    assert deleted == ("mine",)
    assert conn.execute("select memex.count('a', 'u')").fetchone() == (0,)
    assert conn.execute("select memory_count from memex.tenants").fetchone() == (0,)
    with pytest.raises(psycopg.Error) as again:
        conn.execute("select * from memex.forget('a', 'u', %s)", (mine["id"],))
    assert again.value.sqlstate == "MX404"


def test_count_by_type(conn: psycopg.Connection) -> None:
    store(conn, "f1", angled(0.5), memory_type="semantic")
    store(conn, "f2", angled(0.5), memory_type="semantic")
    store(conn, "e1", angled(0.5), memory_type="episodic")
    assert conn.execute(
        "select memex.count('agent', 'user'), memex.count('agent', 'user', 'semantic'),"
        " memex.count('agent', 'user', 'procedural')"
    ).fetchone() == (3, 2, 0)


def test_expired_memories_vanish_and_maintenance_deletes_them(conn: psycopg.Connection) -> None:
    now = datetime.now(UTC)
    store_expired(conn, "gone", angled(0.9), now - timedelta(seconds=1))
    store(conn, "kept", angled(0.5), expires_at=now + timedelta(days=1))
    assert [h["content"] for h in search(conn, QUERY)] == ["kept"]
    assert conn.execute("select memex.count('agent', 'user')").fetchone() == (1,)
    result = conn.execute("select * from memex.maintenance()").fetchone()
    assert result is not None and result[0] == 1
    assert conn.execute("select count(*) from memex.memories").fetchone() == (1,)


def test_the_embedding_of_a_long_memory_stays_in_its_row(conn: psycopg.Connection) -> None:
    """Storage main: when a row passes the TOAST threshold, its content and tsvector move
    out, not the vector that every similarity reads (pgvector's default, external, would
    move the vector first)."""
    words = " ".join(f"word{i}" for i in range(400))  # ~3,600 characters
    stored = store(conn, words, unit((1, 1.0)))
    row = conn.execute(
        "select pg_column_toast_chunk_id(embedding) is null,"
        # the row did pass the threshold: something else was compressed or moved out
        " pg_column_toast_chunk_id(tsv) is not null or pg_column_compression(content) is not null"
        " from memex.memories where id = %s",
        (stored["id"],),
    ).fetchone()
    assert row == (True, True)


def test_text_mode_is_bm25_over_any_query_term(conn: psycopg.Connection) -> None:
    store(conn, "The deploy key lives in the vault under ops/deploy", unit((3, 1.0)))
    store(conn, "Lunch was pasta", angled(0.9))
    store(conn, "Rotate the key every quarter", unit((4, 1.0)))
    hits = search(
        conn, None, mode="text", query_text="where is the deploy key?", alpha=1.0, context_weight=0
    )
    # "deploy" + "key" beats "key" alone; a memory without any term scores 0
    assert [h["content"] for h in hits][:2] == [
        "The deploy key lives in the vault under ops/deploy",
        "Rotate the key every quarter",
    ]
    assert hits[0]["relevance"] == pytest.approx(1.0)
    assert 0 < hits[1]["relevance"] < 1
    assert hits[2]["relevance"] == 0 and hits[2]["text_rank"] is None
    assert hits[0]["similarity"] is None


def bm25(tf: float, dl: float, df: float, n: float, avgdl: float) -> float:
    """BM25 as memex._bm25 defines it (k1 1.2, b 0.5)."""
    idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
    return idf * tf * 2.2 / (tf + 1.2 * (0.5 + 0.5 * dl / avgdl))


def test_bm25_statistics_count_the_tenants_live_memories_only(
    conn: psycopg.Connection,
) -> None:
    # lexemes: deploy key live vault (4); rotat key everi quarter (4); lunch pasta (2)
    store(conn, "The deploy key lives in the vault", unit((3, 1.0)))
    store(conn, "Rotate the key every quarter", unit((4, 1.0)))
    store(conn, "Lunch was pasta", unit((5, 1.0)))
    # neither another tenant's memories nor an expired one count as documents
    for _ in range(3):
        store(conn, "deploy deploy key", unit((3, 1.0)), agent="other")
    store_expired(conn, "deploy key", unit((3, 1.0)), datetime.now(UTC) - timedelta(days=1))
    row = conn.execute("select bool_and(tsv_length = length(tsv)) from memex.memories").fetchone()
    assert row == (True,)  # the stored length is the tsvector's
    hits = search(conn, None, mode="text", query_text="deploy key", alpha=1.0, context_weight=0)
    n, avgdl = 3, 10 / 3
    first = bm25(1, 4, 1, n, avgdl) + bm25(1, 4, 2, n, avgdl)
    second = bm25(1, 4, 2, n, avgdl)
    assert [h["content"] for h in hits][:2] == [
        "The deploy key lives in the vault",
        "Rotate the key every quarter",
    ]
    assert hits[0]["text_rank"] == pytest.approx(first, rel=1e-6)
    assert hits[1]["text_rank"] == pytest.approx(second, rel=1e-6)


@pytest.mark.parametrize("path", ["exact", "ann"])
def test_bm25_term_frequency_counts_every_occurrence(conn: psycopg.Connection, path: str) -> None:
    # lexemes: deploy (3 times) key; deploy key; lunch pasta: every length 2, so the mean
    # length is 2 whichever memories it is taken over
    store(conn, "Deploy, deploy, deploy the key", unit((3, 1.0)))
    store(conn, "Deploy the key", unit((4, 1.0)))
    store(conn, "Lunch was pasta", unit((5, 1.0)))
    if path == "ann":
        conn.execute("select memex.index_tenant('agent', 'user')")
        row = conn.execute(
            "select ann from memex.tenants where agent_id = 'agent' and user_id = 'user'"
        ).fetchone()
        assert row == (True,)
    hits = search(conn, None, mode="text", query_text="deploy", alpha=1.0, context_weight=0)
    n, avgdl = 3, 2
    assert [h["content"] for h in hits][:2] == ["Deploy, deploy, deploy the key", "Deploy the key"]
    # tf 3: each of the three occurrences counts, not only the lexeme
    assert hits[0]["text_rank"] == pytest.approx(bm25(3, 2, 2, n, avgdl), rel=1e-6)
    assert hits[1]["text_rank"] == pytest.approx(bm25(1, 2, 2, n, avgdl), rel=1e-6)
    assert hits[2]["text_rank"] is None


def test_hybrid_mode_blends_cosine_and_bm25(conn: psycopg.Connection) -> None:
    store(conn, "The deploy key lives in the vault", angled(0.2))
    store(conn, "Lunch was pasta", angled(0.9))
    hits = search(conn, QUERY, mode="hybrid", query_text="deploy key", alpha=1.0, context_weight=0)
    by_content = {h["content"]: h for h in hits}
    # w = settings.hybrid_vector_weight = 0.5; the only BM25 match normalises to 1
    assert by_content["The deploy key lives in the vault"]["relevance"] == pytest.approx(
        0.5 * 0.2 + 0.5 * 1.0, abs=HALF
    )
    assert by_content["Lunch was pasta"]["relevance"] == pytest.approx(0.5 * 0.9, abs=HALF)
    assert hits[0]["content"] == "The deploy key lives in the vault"


def test_context_weight_lends_relevance_to_neighbours_in_time(conn: psycopg.Connection) -> None:
    for minute, cos in enumerate([0.1, 0.9, 0.2, 0.3]):
        store(conn, f"m{minute}", angled(cos), created_at=NOW + timedelta(minutes=minute))
    plain = {h["content"]: h["relevance"] for h in search(conn, QUERY, alpha=1.0, now=NOW)}
    assert plain["m2"] == pytest.approx(0.2, abs=HALF)  # vector mode: no context by default
    hits = search(conn, QUERY, alpha=1.0, now=NOW, context_weight=0.5)
    relevance = {h["content"]: h["relevance"] for h in hits}
    # m2's neighbours: m1 and m3 (max 0.9), then m0 (0.1)
    assert relevance["m2"] == pytest.approx((0.2 + 0.5 * 0.9 + 0.25 * 0.1) / 1.75, abs=HALF)
    assert relevance["m0"] == pytest.approx((0.1 + 0.5 * 0.9 + 0.25 * 0.2) / 1.75, abs=HALF)
    # m1's window (0.9 + 0.5 * 0.3 + 0.25 * 0.3) / 1.75 = 0.61 would cost it a third of its
    # own relevance: the window costs at most a fifth (0.8 * 0.9)
    assert relevance["m1"] == pytest.approx(0.8 * 0.9, abs=HALF)
    # text and hybrid modes use settings.context_weight (0.5) unless told otherwise
    hybrid = search(conn, QUERY, alpha=1.0, now=NOW, mode="hybrid", query_text="nothing")
    assert {h["content"]: h["relevance"] for h in hybrid}["m2"] == pytest.approx(
        0.5 * relevance["m2"], abs=1e-6
    )


def test_context_never_buries_an_isolated_strong_match(conn: psycopg.Connection) -> None:
    # a weaker match among equally weak neighbours (0.6, its window 0.6) and a strong one
    # among unrelated memories (0.9, its window 0.9 / 1.75 = 0.51): the window lends the
    # first relevance, and costs the second at most a fifth of its own (0.72)
    cosines = [0.6, 0.6, 0.6, 0.6, 0.6, 0.0, 0.0, 0.9, 0.0, 0.0]
    for minute, cos in enumerate(cosines):
        store(conn, f"m{minute}", angled(cos), created_at=NOW - timedelta(minutes=minute))
    hits = search(conn, QUERY, alpha=1.0, now=NOW, context_weight=0.5, top_k=3)
    assert hits[0]["content"] == "m7"
    assert hits[0]["relevance"] == pytest.approx(0.8 * 0.9, abs=HALF)
    assert hits[1]["relevance"] == pytest.approx(0.6, abs=HALF)
    # without context nothing changes: relevance is the memory's own
    plain = search(conn, QUERY, alpha=1.0, now=NOW, context_weight=0, top_k=1)
    assert plain[0]["relevance"] == pytest.approx(0.9, abs=HALF)


@pytest.mark.parametrize(
    ("call", "field"),
    [
        ("memex.search('a', 'u', %(q)s, 0)", "top_k"),
        ("memex.search('a', 'u', %(q)s, 1001)", "top_k"),
        ("memex.search('a', 'u', %(q)s, 10, 1.5)", "alpha"),
        ("memex.search('a', 'u', %(q)s, 10, 0.5, 0)", "half_life_days"),
        ("memex.search('a', 'u', %(q)s, p_mode => 'fuzzy')", "mode"),
        ("memex.search('a', 'u', null)", "query_embedding"),
        ("memex.search('a', 'u', '[1,2,3]'::vector)", "query_embedding"),
        ("memex.search('a', 'u', %(q)s, p_mode => 'hybrid')", "query_text"),
        ("memex.search('a', 'u', %(q)s, p_context_weight => 1.5)", "context_weight"),
        ("memex.search('', 'u', %(q)s)", "agent_id"),
        ("memex.search('a', repeat('x', 129), %(q)s)", "user_id"),
        ("memex.store('a', 'u', '', %(q)s, 'm')", "content"),
        ("memex.store('a', 'u', 'x', '[1,2]'::vector, 'm')", "embedding"),
        ("memex.store('a', 'u', 'x', %(q)s, 'm', 'episodic', 2.5)", "importance"),
        ("memex.store('a', 'u', 'x', %(q)s, 'm', 'episodic', 1, '[1]')", "metadata"),
        ("memex.store('a', 'u', 'x', %(q)s, '')", "embedding_model"),
        ("memex.count('a', '')", "user_id"),
        ("memex.rate_limit_hit('k', -1, 60)", "limit"),
        ("memex.rate_limit_hit('k', 1, 0)", "window_seconds"),
    ],
)
def test_invalid_arguments_name_the_field(conn: psycopg.Connection, call: str, field: str) -> None:
    with pytest.raises(psycopg.Error) as info:
        conn.execute(f"select * from {call}", {"q": str(QUERY.tolist())})
    assert info.value.sqlstate == "MX422"
    assert info.value.diag.column_name == field
