"""What memory history and supersession cost a write (issue 36): single `memex.store`
calls as the service makes them (role memex_app, the operator entered, one transaction
each) with the revision triggers (`memex._memory_revisions_stored`, `_memory_revision`)
disabled (the baseline: a store before revision 0029), enabled (a plain store now), and
enabled with `p_supersedes` naming the tenant's previous memory (a store that records a
newer version), rounds interleaved in the same run; plus a 1,000-row `memex.store_many`
with the triggers off and on. Vectors are precomputed: this is the SQL side only.
Each store is timed twice: by the client (the round trip, with BEGIN, the caller and
COMMIT) and inside the server (`clock_timestamp() - statement_timestamp()` of the store's
statement: the SQL work alone, which the client's figure rounds to the machine's
scheduling).

`--before REF` also measures the store and the superseding store with the store's and
supersession's function files as they were at git REF (`sql/memories/029_supersede.sql`,
`030_store.sql`, `058_memory_revision.sql`) on a second database of the same server
(whose supersession indexes are those before revision 0036, `memories_superseded_idx`
and `memories_superseded_by_idx`, which keep the older memory's update from being HOT,
when REF predates that revision), rounds interleaved with the current ones: before and
after in one run.

`--library N` also times N plain and N superseding stores per round and database as an
application makes them: `memexdb.Memex.store` with the bundled embedder (LocalMiniLM),
the embedding of the text included, timed around the call (the figure a user sees).

`--table-rows N` first stores N memories of another user in each database and analyzes
the table, as a database in use has statistics: the plans PL/pgSQL keeps (or re-makes at
every call) depend on them. Without it the table holds only the bench's own stores and
has no statistics.

    python bench/store_history_bench.py                      # ~1 min
    python bench/store_history_bench.py --before 3b4803a     # before/after, ~2 min
    python bench/store_history_bench.py --before 3b4803a --table-rows 20000
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
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
    "select id, extract(epoch from clock_timestamp() - statement_timestamp()) * 1000"
    " from memex.store(p_agent_id => 'bench', p_user_id => %s, p_content => %s,"
    " p_embedding => %s, p_embedding_model => 'bench-model', p_supersedes => %s::uuid[])"
)
# the function files a superseding store runs (--before loads them as they were at REF)
FILES = (
    "sql/memories/029_supersede.sql",
    "sql/memories/030_store.sql",
    "sql/memories/058_memory_revision.sql",
)
# memex._supersede's signatures: one of them is dropped before the other is created
SUPERSEDE = (
    "memex._supersede(text, text, uuid, uuid[])",
    "memex._supersede(text, text, uuid, uuid[], timestamptz)",
)


# the indexes before revision 0036 (its downgrade), for --before's database
BEFORE_0036 = (
    "drop index memex.memories_supersedes_idx;"
    " create index memories_superseded_by_idx on memex.memories (superseded_by)"
    " where superseded_by is not null;"
    " create index memories_superseded_idx on memex.memories (agent_id, user_id)"
    " include (superseded_by) where superseded_at is not null;"
)


def _has_0036(ref: str) -> bool:
    """Whether git `ref` has revision 0036 (the supersession indexes of today)."""
    return (
        subprocess.run(
            ["git", "cat-file", "-e", f"{ref}:sql/revisions/0036_supersession_hot.sql"],
            capture_output=True,
        ).returncode
        == 0
    )


def _background(app: psycopg.Connection, rng: np.random.Generator, rows: int) -> None:
    """`rows` memories of user 'background' (agent 'bench'), 5,000 a statement."""
    for start in range(0, rows, 5000):
        n = min(5000, rows - start)
        with app.transaction():
            app.execute("select memex._enter_operator('bench')")
            app.execute(
                STORE_MANY,
                (
                    ["bench"] * n,
                    ["background"] * n,
                    [f"background note {start + i}" for i in range(n)],
                    list(unit_vectors(rng, n)),
                ),
            )


def _library_rounds(
    args: argparse.Namespace, library: dict[str, list[float]], dsn: str, dsn_before: str
) -> None:
    """--library: memexdb.Memex.store calls (the bundled embedder embeds each text), plain
    and superseding, rounds interleaved between the databases."""
    from memexdb.client import Memex
    from memexdb.embedding.local_minilm import LocalMiniLM

    embedder = LocalMiniLM()
    sides = {"": dsn} | ({" (before)": dsn_before} if dsn_before != dsn else {})
    clients = {suffix: Memex.connect(url, embedder=embedder) for suffix, url in sides.items()}
    try:
        for memex in clients.values():  # warm: the model, the pool, the plans
            for i in range(10):
                memex.store("bench", "library-warm", f"warm-up note {i}")
        for round_ in range(args.rounds):
            for suffix, memex in clients.items():
                previous = None
                # one plain store, then one superseding store, and so on: the machine's
                # load moves both alike
                for i in range(args.library):
                    for variant in ("store", "store with supersedes"):
                        superseding = variant != "store"
                        # a sentence of its own each time (the client's embedding cache,
                        # memexdb.embedding.cache, never answers: every store embeds), of
                        # the same length for both variants (as many tokens to embed)
                        side = "b" if suffix else "a"
                        text = (
                            f"In round {round_} ({'n' if superseding else 'p'}{side}) the"
                            f" user's fact number {i} changed again"
                        )
                        started = time.perf_counter()
                        stored = memex.store(
                            "bench",
                            f"library-{round_}-{variant}",
                            text,
                            supersedes=[previous] if superseding and previous else None,
                        )
                        library[f"Memex.store: {variant}{suffix}"].append(
                            (time.perf_counter() - started) * 1000
                        )
                        if superseding:
                            previous = stored.id
    finally:
        for memex in clients.values():
            memex.close()


def _sql_of(ref: str | None) -> str:
    """The FILES as they are (ref None) or were at git `ref`, after dropping every
    signature of memex._supersede (each version creates its own)."""
    drops = "".join(f"drop function if exists {s};\n" for s in SUPERSEDE)
    texts = [
        Path(f).read_text()
        if ref is None
        else subprocess.run(
            ["git", "show", f"{ref}:{f}"], check=True, capture_output=True, text=True
        ).stdout
        for f in FILES
    ]
    # a function created anew belongs to who creates it: give memex._supersede back to
    # memex_owner, as migrate does (a security definer of the superuser would skip
    # row-level security)
    owner = (
        "do $$ declare f regprocedure; begin for f in select p.oid::regprocedure"
        " from pg_proc p where p.proname = '_supersede'"
        " and p.pronamespace = 'memex'::regnamespace loop"
        " execute format('alter function %s owner to memex_owner', f); end loop; end $$;"
    )
    return drops + "\n".join(texts) + "\n" + owner


STORE_MANY = (
    "select count(*) from memex.store_many(%s::text[], %s::text[], %s::text[], %s::vector[],"
    " 'bench-model')"
)


def _store_ms(
    app: psycopg.Connection, vector: Any, user: str, text: str, previous: Any
) -> tuple[float, float, Any]:
    """The client's milliseconds, the server's, the memory's id."""
    started = time.perf_counter()
    with app.transaction():
        app.execute("select memex._enter_operator('bench')")
        row = app.execute(STORE, (user, text, vector, previous)).fetchone()
    assert row is not None
    return (time.perf_counter() - started) * 1000, float(row[1]), row[0]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument(
        "--stores", type=int, default=200, help="single stores per variant and round"
    )
    parser.add_argument("--rows", type=int, default=1000, help="rows of the store_many batch")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--out", type=Path, default=Path("bench/out"))
    parser.add_argument(
        "--before", metavar="REF", help="also measure the store's SQL as it was at git REF"
    )
    parser.add_argument(
        "--library",
        type=int,
        default=0,
        help="also time this many memexdb.Memex.store calls (embedding included) per variant",
    )
    parser.add_argument(
        "--table-rows",
        type=int,
        default=0,
        help="memories of another user stored (and the table analyzed) before the rounds",
    )
    args = parser.parse_args()
    command = print_header(machine_facts())
    rng = np.random.default_rng(36)
    vectors = unit_vectors(rng, max(args.stores, args.rows))
    single: dict[str, list[float]] = {
        "store, no history (baseline)": [],
        "store": [],
        "store with supersedes": [],
    }
    if args.before:
        single = {f"{label} (before)": [] for label in single if "baseline" not in label} | single
    in_db: dict[str, list[float]] = {label: [] for label in single}
    before = _sql_of(args.before) if args.before else None
    batch: dict[str, list[float]] = {"store_many, no history": [], "store_many": []}
    # --library: memexdb.Memex.store, embedding included, per database (after, before)
    library: dict[str, list[float]] = {}
    if args.library:
        for suffix in ("", " (before)") if before else ("",):
            for variant in ("store", "store with supersedes"):
                library[f"Memex.store: {variant}{suffix}"] = []
    with embedded_server("memexdb-history-bench-") as server:
        dsn = create_database(server.dsn, "history_bench")
        # --before: a database of its own (the indexes before revision 0036, REF's files)
        dsn_before = create_database(server.dsn, "history_bench_before") if before else dsn
        with (
            psycopg.connect(dsn, autocommit=True) as owner,
            psycopg.connect(dsn) as app,
            psycopg.connect(dsn_before, autocommit=True) as owner_before,
            psycopg.connect(dsn_before) as app_before,
        ):
            for conn in (app, app_before):
                register_vector(conn)
                conn.execute("set role memex_app")
                conn.commit()
            if before is not None:
                if not _has_0036(args.before):
                    owner_before.execute(BEFORE_0036)
                owner_before.execute(before)
            if args.table_rows:
                for conn, own in ((app, owner), (app_before, owner_before)):
                    _background(conn, rng, args.table_rows)
                    own.execute("analyze memex.memories")
                    if not before:
                        break

            def trigger(on: bool) -> None:
                state = "enable" if on else "disable"
                for name in ("memories_revision", "memories_revisions_stored"):
                    owner.execute(f"alter table memex.memories {state} trigger {name}")

            for round_ in range(args.rounds):
                for label, ms in single.items():
                    trigger(label != "store, no history (baseline)")
                    conn = app_before if label.endswith("(before)") else app
                    user = f"r{round_}-{label}"
                    superseding = label.startswith("store with supersedes")
                    previous = None
                    for i in range(args.stores):
                        elapsed, in_server, stored = _store_ms(
                            conn,
                            vectors[i],
                            user,
                            f"fact {i} of {user}",
                            [previous] if previous and superseding else None,
                        )
                        ms.append(elapsed)
                        in_db[label].append(in_server)
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
            if args.library:
                _library_rounds(args, library, dsn, dsn_before)
    log(
        f"{args.stores} single stores per variant, {args.rows}-row store_many, {args.rounds} rounds"
    )
    report: dict[str, Any] = {
        "command": command,
        "stores": args.stores,
        "rows": args.rows,
        "rounds": args.rounds,
        "table_rows": args.table_rows,
    }
    for label, ms in {**single, **batch}.items():
        report[label] = {"p50_ms": statistics.median(ms), "p99_ms": float(np.percentile(ms, 99))}
        line = (
            f"{label:>39}: p50 {statistics.median(ms):7.3f} ms  p99 {np.percentile(ms, 99):7.3f} ms"
        )
        if label in in_db:
            report[label]["server_p50_ms"] = statistics.median(in_db[label])
            line += f"  in the server p50 {statistics.median(in_db[label]):6.3f} ms"
        print(line)
    for label, ms in library.items():
        report[label] = {"p50_ms": statistics.median(ms), "p99_ms": float(np.percentile(ms, 99))}
        print(
            f"{label:>39}: p50 {statistics.median(ms):7.3f} ms  p99 {np.percentile(ms, 99):7.3f} ms"
        )
    for suffix in (" (before)", "") if args.before else ("",):
        if f"Memex.store: store{suffix}" in report:
            sup = report[f"Memex.store: store with supersedes{suffix}"]["p50_ms"]
            plain = report[f"Memex.store: store{suffix}"]["p50_ms"]
            print(f"{'Memex.store: supersedes / plain' + suffix:>39}: {sup / plain:.3f}x")
    base = report["store, no history (baseline)"]["p50_ms"]
    for label in ("store", "store with supersedes"):
        print(f"{label + ' / baseline':>39}: {report[label]['p50_ms'] / base:.3f}x")
    for suffix in (" (before)", "") if args.before else ("",):
        sup, plain = report["store with supersedes" + suffix], report["store" + suffix]
        ratio = sup["p50_ms"] / plain["p50_ms"]
        print(
            f"{'store with supersedes / store' + suffix:>39}: {ratio:.3f}x"
            f" (in the server {sup['server_p50_ms'] / plain['server_p50_ms']:.3f}x,"
            f" +{sup['server_p50_ms'] - plain['server_p50_ms']:.3f} ms)"
        )
    print(
        f"{'store_many / no history':>30}: "
        f"{report['store_many']['p50_ms'] / report['store_many, no history']['p50_ms']:.3f}x"
    )
    write_json(args.out, "store_history_bench", report)
    return 0


if __name__ == "__main__":
    run_main(main)
