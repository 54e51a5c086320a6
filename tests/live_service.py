"""Real service processes for the REST and CLI tests: free ports, bounded waits, and a
cleanup that leaves no process behind (only processes these tests started, by pid)."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import IO, Any, TypeVar

import httpx
import psutil
import pytest

from memexdb.embedded.accounts import service_account

REPO = Path(__file__).resolve().parents[1]
MEMEXDB = Path(sys.executable).with_name("memexdb")  # the console script of this venv
START_TIMEOUT = 180.0  # embedded initdb + migration + model load on a loaded 2-core box
STOP_TIMEOUT = 45.0

T = TypeVar("T")


def artifacts_dir(*parts: str) -> Path:
    """Where tests keep what a person may want to look at (screenshots): MEMEX_TEST_ARTIFACTS,
    by default test-artifacts/ at the repository root (gitignored); made if missing."""
    root = Path(os.environ.get("MEMEX_TEST_ARTIFACTS") or REPO / "test-artifacts")
    path = root.joinpath(*parts)
    path.mkdir(parents=True, exist_ok=True)
    return path


# Internals that must never reach an HTTP client.
LEAKS = ("Traceback", "psycopg", "Error(", 'File "', "asyncpg", "pydantic_core")


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def service_env(**overrides: str) -> dict[str, str]:
    """This environment without any MEMEX_* setting of the caller, plus `overrides`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMEX_")}
    env.update(overrides)
    env["PYTHONUNBUFFERED"] = "1"
    return env


def uvicorn_args(port: int) -> list[str]:
    return [
        sys.executable,
        "-m",
        "uvicorn",
        "memexdb.service:app_from_env",
        "--factory",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--log-level",
        "warning",
    ]


def cli_args(*args: str) -> list[str]:
    return (
        [str(MEMEXDB), *args] if MEMEXDB.exists() else [sys.executable, "-m", "memexdb.cli", *args]
    )


