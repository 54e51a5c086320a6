"""What the memories guard costs a write (issue 21: `memex._guard_memories`, the row
trigger that makes `actor` the caller and keeps files to the file functions): the same
1,000-row `memex.store_many` as the service makes it (role memex_app, the operator
entered), with the trigger enabled and, as the baseline, disabled, rounds interleaved in
the same run. Vectors are precomputed: this is the SQL side of a batch store only (the
embedding of 1,000 texts, ~4 s here, is not in it).

    python bench/guard_bench.py            # ~1 min
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

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

STORE_MANY = (
    "select count(*) from memex.store_many(%s::text[], %s::text[], %s::text[], %s::vector[],"
    " 'bench-model')"
)


def _batch_ms(conn: psycopg.Connection, vectors: np.ndarray, user: str) -> float:
    n = len(vectors)
    args = (["bench"] * n, [user] * n, [f"note {i} of {user}" for i in range(n)], list(vectors))
    started = time.perf_counter()
    with conn.transaction():
        conn.execute("select memex._enter_operator('bench')")
        conn.execute(STORE_MANY, args)
    return (time.perf_counter() - started) * 1000


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--out", type=Path, default=Path("bench/out"))
    args = parser.parse_args()
    command = print_header(machine_facts())
    rng = np.random.default_rng(21)
    vectors = unit_vectors(rng, args.rows)
    times: dict[str, list[float]] = {"guard on": [], "guard off (baseline)": []}
    with embedded_server("memexdb-guard-bench-") as server:
        dsn = create_database(server.dsn, "guard_bench")
        with psycopg.connect(dsn, autocommit=True) as owner, psycopg.connect(dsn) as app:
            register_vector(app)
            app.execute("set role memex_app")
            app.commit()
            for round_ in range(args.rounds):
                for label in times:
                    enabled = "enable" if label == "guard on" else "disable"
                    owner.execute(f"alter table memex.memories {enabled} trigger memories_guard")
                    user = f"r{round_}-{label.split()[1]}"
                    times[label].append(_batch_ms(app, vectors, user))
            owner.execute("alter table memex.memories enable trigger memories_guard")
    log(f"{args.rows}-row store_many, {args.rounds} rounds, interleaved")
    report = {"command": command, "rows": args.rows, "rounds": args.rounds}
    for label, ms in times.items():
        report[label] = statistics.median(ms)
        print(f"{label:>22}: median {statistics.median(ms):7.1f} ms")
    ratio = report["guard on"] / report["guard off (baseline)"]
    report["ratio"] = ratio
    print(f"{'ratio':>22}: {ratio:.3f}x")
    write_json(args.out, "guard_bench", report)
    return 0


if __name__ == "__main__":
    run_main(main)
