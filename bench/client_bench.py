"""What the Python HTTP client adds to a search (issue 23): `AsyncMemexClient.search`
against the same request sent as a bare keep-alive `httpx.AsyncClient` POST to
/v1/memories/search (the service's own round trip, with nothing of the client around
it), rounds interleaved in the same run against one live service (uvicorn, one worker,
the embedded PostgreSQL). Queries repeat, so the service's embedding cache answers them:
what is left is the round trip, which is where a client's overhead shows.

    python bench/client_bench.py            # ~1 min
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import httpx
from harness import (
    create_database,
    embedded_server,
    free_port,
    log,
    print_header,
    run_main,
    stop_process,
    wait_healthy,
    write_json,
)
from machine import machine_facts
from memexdb_client import AsyncMemexClient

WHO = {"agent_id": "bench", "user_id": "u"}
QUERIES = [f"what did the user say about topic {i}?" for i in range(20)]


async def _bare(http: httpx.AsyncClient, n: int) -> float:
    started = time.perf_counter()
    for i in range(n):
        body = {**WHO, "query": QUERIES[i % len(QUERIES)], "top_k": 10}
        response = await http.post("/v1/memories/search", json=body)
        response.raise_for_status()
        response.json()
    return (time.perf_counter() - started) * 1000 / n


async def _client(client: AsyncMemexClient, n: int) -> float:
    started = time.perf_counter()
    for i in range(n):
        await client.search(WHO["agent_id"], WHO["user_id"], QUERIES[i % len(QUERIES)])
    return (time.perf_counter() - started) * 1000 / n


async def _measure(url: str, args: argparse.Namespace) -> dict[str, list[float]]:
    times: dict[str, list[float]] = {"client": [], "bare httpx (baseline)": []}
    async with (
        AsyncMemexClient(url) as client,
        httpx.AsyncClient(base_url=url, timeout=30) as http,
    ):
        await client.store_many(
            [
                {**WHO, "content": f"note {i}: the user talked about topic {i % 40}"}
                for i in range(200)
            ]
        )
        await _bare(http, 50)  # warm both paths and the embedding cache
        await _client(client, 50)
        for _ in range(args.rounds):
            times["bare httpx (baseline)"].append(await _bare(http, args.requests))
            times["client"].append(await _client(client, args.requests))
    return times


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--requests", type=int, default=200, help="searches per round")
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--out", type=Path, default=Path("bench/out"))
    args = parser.parse_args()
    command = print_header(machine_facts())
    with embedded_server("memexdb-client-bench-") as server:
        dsn = create_database(server.dsn, "client_bench")
        port = free_port()
        env = {k: v for k, v in os.environ.items() if not k.startswith("MEMEX_")}
        env |= {"MEMEX_DATABASE_URL": dsn}
        log_path = server.data_dir.parent / "service.log"
        service = [sys.executable, "-m", "uvicorn", "memexdb.service:app_from_env", "--factory"]
        service += ["--host", "127.0.0.1", "--port", str(port), "--log-level", "warning"]
        with log_path.open("w") as out:
            proc = subprocess.Popen(
                service, env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=out
            )
        url = f"http://127.0.0.1:{port}"
        try:
            wait_healthy(url, proc, log_path)
            times = asyncio.run(_measure(url, args))
        finally:
            stop_process(proc)
    medians = {name: statistics.median(values) for name, values in times.items()}
    ratio = medians["client"] / medians["bare httpx (baseline)"]
    for name, value in medians.items():
        log(f"{name:>24}: {value:.3f} ms per search (median of {args.rounds} rounds)")
    log(f"client / bare: {ratio:.3f}x")
    write_json(
        args.out,
        "client_bench",
        {"command": command, "machine": machine_facts(), "ms": times, "ratio": ratio},
    )
    return 0


if __name__ == "__main__":
    run_main(main)
