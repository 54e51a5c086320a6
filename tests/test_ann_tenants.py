"""Only tenants moved into the ANN index (tenants.ann) have rows in it: small tenants are
ranked by exact scans and their inserts skip the index. memex.maintenance moves tenants
past exact_scan_max_rows in, memex.index_tenant moves one in on demand, and a tenant in
the index never has a live row outside it, also when an insert races the move."""

from __future__ import annotations

import threading
from datetime import timedelta
from pathlib import Path

import numpy as np
import psycopg
import pytest
from pgvector.psycopg import register_vector

from tests.sqlapi import DIM, angled, search, store, unit
from tests.test_recall import NOW, clustered, index_grown_tenants, load_tenant
from tests.test_vector_index import index_tenant, set_setting


def in_index(conn: psycopg.Connection, agent: str) -> tuple[int, int]:
    """(rows in the ANN index, rows) of tenant (agent, 'u')."""
    row = conn.execute(
        "select count(*) filter (where ann), count(*) from memex.memories"
        " where agent_id = %s and user_id = 'u'",
        (agent,),
    ).fetchone()
    assert row is not None
    return int(row[0]), int(row[1])


def tenant_ann(conn: psycopg.Connection, agent: str) -> bool | None:
    row = conn.execute(
        "select ann from memex.tenants where agent_id = %s and user_id = 'u'", (agent,)
    ).fetchone()
    return None if row is None else bool(row[0])


def test_the_ann_index_is_partial(conn: psycopg.Connection) -> None:
    row = conn.execute(
        "select pg_get_expr(i.indpred, i.indrelid) from pg_index i"
        " join pg_class c on c.oid = i.indexrelid"
        " where c.relname = 'memories_embedding_hnsw_idx'"
    ).fetchone()
    assert row == ("ann",)


def test_small_tenants_stay_out_and_grown_ones_move_in(conn: psycopg.Connection) -> None:
    set_setting(conn, "exact_scan_max_rows", "100")
    rng = np.random.default_rng(1)
    load_tenant(conn, rng, "small", 100)
    load_tenant(conn, rng, "grown", 150)
    assert in_index(conn, "small") == (0, 100)
    assert in_index(conn, "grown") == (0, 150)

    assert index_grown_tenants(conn) == 1
    assert in_index(conn, "grown") == (150, 150)
    assert (tenant_ann(conn, "grown"), tenant_ann(conn, "small")) == (True, False)
    assert index_grown_tenants(conn) == 0  # nothing left to move

    # new rows of an indexed tenant go straight in, a small tenant's stay out
    load_tenant(conn, rng, "grown", 5)
    load_tenant(conn, rng, "small", 5)
    assert in_index(conn, "grown") == (155, 155)
    assert in_index(conn, "small") == (0, 105)  # past the threshold: the next maintenance
    assert index_grown_tenants(conn) == 1
    assert in_index(conn, "small") == (105, 105)


def test_index_tenant_ahead_of_an_import(conn: psycopg.Connection) -> None:
    assert index_tenant(conn, "import") == 0  # no memories yet: its row is created
    assert tenant_ann(conn, "import") is True
    load_tenant(conn, np.random.default_rng(2), "import", 300)
    assert in_index(conn, "import") == (300, 300)
    assert index_tenant(conn, "import") == 0  # idempotent
    row = conn.execute(
        "select memory_count from memex.tenants where agent_id = 'import' and user_id = 'u'"
    ).fetchone()
    assert row == (300,)
    assert len(search(conn, unit((1, 1.0)), agent="import", user="u")) == 10


def test_an_insert_racing_the_move_ends_up_in_the_index(conn: psycopg.Connection, dsn: str) -> None:
    rng = np.random.default_rng(3)
    load_tenant(conn, rng, "race", 20)
    mover = psycopg.connect(dsn)
    errors: list[BaseException] = []
    try:
        with mover.transaction():
            # The move holds the tenant's row until it commits ...
            assert mover.execute("select memex.index_tenant('race', 'u')").fetchone() == (20,)

            # ... so an insert that started meanwhile read tenants.ann = false for its row,
            # and waits for that lock in memex._tenant_counts.
            def insert() -> None:
                try:
                    with psycopg.connect(dsn, autocommit=True) as other:
                        load_tenant(other, rng, "race", 3)
                except BaseException as exc:
                    errors.append(exc)

            inserter = threading.Thread(target=insert)
            inserter.start()
            inserter.join(timeout=1.0)
            assert inserter.is_alive(), "the insert should wait for the move"
        inserter.join(timeout=30)
        assert not inserter.is_alive() and errors == []
    finally:
        mover.close()
    assert in_index(conn, "race") == (23, 23)


