"""LoCoMo through the LangGraph store: which order should `MemexStore.asearch` give?

Each conversation's turns are put as items (`{"text": turn}`, `index_fields=["text"]`)
into one MemexStore (in-process, a fresh embedded database); each question is asked with
`asearch(("turns",), query=question, limit=100)`. hit@k counts a gold turn among the first
k items of two orders of that same list: memexdb's ranking (what the store returns) and
the list sorted by `score` (the cosine similarity, LangGraph's own stores' order). The
store cannot back-date a put, so every turn is stored "now" (recency cannot help).

    python bench/langgraph_locomo.py ../shared/data/locomo/locomo10.json
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import sys
import tempfile
import time
from pathlib import Path

from langgraph.store.base import PutOp

sys.path.insert(0, str(Path(__file__).resolve().parent))
from locomo_eval import load_dataset
from machine import machine_facts

from memexdb import AsyncMemex, migrate
from memexdb.embedded import EmbeddedPostgres
from memexdb.langgraph_store import MemexStore

KS = (1, 5, 10)


async def run(dsn: str, data: Path) -> dict[str, dict[int, float]]:
    conversations = load_dataset(data, "now")
    memex = await AsyncMemex.connect(dsn)
    hits: dict[str, dict[int, int]] = {"memexdb": dict.fromkeys(KS, 0), "score": {}}
    hits["score"] = dict.fromkeys(KS, 0)
    asked = 0
    try:
        started = time.perf_counter()
        stores = {}
        for conv in conversations:
            store = MemexStore(memex, "locomo-store", conv.sample_id, index_fields=["text"])
            stores[conv.sample_id] = store
            ops = [PutOp(("turns",), t["dia_id"], {"text": t["content"]}) for t in conv.turns]
            await store.abatch(ops)
        print(
            f"put {sum(len(c.turns) for c in conversations)} turns in"
            f" {time.perf_counter() - started:.1f} s"
        )
        started = time.perf_counter()
        for conv in conversations:
            store = stores[conv.sample_id]
            for q in conv.questions:
                if q.category == 5:
                    continue  # adversarial: no answer to find
                found = await store.asearch(("turns",), query=q.text, limit=100)
                by_score = sorted(found, key=lambda h: h.score or 0.0, reverse=True)
                asked += 1
                for name, order in (("memexdb", found), ("score", by_score)):
                    for k in KS:
                        if any(h.key in q.evidence for h in order[:k]):
                            hits[name][k] += 1
        print(f"asked {asked} questions in {time.perf_counter() - started:.1f} s")
    finally:
        await memex.aclose()
    return {name: {k: n / asked for k, n in by_k.items()} for name, by_k in hits.items()}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("data", type=Path, help="path to locomo10.json")
    args = parser.parse_args()
    print(f"command: python {' '.join(sys.argv)}")
    for key, value in machine_facts().items():
        print(f"{key}: {value}")
    root = Path(tempfile.mkdtemp(prefix="memexdb-lg-locomo-", dir="/var/tmp"))
    root.chmod(0o755)
    server = EmbeddedPostgres(root / "pg")
    try:
        dsn = server.start()
        migrate(dsn)
        results = asyncio.run(run(dsn, args.data))
        print("order     hit@1  hit@5  hit@10  (categories 1-4)")
        for name, by_k in results.items():
            print(f"{name:8}  " + "  ".join(f"{by_k[k]:.3f}" for k in KS))
    finally:
        server.stop()
        shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
