"""Real embedded PostgreSQL servers: start/stop, crash recovery, permissions."""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import psycopg
import pytest

from memexdb.embedded import (
    DataDirInUseError,
    EmbeddedPostgres,
    EmbeddedPostgresError,
    ServerKeeper,
    _bundled_pginstall,
    _can_use_bundle,
    _pginstall_for,
    _service_account,
)
from memexdb.embedded.sizing import MAX_MB, MIN_MB, shared_buffers_mb, usable_memory_bytes

pytestmark = pytest.mark.e2e  # docs/development.md, 'Test tiers'

REPO = Path(__file__).resolve().parents[1]
IS_ROOT = os.geteuid() == 0

# Started in a child process; prints the DSN, then lingers until killed or `hold` passes
# (then atexit stops the server).
CHILD = """
import sys, time
from pathlib import Path
from memexdb.embedded import DataDirInUseError, EmbeddedPostgres, install_signal_handlers
pg = EmbeddedPostgres(Path(sys.argv[1]))
install_signal_handlers(pg)
try:
    print("ok", pg.start(), flush=True)
except DataDirInUseError as exc:
    print("inuse", exc, flush=True)
    sys.exit(0)
time.sleep(float(sys.argv[2]))
"""


def spawn(data_dir: Path, hold: float = 120.0) -> subprocess.Popen[str]:
    path = os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))
    env = {**os.environ, "PYTHONPATH": path}
    args = [sys.executable, "-c", CHILD, str(data_dir), str(hold)]
    return subprocess.Popen(args, stdout=subprocess.PIPE, text=True, env=env)


def server_parents(root: Path) -> dict[psutil.Process, int]:
    """Postgres processes (postmaster and backends) whose cwd, i.e. PGDATA, is under root,
    each with its parent's pid, in one look: a process that exits while it is looked at
    (a backend ending, the startup process after crash recovery) is left out, never an
    error."""
    found = {}
    for p in psutil.process_iter():
        try:
            alive = p.name() == "postgres" and p.status() != psutil.STATUS_ZOMBIE
            if alive and Path(p.cwd()).is_relative_to(root):
                found[p] = p.ppid()
        except psutil.Error:
            continue
    return found


def server_procs(root: Path) -> list[psutil.Process]:
    return list(server_parents(root))


def postmasters(root: Path) -> list[int]:
    """The pids of the servers under root: the processes whose parent is none of them."""
    parents = server_parents(root)
    pids = {p.pid for p in parents}
    return [p.pid for p, ppid in parents.items() if ppid not in pids]


