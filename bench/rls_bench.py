"""What tenant isolation costs: the same calls as the owner (a superuser, whom row-level
security does not apply to: the baseline), as the service does them (role memex_app, the
caller entered with memex._enter in the same pipelined transaction), and as a SQL role
bound to the tenant, in the same run, rounds interleaved.

    python bench/rls_bench.py            # ~2 min

Calls: memex.search (vector, alpha 0.7, top 10) on a 1,000- and a 10,000-memory tenant
(both ranked exactly), memex.count, and a plain `select count(*)` of the 10,000 rows,
where every row passes the policy (its per-row cost, alone). Other tenants hold as many
rows again, so the policy has rows to hide.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import psycopg
from harness import (
    Latency,
    create_database,
    embedded_server,
    log,
    print_header,
    run_main,
    unit_vectors,
    write_json,
)
from machine import machine_facts
from pgvector import HalfVector
from pgvector.psycopg import register_vector
from psycopg.conninfo import make_conninfo

COPY = (
    "copy memex.memories (agent_id, user_id, content, embedding, embedding_model)"
    " from stdin (format binary)"
)
CALLS = {
    "search 1k": (
        "select id from memex.search(p_agent_id => 'bench', p_user_id => 'small',"
        " p_query_embedding => %(q)s, p_top_k => 10, p_alpha => 0.7)"
    ),
    "search 10k": (
        "select id from memex.search(p_agent_id => 'bench', p_user_id => 'large',"
        " p_query_embedding => %(q)s, p_top_k => 10, p_alpha => 0.7)"
    ),
    "memex.count 10k": "select memex.count('bench', 'large')",
    "select count(*) 10k": (
        "select count(*) from memex.memories where agent_id = 'bench' and user_id = 'large'"
    ),
}
ROLE = "rls_bench_role"


def _load(dsn: str, rng: np.random.Generator) -> None:
    tenants = [("bench", "small", 1000), ("bench", "large", 10000), ("other", "large", 11000)]
    with psycopg.connect(dsn, autocommit=True) as conn:
        register_vector(conn)
        for agent, user, n in tenants:
            vectors = unit_vectors(rng, n)
            with conn.cursor().copy(COPY) as copy:
                copy.set_types(["text", "text", "text", "halfvec", "text"])
                for i in range(n):
                    copy.write_row(
                        (agent, user, f"memory {i} of {user}", HalfVector(vectors[i]), "bench")
                    )
        conn.execute("analyze memex.memories")
        if not conn.execute("select from pg_roles where rolname = %s", (ROLE,)).fetchone():
            conn.execute(f"create role {ROLE} login")
        conn.execute("select memex.bind_sql_role(%s, 'bench', null, 'read')", (ROLE,))


Caller = Callable[[str, dict[str, Any]], None]


def _owner(conn: psycopg.Connection) -> Caller:
    def call(sql: str, values: dict[str, Any]) -> None:
        conn.execute(sql, values).fetchall()

    return call


def _service(conn: psycopg.Connection, token: str) -> Caller:
    conn.execute("set role memex_app")

    def call(sql: str, values: dict[str, Any]) -> None:
        # as memexdb.client.memexdb.session.Session.fetch sends it: one pipelined round trip
        with conn.pipeline():
            conn.execute("begin")
            conn.execute("select memex._enter(%s, false)", (token,))
            cur = conn.execute(sql, values)
            conn.execute("commit")
        cur.fetchall()

    return call


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--calls", type=int, default=25, help="calls per round and config")
    args = parser.parse_args()
    command = print_header(machine_facts())
    rng = np.random.default_rng(7)
    with embedded_server("rls") as server:
        dsn = create_database(server.dsn, "rls")
        log("loading 22,000 memories")
        _load(dsn, rng)
        with psycopg.connect(dsn, autocommit=True) as conn:
            row = conn.execute("select token from memex.create_key('read', 'bench')").fetchone()
            assert row is not None
            token = row[0]
        connections = {
            name: psycopg.connect(
                dsn if name != "bound SQL role" else make_conninfo(dsn, user=ROLE), autocommit=True
            )
            for name in ("owner (no RLS)", "service (memex_app + _enter)", "bound SQL role")
        }
        for conn in connections.values():
            register_vector(conn)
        callers = {
            "owner (no RLS)": _owner(connections["owner (no RLS)"]),
            "service (memex_app + _enter)": _service(
                connections["service (memex_app + _enter)"], token
            ),
            "bound SQL role": _owner(connections["bound SQL role"]),
        }
        queries = unit_vectors(rng, args.calls)
        times: dict[tuple[str, str], list[float]] = {}
        for r in range(args.rounds):
            for call_name, sql in CALLS.items():
                for caller_name, call in callers.items():
                    for i in range(args.calls):
                        values = {"q": queries[i]}
                        started = time.perf_counter()
                        call(sql, values)
                        elapsed = time.perf_counter() - started
                        if r > 0:  # the first round warms caches and plans
                            times.setdefault((call_name, caller_name), []).append(elapsed)
        for conn in connections.values():
            conn.close()
    report: dict[str, Any] = {"command": command, "machine": machine_facts(), "results": {}}
    print(f"\n{'call':22} {'caller':30} {'p50 ms':>8} {'p95 ms':>8} {'x owner':>8}")
    for call_name in CALLS:
        base = Latency.of(times[call_name, "owner (no RLS)"]).p50_ms
        for caller_name in callers:
            lat = Latency.of(times[call_name, caller_name])
            ratio = lat.p50_ms / base
            print(
                f"{call_name:22} {caller_name:30} {lat.p50_ms:8.3f} {lat.p95_ms:8.3f} {ratio:8.2f}"
            )
            report["results"][f"{call_name} / {caller_name}"] = {**lat.__dict__, "ratio": ratio}
    path = write_json(Path(__file__).parent / "out", "rls", report)
    print(f"\nreport: {path}")
    return 0


if __name__ == "__main__":
    run_main(main)
