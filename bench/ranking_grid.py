"""Ranking ideas tried for "Recall by default", re-ranked offline: every candidate of every
question (similarity, BM25, created_at, from memex._candidates_exact) is fetched once from
PostgreSQL, then each formula is applied in numpy. The numpy ranking reproduces
memex.search (hybrid alpha 1 on LoCoMo: 0.710 here and in locomo_eval.py).

    python bench/ranking_grid.py ../shared/data/locomo/locomo10.json            # ~3 min
    python bench/ranking_grid.py ../shared/data/locomo/locomo10.json --seed 8

Columns: LoCoMo (categories 1-4) hit@5 and hit@10 with dates, hit@5 with every turn at one
moment ("undated"); temporal set (bench/temporal_set.py) newest first, newest@5, order
when both found, stable hit@5 (metrics as in bench/temporal_eval.py).
"""

from __future__ import annotations

import argparse
import math
import shutil
import sys
import tempfile
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np
import psycopg
from pgvector.psycopg import register_vector
from psycopg.types.json import Jsonb

sys.path.insert(0, str(Path(__file__).resolve().parent))
from locomo_eval import CachedEmbedder, load_dataset
from machine import machine_facts
from temporal_set import build

from memexdb import migrate
from memexdb.embedded import EmbeddedPostgres
from memexdb.embedding import build_embedder

LN2 = math.log(2)
CANDIDATES = """
select m.metadata->>'label', c.similarity, coalesce(c.text_rank, 0),
       extract(epoch from c.created_at)
from memex._candidates_exact(%s, %s, %s, memex._query_terms(%s), null, null, %s, null) c
join memex.memories m on m.id = c.id order by c.created_at, c.id
"""


def fetch(args: argparse.Namespace) -> dict[str, list[dict[str, Any]]]:
    model = CachedEmbedder(build_embedder("minilm"), args.out / "locomo-embeddings.npz")
    convs = load_dataset(args.data)
    tset = build(args.seed, args.users)
    root = Path(tempfile.mkdtemp(prefix="memexdb-grid-", dir="/var/tmp"))
    root.chmod(0o755)
    server = EmbeddedPostgres(root / "pg")
    out: dict[str, list[dict[str, Any]]] = {"locomo": [], "temporal": []}
    # each tenant's memory vectors by label, shared by its questions (variants that compare
    # candidates with each other)
    vectors: dict[tuple[str, str], dict[str, np.ndarray]] = {}
    try:
        dsn = server.start()
        migrate(dsn)
        with psycopg.connect(dsn, autocommit=True) as conn:
            register_vector(conn)

            def load(agent: str, user: str, items: list[tuple[str, str, datetime]]) -> None:
                contents = [c for c, _, _ in items]
                embedded = list(model.embed(contents))
                vectors[(agent, user)] = {
                    label: np.asarray(v) for (_, label, _), v in zip(items, embedded, strict=True)
                }
                conn.execute(
                    "select count(*) from memex.store_many(%s, %s, %s, %s, 'm', null, null,"
                    " %s, null, %s)",
                    (
                        [agent] * len(items),
                        [user] * len(items),
                        contents,
                        embedded,
                        [Jsonb({"label": label}) for _, label, _ in items],
                        [at for _, _, at in items],
                    ),
                )

            def candidates(agent: str, user: str, text: str, vector: Any, now: datetime) -> Any:
                rows = conn.execute(CANDIDATES, (agent, user, vector, text, now)).fetchall()
                return {
                    "vectors": vectors[(agent, user)],
                    "now": now.timestamp(),
                    "labels": [r[0] for r in rows],
                    "sim": np.array([r[1] for r in rows]),
                    "bm25": np.array([float(r[2]) for r in rows]),
                    "t": np.array([float(r[3]) for r in rows]),
                }

            for c in convs:
                load("locomo", c.sample_id, [(t["content"], t["dia_id"], t["at"]) for t in c.turns])
            for u in tset["users"]:
                load(
                    "temporal",
                    u["user"],
                    [
                        (m["content"], m["id"], datetime.fromisoformat(m["at"]))
                        for m in u["memories"]
                    ],
                )
            conn.execute("analyze memex.memories")
            for c in convs:
                asked = model.embed([q.text for q in c.questions])
                for q, v in zip(c.questions, asked, strict=True):
                    found = candidates("locomo", c.sample_id, q.text, v, c.end)
                    out["locomo"].append({"cat": q.category, "gold": q.evidence, **found})
            for u in tset["users"]:
                now = datetime.fromisoformat(u["asked_at"])
                asked = model.embed([q["query"] for q in u["questions"]])
                for tq, v in zip(u["questions"], asked, strict=True):
                    out["temporal"].append(
                        {**tq, **candidates("temporal", u["user"], tq["query"], v, now)}
                    )
    finally:
        server.stop()
        shutil.rmtree(root, ignore_errors=True)
    return out


