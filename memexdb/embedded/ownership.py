"""Which process owns a data dir's server, and the lock that serialises start/stop.

``owner.json`` records the pid and create time of the process that launched the
running server; ``lock`` is the flock() target every start and stop holds, so that of
several processes (uvicorn workers, desktop clients' ``memexdb mcp``, ``memexdb
migrate``) exactly one launches, relaunches or takes over the server.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import psutil

from memexdb.embedded.errors import EmbeddedPostgresError

LOCK_TIMEOUT = 120.0


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


class OwnerFile:
    """``owner.json`` of a data dir (written atomically: a reader never sees half)."""

    def __init__(self, data_dir: Path) -> None:
        self.path = data_dir / "owner.json"

    def read(self) -> ServerOwner | None:
        try:
            raw = json.loads(self.path.read_text())
            return ServerOwner(int(raw["pid"]), float(raw["create_time"]))
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def write(self, owner: ServerOwner) -> None:
        tmp = self.path.with_name("owner.json.tmp")
        tmp.write_text(json.dumps({"pid": owner.pid, "create_time": owner.create_time}))
        tmp.replace(self.path)

    def remove(self) -> None:
        self.path.unlink(missing_ok=True)


class DataDirLock:
    """flock() on ``data_dir/lock`` across processes; re-entrant within this process,
    whose threads serialise on `mutex` (re-entrant too: a stop may run in a signal
    handler while the same thread holds the lock)."""

    def __init__(self, data_dir: Path) -> None:
        self.path = data_dir / "lock"
        self.mutex = threading.RLock()
        self._fd = -1
        self._depth = 0

    @contextlib.contextmanager
    def held(self) -> Iterator[None]:
        with self.mutex:
            if self._depth == 0:
                fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
                deadline = time.monotonic() + LOCK_TIMEOUT
                while True:
                    try:
                        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                        break
                    except BlockingIOError:
                        if time.monotonic() > deadline:
                            os.close(fd)
                            raise EmbeddedPostgresError(
                                f"timed out waiting for {self.path}"
                            ) from None
                        time.sleep(0.05)
                self._fd = fd
            self._depth += 1
            try:
                yield
            finally:
                self._depth -= 1
                if self._depth == 0:
                    os.close(self._fd)  # closing releases the flock
                    self._fd = -1


class DataDirInUseError(EmbeddedPostgresError):
    """Another live process owns the server running on this data dir."""

    def __init__(self, data_dir: Path, owner: ServerOwner) -> None:
        super().__init__(
            f"data dir {data_dir} in use by pid {owner.pid}; stop that memexdb process or "
            "choose another MEMEX_DATA_DIR"
        )
        self.owner = owner
        self.pid = owner.pid
