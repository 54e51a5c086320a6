"""The update path's SQL alone, store_path_bench.py's twin for the row triggers on
memex.memories that a change fires: `memex._enter(null)` + `memex.update_memory(...)` in
one transaction as the service sends them for `PATCH /v1/memories/{id}` (role memex_app,
keyless), over the 1,000 seed memories of bench/load_workload.py's 200 tenants, vectors
precomputed. Three kinds of write, each timed on its own: a content change (new text and
embedding: memex._term_stats_update and memex._memory_revision), a field change
(importance: the revision alone) and a plain store (memex._ann_on_insert among the
store's triggers). Two databases on one server: one with the SQL layer as it is, one with
those triggers' files (FILES) and their owners as at git REF (`--before`, default
`integ`); rounds interleaved between them, the order alternating.

Per write: the backend's CPU (utime + stime of its process, from /proc, over each round),
the server's time (`clock_timestamp() - statement_timestamp()`), the client's round trip;
with track_functions = 'all', each memex.* function's calls and self milliseconds.

    python bench/update_path_bench.py                         # ~1 min
    python bench/update_path_bench.py --writes 500 --rounds 6
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from typing import Any

import numpy as np
import psycopg
from harness import create_database, embedded_server, log, run_main, write_json
from load_workload import AGENTS, USERS_PER_AGENT, Texts
from store_path_bench import (
    _app,
    _cpu_s,
    _function_ms,
    _seed,
    _vectors,
    ab_start,
    closing_function_stats,
    print_functions,
    sql_as_at,
)

FILES = (
    "sql/memories/010_term_stats_update.sql",
    "sql/memories/022_ann_on_insert.sql",
    "sql/memories/058_memory_revision.sql",
)
TRIGGERS = ("_term_stats_update", "_ann_on_insert", "_memory_revision")
KINDS = ("content", "field", "store")
RETURNING = "select extract(epoch from clock_timestamp() - statement_timestamp()) * 1000"
WRITES = {
    "content": RETURNING + " from memex.update_memory(p_agent_id => %s, p_user_id => %s,"
    " p_id => %s, p_content => %s, p_embedding => %s, p_embedding_model => 'bench-model')",
    "field": RETURNING + " from memex.update_memory(p_agent_id => %s, p_user_id => %s,"
    " p_id => %s, p_importance => %s)",
    "store": RETURNING + " from memex.store(p_agent_id => %s, p_user_id => %s,"
    " p_content => %s, p_embedding => %s, p_embedding_model => 'bench-model')",
}


def _owners(conn: psycopg.Connection) -> dict[str, tuple[str, bool]]:
    rows = conn.execute(
        "select proname::text, proowner::regrole::text, prosecdef from pg_proc"
        " where pronamespace = 'memex'::regnamespace and proname = any(%s)",
        (list(TRIGGERS),),
    ).fetchall()
    return {r[0]: (r[1], r[2]) for r in rows}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--writes", type=int, default=300, help="writes of each kind a round")
    args, command = ab_start(parser)
    rng = np.random.default_rng(39)
    pick = random.Random(39)
    texts = Texts("unique", pick)  # every content change changes the text
    sides = ("after", "before")
    cpu = {(s, k): [] for s in sides for k in KINDS}  # type: dict[tuple[str, str], list[float]]
    server = {(s, k): [] for s in sides for k in KINDS}  # type: dict[tuple[str, str], list[float]]
    client = {(s, k): [] for s in sides for k in KINDS}  # type: dict[tuple[str, str], list[float]]
    fstats: dict[str, dict[str, tuple[int, float, float]]] = {}
    vectors = _vectors(rng, args.writes)
    with embedded_server("update-path-bench") as srv:
        dsns = {s: create_database(srv.dsn, f"update_path_{s}") for s in sides}
        owners = {s: psycopg.connect(dsns[s], autocommit=True) for s in sides}
        apps: dict[str, psycopg.Connection] = {}
        try:
            owners["before"].execute(sql_as_at(args.before, FILES))
            for s in sides:
                print(f"{s}: {_owners(owners[s])}")
                owners[s].execute(f"alter database update_path_{s} set track_functions = 'all'")
                apps[s] = _app(dsns[s])
                _seed(apps[s], rng)
                apps[s].close()
                owners[s].execute("analyze")
                apps[s] = _app(dsns[s])  # a new backend: its function statistics from here
            memories = {
                s: owners[s]
                .execute("select agent_id, user_id, id from memex.memories order by id")
                .fetchall()
                for s in sides
            }
            time.sleep(1.0)
            start_stats = {s: _function_ms(owners[s]) for s in sides}
            pids = {s: apps[s].info.backend_pid for s in sides}
            for round_ in range(args.rounds + 1):  # round 0 warms (plans, caches)
                order = sides if round_ % 2 else sides[::-1]
                # the same draws on both sides (a memory by its position in the seed)
                picks = [pick.randrange(len(memories["after"])) for _ in range(args.writes)]
                contents = [texts.memory() for _ in range(args.writes)]
                tenants = [
                    (f"agent-{pick.randrange(AGENTS)}", f"user-{pick.randrange(USERS_PER_AGENT)}")
                    for _ in range(args.writes)
                ]
                for s in order:
                    for kind in KINDS:
                        calls: list[tuple[Any, ...]] = []
                        for i in range(args.writes):
                            agent, user, memory = memories[s][picks[i]]
                            calls.append(
                                (agent, user, memory, contents[i], vectors[i])
                                if kind == "content"
                                else (agent, user, memory, round(pick.uniform(0.5, 1.5), 3))
                                if kind == "field"
                                else (*tenants[i], contents[i], vectors[i])
                            )
                        _run(apps[s], kind, calls, pids[s], round_, s, cpu, server, client)
            fstats = closing_function_stats(apps, owners, start_stats)
        finally:
            for conn in (*apps.values(), *owners.values()):
                conn.close()
    log(f"{args.writes} writes of each kind per database and round, {args.rounds} rounds")
    report: dict[str, Any] = {"command": command, "before": args.before, "kinds": {}}
    print(
        f"{'kind':>8} {'side':>7} {'backend CPU ms/write (median; rounds)':>40}"
        f" {'server p50':>11} {'client p50':>11}"
    )
    for kind in KINDS:
        for s in sides:
            r = {
                "backend_cpu_ms": statistics.median(cpu[s, kind]),
                "backend_cpu_rounds": cpu[s, kind],
                "server_p50_ms": statistics.median(server[s, kind]),
                "client_p50_ms": statistics.median(client[s, kind]),
            }
            report["kinds"].setdefault(kind, {})[s] = r
            rounds = ", ".join(f"{c:.3f}" for c in cpu[s, kind])
            print(
                f"{kind:>8} {s:>7} {r['backend_cpu_ms']:>8.3f} ({rounds})"
                f" {r['server_p50_ms']:>11.3f} {r['client_p50_ms']:>11.3f}"
            )
        after, before = (report["kinds"][kind][s]["backend_cpu_ms"] for s in sides)
        print(f"{kind:>8} after/before backend CPU: {after / before:.3f}")
    n_writes = args.writes * len(KINDS) * (args.rounds + 1)
    print("\nfunctions per write, all kinds (track_functions, the warm-up round included):")
    print_functions(fstats, n_writes)
    report["functions"] = fstats
    write_json(args.out, "update_path_bench", report)
    return 0


def _run(
    app: psycopg.Connection,
    kind: str,
    calls: list[tuple[Any, ...]],
    pid: int,
    round_: int,
    side: str,
    cpu: dict[tuple[str, str], list[float]],
    server: dict[tuple[str, str], list[float]],
    client: dict[tuple[str, str], list[float]],
) -> None:
    """One round's writes of one kind on one side, timed unless it is the warm-up."""
    cpu0 = _cpu_s(pid)
    for values in calls:
        started = time.perf_counter()
        with app.transaction():
            app.execute("select memex._enter(null)")
            row = app.execute(WRITES[kind], values).fetchone()
        if round_:
            client[side, kind].append((time.perf_counter() - started) * 1000)
            server[side, kind].append(float(row[0]))  # type: ignore[index]
    if round_:
        cpu[side, kind].append((_cpu_s(pid) - cpu0) * 1000 / len(calls))


if __name__ == "__main__":
    run_main(main)
