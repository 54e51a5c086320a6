"""The store path's SQL alone (issue 39 item 1): `memex._enter(null)` + `memex.store(...)`
in one transaction as the service sends them for `POST /v1/memories` on memex's workload
(role memex_app, keyless, the reference's 10 texts over the 20 x 10 seeded tenants of
bench/load_workload.py, 1,000 seed memories), with vectors precomputed: no embedder, no
HTTP. Two databases on one server: one with the SQL layer as it is, one with the store
path's files (FILES: the store, its triggers on memex.memories) as they were at git REF
(`--before`, default `integ`); rounds interleaved between them, the order alternating.

Per store: the backend's CPU (utime + stime of its process, from /proc, over each round),
the server's time (`clock_timestamp() - statement_timestamp()` of the store statement),
the client's round trip; and, with track_functions = 'all', each memex.* function's
calls and self/total milliseconds per store. `--store-many N` also times one N-row
`memex.store_many` per round and database.

    python bench/store_path_bench.py                          # ~1 min
    python bench/store_path_bench.py --before 37a7040 --stores 1000 --rounds 5
"""

from __future__ import annotations

import argparse
import os
import random
import re
import statistics
import subprocess
import time
from pathlib import Path
from typing import Any

import numpy as np
import psycopg
from harness import create_database, embedded_server, log, print_header, run_main, write_json
from load_workload import AGENTS, USERS_PER_AGENT, Texts, seed_memories
from machine import machine_facts
from pgvector.psycopg import register_vector

# What a store runs beside memex.store's own body: these files, as they are or as at REF.
FILES = (
    "sql/core/015_enter.sql",
    "sql/core/020_tenant_counts.sql",
    "sql/core/021_guard_memories.sql",
    "sql/memories/010_term_stats.sql",
    "sql/memories/022_ann_on_insert.sql",
    "sql/memories/030_store.sql",
    "sql/memories/031_store_many.sql",
    "sql/memories/058_memory_revisions_stored.sql",
)
# Triggers on memex.memories that either version may create: dropped before REF's files
# are loaded (each version creates its own; a statement-level AFTER INSERT trigger left
# from the other version would count twice).
TRIGGERS = (
    "memories_count_insert",
    "memories_terms_insert",
    "memories_revisions_stored",
    "memories_stored",
    "memories_ann_on_insert",
    "memories_guard",
)
STORE = (
    "select extract(epoch from clock_timestamp() - statement_timestamp()) * 1000"
    " from memex.store(p_agent_id => %s, p_user_id => %s, p_content => %s,"
    " p_embedding => %s, p_embedding_model => 'bench-model', p_memory_type => %s,"
    " p_importance => %s, p_metadata => '{}')"
)
STORE_MANY = (
    "select count(*) from memex.store_many(%s::text[], %s::text[], %s::text[], %s::vector[],"
    " 'bench-model')"
)


def _sql_of(ref: str) -> str:
    """FILES as they were at git `ref`, after dropping TRIGGERS (both versions' names),
    their functions owned as at `ref` (sql_as_at)."""
    drops = "".join(f"drop trigger if exists {t} on memex.memories;\n" for t in TRIGGERS)
    return drops + sql_as_at(ref, FILES)