def test_maintenance_moves_a_tenant_in_steps_that_do_not_hold_its_inserts(
    conn: psycopg.Connection, dsn: str
) -> None:
    set_setting(conn, "exact_scan_max_rows", "100")
    set_setting(conn, "index_batch_rows", "50")
    rng = np.random.default_rng(4)
    load_tenant(conn, rng, "steps", 230)

    def top_ids() -> list[object]:
        return [hit["id"] for hit in search(conn, unit((1, 1.0)), agent="steps", user="u")]

    expected = top_ids()
    with psycopg.connect(dsn) as mover, mover.transaction():
        step = mover.execute("select * from memex._index_tenant_step('steps', 'u', 50)")
        assert step.fetchone() == (50, False)
    # Searches stay exact whatever part of the tenant has moved ...
    assert in_index(conn, "steps") == (50, 230)
    assert top_ids() == expected
    with psycopg.connect(dsn) as mover, mover.transaction():
        step = mover.execute("select * from memex._index_tenant_step('steps', 'u', 50)")
        assert step.fetchone() == (50, False)
        # ... and a step holds no lock on the tenant: an insert goes through at once.
        with psycopg.connect(dsn, autocommit=True, options="-c lock_timeout=2s") as other:
            load_tenant(other, rng, "steps", 2)
    assert in_index(conn, "steps") == (100, 232)
    assert tenant_ann(conn, "steps") is False

    assert index_grown_tenants(conn) == 1
    assert in_index(conn, "steps") == (232, 232)
    assert tenant_ann(conn, "steps") is True


def test_concurrent_maintenance_skips_the_tenant_another_call_moves(
    conn: psycopg.Connection, dsn: str
) -> None:
    set_setting(conn, "exact_scan_max_rows", "100")
    load_tenant(conn, np.random.default_rng(5), "busy", 150)
    with psycopg.connect(dsn) as first, first.transaction():
        moved = first.execute("select tenants_indexed, memories_indexed from memex.maintenance()")
        assert moved.fetchone() == (1, 150)
        with psycopg.connect(dsn, autocommit=True, options="-c lock_timeout=2s") as second:
            again = second.execute(
                "select tenants_indexed, memories_indexed from memex.maintenance()"
            )
            assert again.fetchone() == (0, 0)  # skipped at once, not waiting for the first
    assert in_index(conn, "busy") == (150, 150)


@pytest.mark.parametrize("agent", ["", "x" * 129])
def test_index_tenant_validates_the_tenant(conn: psycopg.Connection, agent: str) -> None:
    with pytest.raises(psycopg.Error) as info:
        index_tenant(conn, agent)
    assert (info.value.sqlstate, info.value.diag.column_name) == ("MX422", "agent_id")


def test_skipped_recency_candidates_could_not_have_reached_the_top_k(
    conn: psycopg.Connection,
) -> None:
    # An ANN tenant where recency counts: an old memory that is the best match and many
    # newer ones. The newest ann_recent_candidates cover the whole tenant, so ranking all
    # of them (the union before early stopping) is exact; memex._candidates_ann reads only
    # those whose bound (least similarity among the nearest, own recency and importance)
    # reaches the k-th best score known, and its top k must still be the exact path's.
    set_setting(conn, "ann_candidates", "10")  # few nearest: the bound decides a lot
    set_setting(conn, "hnsw_ef_search", "400")  # ... and they are the exact nearest
    set_setting(conn, "ann_recent_candidates", "5000")
    rng = np.random.default_rng(21)
    load_tenant(conn, rng, "early", 800)
    old_match = unit((0, 1.0), (1, 0.05))
    store(
        conn,
        "early-old-match",
        old_match,
        agent="early",
        user="u",
        created_at=NOW - timedelta(days=300),
    )
    assert index_tenant(conn, "early") == 801
    queries = [unit((0, 1.0)), *clustered(rng, 8)]

    def top(query: np.ndarray, alpha: float | None, ann: bool) -> list[str]:
        conn.execute(
            "update memex.tenants set ann = %s where agent_id = 'early' and user_id = 'u'",
            (ann,),
        )
        hits = search(
            conn,
            query,
            agent="early",
            user="u",
            alpha=alpha,
            half_life_days=30.0 if alpha is not None else 90.0,
            now=NOW,
        )
        assert len(hits) == 10
        return [str(hit["content"]) for hit in hits]

    for query in queries:
        for alpha in (0.7, None):
            assert top(query, alpha, ann=True) == top(query, alpha, ann=False), alpha
    # the old match is found by the ANN path, first without alpha
    assert top(queries[0], None, ann=True)[0] == "early-old-match"
    assert "early-old-match" in top(queries[0], 0.7, ann=True)

    # ... and most of the 801 recency candidates are never read when the nearest are 50:
    # the bound of a memory outside them stays below the k-th score
    register_vector(conn)
    for alpha, most in ((None, 100), (0.7, 300)):
        row = conn.execute(
            "select count(*) from memex._candidates_ann('early', 'u', %s, null, %s, 50, 5000,"
            " row(null, null, null, false, null, null, null, null), 10, %s, %s)",
            (queries[1], NOW, alpha, 30.0 if alpha is not None else 90.0),
        ).fetchone()
        assert row is not None and 50 <= row[0] < most, (alpha, row)


