"""Default-ranking ideas for issue 36, re-ranked offline on every guard rail at once:
LoCoMo dated (conversations 0-4, 5-9, all), the temporal set (bench/temporal_set.py) of
both seeds with the plain and the superseding writer, and its point-in-time questions.
Every candidate of every question (similarity, BM25, created_at from
memex._candidates_exact, with supersession's inherited match and p_as_of) and the query's
BM25 statistics (tenant size, mean length, each query term's document frequency among the
memories shown; and each memory's own count of the query terms it holds, its start of
validity and how many memories it superseded) are fetched once from PostgreSQL (cached in
--out: to compare two versions of the SQL, fetch each into its own --out, with the
embedding caches copied), then each formula is
applied in numpy. The numpy ranking of the default formula reproduces memex.search's
default request (checked against bench/locomo_eval.py and bench/temporal_eval.py: the
first row before "Context never buries a strong match", the row "floor 0.8 + duplicates
pushed down (exact, pool 40) + copies lend match" since "Near-duplicates pushed down",
bench/RESULTS.md). The near-duplicate variants read each candidate's text from the
datasets (and its embedding from the embedding caches in --out).

    python bench/time_ranking_grid.py ../shared/data/locomo/locomo10.json   # ~10 min, then cached
    python bench/time_ranking_grid.py ../shared/data/locomo/locomo10.json --misses 7
    python bench/time_ranking_grid.py ../shared/data/locomo/locomo10.json --seeds 7,8,9,10
    python bench/time_ranking_grid.py ... --seeds 7,8,9,10 --pit-misses 7 --variant "holding <= 1"

--seeds adds held-out seeds of the temporal set (cached apart from 7,8); --pit-misses lists
the point-in-time questions whose valid version is not first; --variant picks the variant
whose name holds TEXT for --misses / --pit-misses (default: memex.search's, CHOSEN).

Columns: LoCoMo (categories 1-4) hit@5 for conversations 0-4 / 5-9 / all; per seed: plain
writer newest first, superseding writer newest first, point-in-time valid version first,
stable facts hit@5 (both writers; the lower).
"""

from __future__ import annotations

import argparse
import itertools
import math
import pickle
import re
import shutil
import sys
import tempfile
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
from temporal_eval import PLAIN, SUPERSEDE, load, load_superseding
from temporal_set import build

from memexdb import migrate
from memexdb.embedded import EmbeddedPostgres
from memexdb.embedding import build_embedder

LN2 = math.log(2)
K1, B = 1.2, 0.5
CANDIDATES = """
select m.metadata->>'label', c.similarity, coalesce(c.text_rank, 0),
       extract(epoch from c.created_at), c.importance,
       (select count(*) from unnest(memex._query_terms(%(text)s)) q(lexeme)
        where m.tsv @@ quote_literal(q.lexeme)::tsquery)::float8,
       extract(epoch from coalesce(m.valid_from, m.created_at)),
       cardinality(m.supersedes)
from memex._candidates_exact(%(agent)s, %(user)s, %(embedding)s, memex._query_terms(%(text)s),
                             coalesce(%(as_of)s, %(now)s), false,
                             row(null::memex.memory_type[], null::text, null::jsonb, false,
                                 %(as_of)s::timestamptz, null::timestamptz, null::timestamptz,
                                 null::timestamptz)::memex.search_filters) c
join memex.memories m on m.id = c.id order by c.created_at, c.id
"""
STATS = """
select count(*)::float8, avg(m.tsv_length)::float8,
       (select coalesce(array_agg(f.df order by f.lexeme), '{}')
        from (select t.lexeme,
                     count(*) filter (where l.tsv @@ quote_literal(t.lexeme)::tsquery)::float8 as df
              from unnest(memex._query_terms(%(text)s)) t(lexeme)
              cross join memex._live_memories(%(agent)s, %(user)s, null, null, %(now)s, null,
                                              false, false, %(as_of)s, null, null, null) l
              group by t.lexeme) f)
from memex._live_memories(%(agent)s, %(user)s, null, null, %(now)s, null, false, false,
                          %(as_of)s, null, null, null) m
"""


