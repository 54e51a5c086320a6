"""The `memexdb` command as a user runs it: a real process on the embedded PostgreSQL
(MEMEX_DATA_DIR, no MEMEX_DATABASE_URL), Ctrl-C / SIGTERM / a crash, and no postgres
process left behind; and the same commands against an existing server."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import psutil
import psycopg
import pytest

from memexdb.embedded import EmbeddedPostgres
from memexdb.migrations import head_revision
from tests.conftest import db_dsn, drop_database, scratch_dir
from tests.live_service import (
    Service,
    cli_args,
    client,
    free_port,
    kill_postgres,
    postgres_processes,
    run_cli,
    service_env,
    wait_no_postgres,
)

WHO = {"agent_id": "cli-agent", "user_id": "cli-user"}
MEMORIES = [
    "The user's daughter Emma starts primary school in September.",
    "Deploy the backend with `make release` after the CI pipeline is green.",
    "The office coffee machine is broken on Fridays.",
]
EXIT_TIMEOUT = 45.0  # graceful shutdown of uvicorn + fast shutdown of postgres, loaded box


@contextlib.contextmanager
def _scratch_data_dir() -> Iterator[Path]:
    root = scratch_dir("memexdb-cli-")
    path = root / "data"
    try:
        yield path
    finally:
        kill_postgres(path)  # only after a failed test; each test checks it is clean
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def data_dir() -> Iterator[Path]:
    """A fresh, not-yet-existing MEMEX_DATA_DIR."""
    with _scratch_data_dir() as path:
        yield path


@pytest.fixture(scope="module")
def shared_data_dir() -> Iterator[Path]:
    """A MEMEX_DATA_DIR shared by tests that need no fresh cluster (saves an initdb and a
    slow rmtree each); they use their own tenant and leave nothing running."""
    with _scratch_data_dir() as path:
        yield path


def embedded_env(data_dir: Path) -> dict[str, str]:
    env = service_env(MEMEX_DATA_DIR=str(data_dir))
    assert "MEMEX_DATABASE_URL" not in env
    return env


def serve(data_dir: Path) -> Service:
    port = free_port()
    log = data_dir.parent / f"serve-{port}.log"
    service = Service(cli_args("serve", "--port", str(port)), embedded_env(data_dir), port, log)
    try:
        service.wait_healthy()
    except BaseException:
        service.close()
        raise
    return service


def alive(p: psutil.Process) -> bool:
    try:
        return p.is_running() and p.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def count(http: httpx.Client, who: dict[str, str] = WHO) -> int:
    r = http.get("/v1/memories/count", params=who)
    assert r.status_code == 200, r.text
    value: int = r.json()["count"]
    return value


def assert_clean_exit(service: Service, sig: signal.Signals, data_dir: Path) -> int:
    """Signal the service, wait (bounded) for its exit, and require that no postgres
    process of `data_dir` survives it and that nothing printed a traceback."""
    # Ctrl-C in a terminal signals the whole foreground process group.
    service.send(sig, group=sig == signal.SIGINT)
    code, _ = service.wait(EXIT_TIMEOUT)
    left = wait_no_postgres(data_dir, timeout=15.0)
    output = service.output()
    assert left == [], f"postgres left running after {sig.name}: {left}\n{output[-3000:]}"
    assert "Traceback" not in output, output[-4000:]
    return code


def test_migrate_serve_interrupt_and_restart(data_dir: Path) -> None:
    env = embedded_env(data_dir)
    code, out = run_cli(["migrate"], env)
    assert code == 0, out
    assert head_revision() in out
    assert wait_no_postgres(data_dir) == [], "migrate left its server running"

    code, out = run_cli(["status"], env, timeout=60)
    assert code == 1, out
    assert "not reachable" in out and "memexdb serve" in out, out
    assert "Traceback" not in out

    service = serve(data_dir)
    try:
        with client(service.base_url) as http:
            for content in MEMORIES:
                r = http.post("/v1/memories", json={**WHO, "content": content})
                assert r.status_code == 201, r.text
            r = http.post(
                "/v1/memories/search",
                json={**WHO, "query": "when does my kid begin school?", "top_k": 3},
            )
            assert r.status_code == 200, r.text
            body = r.json()
            assert body["total"] == 3
            best = body["results"][0]
            assert best["content"] == MEMORIES[0]
            for part in ("score", "similarity", "recency", "relevance"):
                assert isinstance(best[part], float), (part, best)
            assert best["score"] > body["results"][1]["score"]

            code, out = run_cli(["status"], env, timeout=60)
            assert code == 0, out
            assert f"schema revision: {head_revision()}" in out, out
            assert "tenants: 1, memories: 3" in out, out
            assert str(data_dir) in out, out
        assert postgres_processes(data_dir), "serve runs no postgres on its data dir?"
        code = assert_clean_exit(service, signal.SIGINT, data_dir)
        assert code in (0, 130, -signal.SIGINT), code
    finally:
        service.close()

    # The data outlives the process; SIGTERM (a service manager's stop) is clean too.
    service = serve(data_dir)
    try:
        with client(service.base_url) as http:
            assert count(http) == 3
            r = http.post("/v1/memories/search", json={**WHO, "query": "coffee machine"})
            assert r.json()["results"][0]["content"] == MEMORIES[2]
        assert assert_clean_exit(service, signal.SIGTERM, data_dir) == 0
    finally:
        service.close()


def test_crashed_serve_does_not_block_the_next_one(shared_data_dir: Path) -> None:
    data_dir = shared_data_dir
    who = {"agent_id": f"crash-{uuid.uuid4().hex[:8]}", "user_id": "u"}
    service = serve(data_dir)
    try:
        with client(service.base_url) as http:
            r = http.post("/v1/memories", json={**who, "content": MEMORIES[1]})
            assert r.status_code == 201, r.text
        orphans = postgres_processes(data_dir)
        assert orphans
        service.send(signal.SIGKILL)
        code, _ = service.wait(EXIT_TIMEOUT)
        assert code == -signal.SIGKILL
    finally:
        service.close()
    # pg_ctl daemonised the server: the crash leaves it running without an owner ...
    assert any(alive(p) for p in orphans)

    # ... and the next serve stops it and starts a fresh one on the same data.
    service = serve(data_dir)
    try:
        assert not any(alive(p) for p in orphans), orphans
        with client(service.base_url) as http:
            assert count(http, who) == 1
            r = http.post("/v1/memories", json={**who, "content": MEMORIES[2]})
            assert r.status_code == 201, r.text
            assert count(http, who) == 2
        assert_clean_exit(service, signal.SIGINT, data_dir)
    finally:
        service.close()


def test_second_serve_on_the_same_data_dir_is_refused(shared_data_dir: Path) -> None:
    data_dir = shared_data_dir
    service = serve(data_dir)
    try:
        code, out = run_cli(["serve", "--port", str(free_port())], embedded_env(data_dir))
        assert code != 0, out
        assert "in use" in out and str(data_dir) in out, out
        assert "starting embedded PostgreSQL" not in out, out  # it never tried
        assert "Traceback" not in out, out
        with client(service.base_url) as http:  # the first one is unharmed
            assert count(http, {"agent_id": "nobody", "user_id": "u"}) == 0
        assert assert_clean_exit(service, signal.SIGTERM, data_dir) == 0
    finally:
        service.close()


def test_commands_against_database_url(pg_server: EmbeddedPostgres, tmp_path: Path) -> None:
    """With MEMEX_DATABASE_URL the commands use that server and start no embedded one."""
    name = f"cli_blank_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(pg_server.dsn, autocommit=True) as conn:
        conn.execute(f"create database {name}")
    dsn = db_dsn(pg_server, name)
    unused = tmp_path / "never-created"
    env = service_env(MEMEX_DATABASE_URL=dsn, MEMEX_DATA_DIR=str(unused))
    try:
        code, out = run_cli(["status"], env, timeout=60)
        assert code == 1 and "not migrated" in out, out

        code, out = run_cli(["migrate"], env)
        assert code == 0, out
        assert head_revision() in out
        code, out = run_cli(["migrate"], env)  # idempotent
        assert code == 0, out

        code, out = run_cli(["status"], env, timeout=60)
        assert code == 0, out
        assert "database: MEMEX_DATABASE_URL" in out, out
        assert f"schema revision: {head_revision()}" in out, out
        assert "tenants: 0, memories: 0" in out, out
        assert dsn not in out  # a URL may carry a password: never echo it
        assert not unused.exists()

        # It shows the ANN index's state: tenants in it, and grown ones still waiting.
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute(
                "insert into memex.settings (name, value) values ('exact_scan_max_rows', '2')"
                " on conflict (name) do update set value = excluded.value"
            )
            for n in range(3):
                conn.execute(
                    "select memex.store('grown', 'u', %s,"
                    " array_fill(0.1::real, array[384])::vector, 'test')",
                    (f"memory {n}",),
                )
            conn.execute("select memex.index_tenant('imports', 'u')")
        code, out = run_cli(["status"], env, timeout=60)
        assert code == 0, out
        assert "tenants: 2, memories: 3" in out, out
        assert "ANN index: 1 tenant(s) in it, 1 grown past" in out, out

        # A schema of an older release (as after upgrading the package): a hint, not a
        # traceback from counts that read newer columns.
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute("update memex.alembic_version set version_num = '0004'")
        code, out = run_cli(["status"], env, timeout=60)
        assert code == 1 and "`memexdb migrate` upgrades it" in out, out
        assert "Traceback" not in out, out
    finally:
        drop_database(pg_server, dsn)


def test_unreachable_database_url_is_a_clear_error(tmp_path: Path) -> None:
    missing = f"postgresql://postgres@/memex?host={tmp_path}&port=5432"
    code, out = run_cli(["status"], service_env(MEMEX_DATABASE_URL=missing), timeout=60)
    assert code == 1 and "not reachable" in out, out
    assert "Traceback" not in out
    for command in (["migrate"], ["serve", "--port", str(free_port())]):
        code, out = run_cli(command, service_env(MEMEX_DATABASE_URL=missing), timeout=60)
        assert code != 0, out
        assert "Traceback" not in out, out
        assert "database" in out.lower(), out


def test_serve_on_a_busy_port_fails_at_once_naming_the_holder(data_dir: Path) -> None:
    """Before: PostgreSQL started, migrated and the model loaded, then [Errno 98] ~12 s
    later. Now the port is checked first: nothing starts (no data directory is made), and
    the message names this test's process, which holds the port."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        code, out = run_cli(["serve", "--port", str(port)], embedded_env(data_dir), timeout=120)
    assert code == 2, out
    assert f"port {port} is in use by pid {os.getpid()} (" in out, out
    assert "Traceback" not in out and "Errno 98" not in out, out
    assert not data_dir.exists(), out  # no embedded PostgreSQL was started
    assert wait_no_postgres(data_dir) == [], out