def wait_no_server(root: Path, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while server_procs(root) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert server_procs(root) == []


@pytest.fixture
def root() -> Iterator[Path]:
    # pytest's tmp_path may sit under a 0700 dir that the service user cannot traverse
    base = "/var/tmp" if os.path.isdir("/var/tmp") else None
    d = Path(tempfile.mkdtemp(prefix="memexdb-pg-", dir=base)).resolve()
    d.chmod(0o755)
    yield d
    for p in server_procs(d):
        with contextlib.suppress(psutil.NoSuchProcess):  # it may end meanwhile
            p.kill()
    shutil.rmtree(d)


def test_the_look_at_server_processes_holds_while_they_exit(root: Path) -> None:
    """postmasters() and server_procs() while processes named postgres under root come
    and go (as backends do, and the startup process after crash recovery): one that
    exits while it is looked at is left out, never psutil.NoSuchProcess."""
    shutil.copy("/bin/sleep", root / "postgres")
    done = threading.Event()

    def churn() -> None:
        while not done.is_set():
            batch = [subprocess.Popen([root / "postgres", "0.02"], cwd=root) for _ in range(40)]
            for child in batch:
                child.wait()

    churner = threading.Thread(target=churn)
    churner.start()
    looks = 0
    try:
        deadline = time.monotonic() + 2
        while time.monotonic() < deadline:
            postmasters(root)
            server_procs(root)
            looks += 1
    finally:
        done.set()
        churner.join()
    assert looks > 10


def test_start_connect_vector_stop(root: Path) -> None:
    with EmbeddedPostgres(root / "pg18") as pg:
        assert pg.dsn.startswith("postgresql://postgres@/memexdb?host=")
        with psycopg.connect(pg.dsn) as conn:
            conn.execute("CREATE EXTENSION vector")
            row = conn.execute("SELECT current_database(), '[1,2]'::vector <-> '[1,3]'").fetchone()
            assert row == ("memexdb", 1.0)
            listen = conn.execute("SHOW listen_addresses").fetchone()
            assert listen == ("",)
            # a quarter of the memory it may use, within bounds (memexdb.embedded.sizing)
            size = conn.execute(
                "select setting::bigint * 8 / 1024 from pg_settings where name = 'shared_buffers'"
            ).fetchone()
            assert size == (shared_buffers_mb(usable_memory_bytes()),)
        assert len(postmasters(root)) == 1
    wait_no_server(root)
    pg.stop()  # idempotent


def test_start_twice_is_idempotent(root: Path) -> None:
    pg = EmbeddedPostgres(root / "pg18")
    try:
        dsn = pg.start()
        first = postmasters(root)
        assert pg.start() == dsn
        assert EmbeddedPostgres(root / "pg18").start() == dsn  # same process: adopts
        assert postmasters(root) == first
    finally:
        pg.stop()
    wait_no_server(root)


def test_restart_keeps_data(root: Path) -> None:
    with EmbeddedPostgres(root / "pg18") as pg, psycopg.connect(pg.dsn) as conn:
        conn.execute("CREATE TABLE t (x int)")
        conn.execute("INSERT INTO t VALUES (42)")
        conn.commit()
    with EmbeddedPostgres(root / "pg18") as pg, psycopg.connect(pg.dsn) as conn:
        assert conn.execute("SELECT x FROM t").fetchall() == [(42,)]


def test_crashed_owner_is_recovered(root: Path) -> None:
    data = root / "pg18"
    with spawn(data) as child:
        assert child.stdout is not None
        status, dsn = child.stdout.readline().split()
        assert status == "ok"
        with psycopg.connect(dsn) as conn:
            conn.execute("CREATE TABLE t AS SELECT 1 AS x")
        orphan = postmasters(root)
        child.kill()  # SIGKILL: no atexit, the daemonised postmaster survives
    assert postmasters(root) == orphan

    with EmbeddedPostgres(data) as pg:
        now = postmasters(root)
        assert len(now) == 1 and now != orphan  # orphan stopped, fresh server started
        with psycopg.connect(pg.dsn) as conn:
            assert conn.execute("SELECT x FROM t").fetchall() == [(1,)]
    wait_no_server(root)


def test_stale_postmaster_pid(root: Path) -> None:
    pg = EmbeddedPostgres(root / "pg18")
    try:
        pg.start()
        (old,) = postmasters(root)
        os.kill(old, signal.SIGKILL)  # backends are orphaned, postmaster.pid stays
        while old in postmasters(root):  # signal delivery is asynchronous
            time.sleep(0.01)
        assert (pg.pgdata / "postmaster.pid").exists()
        pg.start()
        (new,) = postmasters(root)
        assert new != old
        with psycopg.connect(pg.dsn) as conn:
            assert conn.execute("SELECT 1").fetchone() == (1,)
    finally:
        pg.stop()
    wait_no_server(root)


def test_live_owner_is_an_error_and_sigterm_stops_it(root: Path) -> None:
    data = root / "pg18"
    with spawn(data) as child:
        assert child.stdout is not None
        assert child.stdout.readline().startswith("ok ")
        pg = EmbeddedPostgres(data)
        with pytest.raises(DataDirInUseError, match=f"in use by pid {child.pid}"):
            pg.start()
        pg.stop()  # must not touch the other process's server
        assert len(postmasters(root)) == 1

        child.send_signal(signal.SIGTERM)
        assert child.wait(timeout=30) == 128 + signal.SIGTERM
    wait_no_server(root, timeout=1)


def test_takeover_cut_short_by_closing_still_records_the_server(root: Path) -> None:
    """A process sharing a server (`memexdb mcp` next to `memexdb serve`) takes it over
    when its owner ends. The process may be closing (a client left) while the keeper's
    start() still runs, since clients reconnect as soon as the server accepts: close()
    waits for that start, so the server it launched is known and stopped on exit rather
    than left running."""
    saved = {sig: signal.getsignal(sig) for sig in (signal.SIGTERM, signal.SIGHUP)}
    data = root / "pg18"
    with spawn(data) as child:
        assert child.stdout is not None
        assert child.stdout.readline().startswith("ok ")
        server = EmbeddedPostgres(data)
        with pytest.raises(DataDirInUseError):
            server.start()
        server.share()
        (old,) = postmasters(root)
        child.send_signal(signal.SIGTERM)
        assert child.wait(timeout=30) == 128 + signal.SIGTERM
    wait_no_server(root, timeout=5)

    # Hold the data dir's lock: the keeper's start() waits for it in its thread.
    lock = os.open(data / "lock", os.O_RDWR)
    fcntl.flock(lock, fcntl.LOCK_EX)
    keeper = ServerKeeper(server, interval=0.01).start()
    closing = threading.Thread(target=keeper.close)
    try:
        time.sleep(0.5)  # the keeper, checking every 10 ms, is inside start()
        closing.start()  # the process is closing ...
        time.sleep(0.2)
        assert closing.is_alive()  # ... and close() waits for the start under way
        os.close(lock)  # ... which goes on to launch the server
        lock = -1
        closing.join(timeout=60)
        assert not closing.is_alive()
        assert keeper.restarts == 1
        assert postmasters(root) not in ([], [old])
    finally:
        if lock >= 0:
            os.close(lock)
        server.stop()
        for sig, handler in saved.items():
            signal.signal(sig, handler)
    wait_no_server(root)


def test_keeper_relaunches_a_killed_postmaster(root: Path) -> None:
    """The owner's keeper notices a postmaster killed under it (kill -9, the OOM killer)
    and starts the server again on the same data; after stop() it never does."""
    server = EmbeddedPostgres(root / "pg18")
    keeper = None
    try:
        with psycopg.connect(server.start(), autocommit=True) as conn:
            conn.execute("create table t as select 42 as x")
        keeper = ServerKeeper(server, interval=0.05).start()
        (old,) = postmasters(root)
        os.kill(old, signal.SIGKILL)
        deadline = time.monotonic() + 60
        while keeper.restarts == 0 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert keeper.restarts == 1
        (new,) = postmasters(root)
        assert new != old
        with psycopg.connect(server.dsn) as conn:
            assert conn.execute("select x from t").fetchall() == [(42,)]
        server.stop()
        time.sleep(0.3)  # six looks of the keeper: none starts the stopped server
        assert postmasters(root) == []
        assert keeper.restarts == 1
    finally:
        if keeper is not None:
            keeper.close()
        server.stop()
    wait_no_server(root)


def test_keeper_survives_an_unexpected_error(
    root: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A check that fails with something unforeseen (here: the first one raises) is
    logged and the keeper goes on: it still relaunches a killed postmaster."""
    server = EmbeddedPostgres(root / "pg18")
    keeper = None
    real = server.ensure_running
    calls = 0

    def flaky() -> bool:
        nonlocal calls
        calls += 1
        if calls == 1:
            raise RuntimeError("a file vanished mid-look")
        return real()

    try:
        server.start()
        monkeypatch.setattr(server, "ensure_running", flaky)
        (old,) = postmasters(root)
        os.kill(old, signal.SIGKILL)
        keeper = ServerKeeper(server, interval=0.05).start()
        deadline = time.monotonic() + 60
        while keeper.restarts == 0 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert calls > 1 and keeper.restarts == 1
        assert "keeper failed a check" in caplog.text
        (new,) = postmasters(root)
        assert new != old
    finally:
        if keeper is not None:
            keeper.close()
        server.stop()
    wait_no_server(root)


def test_concurrent_starts_do_not_race(root: Path) -> None:
    with spawn(root / "pg18") as a, spawn(root / "pg18") as b:
        assert a.stdout is not None and b.stdout is not None
        status = {a.stdout.readline().split()[0]: a, b.stdout.readline().split()[0]: b}
        assert sorted(status) == ["inuse", "ok"]  # the loser waited for the lock
        assert status["inuse"].wait(timeout=30) == 0
        status["ok"].send_signal(signal.SIGTERM)
    wait_no_server(root, timeout=1)


def test_long_path_uses_runtime_socket_dir(root: Path) -> None:
    data = root / ("d" * 90) / "pg18"
    with EmbeddedPostgres(data) as pg:
        assert pg.socket_dir != data
        with psycopg.connect(pg.dsn) as conn:
            assert conn.execute("SELECT 1").fetchone() == (1,)
    assert not pg.socket_dir.exists()
    wait_no_server(root)


@pytest.mark.skipif(not IS_ROOT, reason="needs root")
def test_untraversable_parent_is_a_clear_error(root: Path) -> None:
    private = root / "private"
    private.mkdir(mode=0o700)
    with pytest.raises(EmbeddedPostgresError, match=r"cannot traverse .*MEMEX_DATA_DIR"):
        EmbeddedPostgres(private / "sub" / "pg18").start()
    assert stat.S_IMODE(private.stat().st_mode) == 0o700
    assert not (private / "sub").exists()


@pytest.mark.skipif(not IS_ROOT, reason="needs root")
def test_unreadable_binaries_are_copied_once(root: Path) -> None:
    private = root / "private"
    private.mkdir(mode=0o700)
    (private / "pginstall").symlink_to(_bundled_pginstall(), target_is_directory=True)
    acct = _service_account()
    assert not _can_use_bundle(private / "pginstall", acct)

    dest = root / "cache" / "pginstall-test"
    assert _pginstall_for(acct, private / "pginstall", dest) == dest
    assert _can_use_bundle(dest, acct)
    inode = dest.stat().st_ino
    assert _pginstall_for(acct, private / "pginstall", dest) == dest  # reused
    assert dest.stat().st_ino == inode
    assert stat.S_IMODE(private.stat().st_mode) == 0o700
    assert [p.name for p in dest.parent.iterdir()] == ["pginstall-test"]  # no temp left


def test_shared_buffers_take_a_quarter_of_memory_within_bounds() -> None:
    gib = 1024**3
    assert shared_buffers_mb(None) == MIN_MB
    assert shared_buffers_mb(gib // 4) == MIN_MB  # a small container: PostgreSQL's default
    assert shared_buffers_mb(4 * gib) == 1024
    assert shared_buffers_mb(64 * gib) == MAX_MB
    memory = usable_memory_bytes()
    assert memory is not None and memory > 0  # Linux: sysconf, and the cgroup's limit if any