def fetch(args: argparse.Namespace) -> dict[str, Any]:
    cache = args.out / (
        "time-grid-3.pkl"
        if args.seeds == [7, 8]
        else f"time-grid-3-{'-'.join(map(str, args.seeds))}.pkl"
    )
    if cache.exists():
        loaded: dict[str, Any] = pickle.loads(cache.read_bytes())
        return loaded
    model = CachedEmbedder(build_embedder("minilm"), args.out / "locomo-embeddings.npz")
    tmodel = CachedEmbedder(build_embedder("minilm"), args.out / "temporal-embeddings.npz")
    convs = load_dataset(args.data)
    root = Path(tempfile.mkdtemp(prefix="memexdb-tgrid-", dir="/var/tmp"))
    root.chmod(0o755)
    server = EmbeddedPostgres(root / "pg")
    out: dict[str, Any] = {"locomo": [], "seeds": {}}
    try:
        dsn = server.start()
        migrate(dsn)
        with psycopg.connect(dsn, autocommit=True, prepare_threshold=0) as conn:
            register_vector(conn)

            def candidates(**p: Any) -> dict[str, Any]:
                p.setdefault("as_of", None)
                rows = conn.execute(CANDIDATES, p).fetchall()
                n, avgdl, df = conn.execute(STATS, p).fetchone()  # type: ignore[misc]
                return {
                    "now": (p["as_of"] or p["now"]).timestamp(),
                    "labels": [r[0] for r in rows],
                    "sim": np.array([r[1] for r in rows]),
                    "bm25": np.array([float(r[2]) for r in rows]),
                    "t": np.array([float(r[3]) for r in rows]),
                    # halved once valid_to passed (memex._valid_importance): the versions
                    # before the one valid at a point in time
                    "importance": np.array([float(r[4]) for r in rows]),
                    # the query terms each memory's own text holds (not inherited)
                    "nheld": np.array([float(r[5]) for r in rows]),
                    "valid_from": np.array([float(r[6]) for r in rows]),
                    "supersedes": np.array([float(r[7] or 0) for r in rows]),
                    "n": n,
                    "avgdl": avgdl or 1.0,
                    "df": np.array(df, dtype=float),
                }

            for c in convs:
                turns = c.turns
                conn.execute(
                    "select count(*) from memex.store_many(%s, %s, %s, %s, 'm', null, null,"
                    " %s, null, %s)",
                    (
                        ["locomo"] * len(turns),
                        [c.sample_id] * len(turns),
                        [t["content"] for t in turns],
                        list(model.embed([t["content"] for t in turns])),
                        [Jsonb({"label": t["dia_id"]}) for t in turns],
                        [t["at"] for t in turns],
                    ),
                )
            conn.execute("analyze memex.memories")
            for index, c in enumerate(convs):
                asked = model.embed([q.text for q in c.questions])
                for q, v in zip(c.questions, asked, strict=True):
                    found = candidates(
                        agent="locomo", user=c.sample_id, embedding=v, text=q.text, now=c.end
                    )
                    out["locomo"].append(
                        {"conv": index, "cat": q.category, "gold": q.evidence, **found}
                    )
            print("locomo fetched", flush=True)
            for seed in args.seeds:
                data = build(seed, 20)
                for u in data["users"]:  # one tenant per seed and user
                    u["user"] = f"s{seed}-{u['user']}"
                load(conn, data, tmodel)
                load_superseding(conn, data, tmodel)
                at = {
                    m["id"]: datetime.fromisoformat(m["at"])
                    for u in data["users"]
                    for m in u["memories"]
                }
                seed_out: dict[str, list[dict[str, Any]]] = {
                    "plain": [],
                    "supersede": [],
                    "pit": [],
                }
                for u in data["users"]:
                    now = datetime.fromisoformat(u["asked_at"])
                    asked = tmodel.embed([q["query"] for q in u["questions"]])
                    for tq, v in zip(u["questions"], asked, strict=True):
                        for writer, agent in (("plain", PLAIN), ("supersede", SUPERSEDE)):
                            seed_out[writer].append(
                                {
                                    **tq,
                                    **candidates(
                                        agent=agent,
                                        user=u["user"],
                                        embedding=v,
                                        text=tq["query"],
                                        now=now,
                                    ),
                                }
                            )
                        if tq["kind"] != "update":
                            continue
                        chain = [*tq["older"], tq["gold"]]
                        for held, following in itertools.pairwise(chain):
                            moment = at[held] + (at[following] - at[held]) / 2
                            seed_out["pit"].append(
                                {
                                    "held": held,
                                    "chain": chain,
                                    **candidates(
                                        agent=SUPERSEDE,
                                        user=u["user"],
                                        embedding=v,
                                        text=tq["query"],
                                        now=moment,
                                        as_of=moment,
                                    ),
                                }
                            )
                out["seeds"][seed] = seed_out
                print(f"seed {seed} fetched", flush=True)
    finally:
        server.stop()
        shutil.rmtree(root, ignore_errors=True)
    args.out.mkdir(parents=True, exist_ok=True)
    cache.write_bytes(pickle.dumps(out))
    return out


