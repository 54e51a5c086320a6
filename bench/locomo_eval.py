"""Retrieval quality on LoCoMo: hit@1/5/10 and MRR of memex.search against the gold
evidence turns, per question category, for the default request (no ranking options, what
a client sending only query and top_k gets), vector, text and hybrid modes and several
recency settings.

One tenant per conversation, each turn one memory (``speaker: text``, plus the caption of
a shared image) back-dated to its session's date; each question is searched in its
conversation with "now" = the end of that conversation. Category 5 (adversarial) is
reported apart. The dataset is read from the path given; nothing of it is stored in the
project. ``--timestamps now`` stores every turn at the same moment instead (recency then
cannot help or hurt: a check that a ranking idea does not live off the dates).

    python bench/locomo_eval.py ../shared/data/locomo/locomo10.json
    python bench/locomo_eval.py ../shared/data/locomo/locomo10.json --timestamps now
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import sys
import tempfile
import time
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import psycopg
from pgvector.psycopg import register_vector
from psycopg.types.json import Jsonb

sys.path.insert(0, str(Path(__file__).resolve().parent))
from machine import machine_facts

from memexdb import migrate
from memexdb.embedded import EmbeddedPostgres
from memexdb.embedding import build_embedder

DIA_ID = re.compile(r"D(\d+):(\d+)")
UNDATED = datetime(2026, 1, 1, tzinfo=UTC)  # --timestamps now: every turn stored at this time
KS = (1, 5, 10)


@dataclass
class Question:
    text: str
    category: int
    evidence: set[str]


@dataclass
class Conversation:
    sample_id: str
    turns: list[dict[str, Any]] = field(default_factory=list)
    questions: list[Question] = field(default_factory=list)
    end: datetime = field(default_factory=lambda: datetime.min.replace(tzinfo=UTC))


@dataclass(frozen=True)
class Setting:
    """A search request; None = not sent (memex.search's default)."""

    name: str
    mode: str | None
    alpha: float | None
    half_life_days: float | None = None
    context_weight: float | None = None

    def sql(self) -> str:
        """memex.search with the options this setting sends, as named arguments."""
        sent = [
            f"p_{name} => %({name})s"
            for name in ("mode", "alpha", "half_life_days", "context_weight")
            if getattr(self, name) is not None
        ]
        return (
            "select metadata->>'label' from memex.search(p_agent_id => %(agent)s,"
            " p_user_id => %(user)s, p_query_embedding => %(embedding)s, p_top_k => 10,"
            " p_query_text => %(text)s, p_now => %(now)s"
            + "".join(", " + arg for arg in sent)
            + ")"
        )

    def values(self) -> dict[str, Any]:
        return {
            "mode": self.mode,
            "alpha": self.alpha,
            "half_life_days": self.half_life_days,
            "context_weight": self.context_weight,
        }


SETTINGS = [
    Setting("**default request (no options)**", None, None),
    Setting("vector, no alpha (default formula)", "vector", None),
    Setting("vector, alpha 1 (no recency)", "vector", 1.0),
    Setting("vector, alpha 1, context 0.5", "vector", 1.0, context_weight=0.5),
    Setting("text (BM25), alpha 1, context 0", "text", 1.0, context_weight=0.0),
    Setting("text (BM25), alpha 1", "text", 1.0),
    Setting("hybrid, alpha 1, context 0", "hybrid", 1.0, context_weight=0.0),
    Setting("hybrid, alpha 1", "hybrid", 1.0),
    Setting("vector, alpha 0.7, half-life 30 d (memex; the default before)", "vector", 0.7),
    Setting("hybrid, alpha 0.7, half-life 30 d", "hybrid", 0.7),
    Setting("hybrid, alpha 0.9, half-life 365 d", "hybrid", 0.9, 365.0),
]


def normalise_dia_ids(raw: str) -> set[str]:
    """Gold ids as ``D<session>:<turn>``; a few are malformed ('D8:6; D9:17', 'D:11:26')."""
    return {f"D{int(s)}:{int(t)}" for s, t in DIA_ID.findall(raw.replace("D:", "D"))}


def load_dataset(path: Path, timestamps: str = "dated") -> list[Conversation]:
    conversations = []
    for sample in json.loads(path.read_text()):
        conv = Conversation(sample["sample_id"])
        talk = sample["conversation"]
        sessions = sorted(
            (int(k.split("_")[1]) for k in talk if re.fullmatch(r"session_\d+", k)),
        )
        for number in sessions:
            when = datetime.strptime(talk[f"session_{number}_date_time"], "%I:%M %p on %d %B, %Y")
            when = when.replace(tzinfo=UTC)
            if timestamps == "now":
                when = UNDATED
            for index, turn in enumerate(talk[f"session_{number}"]):
                text = f"{turn['speaker']}: {turn['text']}"
                if turn.get("blip_caption"):
                    text += f" [shares an image: {turn['blip_caption']}]"
                at = when + timedelta(seconds=index)
                if timestamps == "now":
                    at = when  # the same moment for every turn
                conv.turns.append({"dia_id": turn["dia_id"], "content": text, "at": at})
                conv.end = max(conv.end, at)
        for qa in sample["qa"]:
            evidence = set().union(*(normalise_dia_ids(e) for e in qa.get("evidence", [])))
            if evidence:
                conv.questions.append(Question(qa["question"], int(qa["category"]), evidence))
        conversations.append(conv)
    return conversations


class CachedEmbedder:
    """The real embedder with an on-disk cache (bench/out), so reruns skip re-embedding."""

    def __init__(self, model: Any, path: Path) -> None:
        self.model, self.path, self.model_id = model, path, model.model_id
        self.cache: dict[str, np.ndarray] = {}
        if path.exists():
            with np.load(path, allow_pickle=False) as saved:
                self.cache = dict(zip(saved["texts"].tolist(), saved["vectors"], strict=True))

    def embed(self, texts: list[str]) -> np.ndarray:
        missing = [t for t in dict.fromkeys(texts) if t not in self.cache]
        if missing:
            self.cache.update(zip(missing, self.model.embed(missing), strict=True))
            self.path.parent.mkdir(parents=True, exist_ok=True)
            np.savez(
                self.path,
                texts=np.array(list(self.cache)),
                vectors=np.stack(list(self.cache.values())),
            )
        return np.stack([self.cache[t] for t in texts])


def load_memories(conn: psycopg.Connection, conversations: list[Conversation], model: Any) -> None:
    for conv in conversations:
        contents = [t["content"] for t in conv.turns]
        vectors = model.embed(contents)
        conn.execute(
            "select count(*) from memex.store_many(%s, %s, %s, %s, %s, null, null, %s, null, %s)",
            (
                ["locomo"] * len(contents),
                [conv.sample_id] * len(contents),
                contents,
                list(vectors),
                model.model_id,
                [Jsonb({"label": t["dia_id"]}) for t in conv.turns],
                [t["at"] for t in conv.turns],
            ),
        )
    conn.execute("analyze memex.memories")


def evaluate(
    conn: psycopg.Connection,
    conversations: list[Conversation],
    query_vectors: dict[str, np.ndarray],
    setting: Setting,
) -> dict[str, dict[str, float]]:
    sums: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    sql = setting.sql()
    for conv in conversations:
        for q in conv.questions:
            rows = conn.execute(
                sql,
                {
                    "agent": "locomo",
                    "user": conv.sample_id,
                    "embedding": query_vectors[q.text],
                    "text": q.text,
                    "now": conv.end,
                    **setting.values(),
                },
            ).fetchall()
            ranked = [r[0] for r in rows]
            first = next((i for i, d in enumerate(ranked) if d in q.evidence), None)
            groups = [f"cat {q.category}"] + (["all (1-4)"] if q.category != 5 else [])
            for group in groups:
                bucket = sums[group]
                bucket["n"] += 1
                bucket["mrr"] += 0.0 if first is None else 1.0 / (first + 1)
                for k in KS:
                    bucket[f"hit@{k}"] += float(first is not None and first < k)
    return {g: {m: (v if m == "n" else v / b["n"]) for m, v in b.items()} for g, b in sums.items()}


def print_tables(results: dict[str, dict[str, dict[str, float]]]) -> None:
    print("\n| setting | hit@1 | hit@5 | hit@10 | MRR | cat 5 hit@5 |")
    print("|---|---|---|---|---|---|")
    for name, groups in results.items():
        row, adversarial = groups["all (1-4)"], groups["cat 5"]
        print(
            f"| {name} | {row['hit@1']:.3f} | {row['hit@5']:.3f} | {row['hit@10']:.3f} "
            f"| {row['mrr']:.3f} | {adversarial['hit@5']:.3f} |"
        )
    for name, groups in results.items():
        print(f"\nper category, {name}:\n\n| category | n | hit@1 | hit@5 | hit@10 | MRR |")
        print("|---|---|---|---|---|---|")
        for group in sorted(g for g in groups if g.startswith("cat")):
            row = groups[group]
            print(
                f"| {group} | {int(row['n'])} | {row['hit@1']:.3f} | {row['hit@5']:.3f} "
                f"| {row['hit@10']:.3f} | {row['mrr']:.3f} |"
            )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("data", type=Path, help="path to locomo10.json")
    parser.add_argument("--dsn", help="use this database instead of a fresh embedded one")
    parser.add_argument("--out", type=Path, default=Path("bench/out"))
    parser.add_argument(
        "--timestamps",
        choices=["dated", "now"],
        default="dated",
        help="dated: each session at its date (default); now: every turn at the same moment",
    )
    args = parser.parse_args()

    print(f"command: python {' '.join(sys.argv)}")
    for key, value in machine_facts().items():
        print(f"{key}: {value}")

    conversations = load_dataset(args.data, args.timestamps)
    print(
        f"conversations: {len(conversations)}, turns: {sum(len(c.turns) for c in conversations)},"
        f" questions with evidence: {sum(len(c.questions) for c in conversations)}"
    )
    model = CachedEmbedder(build_embedder("minilm"), args.out / "locomo-embeddings.npz")
    root = None
    server = None
    dsn = args.dsn
    if dsn is None:
        root = Path(tempfile.mkdtemp(prefix="memexdb-locomo-", dir="/var/tmp"))
        root.chmod(0o755)
        server = EmbeddedPostgres(root / "pg")
        dsn = server.start()
    try:
        migrate(dsn)
        with psycopg.connect(dsn, autocommit=True, prepare_threshold=0) as conn:
            register_vector(conn)
            conn.execute("delete from memex.memories where agent_id = 'locomo'")
            started = time.perf_counter()
            load_memories(conn, conversations, model)
            print(f"loaded and embedded in {time.perf_counter() - started:.1f} s")
            texts = sorted({q.text for c in conversations for q in c.questions})
            query_vectors = dict(zip(texts, model.embed(texts), strict=True))
            results = {}
            for setting in SETTINGS:
                started = time.perf_counter()
                results[setting.name] = evaluate(conn, conversations, query_vectors, setting)
                print(f"{setting.name}: {time.perf_counter() - started:.1f} s")
        print_tables(results)
        args.out.mkdir(parents=True, exist_ok=True)
        name = "locomo.json" if args.timestamps == "dated" else "locomo-undated.json"
        (args.out / name).write_text(json.dumps(results, indent=2))
    finally:
        if server is not None:
            server.stop()
        if root is not None:
            shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