def default_request(conn: psycopg.Connection, agent: str, text: str, ann: bool) -> list[str]:
    """The contents of the default request's top 3 (query text, no ranking options) for
    tenant (agent, 'u'), ranked through the ANN index or (ann false) by the exact scan."""
    conn.execute(
        "update memex.tenants set ann = %s where agent_id = %s and user_id = 'u'", (ann, agent)
    )
    register_vector(conn)
    rows = conn.execute(
        "select content from memex.search(p_agent_id => %s, p_user_id => 'u',"
        " p_query_embedding => %s, p_top_k => 3, p_query_text => %s, p_now => %s)",
        (agent, unit((0, 1.0)), text, NOW),
    ).fetchall()
    return [str(r[0]) for r in rows]


def test_the_default_request_takes_context_from_true_neighbours_in_time(
    conn: psycopg.Connection,
) -> None:
    # An old memory that alone matches the query's word, among 400 that match nothing; its
    # neighbours in time match nothing either, but the default request's context window
    # ranks the nearest two right after it (they take relevance from it; importance up to
    # 1.5 lifts the others to at most ~0.1 of the hit's relevance). On the exact path that
    # follows from scanning everything; on the ANN path the neighbours must be fetched,
    # since they are neither near the query nor new nor matching its text.
    set_setting(conn, "ann_candidates", "10")
    set_setting(conn, "ann_recent_candidates", "50")  # far fewer than the tenant's
    rng = np.random.default_rng(31)
    load_tenant(conn, rng, "ctx", 400)
    at = NOW - timedelta(days=200, minutes=30)  # between two of the random memories
    for name, hours in (("before-2", -2), ("before-1", -1), ("zebra", 0), ("after-1", 1)):
        content = "we saw a zebra at the zoo" if name == "zebra" else f"{name} nothing here"
        store(
            conn,
            content,
            clustered(rng, 1)[0],
            agent="ctx",
            user="u",
            created_at=at + timedelta(hours=hours),
        )
    store(
        conn,
        "after-2 nothing here",
        clustered(rng, 1)[0],
        agent="ctx",
        user="u",
        created_at=at + timedelta(hours=2),
    )
    assert index_tenant(conn, "ctx") == 405
    # two query terms: a query of one term would weigh the text match by the vector's
    # agreement, which these random vectors do not give (memex.search, "a one-word match")
    exact = [c.split(" ")[0] for c in default_request(conn, "ctx", "zebra zoo", ann=False)]
    assert exact[0] == "we" and set(exact) == {"we", "before-1", "after-1"}
    found = [c.split(" ")[0] for c in default_request(conn, "ctx", "zebra zoo", ann=True)]
    assert found[0] == "we" and set(found) == set(exact)