def sql_as_at(ref: str, files: tuple[str, ...]) -> str:
    """`files` as they were at git `ref` (those that existed), then each function they
    create given the owner `ref`'s migrate gave it: memex_trigger_owner where `ref`'s
    sql/security/999_grants.sql names it among that role's (revision 0040), else
    memex_owner (a security invoker's owner does not matter)."""
    texts = []
    for f in files:
        shown = subprocess.run(["git", "show", f"{ref}:{f}"], capture_output=True, text=True)
        if shown.returncode == 0:
            texts.append(shown.stdout)
    grants = subprocess.run(
        ["git", "show", f"{ref}:sql/security/999_grants.sql"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    owners = [
        f"alter function memex.{name}() owner to "
        + ("memex_trigger_owner" if f"'memex.{name}()'" in grants else "memex_owner")
        + ";"
        for name in sorted(
            set(re.findall(r"function memex\.(\w+)\(\)\s+returns trigger", "\n".join(texts)))
        )
    ]
    return "\n".join(texts + owners)


def _cpu_s(pid: int) -> float:
    """utime + stime of a process, in seconds."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _function_ms(conn: psycopg.Connection) -> dict[str, tuple[int, float, float]]:
    """memex.* functions: calls, total and self milliseconds (flushed stats)."""
    conn.execute("select pg_stat_clear_snapshot()")
    rows = conn.execute(
        "select funcname, calls, total_time, self_time from pg_stat_user_functions"
        " where schemaname = 'memex'"
    ).fetchall()
    return {r[0]: (int(r[1]), float(r[2]), float(r[3])) for r in rows}


def _app(dsn: str) -> psycopg.Connection:
    conn = psycopg.connect(dsn)
    register_vector(conn)
    conn.execute("set role memex_app")
    conn.commit()
    return conn


def _seed(app: psycopg.Connection, rng: np.random.Generator) -> None:
    bodies = seed_memories(random.Random(39))
    vectors = _vectors(rng, len(bodies))
    with app.transaction():
        app.execute("select memex._enter_operator('bench')")
        app.execute(
            STORE_MANY,
            (
                [b["agent_id"] for b in bodies],
                [b["user_id"] for b in bodies],
                [b["content"] for b in bodies],
                list(vectors),
            ),
        )


def _vectors(rng: np.random.Generator, n: int) -> np.ndarray:
    v = rng.standard_normal((n, 384)).astype(np.float32)
    out: np.ndarray = v / np.linalg.norm(v, axis=1, keepdims=True)
    return out


def ab_start(parser: argparse.ArgumentParser) -> tuple[argparse.Namespace, str]:
    """The options every A/B of a path takes (--rounds, --before, --out) added to `parser`
    and parsed; the machine facts and both sides printed. Returns the options and the
    command line."""
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--before", metavar="REF", default="integ")
    parser.add_argument("--out", type=Path, default=Path("bench/out"))
    args = parser.parse_args()
    command = print_header(machine_facts())
    print(f"before: {args.before} = {_rev(args.before)}; after: the working tree")
    return args, command


def closing_function_stats(
    apps: dict[str, psycopg.Connection],
    owners: dict[str, psycopg.Connection],
    start: dict[str, dict[str, tuple[int, float, float]]],
) -> dict[str, dict[str, tuple[int, float, float]]]:
    """Each side's memex.* functions' calls, total and self milliseconds since `start`,
    after closing the measured backends `apps` (a backend flushes them when it exits)."""
    for app in apps.values():
        app.close()
    time.sleep(1.0)
    zero = (0, 0.0, 0.0)
    return {
        side: {
            name: (
                calls - start[side].get(name, zero)[0],
                total - start[side].get(name, zero)[1],
                own - start[side].get(name, zero)[2],
            )
            for name, (calls, total, own) in _function_ms(conn).items()
        }
        for side, conn in owners.items()
    }


def print_functions(fstats: dict[str, dict[str, tuple[int, float, float]]], n: int) -> None:
    """Each side's calls, self and total milliseconds per write (of `n`), function by
    function, the most expensive first."""
    sides = list(fstats)
    names = sorted(
        {name for s in sides for name in fstats[s]},
        key=lambda name: -max(fstats[s].get(name, (0, 0.0, 0.0))[2] for s in sides),
    )
    print(f"{'function':>28} " + " ".join(f"{s + ' calls/self/total':>28}" for s in sides))
    for name in names:
        cells = []
        for s in sides:
            calls, total, own = fstats[s].get(name, (0, 0.0, 0.0))
            cells.append(f"{calls / n:8.2f} {own / n:8.4f} {total / n:8.4f}")
        if any(fstats[s].get(name, (0, 0, 0))[0] for s in sides):
            print(f"{name:>28} " + " ".join(f"{c:>28}" for c in cells))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--stores", type=int, default=600, help="stores per database and round")
    parser.add_argument("--store-many", type=int, default=0, help="rows of a store_many")
    args, command = ab_start(parser)
    rng = np.random.default_rng(39)
    pick = random.Random(39)
    texts = Texts("reference", pick)
    sides = ("after", "before")
    cpu: dict[str, list[float]] = {s: [] for s in sides}  # ms per store, each round
    server: dict[str, list[float]] = {s: [] for s in sides}
    client: dict[str, list[float]] = {s: [] for s in sides}
    many: dict[str, list[float]] = {s: [] for s in sides}
    fstats: dict[str, dict[str, tuple[int, float, float]]] = {}
    vectors = _vectors(rng, args.stores)
    with embedded_server("store-path-bench") as srv:
        dsns = {s: create_database(srv.dsn, f"store_path_{s}") for s in sides}
        owners = {s: psycopg.connect(dsns[s], autocommit=True) for s in sides}
        apps = {s: psycopg.connect(dsns[s]) for s in sides}
        try:
            owners["before"].execute(_sql_of(args.before))
            for s in sides:
                owners[s].execute(f"alter database store_path_{s} set track_functions = 'all'")
                apps[s].close()
                apps[s] = _app(dsns[s])
                _seed(apps[s], rng)
                owners[s].execute("analyze")
                # a backend flushes its function statistics when it exits: a new one
                # measures from here
                apps[s].close()
                apps[s] = _app(dsns[s])
            time.sleep(1.0)
            start_stats = {s: _function_ms(owners[s]) for s in sides}
            pids = {
                s: apps[s].execute("select pg_backend_pid()").fetchone()[0]  # type: ignore[index]
                for s in sides
            }
            apps["after"].commit()
            apps["before"].commit()
            for round_ in range(args.rounds + 1):  # round 0 warms (plans, caches)
                order = sides if round_ % 2 else sides[::-1]
                for s in order:
                    app = apps[s]
                    calls = [
                        (
                            f"agent-{pick.randrange(AGENTS)}",
                            f"user-{pick.randrange(USERS_PER_AGENT)}",
                            texts.memory(),
                            pick.choice(("episodic", "semantic")),
                            round(pick.uniform(0.5, 1.5), 3),
                        )
                        for _ in range(args.stores)
                    ]
                    cpu0 = _cpu_s(pids[s])
                    for i, (agent, user, text, kind, importance) in enumerate(calls):
                        started = time.perf_counter()
                        with app.transaction():
                            app.execute("select memex._enter(null)")
                            row = app.execute(
                                STORE, (agent, user, text, vectors[i], kind, importance)
                            ).fetchone()
                        if round_:
                            client[s].append((time.perf_counter() - started) * 1000)
                            server[s].append(float(row[0]))  # type: ignore[index]
                    if round_:
                        cpu[s].append((_cpu_s(pids[s]) - cpu0) * 1000 / args.stores)
                    if args.store_many:
                        n = args.store_many
                        started = time.perf_counter()
                        with app.transaction():
                            app.execute("select memex._enter(null)")
                            app.execute(
                                STORE_MANY,
                                (
                                    [f"agent-{pick.randrange(AGENTS)}" for _ in range(n)],
                                    [f"user-{pick.randrange(USERS_PER_AGENT)}" for _ in range(n)],
                                    [texts.memory() for _ in range(n)],
                                    list(_vectors(rng, n)),
                                ),
                            )
                        if round_:
                            many[s].append((time.perf_counter() - started) * 1000)
            fstats = closing_function_stats(apps, owners, start_stats)
        finally:
            for conn in (*apps.values(), *owners.values()):
                conn.close()
    n_stores = args.stores * (args.rounds + 1)  # function statistics: the warm-up too
    log(f"{args.stores} stores per database and round, {args.rounds} rounds (+1 warm-up)")
    report: dict[str, Any] = {"command": command, "before": args.before, "sides": {}}
    print(
        f"{'':>8} {'backend CPU ms/store':>22} {'server p50':>11} {'client p50':>11}"
        f" {'store_many ms':>14}"
    )
    for s in sides:
        report["sides"][s] = {
            "backend_cpu_ms_per_store": statistics.median(cpu[s]),
            "backend_cpu_rounds": cpu[s],
            "server_p50_ms": statistics.median(server[s]),
            "client_p50_ms": statistics.median(client[s]),
            "store_many_ms": statistics.median(many[s]) if many[s] else None,
            "store_many_rounds": many[s],
        }
        r = report["sides"][s]
        print(
            f"{s:>8} {r['backend_cpu_ms_per_store']:>14.3f}"
            f" ({', '.join(f'{c:.3f}' for c in cpu[s])})"
            f" {r['server_p50_ms']:>11.3f} {r['client_p50_ms']:>11.3f}"
            f" {r['store_many_ms'] or 0:>14.1f}"
        )
    if args.store_many:
        for s in sides:
            print(f"{s:>8} store_many each round (ms): {', '.join(f'{m:.0f}' for m in many[s])}")
    print("\nfunctions per store (track_functions, the warm-up round and any store_many included):")
    print_functions(fstats, n_stores)
    report["functions"] = fstats
    write_json(args.out, "store_path_bench", report)
    return 0


def _rev(ref: str) -> str:
    return subprocess.run(
        ["git", "rev-parse", "--short", ref], capture_output=True, text=True
    ).stdout.strip()


if __name__ == "__main__":
    run_main(main)
