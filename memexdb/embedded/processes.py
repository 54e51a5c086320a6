"""Finding and stopping the processes of a data dir's server.

pg_ctl daemonises the server, so it outlives an owner that was SIGKILLed; backends of a
killed postmaster linger until they notice. Every server process has PGDATA as its
working directory: a reliable tag that survives pid reuse.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from pathlib import Path

import psutil

STOP_TIMEOUT = 30.0


def is_server_process(p: psutil.Process, pgdata: Path) -> bool:
    # postgres and every backend chdir to PGDATA: a reliable tag that survives pid reuse
    try:
        return (
            p.name() == "postgres"
            and p.status() != psutil.STATUS_ZOMBIE
            and Path(p.cwd()) == pgdata
        )
    except psutil.Error:
        return False


def postmaster(pgdata: Path) -> psutil.Process | None:
    try:
        pid = int((pgdata / "postmaster.pid").read_text().split("\n", 1)[0])
        p = psutil.Process(pid)
    except (OSError, ValueError, psutil.Error):
        return None
    return p if is_server_process(p, pgdata) else None


def server_processes(pgdata: Path) -> list[psutil.Process]:
    return [p for p in psutil.process_iter() if is_server_process(p, pgdata)]


def wait_gone(procs: list[psutil.Process], timeout: float) -> list[psutil.Process]:
    """Wait until `procs` exited; returns the ones still alive. A zombie counts as gone:
    an init that reaps slowly (or none, e.g. in containers) must not delay us."""
    deadline = time.monotonic() + timeout
    delay = 0.005
    while True:
        alive = []
        for p in procs:
            with contextlib.suppress(ChildProcessError):
                os.waitpid(p.pid, os.WNOHANG)  # reap if we are its (sub)reaper
            try:
                if p.status() != psutil.STATUS_ZOMBIE:
                    alive.append(p)
            except psutil.NoSuchProcess:
                pass
        if not alive or time.monotonic() > deadline:
            return alive
        time.sleep(delay)
        delay = min(delay * 2, 0.1)


def terminate(pgdata: Path) -> None:
    """Fast shutdown of the server on `pgdata`: SIGINT is what `pg_ctl stop -m fast`
    sends; signalling directly needs no subprocess (signal handlers, atexit), then
    escalate, and kill backends orphaned by a killed postmaster."""
    pm = postmaster(pgdata)
    if pm is not None:
        for sig, timeout in (
            (signal.SIGINT, STOP_TIMEOUT),
            (signal.SIGQUIT, 5.0),  # immediate shutdown
            (signal.SIGKILL, 5.0),
        ):
            with contextlib.suppress(psutil.NoSuchProcess):
                pm.send_signal(sig)
            if not wait_gone([pm], timeout):
                break
    leftovers = server_processes(pgdata)
    if leftovers:
        # backends exit by themselves soon after noticing the postmaster died
        for p in wait_gone(leftovers, 2.0):
            with contextlib.suppress(psutil.Error):
                p.kill()
        wait_gone(leftovers, 5.0)