def test_the_ann_path_finds_the_memory_holding_the_rarest_query_term(
    conn: psycopg.Connection,
) -> None:
    # BM25 weighs a term by its rarity: the one memory holding "zebra" is the best text
    # match for "apple zebra", above 600 memories saying "apple" three times (ts_rank,
    # blind to rarity, puts those first). The ANN path's text candidates must include it
    # although it is old and far from the query's vector.
    set_setting(conn, "ann_candidates", "10")
    set_setting(conn, "ann_recent_candidates", "50")
    rng = np.random.default_rng(32)
    for i in range(601):  # the zebra in the middle, not last in the heap
        old = i == 300
        store(
            conn,
            "a zebra at the zoo" if old else f"apple apple apple pie number {i}",
            clustered(rng, 1)[0],
            agent="rare",
            user="u",
            created_at=NOW - timedelta(days=300 if old else float(rng.uniform(0, 100))),
        )
    assert index_tenant(conn, "rare") == 601
    assert default_request(conn, "rare", "apple zebra", ann=False)[0] == "a zebra at the zoo"
    assert default_request(conn, "rare", "apple zebra", ann=True)[0] == "a zebra at the zoo"


def store_batch(
    conn: psycopg.Connection,
    agent: str,
    contents: list[str],
    vectors: list[np.ndarray],
    ages_days: list[float],
    importances: list[float] | None = None,
) -> None:
    """Store one batch into tenant (agent, 'u'), each memory `ages_days` before NOW."""
    register_vector(conn)
    conn.execute(
        "select count(*) from memex.store_many(%s, %s, %s, %s, 'test-model', null, %s, null,"
        " null, %s)",
        (
            [agent] * len(contents),
            ["u"] * len(contents),
            contents,
            vectors,
            importances,
            [NOW - timedelta(days=age) for age in ages_days],
        ),
    )


def test_the_ann_path_finds_the_memory_holding_two_common_query_terms(
    conn: psycopg.Connection,
) -> None:
    # "apple" and "pie" are each held by 300 memories, more than the text read's budget
    # (10 x ann_candidates): of the apples, any 200 are read. The one old, distant memory
    # holding both is the best BM25 match; the pair read (memories holding two of the
    # rarest terms, ~150 expected) finds it on the ANN path as the exact path does.
    set_setting(conn, "ann_candidates", "10")
    set_setting(conn, "ann_recent_candidates", "50")
    rng = np.random.default_rng(33)
    register_vector(conn)
    contents = [f"apple number {i}" for i in range(300)] + [f"pie number {i}" for i in range(300)]
    contents.insert(300, "an apple pie")  # in the middle, not last in the heap
    ages = [300 if c == "an apple pie" else float(rng.uniform(0, 100)) for c in contents]
    store_batch(conn, "pair", contents, list(clustered(rng, 601)), ages)
    assert index_tenant(conn, "pair") == 601
    assert default_request(conn, "pair", "apple pie", ann=False)[0] == "an apple pie"
    assert default_request(conn, "pair", "apple pie", ann=True)[0] == "an apple pie"


def test_the_ann_path_reads_the_rarest_pair_first(conn: psycopg.Connection) -> None:
    # Three query terms, each held by more than twice the memories of the budget (100:
    # 10 x ann_candidates); the pairs of them are expected in ~50-90 memories each, but
    # two pairs are held by 200 (terms that go together, as words of a language do). The one
    # old, distant memory holding all three is the best BM25 match (and marked important,
    # against the recency of the others). Read as one union in
    # heap order, the budget fills with the first-stored common pairs and cuts it off;
    # read rarest pair first (lantern & walnut: 21 memories), it is found. (Of the
    # memories holding the rarest term alone, any 100 are read: not it, stored last.)
    set_setting(conn, "ann_candidates", "10")
    set_setting(conn, "ann_recent_candidates", "50")
    rng = np.random.default_rng(36)
    words = "on a long grey pier by the old town"  # longer texts: lower BM25
    contents = (
        [f"lantern harbor {words} {k}" for k in range(200)]
        + [f"walnut harbor {words} {k}" for k in range(200)]
        + [f"walnut lantern {words} {k}" for k in range(20)]
        + [f"filler note {k}" for k in range(579)]
        + ["walnut lantern harbor"]
    )
    ages = [float(rng.uniform(0, 300)) for _ in range(999)] + [400.0]
    vectors = [*clustered(rng, 999), unit((1, 1.0))]  # orthogonal to the query's
    store_batch(conn, "rarest", contents, vectors, ages, [1.0] * 999 + [1.5])
    assert index_tenant(conn, "rarest") == 1000
    best = "walnut lantern harbor"
    assert default_request(conn, "rarest", "harbor lantern walnut", ann=False)[0] == best
    assert default_request(conn, "rarest", "harbor lantern walnut", ann=True)[0] == best