def _run_split(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """`memexdb ARGS` with stdout and stderr apart (bounded)."""
    return subprocess.run(
        cli_args(*args),
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_commands_print_their_answer_and_log_only_with_verbose(
    pg_server: EmbeddedPostgres,
) -> None:
    """Before: six INFO lines of migration logging preceded every answer. Now commands
    other than serve log warnings only, unless -v (then on stderr)."""
    name = f"cli_quiet_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(pg_server.dsn, autocommit=True) as conn:
        conn.execute(f"create database {name}")
    dsn = db_dsn(pg_server, name)
    env = service_env(MEMEX_DATABASE_URL=dsn)
    try:
        res = _run_split(["migrate"], env)
        assert res.returncode == 0, res.stderr
        assert res.stdout == f"migrated to revision {head_revision()}\n", res.stdout
        assert res.stderr == "", res.stderr
        res = _run_split(["keys", "list"], env)
        assert res.returncode == 0, res.stderr
        assert res.stdout.startswith("prefix\taccess") and res.stdout.count("\n") == 1
        assert res.stderr == "", res.stderr
        for verbose in (["-v", "keys", "list"], ["keys", "list", "-v"]):
            res = _run_split(verbose, env)
            assert res.returncode == 0, res.stderr
            assert res.stdout.startswith("prefix\taccess"), res.stdout
            assert "INFO memexdb: database at revision" in res.stderr, res.stderr
    finally:
        drop_database(pg_server, dsn)


# --- settings, help, and the commands that share a running service's server ----------


def test_a_bad_setting_is_one_line_naming_the_variable_and_exit_2() -> None:
    for args, env in (
        (["--help"], service_env(MEMEX_PORT="notanint")),
        (["serve"], service_env(MEMEX_WORKERS="0")),
        (["status"], service_env(MEMEX_MAINTENANCE_INTERVAL_SECONDS="soon")),
    ):
        code, out = run_cli(args, env, timeout=60)
        assert code == 2, out
        assert len(out.strip().splitlines()) == 1, out
        ((name, value),) = ((k, v) for k, v in env.items() if k.startswith("MEMEX_"))
        assert out.startswith("memexdb: invalid setting: ") and f"{name}={value!r}" in out, out
        assert "Traceback" not in out


def test_help_says_what_each_option_means_its_default_and_variable() -> None:
    code, out = run_cli(["serve", "--help"], service_env(MEMEX_PORT="8123"), timeout=60)
    assert code == 0, out
    text = " ".join(out.split())  # argparse wraps lines
    for option, meaning, default, variable in (
        ("--host", "address to listen on", "127.0.0.1", "MEMEX_HOST"),
        ("--port", "TCP port to listen on", "8123", "MEMEX_PORT"),  # from the environment
        ("--workers", "uvicorn worker processes", "1", "MEMEX_WORKERS"),
        ("--log-level", "log level of the service", "info", "MEMEX_LOG_LEVEL"),
    ):
        assert f"{meaning} (default: {default}; env {variable})" in text, (option, text)
        assert option in text
    for command, words in (
        ("migrate", "Safe to run twice or from several processes at once"),
        ("status", "schema revision, tenants and memories"),
        ("dsn", "export MEMEX_DATABASE_URL=$(memexdb dsn)"),
    ):
        code, out = run_cli([command, "--help"], service_env(), timeout=60)
        assert code == 0 and words in " ".join(out.split()), out


def dsn_of(env: dict[str, str]) -> tuple[int, str, str]:
    """`memexdb dsn`: (exit code, stdout, stderr), kept apart as `$(memexdb dsn)` does."""
    res = subprocess.run(
        cli_args("dsn"), env=env, capture_output=True, text=True, timeout=60, check=False
    )
    return res.returncode, res.stdout, res.stderr


def test_dsn_migrate_and_status_use_the_server_serve_runs(shared_data_dir: Path) -> None:
    data_dir = shared_data_dir
    env = embedded_env(data_dir)
    expected = EmbeddedPostgres(data_dir).dsn
    code, out, err = dsn_of(env)  # nothing runs: the DSN still, and a hint
    assert (code, out) == (0, f"{expected}\n"), (out, err)
    assert "memexdb serve" in err

    service = serve(data_dir)
    try:
        assert f"embedded PostgreSQL ready: {expected}" in service.output()
        code, out, err = dsn_of(env)
        assert (code, out, err) == (0, f"{expected}\n", "")
        with psycopg.connect(out.strip()) as conn:  # what `export MEMEX_DATABASE_URL=...` gets
            assert conn.execute("select count(*) >= 0 from memex.memories").fetchone() == (True,)

        code, out = run_cli(["migrate", "-v"], env)  # -v: it logs whose server it uses
        assert code == 0, out
        assert f"migrated to revision {head_revision()}" in out, out
        assert f"using the embedded PostgreSQL of pid {service.proc.pid}" in out, out
        assert "starting embedded PostgreSQL" not in out and "in use" not in out, out

        code, out = run_cli(["status"], env, timeout=60)
        assert code == 0, out
        assert f"dsn: {expected}" in out and f"served by pid {service.proc.pid}" in out, out
        assert f"schema revision: {head_revision()}" in out, out
        assert "starting embedded PostgreSQL" not in out, out

        with client(service.base_url) as http:  # the service is unharmed
            assert count(http, {"agent_id": "nobody", "user_id": "u"}) == 0
        assert assert_clean_exit(service, signal.SIGTERM, data_dir) == 0
    finally:
        service.close()
