"""`memexdb consolidate`: condensing old memories and dreaming over files, now, from the
command line, one tenant at a time with its progress shown: a bar on a terminal, else one
line per step (a run, or a tenant that was not due), so that long work is never silent.

Each step is what the service's scheduler and "run now" do for one tenant
(memexdb.agentic.consolidation: with an LLM when MEMEX_LLM_URL is set, SQL's extractive
summary and tidying otherwise), as the operator.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections import Counter
from collections.abc import Sequence
from typing import Any, TextIO

from tqdm import tqdm

from memexdb.agentic import consolidation
from memexdb.client import AsyncMemex
from memexdb.config import Settings
from memexdb.consolidation.models import DEFAULT_RUNS_LIMIT
from memexdb.llm import ChatModel
from memexdb.runtime.embedder import embedder_for
from memexdb.types import ConsolidationRun

JOBS = ("condense", "dream")


def add_parser(sub: Any) -> None:
    parser = sub.add_parser(
        "consolidate",
        help="condense old memories and tidy files now, tenant by tenant, showing progress",
        description="Run consolidation now, as the operator: condense each due tenant's "
        "oldest episodic memories into a summary (the originals archived, restorable), "
        "then dream over its files (duplicate lines and repeated headings merged; with "
        "MEMEX_LLM_URL, also the model's merges and contradiction fixes), one tenant at a "
        "time: a progress bar on a terminal, else one line per tenant and job on stderr; "
        "then a summary on stdout. Without --agent-id/--user-id: every tenant "
        "(memex.dream_users), each only if due unless --force.",
    )
    parser.add_argument(
        "--job", choices=(*JOBS, "both"), default="both", help="which job (default: both)"
    )
    parser.add_argument("--agent-id", help="only this agent's tenants")
    parser.add_argument("--user-id", help="only this user (needs --agent-id)")
    parser.add_argument("--force", action="store_true", help="run even where it is not due")
    parser.add_argument(
        "--dry-run", action="store_true", help="show what would be done, change nothing"
    )
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress, summary only")


def run(args: argparse.Namespace, dsn: str, settings: Settings) -> int:
    """The command, on the database at `dsn` (memexdb.cli has checked the arguments)."""
    return asyncio.run(_run(args, dsn, settings))


async def _run(args: argparse.Namespace, dsn: str, settings: Settings) -> int:
    jobs = JOBS if args.job == "both" else (args.job,)
    async with await AsyncMemex.connect(
        dsn, embedder=embedder_for(settings), llm=ChatModel.from_settings(settings), max_size=2
    ) as client:
        memex = client.as_operator("cli")
        if args.user_id is not None:
            tenants = [(args.agent_id, args.user_id)]
        else:
            tenants = await _tenants(memex, args.agent_id)
        outcome: Counter[str] = Counter()
        with Progress(len(tenants) * len(jobs), quiet=args.quiet) as progress:
            for job in jobs:
                step = consolidation.condense if job == "condense" else consolidation.dream
                for tenant in tenants:
                    runs = await step(memex, tenant, dry_run=args.dry_run, force=args.force)
                    progress.step(job, tenant, runs)
                    outcome.update(f"{job} {r.status}" for r in runs)
                    if not runs:
                        outcome[f"{job} not due"] += 1
    done = ", ".join(f"{n} {what}" for what, n in sorted(outcome.items()))
    print(f"{len(tenants)} tenant(s): {done or 'nothing to do'}")
    return 1 if any(what.endswith(" failed") for what in outcome) else 0


async def _tenants(memex: AsyncMemex, agent_id: str | None) -> list[tuple[str, str]]:
    """Every tenant (of `agent_id`), in (agent_id, user_id) order."""
    tenants: list[tuple[str, str]] = []
    after: tuple[str, str] | None = None
    while True:
        page = await memex.dream_users(agent_id, limit=DEFAULT_RUNS_LIMIT, after=after)
        tenants += [(u.agent_id, u.user_id) for u in page]
        if len(page) < DEFAULT_RUNS_LIMIT:
            return tenants
        after = tenants[-1]


def describe(job: str, tenant: tuple[str, str], runs: Sequence[ConsolidationRun]) -> str:
    """One step as a line: `condense agent/user: done, 50 memories -> 1`."""
    who = f"{job} {tenant[0]}/{tenant[1]}"
    if not runs:
        return f"{who}: not due"
    parts = []
    for r in runs:
        counts = []
        if r.kind == "condense" or r.memories_in:
            counts.append(f"{r.memories_in or 0} memories -> {r.memories_out or 0}")
        if r.kind == "dream" or r.files_in:
            counts.append(f"{r.files_in or 0} files, {r.files_touched or 0} changed")
        if r.error:
            counts.append(r.error)
        parts.append(", ".join([r.status, *counts]))
    return f"{who}: {'; '.join(parts)}"


class Progress:
    """A tqdm bar on a terminal (the runs that did something written above it), else one
    line per step (a run, or "not due"); nothing with `quiet`."""

    def __init__(self, total: int, *, quiet: bool, stream: TextIO | None = None) -> None:
        self.stream = stream or sys.stderr
        self.quiet = quiet
        self.bar: tqdm[Any] | None = None
        if not quiet and self.stream.isatty():
            self.bar = tqdm(total=total, unit=" steps", file=self.stream, dynamic_ncols=True)

    def step(self, job: str, tenant: tuple[str, str], runs: Sequence[ConsolidationRun]) -> None:
        if self.quiet:
            return
        line = describe(job, tenant, runs)
        if self.bar is None:
            print(line, file=self.stream, flush=True)
            return
        if any(r.status != "nothing" for r in runs):  # the bar counts the others
            self.bar.write(line, file=self.stream)
        self.bar.set_postfix_str(f"{job} {tenant[0]}/{tenant[1]}", refresh=False)
        self.bar.update()

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.bar is not None:
            self.bar.close()