def test_the_ann_path_ranks_text_matches_by_their_importance_too(
    conn: psycopg.Connection,
) -> None:
    # 60 memories say "kettle" once in four words, each with weather reports as its
    # neighbours in time; one older memory says it in seven (a lower BM25: a longer text)
    # but is marked important (1.9), and importance multiplies the score: it is the best
    # match. Its neighbours are weather reports too and its vector is far from the query's,
    # so only its text can bring it in. The ANN path reads every kettle (fewer than its
    # budget) but keeps only 2 x ann_candidates of them: ranked by BM25 alone, the
    # important one would be the last.
    set_setting(conn, "ann_candidates", "10")
    set_setting(conn, "ann_recent_candidates", "50")
    rng = np.random.default_rng(34)
    register_vector(conn)
    # 260 slots 1.3 days apart, a kettle in every fourth of the first 240
    contents = [
        f"the kettle note {k}" if k % 4 == 0 and k < 240 else f"weather report {k}"
        for k in range(260)
    ]
    ages = [1.3 * k for k in range(260)]
    vectors = list(clustered(rng, 260))
    kept = "an old kettle note kept for later"
    contents.append(kept)
    ages.append(400.0)
    vectors.append(unit((1, 1.0)))  # orthogonal to the query's
    store_batch(conn, "marked", contents, vectors, ages, [1.0] * 260 + [1.9])
    assert index_tenant(conn, "marked") == 261
    # two query terms, both in every kettle note: a query of one term would weigh the text
    # match by the vector's agreement (memex.search, "a one-word match"), and this vector
    # is orthogonal to the query's on purpose
    assert default_request(conn, "marked", "kettle note", ann=False)[0] == kept
    assert default_request(conn, "marked", "kettle note", ann=True)[0] == kept


def test_with_query_terms_the_ann_path_takes_nearest_by_the_vector_weight(
    conn: psycopg.Connection,
) -> None:
    # One rule (memex._ann_nearest) for the nearest taken and the index's search depth:
    # with query terms, the depth times similarity's share of relevance, at least half.
    nearest = (
        "select memex._ann_nearest(200, '{dog}'), memex._ann_nearest(200, null),"
        " memex._ann_nearest(200, '{}'), memex._ann_nearest(9, '{dog}')"
    )
    assert conn.execute(nearest).fetchone() == (100, 200, 200, 5)
    set_setting(conn, "hybrid_vector_weight", "0.7")
    assert conn.execute(nearest).fetchone() == (140, 200, 200, 7)
    set_setting(conn, "hybrid_vector_weight", "1")  # text ranks nothing: the full depth
    assert conn.execute(nearest).fetchone() == (200, 200, 200, 9)
    set_setting(conn, "hybrid_vector_weight", "0.2")  # never below half
    assert conn.execute(nearest).fetchone() == (100, 200, 200, 5)
    set_setting(conn, "hybrid_vector_weight", "0.5")
    # Half is still deep enough for what only similarity finds: no memory holds "zebra",
    # so relevance is similarity (and context) alone, and the five memories near the
    # query, months apart among 300 unrelated ones, rank as on the exact path, most
    # similar first.
    set_setting(conn, "ann_candidates", "10")  # 5 nearest with query terms
    set_setting(conn, "ann_recent_candidates", "50")
    rng = np.random.default_rng(35)
    contents = [f"unrelated note {k}" for k in range(300)]
    vectors = list(clustered(rng, 300))
    ages = [float(rng.uniform(0, 100)) for _ in range(300)]
    for k, cos in enumerate((0.95, 0.9, 0.85, 0.8, 0.75)):
        contents.append(f"close note {cos}")
        vectors.append(angled(cos))
        ages.append(150.0 + 40 * k)
    store_batch(conn, "similar", contents, vectors, ages)
    assert index_tenant(conn, "similar") == 305
    exact = default_request(conn, "similar", "zebra", ann=False)
    assert exact == ["close note 0.95", "close note 0.9", "close note 0.85"]
    assert default_request(conn, "similar", "zebra", ann=True) == exact