def attach_contents(data: dict[str, Any], args: argparse.Namespace) -> None:
    """Each candidate's content and embedding (from the datasets and the embedding caches),
    for the near-duplicate variants."""
    convs = load_dataset(args.data)
    vectors: dict[str, np.ndarray] = {}
    for name in ("locomo-embeddings.npz", "temporal-embeddings.npz"):
        with np.load(args.out / name, allow_pickle=False) as saved:
            vectors.update(zip(saved["texts"].tolist(), saved["vectors"], strict=True))
    for q in data["locomo"]:
        text = {t["dia_id"]: t["content"] for t in convs[q["conv"]].turns}
        q["contents"] = [text[label] for label in q["labels"]]
        q["vectors"] = [vectors[c] for c in q["contents"]]
    for seed, s in data["seeds"].items():
        text = {m["id"]: m["content"] for u in build(seed, 20)["users"] for m in u["memories"]}
        for group in s.values():
            for q in group:
                q["contents"] = [text[label] for label in q["labels"]]
                q["vectors"] = [vectors[c] for c in q["contents"]]


def _shift(a: np.ndarray, k: int) -> np.ndarray:
    out = np.full_like(a, np.nan)
    if k > 0:
        out[k:] = a[:-k]
    else:
        out[:k] = a[-k:]
    return out


def idf(df: np.ndarray, n: float) -> np.ndarray:
    out: np.ndarray = np.log(1.0 + (np.maximum(n, df) - df + 0.5) / (df + 0.5))
    return out