def run_cli(args: Sequence[str], env: dict[str, str], timeout: float = 180.0) -> tuple[int, str]:
    """Run `memexdb ARGS` to completion (bounded); returns (exit code, stdout+stderr)."""
    try:
        res = subprocess.run(
            cli_args(*args),
            env=env,
            cwd=REPO,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:  # say where it stopped
        parts = (exc.stdout, exc.stderr)
        text = "".join(p.decode() if isinstance(p, bytes) else p or "" for p in parts)
        raise AssertionError(f"memexdb {' '.join(args)} ran over {timeout} s:\n{text}") from None
    return res.returncode, res.stdout + res.stderr


def assert_no_leak(response: httpx.Response) -> None:
    """httpx response hook: no body may show a traceback or exception class names."""
    text = response.read().decode("utf-8", "replace")
    if response.headers.get("content-type", "").startswith("application/json"):
        for needle in LEAKS:
            assert needle not in text, f"{response.request.url} leaks {needle!r}: {text[:500]}"


def client(base_url: str, timeout: float = 60.0) -> httpx.Client:
    return httpx.Client(
        base_url=base_url, timeout=timeout, event_hooks={"response": [assert_no_leak]}
    )


class Service:
    """A child process (its own session, like a program started from a shell) that
    serves HTTP on 127.0.0.1:`port`; its output goes to a file, never a pipe."""

    dsn = ""  # its database, when service_on_new_database made it

    def __init__(
        self, args: Sequence[str], env: dict[str, str], port: int, log: Path, cwd: Path = REPO
    ) -> None:
        self.port = port
        self.base_url = f"http://127.0.0.1:{port}"
        self.log_path = log
        self._log: IO[bytes] = log.open("wb")
        try:
            self.proc = subprocess.Popen(
                list(args),
                env=env,
                cwd=cwd,
                stdin=subprocess.DEVNULL,
                stdout=self._log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        except BaseException:
            self._log.close()
            raise

    def output(self) -> str:
        self._log.flush()
        return self.log_path.read_text(errors="replace")

    def wait_healthy(self, timeout: float = START_TIMEOUT) -> float:
        """Poll /health until 200 (bounded); returns the seconds it took."""
        started = time.monotonic()
        deadline = started + timeout
        last = "no answer"
        with httpx.Client(timeout=5.0) as http:
            for _ in range(int(timeout * 10)):
                if self.proc.poll() is not None:
                    raise AssertionError(
                        f"service exited with {self.proc.returncode}:\n{self.output()[-4000:]}"
                    )
                try:
                    r = http.get(f"{self.base_url}/health")
                    if r.status_code == 200:
                        return time.monotonic() - started
                    last = f"{r.status_code} {r.text[:200]}"
                except httpx.TransportError as exc:
                    last = repr(exc)
                if time.monotonic() > deadline:
                    break
                time.sleep(0.1)
        raise AssertionError(f"no healthy /health in {timeout}s ({last}):\n{self.output()[-4000:]}")

    def send(self, sig: signal.Signals, *, group: bool = False) -> None:
        """Signal the service (`group`: its whole process group, as a terminal's Ctrl-C)."""
        if self.proc.poll() is None:
            if group:
                os.killpg(self.proc.pid, sig)
            else:
                self.proc.send_signal(sig)

    def wait(self, timeout: float = STOP_TIMEOUT) -> tuple[int, float]:
        """Wait (bounded) for the exit; returns (exit code, seconds waited)."""
        started = time.monotonic()
        try:
            code = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.close()
            raise AssertionError(
                f"service still running {timeout}s after the signal:\n{self.output()[-4000:]}"
            ) from None
        return code, time.monotonic() - started

    def stop(self, sig: signal.Signals = signal.SIGTERM) -> int:
        self.send(sig)
        return self.wait()[0]

    def close(self) -> None:
        """Make sure the process is gone (SIGKILL if needed) and release the log file."""
        if self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(timeout=STOP_TIMEOUT)
        self._log.close()


@contextlib.contextmanager
def service_on_new_database(server: Any, name: str, **env: str) -> Iterator[Service]:
    """A healthy service (uvicorn, one worker) on a fresh migrated database of the test
    session's embedded `server`, with settings `env`; stopped, and its database dropped,
    afterwards."""
    from tests.conftest import drop_database, new_database, scratch_dir

    dsn = new_database(server)
    log = scratch_dir(f"memexdb-{name}-log-") / "service.log"
    port = free_port()
    running = Service(uvicorn_args(port), service_env(MEMEX_DATABASE_URL=dsn, **env), port, log)
    running.dsn = dsn
    try:
        running.wait_healthy()
        yield running
    finally:
        running.close()
        drop_database(server, dsn)
        shutil.rmtree(log.parent, ignore_errors=True)


def _under(path: str, root: Path) -> bool:
    return path == str(root) or path.startswith(f"{root}/")


def postgres_processes(data_dir: Path) -> list[psutil.Process]:
    """Live postgres processes of the cluster in `data_dir`: the postmaster names the
    data dir on its command line; backends and auxiliary processes rewrite theirs but keep
    PGDATA as their working directory."""
    data_dir = data_dir.resolve()
    found = []
    for p in psutil.process_iter():
        try:
            if p.status() == psutil.STATUS_ZOMBIE:
                continue
            if p.name() != "postgres":
                continue
            if str(data_dir) in " ".join(p.cmdline()) or _under(p.cwd(), data_dir):
                found.append(p)
        except psutil.Error:
            continue
    return found


def wait_until(check: Callable[[], Any], timeout: float, interval: float = 0.1) -> Any:
    """Poll `check` until it returns something truthy (bounded in time and count);
    returns the last value (falsy on timeout)."""
    deadline = time.monotonic() + timeout
    value = check()
    for _ in range(int(timeout / interval) + 1):
        if value or time.monotonic() > deadline:
            break
        time.sleep(interval)
        value = check()
    return value


def wait_no_postgres(data_dir: Path, timeout: float = 15.0) -> list[psutil.Process]:
    """Wait (bounded) until no postgres of `data_dir` runs; returns the ones left."""
    gone = wait_until(lambda: not postgres_processes(data_dir), timeout)
    return [] if gone else postgres_processes(data_dir)


def kill_postgres(data_dir: Path) -> None:
    """Cleanup after a failed test: SIGKILL the postgres processes of our scratch
    `data_dir` (by pid; they were started by these tests)."""
    procs = postgres_processes(data_dir)
    for p in procs:
        with contextlib.suppress(psutil.Error):
            p.kill()
    psutil.wait_procs(procs, timeout=10)


def run_as_postgres_user(args: Sequence[str | Path], cwd: Path, timeout: float = 60.0) -> None:
    """Run a PostgreSQL program (initdb, pg_ctl, pg_basebackup) to success: postgres
    refuses root, so as root as the embedded server's OS user."""
    acct = service_account()
    res = subprocess.run(
        [str(a) for a in args],
        user=acct.uid if acct.switch else None,
        group=acct.gid if acct.switch else None,
        extra_groups=list(acct.groups) if acct.switch else None,
        cwd=cwd,
        env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LC_ALL": "C"},
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    assert res.returncode == 0, f"{args[0]} failed: {res.stdout}{res.stderr}"


def required(found: T | None, message: str) -> T:
    """`found` (a tool or server the test needs), or skip the test saying `message`; in CI
    (CI set), where .ci/run installs it, fail instead."""
    if found is None:
        if os.environ.get("CI"):
            pytest.fail(f"{message}, but CI needs it")
        pytest.skip(message)
    return found


@contextlib.contextmanager
def in_process_service(dsn: str, **env: str) -> Iterator[httpx.Client]:
    """The service's app (`memexdb.service:app_from_env`, as each uvicorn worker builds it:
    REST, MCP, middleware, lifespan) in this process on database `dsn` with settings `env`,
    behind Starlette's TestClient: an httpx client with the leak check of `client()`. For
    tests of behaviour, not of the process (those boot `Service` and are e2e). An
    exception the app lets through (uvicorn would log its traceback) fails the test."""
    from starlette.testclient import TestClient

    from memexdb.service import app_from_env

    saved = dict(os.environ)
    os.environ.clear()
    os.environ.update(service_env(MEMEX_DATABASE_URL=dsn, **env))
    try:
        app = app_from_env()
        http = TestClient(app, base_url="http://127.0.0.1:8000", client=("127.0.0.1", 50000))
        http.__enter__()  # the lifespan: the runtime opens its pool (and reads the settings)
    finally:
        os.environ.clear()
        os.environ.update(saved)
    try:
        http.event_hooks = {"response": [assert_no_leak]}
        yield http
    finally:
        http.__exit__(None, None, None)


class Through(httpx.BaseTransport):
    """An httpx transport into the app behind a Starlette TestClient (in_process_service;
    the TestClient runs on its own copy of httpx, `httpx2`): a client of plain httpx (an
    SDK's, or one with its own headers and cookies) reaches the app in this process. The
    outer client keeps the cookies and follows redirects, as over a network."""

    def __init__(self, app: Any) -> None:
        self.app = app

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        self.app.cookies.clear()  # the outer client's cookies only, never a last test's
        answer = self.app.request(
            request.method,
            str(request.url),
            headers=request.headers.multi_items(),
            content=request.read(),
            follow_redirects=False,
        )
        return httpx.Response(
            answer.status_code, headers=answer.headers.multi_items(), content=answer.content
        )