def test_the_tenant_key_index_finds_every_memory_of_its_tenant(conn: psycopg.Connection) -> None:
    # The neighbour probes' index (revision 0025), read with no other plan allowed, finds
    # each tenant's memories under its key.
    rng = np.random.default_rng(45)
    load_tenant(conn, rng, "key-a", 30)
    load_tenant(conn, rng, "key-b", 20)
    by_key = (
        "select count(*) from memex.memories"
        " where memex._tenant_key(agent_id, user_id) = memex._tenant_key(%s, 'u')"
        " and agent_id = %s and user_id = 'u'"
    )
    with conn.transaction():
        conn.execute("set local enable_seqscan = off")
        conn.execute("set local enable_bitmapscan = off")
        plan = conn.execute("explain " + by_key, ("key-a", "key-a")).fetchall()
        assert "memories_tenant_key_recent_idx" in "\n".join(str(r[0]) for r in plan)
        for agent, count in (("key-a", 30), ("key-b", 20)):
            assert conn.execute(by_key, (agent, agent)).fetchone() == (count,)
    # the agent's length comes first: ("ab", "c") and ("a", "bc") spell different strings
    row = conn.execute("select memex._tenant_key('ab', 'c') <> memex._tenant_key('a', 'bc')")
    assert row.fetchone() == (True,)


def test_the_sql_layer_keeps_the_tenant_key_the_index_was_built_with() -> None:
    # The index holds the keys of the rows stored before the SQL layer re-created
    # memex._tenant_key; a different body would leave them behind (the probes would miss
    # those memories). So the SQL layer's definition is the revision's, character for
    # character (the attribute lines aside: tools/sql_layout.py joins them in the layer,
    # the frozen revision keeps its own line breaks).
    root = Path(__file__).resolve().parents[1]
    layer = (root / "sql" / "core" / "004_tenant_key.sql").read_text()
    revision = (root / "sql" / "revisions" / "0025_tenant_key_index.sql").read_text()
    definition = layer[layer.index("create or replace function") :]
    assert " ".join(definition.split()) in " ".join(revision.split())


def test_the_default_request_ranks_a_wordy_tenant_on_the_ann_path_as_the_exact_path(
    conn: psycopg.Connection,
) -> None:
    # A tenant forced onto the ANN path (ann_candidates 100: the 50 nearest, the 100 best
    # text matches and the neighbours in time of both) where most memories hold some query
    # term (a Zipf-like vocabulary, as bench/ann_default_bench.py's): the default request's
    # top 10 (hybrid, context window, duplicates' rule) is the exact path's, which scores
    # every memory, for (nearly) every query. Measured here: twice as many text matches
    # (before issue 39) 119-120 of the 120, as many as ann_candidates 119, a quarter of it
    # 117 (this fails); bench/RESULTS.md, "The big tenant's text hits, halved".
    set_setting(conn, "ann_candidates", "100")
    set_setting(conn, "hnsw_ef_search", "400")  # the nearest are the exact nearest
    rng = np.random.default_rng(47)
    n, vocabulary = 1500, 400
    p = 1 / (np.arange(vocabulary) + 10.0)
    words = rng.choice(vocabulary, size=(n, 20), p=p / p.sum())
    vectors = clustered(rng, n)
    importances = np.where(rng.random(n) < 0.2, rng.uniform(0.5, 1.5, n), 1.0).tolist()
    ages = rng.uniform(0, 365, n).tolist()
    contents = [" ".join(f"w{w}" for w in row) for row in words]
    store_batch(conn, "wordy", contents, list(vectors), ages, importances)
    assert index_tenant(conn, "wordy") == n
    register_vector(conn)

    def top(i: int, ann: bool) -> set[str]:
        conn.execute(
            "update memex.tenants set ann = %s where agent_id = 'wordy' and user_id = 'u'",
            (ann,),
        )
        # memory i's vector with some noise, three of its words and its last one
        query = vectors[i] + np.random.default_rng(i).normal(scale=0.03, size=DIM)
        rows = conn.execute(
            "select id from memex.search(p_agent_id => 'wordy', p_user_id => 'u',"
            " p_query_embedding => %s, p_top_k => 10, p_query_text => %s, p_now => %s)",
            (
                (query / np.linalg.norm(query)).astype(np.float32),
                " ".join(f"w{w}" for w in [*words[i][:3], words[i][-1]]),
                NOW,
            ),
        ).fetchall()
        assert len(rows) == 10
        return {str(r[0]) for r in rows}

    found = [len(top(i, ann=True) & top(i, ann=False)) for i in rng.choice(n, 12, replace=False)]
    # the ANN index's order is approximate (relaxed iterative scans): a memory at the edge
    # of the nearest can change places with another from one build of the index to the next
    assert min(found) >= 9 and sum(found) >= 118, found
