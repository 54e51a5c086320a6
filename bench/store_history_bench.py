"""What memory history and supersession cost a write (issue 36): single `memex.store`
calls as the service makes them (role memex_app, the operator entered, one transaction
each) with the revision triggers (`memex._memory_revisions_stored`, `_memory_revision`)
disabled (the baseline: a store before revision 0029), enabled (a plain store now), and
enabled with `p_supersedes` naming the tenant's previous memory (a store that records a
newer version), rounds interleaved in the same run; plus a 1,000-row `memex.store_many`
with the triggers off and on. Vectors are precomputed: this is the SQL side only.

    python bench/store_history_bench.py            # ~1 min
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path
from typing import Any

import numpy as np
import psycopg
from harness import (
    create_database,
    embedded_server,
    log,
    print_header,
    run_main,
    unit_vectors,
    write_json,
)
from machine import machine_facts
from pgvector.psycopg import register_vector

STORE = (
    "select id from memex.store(p_agent_id => 'bench', p_user_id => %s, p_content => %s,"
    " p_embedding => %s, p_embedding_model => 'bench-model', p_supersedes => %s::uuid[])"
)
STORE_MANY = (
    "select count(*) from memex.store_many(%s::text[], %s::text[], %s::text[], %s::vector[],"
    " 'bench-model')"
)


def _store_ms(
    app: psycopg.Connection, vector: Any, user: str, text: str, previous: Any
) -> tuple[float, Any]:
    started = time.perf_counter()
    with app.transaction():
        app.execute("select memex._enter_operator('bench')")
        row = app.execute(STORE, (user, text, vector, previous)).fetchone()
    assert row is not None
    return (time.perf_counter() - started) * 1000, row[0]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument(
        "--stores", type=int, default=200, help="single stores per variant and round"
    )
    parser.add_argument("--rows", type=int, default=1000, help="rows of the store_many batch")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--out", type=Path, default=Path("bench/out"))
    args = parser.parse_args()
    command = print_header(machine_facts())
    rng = np.random.default_rng(36)
    vectors = unit_vectors(rng, max(args.stores, args.rows))
    single: dict[str, list[float]] = {
        "store, no history (baseline)": [],
        "store": [],
        "store with supersedes": [],
    }
    batch: dict[str, list[float]] = {"store_many, no history": [], "store_many": []}
    with embedded_server("memexdb-history-bench-") as server:
        dsn = create_database(server.dsn, "history_bench")
        with psycopg.connect(dsn, autocommit=True) as owner, psycopg.connect(dsn) as app:
            register_vector(app)
            app.execute("set role memex_app")
            app.commit()

            def trigger(on: bool) -> None:
                state = "enable" if on else "disable"
                for name in ("memories_revision", "memories_revisions_stored"):
                    owner.execute(f"alter table memex.memories {state} trigger {name}")

            for round_ in range(args.rounds):
                for label, ms in single.items():
                    trigger(label != "store, no history (baseline)")
                    user = f"r{round_}-{label}"
                    previous = None
                    for i in range(args.stores):
                        elapsed, stored = _store_ms(
                            app,
                            vectors[i],
                            user,
                            f"fact {i} of {user}",
                            [previous] if previous and label == "store with supersedes" else None,
                        )
                        ms.append(elapsed)
                        previous = stored
                for label, ms in batch.items():
                    trigger(label == "store_many")
                    user = f"r{round_}-{label}"
                    n = args.rows
                    started = time.perf_counter()
                    with app.transaction():
                        app.execute("select memex._enter_operator('bench')")
                        app.execute(
                            STORE_MANY,
                            (
                                ["bench"] * n,
                                [user] * n,
                                [f"note {i}" for i in range(n)],
                                list(vectors[:n]),
                            ),
                        )
                    ms.append((time.perf_counter() - started) * 1000)
            trigger(True)
    log(
        f"{args.stores} single stores per variant, {args.rows}-row store_many, {args.rounds} rounds"
    )
    report: dict[str, Any] = {
        "command": command,
        "stores": args.stores,
        "rows": args.rows,
        "rounds": args.rounds,
    }
    for label, ms in {**single, **batch}.items():
        report[label] = {"p50_ms": statistics.median(ms), "p99_ms": float(np.percentile(ms, 99))}
        print(
            f"{label:>30}: p50 {statistics.median(ms):7.3f} ms  p99 {np.percentile(ms, 99):7.3f} ms"
        )
    base = report["store, no history (baseline)"]["p50_ms"]
    for label in ("store", "store with supersedes"):
        print(f"{label + ' / baseline':>30}: {report[label]['p50_ms'] / base:.3f}x")
    print(
        f"{'store with supersedes / store':>30}: "
        f"{report['store with supersedes']['p50_ms'] / report['store']['p50_ms']:.3f}x"
    )
    print(
        f"{'store_many / no history':>30}: "
        f"{report['store_many']['p50_ms'] / report['store_many, no history']['p50_ms']:.3f}x"
    )
    write_json(args.out, "store_history_bench", report)
    return 0


if __name__ == "__main__":
    run_main(main)
