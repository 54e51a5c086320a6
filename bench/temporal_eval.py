"""Ranking over time on the set bench/temporal_set.py writes: is the newest version of an
updated fact first, and are old facts that never changed still found? For the default
request (no ranking options) and the settings bench/locomo_eval.py reports.

One tenant per user, each memory stored at its date, in order; each question searched in
its tenant with "now" = the time it is asked (1-30 days after the last session), top_k 10.

    python bench/temporal_eval.py                 # seed 7, 20 users (the set's defaults)
    python bench/temporal_eval.py --seed 8 --users 20

Two writers, each in its own agent of one database, before/after in one run: "plain"
(today's writer: every memory stored as it comes, nothing superseded) and "supersede" (a
writer that records supersession, issue 36: the set knows which memories are versions of
one fact, so each new version is stored with `supersedes` = [the previous version]).
The superseding writer also answers a point-in-time set: for each changed fact, one
question asked as of a moment between two of its versions (`p_as_of`), where the version
valid then must come first.

Metrics. Updates: "newest first" = the newest version is among the first 5 and above every
older version of the fact in the top 10; "newest@5" = the newest version among the first
5; "order when both found" = of the questions where the newest and an older version are
both in the top 10, the share with the newest above. Stable facts: hit@1/5/10.
"""

from __future__ import annotations

import argparse
import itertools
import json
import shutil
import sys
import tempfile
import time
from collections import defaultdict
from datetime import datetime
from pathlib import Path
from typing import Any

import psycopg
from pgvector.psycopg import register_vector
from psycopg.types.json import Jsonb

sys.path.insert(0, str(Path(__file__).resolve().parent))
from locomo_eval import SETTINGS, CachedEmbedder, Setting
from machine import machine_facts
from temporal_set import build

from memexdb import migrate
from memexdb.embedded import EmbeddedPostgres
from memexdb.embedding import build_embedder

PLAIN, SUPERSEDE = "temporal", "temporal-supersede"  # the two writers' agents


def previous_versions(data: dict[str, Any]) -> dict[str, str]:
    """Each later version of a changed fact -> the version before it (labels)."""
    previous: dict[str, str] = {}
    for user in data["users"]:
        for q in user["questions"]:
            if q["kind"] == "update":
                chain = [*q["older"], q["gold"]]
                previous.update(zip(chain[1:], chain[:-1], strict=True))
    return previous


def load_superseding(conn: psycopg.Connection, data: dict[str, Any], model: CachedEmbedder) -> None:
    """The superseding writer: memex.store one memory at a time, at its date, a new version
    with p_supersedes naming the version before it."""
    previous = previous_versions(data)
    for user in data["users"]:
        memories = user["memories"]
        vectors = model.embed([m["content"] for m in memories])
        ids: dict[str, Any] = {}
        for m, vector in zip(memories, vectors, strict=True):
            before = previous.get(m["id"])
            ids[m["id"]] = conn.execute(
                "select id from memex.store(p_agent_id => %s, p_user_id => %s, p_content => %s,"
                " p_embedding => %s, p_embedding_model => %s, p_metadata => %s,"
                " p_created_at => %s, p_supersedes => %s)",
                (
                    SUPERSEDE,
                    user["user"],
                    m["content"],
                    vector,
                    model.model_id,
                    Jsonb({"label": m["id"]}),
                    datetime.fromisoformat(m["at"]),
                    [ids[before]] if before else None,
                ),
            ).fetchone()[0]  # type: ignore[index]
    conn.execute("analyze memex.memories")


def load(conn: psycopg.Connection, data: dict[str, Any], model: CachedEmbedder) -> None:
    for user in data["users"]:
        memories = user["memories"]
        contents = [m["content"] for m in memories]
        conn.execute(
            "select count(*) from memex.store_many(%s, %s, %s, %s, %s, null, null, %s, null, %s)",
            (
                [PLAIN] * len(memories),
                [user["user"]] * len(memories),
                contents,
                list(model.embed(contents)),
                model.model_id,
                [Jsonb({"label": m["id"]}) for m in memories],
                [datetime.fromisoformat(m["at"]) for m in memories],
            ),
        )
    conn.execute("analyze memex.memories")


def evaluate(
    conn: psycopg.Connection,
    data: dict[str, Any],
    model: CachedEmbedder,
    setting: Setting,
    agent: str = PLAIN,
) -> dict[str, float]:
    sums: dict[str, float] = defaultdict(float)
    sql = setting.sql()
    for user in data["users"]:
        texts = [q["query"] for q in user["questions"]]
        for q, vector in zip(user["questions"], model.embed(texts), strict=True):
            ranked = [
                r[0]
                for r in conn.execute(
                    sql,
                    {
                        "agent": agent,
                        "user": user["user"],
                        "embedding": vector,
                        "text": q["query"],
                        "now": datetime.fromisoformat(user["asked_at"]),
                        **setting.values(),
                    },
                ).fetchall()
            ]
            pos = ranked.index(q["gold"]) if q["gold"] in ranked else None
            if q["kind"] == "update":
                older = [ranked.index(o) for o in q["older"] if o in ranked]
                sums["updates"] += 1
                sums["newest first"] += pos is not None and pos < 5 and pos < min(older, default=99)
                sums["newest@5"] += pos is not None and pos < 5
                if pos is not None and older:
                    sums["both found"] += 1
                    sums["newest above"] += pos < min(older)
            else:
                sums["stable"] += 1
                for k in (1, 5, 10):
                    sums[f"stable hit@{k}"] += pos is not None and pos < k
    return {
        "updates": sums["updates"],
        "newest first": sums["newest first"] / sums["updates"],
        "newest@5": sums["newest@5"] / sums["updates"],
        "order when both found": sums["newest above"] / max(sums["both found"], 1),
        "both found": sums["both found"],
        "stable": sums["stable"],
        **{f"stable hit@{k}": sums[f"stable hit@{k}"] / sums["stable"] for k in (1, 5, 10)},
    }


