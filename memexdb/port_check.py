"""Is the port `memexdb serve` is to listen on free? Checked before anything starts (the
embedded PostgreSQL, migrations, the model), so that a busy port fails at once and says
which process holds it, not ~12 s later with uvicorn's [Errno 98]."""

from __future__ import annotations

import errno
import os
import socket
from pathlib import Path

_LISTEN = "0A"  # TCP_LISTEN in /proc/net/tcp's st column
_MAX_PROCESSES = 100_000  # bound on the /proc scan


def port_in_use(host: str, port: int) -> str | None:
    """None when `host`:`port` can be bound (as uvicorn binds it: SO_REUSEADDR); else why
    not, naming the process that listens there when Linux's /proc shows it."""
    if port == 0:
        return None
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as exc:
        return f"cannot listen on {host}: {exc.strerror}"
    family, kind, proto, _, address = infos[0]
    with socket.socket(family, kind, proto) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(address)
        except OSError as exc:
            if exc.errno != errno.EADDRINUSE:
                return f"cannot listen on {host}:{port}: {exc.strerror}"
            holder = _listener(port)
            return f"port {port} is in use" + (f" by {holder}" if holder else "")
    return None


def _listener(port: int) -> str | None:
    """'pid N (command line)' of a process listening on TCP `port`, from /proc."""
    inodes = _listening_inodes(port)
    if not inodes:
        return None
    proc = Path("/proc")
    for entry in list(proc.iterdir())[:_MAX_PROCESSES]:
        if not entry.name.isdigit():
            continue
        try:
            for fd in (entry / "fd").iterdir():
                target = os.readlink(fd)
                if target.startswith("socket:[") and target[8:-1] in inodes:
                    return f"pid {entry.name} ({_command(entry)})"
        except OSError:  # gone meanwhile, or another user's: not ours to see
            continue
    return None


def _listening_inodes(port: int) -> set[str]:
    inodes: set[str] = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            local, state, inode = fields[1], fields[3], fields[9]
            if state == _LISTEN and int(local.rsplit(":", 1)[1], 16) == port:
                inodes.add(inode)
    return inodes


def _command(process: Path) -> str:
    try:
        raw = (process / "cmdline").read_bytes()
    except OSError:
        return "?"
    words = raw.replace(b"\0", b" ").decode(errors="replace").split()
    return " ".join(words)[:200] or "?"
