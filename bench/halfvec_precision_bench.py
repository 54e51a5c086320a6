"""Does storing the int8 MiniLM's vectors at float16 (revision 0037, halfvec) change what a
search finds? On LoCoMo (every dialogue turn of each of the 10 conversations a memory,
every question a query against its own conversation), the exact top 10 by cosine with
the memories at float32 (as before) and at float16 (as stored now, the query cast too, as
memex.search casts it): identical lists, recall@10 of float16 against float32, the
largest change of a cosine, and the evidence turns found in the top 10 both ways.

    python bench/halfvec_precision_bench.py /work/shared/data/locomo/locomo10.json
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from harness import log, print_header, run_main, write_json
from machine import machine_facts

from memexdb.embedding.factory import build_embedder


def top10(memories: np.ndarray, queries: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    cosine = (queries @ memories.T) / (
        np.linalg.norm(queries, axis=1, keepdims=True) * np.linalg.norm(memories, axis=1)
    )
    return np.argsort(-cosine, axis=1, kind="stable")[:, :10], cosine


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("locomo", type=Path, help="locomo10.json")
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "out")
    args = parser.parse_args(argv)
    facts = machine_facts()
    command = print_header(facts)
    embedder = build_embedder("minilm")
    same = queries_n = memories_n = 0
    recall: list[float] = []
    evidence32 = evidence16 = evidence_n = 0
    worst = 0.0
    for sample in json.loads(args.locomo.read_text()):
        conv = sample["conversation"]
        turns = [
            t
            for key, value in conv.items()
            if key.startswith("session_") and isinstance(value, list)
            for t in value
        ]
        qa = [q for q in sample["qa"] if q.get("question")]
        m32 = np.asarray(embedder.embed([t["text"] for t in turns]), dtype=np.float32)
        q32 = np.asarray(embedder.embed([q["question"] for q in qa]), dtype=np.float32)
        m16 = m32.astype(np.float16).astype(np.float32)
        q16 = q32.astype(np.float16).astype(np.float32)
        top32, cos32 = top10(m32, q32)
        top16, cos16 = top10(m16, q16)
        worst = max(worst, float(np.abs(cos32 - cos16).max()))
        ids = [t["dia_id"] for t in turns]
        for i, q in enumerate(qa):
            same += int(np.array_equal(top32[i], top16[i]))
            recall.append(len(set(top32[i]) & set(top16[i])) / 10)
            wanted = set(q.get("evidence") or [])
            if wanted:
                evidence_n += 1
                evidence32 += int(bool(wanted & {ids[k] for k in top32[i]}))
                evidence16 += int(bool(wanted & {ids[k] for k in top16[i]}))
        queries_n += len(qa)
        memories_n += len(turns)
        log(f"{sample['sample_id']}: {len(turns)} turns, {len(qa)} questions")
    result: dict[str, Any] = {
        "memories": memories_n,
        "queries": queries_n,
        "top10_identical": same / queries_n,
        "recall_at_10_float16_vs_float32": float(np.mean(recall)),
        "max_cosine_change": worst,
        "evidence_in_top10_float32": evidence32 / evidence_n,
        "evidence_in_top10_float16": evidence16 / evidence_n,
    }
    print()
    print("| measure | value |")
    print("|---|---:|")
    for key, value in result.items():
        print(f"| {key} | {value:.4f} |" if isinstance(value, float) else f"| {key} | {value} |")
    report = {"command": command, "machine": facts, "results": result}
    log(f"wrote {write_json(args.out, 'halfvec_precision', report)}")
    return 0


if __name__ == "__main__":
    run_main(main)