def point_in_time(
    conn: psycopg.Connection, data: dict[str, Any], model: CachedEmbedder
) -> dict[str, float]:
    """For each changed fact and each version but the newest, a question asked as of the
    middle of the time that version held (default request, p_as_of): is that version first
    among the versions (in the first 5, above every other version in the top 10)?"""
    at = {m["id"]: datetime.fromisoformat(m["at"]) for u in data["users"] for m in u["memories"]}
    sums: dict[str, float] = defaultdict(float)
    sql = (
        "select metadata->>'label' from memex.search(p_agent_id => %(agent)s,"
        " p_user_id => %(user)s, p_query_embedding => %(embedding)s, p_top_k => 10,"
        " p_query_text => %(text)s, p_as_of => %(as_of)s)"
    )
    for user in data["users"]:
        updates = [q for q in user["questions"] if q["kind"] == "update"]
        vectors = model.embed([q["query"] for q in updates])
        for q, vector in zip(updates, vectors, strict=True):
            chain = [*q["older"], q["gold"]]
            for held, following in itertools.pairwise(chain):
                moment = at[held] + (at[following] - at[held]) / 2
                ranked = [
                    r[0]
                    for r in conn.execute(
                        sql,
                        {
                            "agent": SUPERSEDE,
                            "user": user["user"],
                            "embedding": vector,
                            "text": q["query"],
                            "as_of": moment,
                        },
                    ).fetchall()
                ]
                pos = ranked.index(held) if held in ranked else None
                others = [ranked.index(o) for o in chain if o != held and o in ranked]
                sums["questions"] += 1
                sums["first"] += pos is not None and pos < 5 and pos < min(others, default=99)
                sums["@5"] += pos is not None and pos < 5
                sums["later found"] += any(o in ranked for o in chain[chain.index(held) + 1 :])
    n = sums["questions"]
    return {
        "questions": n,
        "valid version first": sums["first"] / n,
        "valid version@5": sums["@5"] / n,
        "a later version returned": sums["later found"] / n,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--users", type=int, default=20)
    parser.add_argument("--out", type=Path, default=Path("bench/out"))
    args = parser.parse_args()

    print(f"command: python {' '.join(sys.argv)}")
    for key, value in machine_facts().items():
        print(f"{key}: {value}")
    data = build(args.seed, args.users)
    questions = [q for u in data["users"] for q in u["questions"]]
    print(
        f"users: {len(data['users'])}, memories: {sum(len(u['memories']) for u in data['users'])},"
        f" update questions: {sum(q['kind'] == 'update' for q in questions)},"
        f" stable questions: {sum(q['kind'] == 'stable' for q in questions)}"
    )
    model = CachedEmbedder(build_embedder("minilm"), args.out / "temporal-embeddings.npz")
    root = Path(tempfile.mkdtemp(prefix="memexdb-temporal-", dir="/var/tmp"))
    root.chmod(0o755)
    server = EmbeddedPostgres(root / "pg")
    try:
        dsn = server.start()
        migrate(dsn)
        results = {}
        with psycopg.connect(dsn, autocommit=True, prepare_threshold=0) as conn:
            register_vector(conn)
            started = time.perf_counter()
            load(conn, data, model)
            print(f"loaded and embedded in {time.perf_counter() - started:.1f} s")
            started = time.perf_counter()
            load_superseding(conn, data, model)
            print(f"superseding writer: stored in {time.perf_counter() - started:.1f} s")
            for setting in SETTINGS:
                for writer, agent in (("plain", PLAIN), ("supersede", SUPERSEDE)):
                    started = time.perf_counter()
                    name = f"{writer}: {setting.name}"
                    results[name] = evaluate(conn, data, model, setting, agent)
                    print(f"{name}: {time.perf_counter() - started:.1f} s")
            pit = point_in_time(conn, data, model)
        print(
            "\n| setting | newest first | newest@5 | order when both found | stable hit@1"
            " | stable hit@5 | stable hit@10 |"
        )
        print("|---|---|---|---|---|---|---|")
        for name, r in results.items():
            print(
                f"| {name} | {r['newest first']:.3f} | {r['newest@5']:.3f} "
                f"| {r['order when both found']:.3f} ({int(r['both found'])}) "
                f"| {r['stable hit@1']:.3f} | {r['stable hit@5']:.3f} | {r['stable hit@10']:.3f} |"
            )
        print(
            f"\npoint in time (superseding writer, default request, p_as_of):"
            f" {int(pit['questions'])} questions, valid version first"
            f" {pit['valid version first']:.3f}, valid version@5 {pit['valid version@5']:.3f},"
            f" a later version returned {pit['a later version returned']:.3f}"
        )
        args.out.mkdir(parents=True, exist_ok=True)
        out = {**results, "point in time": pit}
        (args.out / f"temporal-seed{args.seed}.json").write_text(json.dumps(out, indent=2))
    finally:
        server.stop()
        shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
