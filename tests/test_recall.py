"""memex.search against an exact brute-force ranking computed here with numpy: recall@10
is 1.0 on the exact path and >= 0.95 on the ANN path, and results never run short.

The ANN recall measurement (12,000 rows into an HNSW index, a metric over a dataset) is an
evaluation and runs in the e2e tier; the exact-path, vector-mode and re-ranking checks stay
in the fast tier at a smaller scale (the thresholds scale with them)."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta

import numpy as np
import psycopg
import pytest
from pgvector.psycopg import register_vector

from tests.sqlapi import DIM, search

NOW = datetime(2026, 6, 1, tzinfo=UTC)
TYPES = ["episodic", "semantic", "procedural"]


def clustered(rng: np.random.Generator, n: int, clusters: int = 40) -> np.ndarray:
    centers = rng.normal(size=(clusters, DIM))
    points = centers[rng.integers(0, clusters, n)] + 0.6 * rng.normal(size=(n, DIM))
    return (points / np.linalg.norm(points, axis=1, keepdims=True)).astype(np.float32)


class Topics:
    """Unit vectors around topic and subtopic centres (as in bench/scale_bench.py): a
    memory's nearest neighbours are its subtopic, then its topic, so similarity varies
    within a topic the way it does for real embeddings."""

    def __init__(self, rng: np.random.Generator, topics: int = 20, subtopics: int = 10) -> None:
        self.rng = rng
        self.topics = rng.normal(size=(topics, DIM))
        self.subtopics = 0.8 * rng.normal(size=(topics, subtopics, DIM))

    def vectors(self, n: int) -> np.ndarray:
        t = self.rng.integers(0, self.topics.shape[0], n)
        s = self.rng.integers(0, self.subtopics.shape[1], n)
        points = self.topics[t] + self.subtopics[t, s] + 0.6 * self.rng.normal(size=(n, DIM))
        unit_rows: np.ndarray = points / np.linalg.norm(points, axis=1, keepdims=True)
        return unit_rows.astype(np.float32)


def load_tenant(
    conn: psycopg.Connection,
    rng: np.random.Generator,
    agent: str,
    n: int,
    type_weights: list[float] | None = None,
    vectors: np.ndarray | None = None,
) -> dict[str, np.ndarray]:
    register_vector(conn)
    vectors = clustered(rng, n) if vectors is None else vectors
    ages = rng.uniform(0, 365, n)
    importance = rng.uniform(0.5, 1.5, n)
    types = rng.choice(TYPES, n, p=type_weights or [0.4, 0.4, 0.2])
    for start in range(0, n, 2000):
        end = min(n, start + 2000)
        conn.execute(
            "select count(*) from memex.store_many(%s, %s, %s, %s, 'test-model',"
            " %s::memex.memory_type[], %s, null, null, %s)",
            (
                [agent] * (end - start),
                ["u"] * (end - start),
                [f"{agent}-{i}" for i in range(start, end)],
                list(vectors[start:end]),
                list(types[start:end]),
                importance[start:end].tolist(),
                [NOW - timedelta(days=float(a)) for a in ages[start:end]],
            ),
        )
    return {
        "vectors": vectors,
        "ages": ages,
        "importance": importance,
        "types": types,
        "contents": np.array([f"{agent}-{i}" for i in range(n)]),
    }


def index_grown_tenants(conn: psycopg.Connection, max_calls: int = 100) -> int:
    """memex.maintenance(), called as the service does while it moves rows: tenants past
    exact_scan_max_rows move into the ANN index (at most one per call). Returns how many."""
    indexed = 0
    for _ in range(max_calls):
        row = conn.execute(
            "select tenants_indexed, memories_indexed from memex.maintenance()"
        ).fetchone()
        assert row is not None
        indexed += int(row[0])
        if row == (0, 0):
            return indexed
    raise AssertionError(f"maintenance still moving rows after {max_calls} calls")


def exact_top(
    tenant: dict[str, np.ndarray],
    query: np.ndarray,
    k: int,
    alpha: float | None,
    half_life: float = 30.0,
    types: list[str] | None = None,
) -> list[str]:
    similarity = tenant["vectors"] @ query
    recency = np.exp(-math.log(2) / half_life * tenant["ages"])
    if alpha is None:  # the default formula: recency a bounded tiebreaker (memex._score)
        score = (similarity + 0.25 * recency * np.abs(similarity)) * tenant["importance"]
    else:
        score = (alpha * similarity + (1 - alpha) * recency) * tenant["importance"]
    if types is not None:
        score = np.where(np.isin(tenant["types"], types), score, -np.inf)
    order = np.argsort(-score)[:k]
    return [str(c) for c in tenant["contents"][order] if np.isfinite(score[order[0]])]


def recall(
    conn: psycopg.Connection,
    tenant: dict[str, np.ndarray],
    agent: str,
    queries: np.ndarray,
    alpha: float | None,
    types: list[str] | None = None,
) -> float:
    found = 0
    for query in queries:
        expected = set(exact_top(tenant, query, 10, alpha, types=types))
        got = search(
            conn, query, agent=agent, user="u", top_k=10, alpha=alpha, now=NOW, memory_types=types
        )
        assert len(got) == 10
        found += len(expected & {h["content"] for h in got})
    return found / (10 * len(queries))


def test_exact_path_equals_brute_force(conn: psycopg.Connection) -> None:
    rng = np.random.default_rng(7)
    tenant = load_tenant(conn, rng, "exact", 1500)
    load_tenant(conn, rng, "neighbour", 500)  # must never leak into the results
    queries = clustered(rng, 10)
    for alpha in (1.0, 0.7, 0.3, None):
        assert recall(conn, tenant, "exact", queries, alpha) == 1.0
    assert recall(conn, tenant, "exact", queries[:5], 0.7, types=["procedural"]) == 1.0
    # same order too, not just the same set
    hits = search(conn, queries[0], agent="exact", user="u", top_k=10, alpha=0.7, now=NOW)
    assert [h["content"] for h in hits] == exact_top(tenant, queries[0], 10, 0.7)
    hits = search(conn, queries[0], agent="exact", user="u", top_k=10, alpha=None, now=NOW)
    assert [h["content"] for h in hits] == exact_top(tenant, queries[0], 10, None)


@pytest.mark.e2e  # an evaluation: recall over 12,000 rows in an HNSW index (~1 min)
def test_ann_path_keeps_recall_and_never_runs_short(conn: psycopg.Connection) -> None:
    # The ANN path at test scale: tenants above 1,000 rows move into the HNSW index.
    conn.execute("update memex.settings set value = '1000' where name = 'exact_scan_max_rows'")
    # Topic-structured vectors like real embeddings: on clusters of isotropic noise (which
    # real text never forms) an HNSW graph's recall varies from build to build.
    rng = np.random.default_rng(11)
    topics = Topics(rng)
    tenant = load_tenant(
        conn, rng, "big", 6000, type_weights=[0.49, 0.49, 0.02], vectors=topics.vectors(6000)
    )
    load_tenant(conn, rng, "other", 6000, vectors=topics.vectors(6000))
    assert index_grown_tenants(conn) == 2
    queries = topics.vectors(20)
    assert recall(conn, tenant, "big", queries, 1.0) >= 0.95
    assert recall(conn, tenant, "big", queries, 0.7) >= 0.95
    assert recall(conn, tenant, "big", queries, None) >= 0.95  # no alpha: the default formula
    # a filter that matches ~2 % of the tenant still fills top_k (iterative scans)
    rare = int((tenant["types"] == "procedural").sum())
    assert rare >= 10
    assert recall(conn, tenant, "big", queries[:5], 0.7, types=["procedural"]) >= 0.95
    # alpha 0: the newest rows come back although the vector index knows nothing of recency
    assert recall(conn, tenant, "big", queries[:5], 0.0) >= 0.95


def test_vector_mode_ranks_exactly_like_the_general_query(conn: psycopg.Connection) -> None:
    # Mode 'vector' without a context weight skips the text statistics and the context
    # window. Mode 'hybrid' with hybrid_vector_weight 1, context weight 0 and a query text
    # that matches nothing runs the general query over the same candidates: the rows and
    # every number in them must be identical, on the exact and on the ANN path.
    conn.execute("update memex.settings set value = '1.0' where name = 'hybrid_vector_weight'")
    conn.execute("update memex.settings set value = '500' where name = 'exact_scan_max_rows'")
    rng = np.random.default_rng(5)
    load_tenant(conn, rng, "small", 400)
    load_tenant(conn, rng, "large", 600)
    assert index_grown_tenants(conn) == 1
    for agent in ("small", "large"):
        for query in clustered(rng, 4):
            for alpha in (1.0, 0.7, None):
                fast = search(conn, query, agent=agent, user="u", alpha=alpha, now=NOW)
                general = search(
                    conn,
                    query,
                    agent=agent,
                    user="u",
                    alpha=alpha,
                    now=NOW,
                    mode="hybrid",
                    query_text="xylophonic",
                    context_weight=0.0,
                )
                assert len(fast) == 10
                assert fast == general


def test_ann_path_reranks_the_newest_memories_when_recency_counts(
    conn: psycopg.Connection,
) -> None:
    # With alpha < 1 the ANN path also re-ranks the tenant's ann_recent_candidates newest
    # memories; when that covers the whole tenant the ANN path is exact.
    conn.execute("update memex.settings set value = '200' where name = 'exact_scan_max_rows'")
    conn.execute("update memex.settings set value = '600' where name = 'ann_recent_candidates'")
    rng = np.random.default_rng(13)
    tenant = load_tenant(conn, rng, "big", 600)
    assert index_grown_tenants(conn) == 1
    queries = clustered(rng, 8)
    for alpha in (0.7, 0.3, None):
        assert recall(conn, tenant, "big", queries, alpha) == 1.0