def rank(
    q: dict[str, Any],
    *,
    w: float = 0.5,
    ctx: float = 0.5,
    norm: str = "best",
    cap: float | None = None,
    context: str = "blend",
    beta: float = 0.25,
    hl: float = 90.0,
    lift: float = 1.0,
    gate: bool = False,
    dedup: str | None = None,
    threshold: float = 0.95,
    pool: int = 40,
    lend: str | None = None,
    similar: float | None = None,
    gate_power: float = 1.0,
    gate_from: float = 1.0,
    gate_terms: int | None = None,
    gate_count: str = "held",
) -> list[str]:
    sim, bm, t = q["sim"], q["bm25"], q["t"]
    if len(sim) == 0:
        return []
    best = bm.max()
    if norm == "best":
        denominator = best
    else:
        held = q["df"][q["df"] > 0]
        if norm.startswith("held"):  # a memory holding every query term some memory holds, once
            attain = float(idf(held, q["n"]).sum())
        elif norm.startswith("all"):  # ... every query term (a term nobody holds counts too)
            attain = float(idf(q["df"], q["n"]).sum())
        else:
            raise ValueError(norm)
        denominator = max(attain, best) if norm.endswith("-max") else attain
    text = bm / denominator if denominator > 0 else bm * 0
    if cap is not None:
        text = np.minimum(text, cap)
    terms = int((q["df"] > 0).sum()) if gate_count == "held" else len(q["df"])
    if gate and gate_count == "memory":
        # each memory by the query terms its own text holds: one of them (or none: an
        # inherited match) needs the vector's agreement, whatever the query's length
        near = np.clip(sim / max(gate_from * sim.max(), 1e-9), 0, 1)
        text = np.where(q["nheld"] <= (gate_terms or 1), text * near**gate_power, text)
    elif gate and (gate_terms is None or terms <= gate_terms):
        # a text match counts as far as the memory is also near the query: fully from
        # gate_from x the best cosine up, below in proportion (to the power gate_power)
        near = np.clip(sim / max(gate_from * sim.max(), 1e-9), 0, 1)
        text = text * near**gate_power
    own = w * sim + (1 - w) * text

    lent = own
    if lend is not None:  # what a memory lends its neighbours when its content is repeated
        groups: dict[Any, list[int]] = {}
        for i, c in enumerate(q["contents"]):
            # "match": the same similarity and BM25 score (what memex.search sees of a
            # repeated text without reading it), else the same content
            if lend == "match" and bm[i] <= 0:
                continue  # the rule counts copies that match a query term only
            key = (float(sim[i]), float(bm[i])) if lend == "match" else c
            groups.setdefault(key, []).append(i)
        lent = own.copy()
        for members in groups.values():
            if len(members) < 2:
                continue
            idx = np.array(members)
            if lend == "match":  # only the newest copy lends
                keep = idx[np.argmax(t[idx])]
                lent[idx] = 0.0
                lent[keep] = own[keep]
            elif lend == "once":  # only the best-matching copy lends
                keep = idx[np.argmax(own[idx])]
                lent[idx] = 0.0
                lent[keep] = own[keep]
            elif lend == "split":  # the copies share one memory's lending
                lent[idx] = own[idx] / len(members)
            else:
                raise ValueError(lend)

    def nb(k: int) -> np.ndarray:
        return _shift(lent, k)

    def pick(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        out: np.ndarray = np.nan_to_num(np.fmax(a, b), nan=0.0)
        return out

    windowed = (own + ctx * pick(nb(1), nb(-1)) + ctx / 2 * pick(nb(2), nb(-2))) / (1 + 1.5 * ctx)
    if context == "blend":
        rel = windowed
    elif context == "lift":  # max(window, own - (1 - lift) |own|): memex.search's floor
        rel = np.maximum(own - (1 - lift) * np.abs(own), windowed)
    elif context == "vector-lift":  # an isolated strong vector match keeps its own similarity
        rel = np.maximum(lift * sim, windowed)
    else:
        raise ValueError(context)
    rec = np.exp(np.maximum(-LN2 / hl * np.maximum(q["now"] - t, 0) / 86400, -700))
    score = (rel + beta * rec * np.abs(rel)) * q["importance"]
    order = np.lexsort((-t, -score))
    if dedup is not None:
        order = _pushed_down(q, order, dedup, threshold, pool)
    if similar is not None:
        order = _pushed_down(q, order, "cos", similar, pool)
    return [q["labels"][i] for i in order[:10]]


def _pushed_down(
    q: dict[str, Any], order: np.ndarray, dedup: str, threshold: float, pool: int
) -> np.ndarray:
    """Near-duplicates pushed down: among the first `pool` of the ranking, a memory with the
    same content as a higher-ranked one ('exact') or a cosine >= threshold to it ('cos')
    goes after the distinct ones (nothing is dropped)."""
    head = order[:pool]
    contents = [q["contents"][i] for i in head]
    if dedup == "exact":  # the same text, case and punctuation aside (memex._duplicates_last)
        seen: set[str] = set()
        dup = []
        for c in contents:
            key = re.sub(r"[\W_]+", " ", c.lower()).strip()
            dup.append(key in seen)
            seen.add(key)
        flags = np.array(dup)
    elif dedup == "cos":
        v = np.stack([q["vectors"][i] for i in head])
        v = v / np.linalg.norm(v, axis=1, keepdims=True)
        sims = np.triu(v @ v.T, k=1)  # sims[i, j]: i ranked above j
        flags = (sims >= threshold).any(axis=0)
    else:
        raise ValueError(dedup)
    return np.concatenate([head[~flags], head[flags], order[pool:]])


def locomo(data: list[dict[str, Any]], convs: range, hide_older: bool = False, **kw: Any) -> float:
    hits = n = 0
    for q in data:
        if q["cat"] == 5 or q["conv"] not in convs:
            continue
        r = rank(q, **kw)
        n += 1
        hits += any(x in q["gold"] for x in r[:5])
    return hits / n


def temporal(
    data: list[dict[str, Any]], hide_older: bool = False, **kw: Any
) -> tuple[float, float]:
    first = up = st = st5 = 0
    for q in data:
        r = rank(q, **kw)
        if q["kind"] == "update":
            up += 1
            pos = r.index(q["gold"]) if q["gold"] in r else 99
            older = min([r.index(o) for o in q["older"] if o in r] or [99])
            first += pos < 5 and pos < older
        else:
            st += 1
            st5 += q["gold"] in r[:5]
    return first / up, st5 / st


def _older_hidden(q: dict[str, Any]) -> dict[str, Any]:
    """A point-in-time question's candidates without the versions older than the one valid
    then (what the search sees when a superseded memory is hidden from its successor's
    recording on, not from the wall-clock moment the backdated store ran)."""
    older = set(q["chain"][: q["chain"].index(q["held"])])
    keep = np.array([label not in older for label in q["labels"]], dtype=bool)
    out = dict(q)
    for key in ("sim", "bm25", "t", "importance"):
        out[key] = q[key][keep]
    for key in ("labels", "contents", "vectors"):
        if key in q:
            out[key] = [x for x, k in zip(q[key], keep, strict=True) if k]
    return out


def pit(data: list[dict[str, Any]], hide_older: bool = False, **kw: Any) -> float:
    first = 0
    for q in data:
        if hide_older:
            q = _older_hidden(q)
        r = rank(q, **kw)
        pos = r.index(q["held"]) if q["held"] in r else 99
        others = [r.index(o) for o in q["chain"] if o != q["held"] and o in r]
        first += pos < 5 and pos < min(others, default=99)
    return first / len(data)


def measures(data: dict[str, Any], **kw: Any) -> list[float]:
    values = [locomo(data["locomo"], c, **kw) for c in (range(0, 5), range(5, 10), range(10))]
    for seed in data["seeds"]:
        s = data["seeds"][seed]
        plain, plain_st = temporal(s["plain"], **kw)
        sup, sup_st = temporal(s["supersede"], **kw)
        values += [plain, sup, pit(s["pit"], **kw), min(plain_st, sup_st)]
    return values


def _dedup_name(mode: str, threshold: float) -> str:
    return mode if mode == "exact" else f"{mode} >= {threshold}"


# the default before "A one-word match needs the vector's agreement"
CHOSEN_: dict[str, Any] = {
    "context": "lift",
    "lift": 0.8,
    "dedup": "exact",
    "pool": 40,
    "lend": "match",
}

VARIANTS: list[tuple[str, dict[str, Any]]] = [
    ("default request (main)", {}),
    # BM25 divided by what the query could attain (a memory holding each query term once,
    # of mean length: the sum of the terms' idf) instead of by the best candidate's
    *[
        (f"BM25 / attainable (held terms), w {w}", {"norm": "held", "w": w})
        for w in (0.3, 0.4, 0.5)
    ],
    *[(f"BM25 / attainable (all terms), w {w}", {"norm": "all", "w": w}) for w in (0.3, 0.4, 0.5)],
    # a text match counts as far as the memory is also near the query (cosine / best cosine)
    ("BM25 gated by cosine / best cosine", {"gate": True}),
    # the context window costs a memory at most (1 - floor) of its own relevance
    *[
        (f"context floor {f}: max(window, {f} own)", {"context": "lift", "lift": f})
        for f in (0.6, 0.7, 0.75, 0.8, 0.85, 0.9, 1.0)
    ],
    # ... or of its own cosine only (the vector part of the blend)
    *[
        (f"max(window, {f} w cosine)", {"context": "vector-lift", "lift": f * 0.5})
        for f in (0.7, 0.8, 2.0)
    ],
    # combinations
    *[
        (
            f"context floor 0.8 + BM25 / attainable (all terms), w {w}",
            {"context": "lift", "lift": 0.8, "norm": "all", "w": w},
        )
        for w in (0.4, 0.5)
    ],
    ("context floor 0.8 + BM25 gated by cosine", {"context": "lift", "lift": 0.8, "gate": True}),
    # near-duplicates pushed down (issue 36, "Near-duplicates pushed down"): on the default
    # request (context floor 0.8), a memory the same as a higher-ranked one goes after the
    # distinct memories among the first `pool`
    *[
        (
            f"floor 0.8 + duplicates pushed down ({_dedup_name(mode, th)}, pool {pool})",
            {"context": "lift", "lift": 0.8, "dedup": mode, "threshold": th, "pool": pool},
        )
        for mode, th, pool in [
            ("exact", 1.0, 40),
        ]
    ],
    *[
        (
            f"floor 0.8 + duplicates pushed down (exact, pool 40) + copies lend {lend}",
            {"context": "lift", "lift": 0.8, "dedup": "exact", "pool": 40, "lend": lend},
        )
        for lend in ("once", "split", "match")
    ],
    *[
        (
            f"floor 0.8 + duplicates pushed down (cos >= {th}, pool {pool}) + copies lend {lend}",
            {
                "context": "lift",
                "lift": 0.8,
                "dedup": "cos",
                "threshold": th,
                "pool": pool,
                "lend": lend,
            },
        )
        for th, pool, lend in [
            (0.95, 40, "match"),
            (0.95, 40, "once"),
            (0.95, 40, "split"),
            (0.9, 40, "once"),
            (0.9, 40, "split"),
            (0.95, 20, "once"),
            (0.95, 100, "once"),
        ]
    ],
    *[
        (f"floor 0.8 + copies lend {lend}", {"context": "lift", "lift": 0.8, "lend": lend})
        for lend in ("once", "split")
    ],
    *[
        (
            f"floor 0.8 + duplicates pushed down ({_dedup_name(mode, th)}, pool {pool})",
            {"context": "lift", "lift": 0.8, "dedup": mode, "threshold": th, "pool": pool},
        )
        for mode, th, pool in [
            ("cos", 0.99, 40),
            ("cos", 0.95, 40),
            ("cos", 0.9, 40),
            ("cos", 0.95, 20),
            ("cos", 0.95, 100),
        ]
    ],
]


VARIANTS += [
    (
        "chosen + point in time: older versions hidden from their successor's recording",
        {**CHOSEN_, "hide_older": True},
    ),
    *[
        (
            f"floor 0.8 + pushed down (exact) + lend match + similar pushed down (cos >= {th})",
            {**CHOSEN_, "similar": th},
        )
        for th in (0.9, 0.85, 0.8, 0.75, 0.7)
    ],
]

VARIANTS += [
    *[
        (
            f"chosen + BM25 gated by cosine / ({f} best cosine), power {pw}"
            + (f", queries holding <= {nt} terms" if nt else ""),
            {**CHOSEN_, "gate": True, "gate_from": f, "gate_power": pw, "gate_terms": nt},
        )
        for f, pw, nt in [
            (1.0, 1.0, None),
            (1.0, 0.5, None),
            (0.8, 1.0, None),
            (0.6, 1.0, None),
            (0.6, 2.0, None),
            (0.5, 2.0, None),
            (1.0, 1.0, 1),
            (0.8, 1.0, 1),
            (0.6, 2.0, 1),
            (1.0, 0.75, None),
            (1.0, 0.6, None),
            (1.0, 0.4, None),
            (0.9, 0.5, None),
            (1.0, 2.0, 1),
            (1.0, 0.5, 2),
        ]
    ],
    *[
        (
            f"chosen + BM25 gated by cosine / best cosine, power {pw}, queries of <= {nt} terms",
            {**CHOSEN_, "gate": True, "gate_power": pw, "gate_terms": nt, "gate_count": "all"},
        )
        for pw, nt in [(1.0, 1), (2.0, 1), (1.0, 2), (2.0, 2), (3.0, 1)]
    ],
    *[
        (
            f"chosen + BM25 gated by cosine / ({f} best cosine), power {pw}, queries of <= 1 terms",
            {
                **CHOSEN_,
                "gate": True,
                "gate_from": f,
                "gate_power": pw,
                "gate_terms": 1,
                "gate_count": "all",
            },
        )
        for f, pw in [(0.9, 2.0), (0.8, 2.0), (0.8, 3.0), (0.7, 3.0), (0.9, 3.0)]
    ],
    (
        "chosen + BM25 gated by cosine / best cosine, power 3.0, queries holding <= 1 terms",
        {**CHOSEN_, "gate": True, "gate_power": 3.0, "gate_terms": 1},
    ),
]

# memex.search's default since issue 36: the context floor 0.8, repeated texts pushed down
# (pool 2 x top_k + 20 = 40) and lending context from their newest copy only; a query of
# one term weighs its text part by min(1, cosine / (0.9 best cosine))^3 ("A one-word match
# needs the vector's agreement")
CHOSEN: dict[str, Any] = {
    **CHOSEN_,
    "gate": True,
    "gate_from": 0.9,
    "gate_power": 3.0,
    "gate_terms": 1,
    "gate_count": "all",
}

VARIANTS += [
    ("memex.search's default (chosen)", CHOSEN),
    *[
        (
            f"chosen, the one-term gate (f {f}, p {pw}) on memories holding <= 1 query terms",
            {**CHOSEN, "gate_from": f, "gate_power": pw, "gate_count": "memory"},
        )
        for f, pw in [(0.9, 3.0), (1.0, 3.0), (0.9, 2.0)]
    ],
]


def misses(data: dict[str, Any], seed: int, **kw: Any) -> None:
    """The superseding writer's updates whose newest version is not in the first 5, one by
    one: the question, the newest version and the first 5 (cosine, BM25 / best BM25)."""
    content = {m["id"]: m["content"] for u in build(seed, 20)["users"] for m in u["memories"]}
    for q in data["seeds"][seed]["supersede"]:
        ranked = rank(q, **kw)
        if q["kind"] != "update" or q["gold"] in ranked[:5]:
            continue
        at = ranked.index(q["gold"]) + 1 if q["gold"] in ranked else "> 10"
        print(f"\n{q['query']!r} (newest version at {at})")
        for mark, label in [("newest", q["gold"]), *(("", x) for x in ranked[:5])]:
            i = q["labels"].index(label)
            best = q["bm25"].max()
            print(
                f"  {mark:6} cosine {q['sim'][i]:.3f} BM25 {q['bm25'][i]:.2f} / {best:.2f}"
                f"  {content[label][:70]!r}"
            )


def pit_misses(data: dict[str, Any], seed: int, **kw: Any) -> None:
    """The point-in-time questions whose valid version is not first, one by one: the
    question, where the valid version and the other versions of the fact are, and the
    first 5 (cosine, BM25 / best BM25, importance)."""
    users = build(seed, 20)["users"]
    content = {m["id"]: m["content"] for u in users for m in u["memories"]}
    query = {q["gold"]: q["query"] for u in users for q in u["questions"] if q["kind"] == "update"}
    for q in data["seeds"][seed]["pit"]:
        ranked = rank(q, **kw)
        pos = ranked.index(q["held"]) if q["held"] in ranked else 99
        others = [ranked.index(o) for o in q["chain"] if o != q["held"] and o in ranked]
        if pos < 5 and pos < min(others, default=99):
            continue
        kinds = {
            o: ("older" if q["chain"].index(o) < q["chain"].index(q["held"]) else "later")
            for o in q["chain"]
            if o != q["held"]
        }
        print(
            f"\n{query[q['chain'][-1]]!r} (valid version at {pos + 1 if pos < 99 else '> 10'};"
            f" other versions at {[(ranked.index(o) + 1, kinds[o]) for o in kinds if o in ranked]})"
        )
        best = q["bm25"].max()
        for mark, label in [("valid", q["held"]), *(("", x) for x in ranked[:5])]:
            if label not in q["labels"]:
                print(f"  {mark:6} (not a candidate) {content[label][:70]!r}")
                continue
            i = q["labels"].index(label)
            tag = kinds.get(label, mark)
            print(
                f"  {tag:6} cosine {q['sim'][i]:.3f} BM25 {q['bm25'][i]:.2f} / {best:.2f}"
                f" imp {q['importance'][i]:.2f}  {content[label][:64]!r}"
            )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("data", type=Path, help="path to locomo10.json")
    parser.add_argument("--out", type=Path, default=Path("bench/out"))
    parser.add_argument(
        "--misses", type=int, metavar="SEED", help="list the chosen ranking's misses of a seed"
    )
    parser.add_argument(
        "--pit-misses",
        type=int,
        metavar="SEED",
        help="list the chosen ranking's point-in-time misses of a seed",
    )
    parser.add_argument(
        "--variant", metavar="TEXT", help="--misses / --pit-misses of the variant named TEXT"
    )
    parser.add_argument("--only", metavar="TEXT", help="only the variants whose name contains TEXT")
    parser.add_argument(
        "--seeds",
        default="7,8",
        help="temporal set seeds, comma-separated (7,8 are the targets; others check that a"
        " change generalizes)",
    )
    args = parser.parse_args()
    args.seeds = [int(x) for x in args.seeds.split(",")]
    print(f"command: python {' '.join(sys.argv)}")
    for key, value in machine_facts().items():
        print(f"{key}: {value}")
    data = fetch(args)
    attach_contents(data, args)
    chosen = CHOSEN
    if args.variant:  # the misses of another variant (the first whose name holds TEXT)
        chosen = next(kw for name, kw in VARIANTS if args.variant in name)
    if args.misses:
        misses(data, args.misses, **chosen)
        return 0
    if args.pit_misses:
        pit_misses(data, args.pit_misses, **chosen)
        return 0
    header = ["variant", "LoCoMo hit@5 0-4", "5-9", "all"]
    for seed in data["seeds"]:
        header += [
            f"s{seed} plain",
            f"s{seed} supersede",
            f"s{seed} point in time",
            f"s{seed} stable@5",
        ]
    print("\n| " + " | ".join(header) + " |")
    print("|---|" + "---|" * (len(header) - 1))
    for name, kw in VARIANTS:
        if args.only and args.only not in name:
            continue
        print(
            f"| {name} | " + " | ".join(f"{v:.3f}" for v in measures(data, **kw)) + " |", flush=True
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
