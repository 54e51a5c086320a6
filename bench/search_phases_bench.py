"""Where memex's search request spends the backend's CPU (issue 39 item 1), phase by phase:
copies of the installed memex.search that return early after each phase, called
alternately with the whole function on one connection, as the service sends a request
(`memex._enter(null)` and the call in one pipeline, as memex_app), each request timed by
the backend's own CPU clock (/proc/<pid>/schedstat, nanoseconds). Interleaving request
by request gives every phase the same machine at the same moment: on a shared machine
the difference between two cut-off points is steadier than any two separate runs (a
baseline of rounds of thousands of requests moves 10-20 % between rounds here).

The copies are made from pg_get_functiondef(memex.search) with `return;` inserted at
the anchors below (the run stops, naming the anchor, when one is no longer in the
function: update ANCHORS with it), owned by memex_owner as the function is, so they run
under the same row-level security. Searches go to the seeded tenants (~5 memories each;
only searches run, so no tenant grows) and to one tenant of 50 memories.

    python bench/search_phases_bench.py                    # ~2 min
    python bench/search_phases_bench.py --requests 3000
"""

from __future__ import annotations

import argparse
import datetime
import os
import random
import statistics
from typing import Any

import psycopg
from harness import embedded_server, log, print_header, run_main
from load_workload import REFERENCE_MEMORIES, REFERENCE_QUERIES, seed_memories
from machine import machine_facts
from psycopg.conninfo import make_conninfo
from request_path_bench import MODEL, SEARCH, STORE, _app, _embed, _request, search_values

import memexdb

# (phase ended by the cut-off, text in memex.search, return before or after it)
ANCHORS = (
    (
        "entering and calling search",
        "    perform memex._check_tenant(p_agent_id, p_user_id);\n",
        "before",
    ),
    (
        "argument checks, memex._authorize",
        "    perform memex._authorize(p_agent_id, p_user_id, 'read');\n",
        "after",
    ),
    ("rate limit, tenants row", "    v_exact := coalesce(v_exact, true);\n", "after"),
    ("supersession links probe", "        if v_links then\n", "before"),
    (
        "ranking statement (best v_pool hits)",
        "        v_lowered := memex._lowered_repeats(v_contents, v_scores);\n",
        "before",
    ),
    (
        "memex._lowered_repeats",
        "        v_lowered := memex._lowered_repeats(v_contents, v_scores);\n",
        "after",
    ),
    (
        "top k rows (v_hits)",
        "            order by p.score desc, v_created[p.o] desc, v_ids[p.o]);\n",
        "after",
    ),
)
BIG = ("agent-big", "u", 50)


def _cpu_ns(pid: int) -> int:
    with open(f"/proc/{pid}/schedstat") as f:
        return int(f.read().split()[0])


def _copies(conn: psycopg.Connection[Any]) -> list[str]:
    """memex._phase_<i> for every anchor; returns the function names, the whole last."""
    source = conn.execute("select pg_get_functiondef('memex.search'::regproc)").fetchone()[0]  # type: ignore[index]
    names = []
    for i, (phase, anchor, where) in enumerate(ANCHORS):
        if source.count(anchor) != 1:
            raise SystemExit(f"anchor of {phase!r} not (once) in memex.search: {anchor!r}")
        cut = "    return;\n"
        text = source.replace(anchor, cut + anchor if where == "before" else anchor + cut)
        name = f"memex._phase_{i}"
        conn.execute(text.replace("FUNCTION memex.search(", f"FUNCTION {name}(", 1))
        conn.execute(f"alter function {name} owner to memex_owner")
        conn.execute(f"grant execute on function {name} to memex_app")
        names.append(name)
    return [*names, "memex.search"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=1500, help="per function and tenant set")
    args = parser.parse_args()
    if not 100 <= args.requests <= 20_000:
        parser.error("--requests 100-20000")
    print_header(machine_facts())
    vectors = _embed(REFERENCE_MEMORIES + REFERENCE_QUERIES)
    rng = random.Random(39)
    now = datetime.datetime.now(datetime.UTC)
    with embedded_server("search-phases") as srv:
        with psycopg.connect(srv.dsn, autocommit=True) as admin:
            admin.execute("create database phases")
        dsn = make_conninfo(srv.dsn, dbname="phases")
        memexdb.migrate(dsn)
        app = _app(dsn)
        bodies = seed_memories(random.Random(42))
        big = [dict(b, agent_id=BIG[0], user_id=BIG[1]) for b in bodies[: BIG[2]]]
        for body in bodies + big:
            text = str(body["content"])
            values = {
                **body,
                "embedding": vectors[text],
                "embedding_model": MODEL,
                "metadata": "{}",
            }
            _request(app, STORE, values)
        with psycopg.connect(dsn, autocommit=True) as admin:
            admin.execute("vacuum analyze")
            functions = _copies(admin)
        pid = app.execute("select pg_backend_pid()").fetchone()[0]  # type: ignore[index]
        results: dict[str, dict[str, list[float]]] = {}
        for label in ("seeded tenants (~5 memories)", f"one tenant of {BIG[2]} memories"):
            cost: dict[str, list[float]] = {f: [] for f in functions}
            for i in range(args.requests + 100):  # the first 100 warm the plans up
                if label.startswith("seeded"):
                    agent, user = f"agent-{rng.randrange(20)}", f"user-{rng.randrange(10)}"
                else:
                    agent, user = BIG[0], BIG[1]
                q = rng.choice(REFERENCE_QUERIES)
                sql = SEARCH.replace(
                    "p_query_text => %(query_text)s)",
                    "p_query_text => %(query_text)s, p_now => %(now)s)",
                )
                values = {**search_values(agent, user, q, vectors), "now": now}
                for f in functions[i % len(functions) :] + functions[: i % len(functions)]:
                    c0 = _cpu_ns(pid)
                    _request(app, sql.replace("memex.search(", f"{f}("), values)
                    if i >= 100:
                        cost[f].append((_cpu_ns(pid) - c0) / 1e6)
            results[label] = cost
            log(f"{label}: done")
        app.close()
    phases = [a[0] for a in ANCHORS] + ["returning the hits"]
    for label, cost in results.items():
        print(f"\n{label}: backend CPU per search request, mean of {args.requests}")
        print("| phase | ms | share | cumulative ms |")
        print("|---|---:|---:|---:|")
        total = statistics.mean(cost["memex.search"])
        before = 0.0
        for phase, f in zip(phases, functions, strict=True):
            upto = statistics.mean(cost[f])
            print(f"| {phase} | {upto - before:.3f} | {(upto - before) / total:.0%} | {upto:.3f} |")
            before = upto
    print(f"\nload average at end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    run_main(main)
