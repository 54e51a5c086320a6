"""The raw embedder's throughput, old against new, interleaved in one run.

Variants of LocalMiniLM (same tokenizer, same pooling) embed the same batches, round
after round in turn, so machine noise hits them alike; the table gives each variant's
median texts/s over the rounds and its median ratio to the first variant (ratios taken
within a round). Three text sets: the load test's short texts (bench/load_workload.py,
unique), ~300-word texts (truncated to 256 tokens by the model), and the two mixed one
long to three short, as a service batching conversation turns with queries would see.
It also prints the lowest cosine of each variant's vectors against the first's.

    .venv/bin/python bench/embed_bench.py --threads 1 --rounds 7
"""

import argparse
import random
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from load_workload import Texts

from memexdb.embedding.local_minilm import LocalMiniLM

VARIANTS: dict[str, dict[str, bool]] = {
    # the bundled graph, batches as they come (what main ran before)
    "bundled": {"fused": False, "group_by_length": False},
    "fused": {"fused": True, "group_by_length": False},
    "bundled+grouped": {"fused": False, "group_by_length": True},
    "fused+grouped": {"fused": True, "group_by_length": True},
}


def text_sets(rng: random.Random, batch: int, batches: int) -> dict[str, list[list[str]]]:
    texts = Texts("unique", rng, start=20_000_000)
    words = [w for _ in range(300) for w in texts.memory().split()]

    def long() -> str:
        return " ".join(rng.choice(words) for _ in range(300))

    def mixed() -> str:
        return long() if rng.randrange(4) == 0 else texts.mixed()

    makers: dict[str, Callable[[], str]] = {"short": texts.mixed, "~300 words": long}
    makers["1 long : 3 short"] = mixed
    return {
        name: [[make() for _ in range(batch)] for _ in range(batches)]
        for name, make in makers.items()
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--threads", type=int, default=1, help="ONNX threads")
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--batches", type=int, default=4, help="batches per set and round")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--variants", default=",".join(VARIANTS), help="comma-separated")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args(argv)
    names = [v for v in args.variants.split(",") if v]
    models = {n: LocalMiniLM(threads=args.threads, **VARIANTS[n]) for n in names}
    sets = text_sets(random.Random(args.seed), args.batch, args.batches)
    print(
        f"threads {args.threads}, batch {args.batch}, {args.batches} batches a set,"
        f" rounds {args.rounds}"
    )
    print(
        "| texts | variant | texts/s (median) | ratio to the first (median)"
        " | min cosine to the first |"
    )
    print("|---|---|---:|---:|---:|")
    for set_name, batches in sets.items():
        for model in models.values():  # warm-up
            model.embed(batches[0])
        rates: dict[str, list[float]] = {n: [] for n in names}
        vectors: dict[str, np.ndarray] = {}
        for r in range(args.rounds):
            order = names if r % 2 == 0 else names[::-1]
            for n in order:
                start = time.perf_counter()
                out = [models[n].embed(b) for b in batches]
                rates[n].append(len(batches) * args.batch / (time.perf_counter() - start))
                vectors[n] = np.concatenate(out)
        first = names[0]
        for n in names:
            ratio = statistics.median(a / b for a, b in zip(rates[n], rates[first], strict=True))
            cos = float((vectors[n] * vectors[first]).sum(axis=1).min())
            rate = statistics.median(rates[n])
            print(f"| {set_name} | {n} | {rate:.1f} | {ratio:.2f} | {cos:.6f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