def _shift(a: np.ndarray, k: int) -> np.ndarray:
    out = np.full_like(a, np.nan)
    if k > 0:
        out[k:] = a[:-k]
    else:
        out[:k] = a[-k:]
    return out


def rank(
    q: dict[str, Any],
    *,
    mode: str = "hybrid",
    ctx: float | None = None,
    kind: str = "blend",
    alpha: float = 0.7,
    beta: float = 0.0,
    hl: float | Callable[[np.ndarray], float] = 30.0,
    ref: str = "now",
    undated: bool = False,
    norm_cosine: bool = False,
    sat: float | None = None,
    context: str = "blend",
    w: float = 0.5,
    minmax: bool = False,
    rrf: float | None = None,
    band: float | None = None,
    promote: tuple[float, float] | None = None,
    oracle: bool = False,
) -> list[str]:
    sim, bm, t = q["sim"], q["bm25"], q["t"]
    if undated:
        t = np.zeros_like(t)
    ctx = (0.0 if mode == "vector" else 0.5) if ctx is None else ctx
    text = bm / bm.max() if bm.max() > 0 else bm * 0
    if sat:
        text = bm / (bm + sat)
    cos = sim / sim.max() if norm_cosine else sim
    if minmax:  # cosine over the candidates onto 0..1, as bm25 / best bm25 already is
        low, high = sim.min(), sim.max()
        cos = (sim - low) / (high - low) if high > low else sim * 0
    own = {"vector": cos, "text": text, "hybrid": w * cos + (1 - w) * text}[mode]
    if rrf:  # reciprocal rank fusion of the cosine and BM25 orders instead of the blend
        by_cos, by_bm = np.empty(len(sim)), np.empty(len(sim))
        by_cos[np.argsort(-sim)] = np.arange(len(sim))
        by_bm[np.argsort(-bm)] = np.arange(len(sim))
        own = 1 / (rrf + by_cos) + np.where(bm > 0, 1 / (rrf + by_bm), 0)

    def nb(k: int) -> np.ndarray:
        a = _shift(own, k)
        if context == "session":  # only neighbours within an hour per step
            a = np.where(np.abs(_shift(t, k) - t) <= 3600.0 * abs(k), a, np.nan)
        return a

    def best(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        out: np.ndarray = np.nan_to_num(np.fmax(a, b), nan=0.0)
        return out

    rel = (own + ctx * best(nb(1), nb(-1)) + ctx / 2 * best(nb(2), nb(-2))) / (1 + 1.5 * ctx)
    if context == "lift":
        rel = np.maximum(own, rel)
    now = 0.0 if undated else (q["now"] if ref == "now" else t.max())
    half = hl(t) if callable(hl) else hl
    rec = np.exp(np.maximum(-LN2 / half * np.maximum(now - t, 0) / 86400, -700))
    # the memex blend, or the bounded multiplicative boost
    score = alpha * rel + (1 - alpha) * rec if kind == "blend" else rel + beta * rec * np.abs(rel)
    if band is not None:  # near-ties (relevance within `band` of the best): newest first
        tied = rel >= rel.max() * (1 - band)
        score = np.where(tied, 10.0 + t / 1e10, score)
    if promote is not None:
        score = _promote_newer(q, score, rel, *promote)
    if oracle and q.get("kind") == "update":
        score = _newest_takes_best_version(q, score)
    order = np.lexsort((-t, -score))
    return [q["labels"][i] for i in order[:10]]


def _promote_newer(
    q: dict[str, Any], score: np.ndarray, rel: np.ndarray, tau: float, rho: float
) -> np.ndarray:
    """Among the 30 best, a memory takes the score of an older one it resembles (cosine
    >= tau) when its own relevance is at least rho times that one's: "supersession"
    guessed from the vectors."""
    pool = np.argsort(-score)[:30]
    vecs = np.stack([q["vectors"][q["labels"][i]] for i in pool])
    cos, t = vecs @ vecs.T, q["t"][pool]
    out = score.copy()
    for a, i in enumerate(pool):
        older = (t < t[a]) & (cos[a] >= tau) & (rel[i] >= rho * rel[pool])
        if older.any():
            out[i] = max(score[i], score[pool][older].max())
    return out


def _newest_takes_best_version(q: dict[str, Any], score: np.ndarray) -> np.ndarray:
    """A bound, not a ranking (it reads the answer): the newest version of an updated fact
    gets the best score of any of its versions, as if the ranking knew which memories
    are versions of one fact (what supersession at write time would record)."""
    versions = [q["labels"].index(x) for x in [*q["older"], q["gold"]]]
    out = score.copy()
    out[versions[-1]] = max(score[i] for i in versions) + 1e-9
    return out


def locomo(data: list[dict[str, Any]], **kw: Any) -> tuple[float, float]:
    h5 = h10 = n = 0
    for q in data:
        if q["cat"] == 5:
            continue
        r = rank(q, **kw)
        n += 1
        h5 += any(x in q["gold"] for x in r[:5])
        h10 += any(x in q["gold"] for x in r)
    return h5 / n, h10 / n


def temporal(data: list[dict[str, Any]], **kw: Any) -> tuple[float, float, float, float]:
    first = up = up5 = both = above = st = st5 = 0
    for q in data:
        r = rank(q, **kw)
        if q["kind"] == "update":
            up += 1
            pos = r.index(q["gold"]) if q["gold"] in r else 99
            older = min([r.index(o) for o in q["older"] if o in r] or [99])
            first += pos < 5 and pos < older
            up5 += pos < 5
            if pos < 99 and older < 99:
                both += 1
                above += pos < older
        else:
            st += 1
            st5 += q["gold"] in r[:5]
    return first / up, up5 / up, above / max(both, 1), st5 / st


def span(fraction: float) -> Callable[[np.ndarray], float]:
    return lambda t: max(float(t.max() - t.min()) / 86400 * fraction, 1.0)


DEFAULT: dict[str, Any] = {"kind": "boost", "beta": 0.25, "hl": 90.0}  # the default request

VARIANTS: list[tuple[str, dict[str, Any]]] = [
    ("memex default: vector, alpha 0.7, hl 30", {"mode": "vector", "alpha": 0.7}),
    ("vector, alpha 1", {"mode": "vector", "alpha": 1.0}),
    ("hybrid, alpha 1", {"alpha": 1.0}),
    ("hybrid, alpha 0.7, hl 30", {"alpha": 0.7}),
    ("hybrid, alpha 0.9, hl 365", {"alpha": 0.9, "hl": 365.0}),
    *[
        (f"hybrid, boost {b}, hl {h}", {"kind": "boost", "beta": b, "hl": h})
        for h in (30.0, 90.0, 180.0)
        for b in (0.25, 0.5, 1.0)
    ],
    ("hybrid, boost 2.0, hl 30", {"kind": "boost", "beta": 2.0}),
    *[
        (
            f"hybrid, boost {b}, hl 30, age from newest memory",
            {"kind": "boost", "beta": b, "ref": "newest"},
        )
        for b in (0.25, 0.5)
    ],
    *[
        (
            f"hybrid, boost 0.25, hl = span/{int(1 / f)}",
            {"kind": "boost", "beta": 0.25, "hl": span(f)},
        )
        for f in (1.0, 0.5, 0.25)
    ],
    ("vector, boost 0.25, hl 90", {"mode": "vector", "kind": "boost", "beta": 0.25, "hl": 90.0}),
    ("vector, boost 1.0, hl 90", {"mode": "vector", "kind": "boost", "beta": 1.0, "hl": 90.0}),
    ("hybrid alpha 1, cosine / best cosine", {"alpha": 1.0, "norm_cosine": True}),
    ("hybrid alpha 1, bm25 / (bm25 + 5)", {"alpha": 1.0, "sat": 5.0}),
    ("hybrid alpha 1, context only lifts", {"alpha": 1.0, "context": "lift"}),
    ("hybrid alpha 1, context within a session", {"alpha": 1.0, "context": "session"}),
    ("hybrid alpha 1, context 0.25", {"alpha": 1.0, "ctx": 0.25}),
    ("hybrid alpha 1, context 1.0", {"alpha": 1.0, "ctx": 1.0}),
    # Relevance normalisation, the idea of "Recall by default, after the merge": cosine
    # min-max scaled over the tenant's candidates before the hybrid blend (BM25 / best
    # BM25 already spans 0..1, raw MiniLM cosine a narrow band of it), the blend's vector
    # weight w swept since the scales change; all with the default tiebreaker.
    *[
        (
            f"default (boost 0.25, hl 90), w {w}{', cosine min-max' if mm else ''}",
            {"kind": "boost", "beta": 0.25, "hl": 90.0, "w": w, "minmax": mm},
        )
        for mm in (False, True)
        for w in (0.3, 0.4, 0.5, 0.6, 0.7)
    ],
    # 2026-12-04: recency among near-ties, supersession guessed from the vectors, rank
    # fusion; all on the default tiebreaker (boost 0.25, hl 90).
    *[
        (f"default, newest first within {b:.0%} of the best relevance", {**DEFAULT, "band": b})
        for b in (0.1, 0.2, 0.3)
    ],
    *[
        (
            f"default, newer memory takes an older one's score at cosine >= {tau},"
            f" own relevance >= {rho} x",
            {**DEFAULT, "promote": (tau, rho)},
        )
        for tau in (0.4, 0.5, 0.6)
        for rho in (0.7, 0.85)
    ],
    *[(f"default with RRF (k {k}) instead of the blend", {**DEFAULT, "rrf": k}) for k in (10, 60)],
    (
        "bound: default + newest version takes its fact's best score (reads the answer)",
        {**DEFAULT, "oracle": True},
    ),
]


def arguments(description: str) -> argparse.ArgumentParser:
    """The options every LoCoMo + temporal-set script takes (this one, embedder_eval)."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("data", type=Path, help="path to locomo10.json")
    parser.add_argument("--seed", type=int, default=7, help="of the temporal set")
    parser.add_argument("--users", type=int, default=20)
    parser.add_argument("--out", type=Path, default=Path("bench/out"))
    return parser


def print_run() -> None:
    """The command line and the machine facts that head every result."""
    print(f"command: python {' '.join(sys.argv)}")
    for key, value in machine_facts().items():
        print(f"{key}: {value}")


def measures(data: dict[str, list[dict[str, Any]]], undated: bool, **kw: Any) -> str:
    """One variant's table cells: LoCoMo hit@5, hit@10, (undated hit@5,) then the
    temporal set's newest first, newest@5, order when both found and stable hit@5."""
    l5, l10 = locomo(data["locomo"], **kw)
    values = [l5, l10]
    if undated:
        values.append(locomo(data["locomo"], undated=True, **kw)[0])
    values.extend(temporal(data["temporal"], **kw))
    return " | ".join(f"{v:.3f}" for v in values)


def main() -> int:
    args = arguments(__doc__.split("\n\n")[0]).parse_args()
    print_run()
    data = fetch(args)
    print(
        "\n| variant | LoCoMo hit@5 | hit@10 | undated hit@5 | newest first | newest@5"
        " | order when both found | stable hit@5 |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for name, kw in VARIANTS:
        print(f"| {name} | {measures(data, True, **kw)} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
