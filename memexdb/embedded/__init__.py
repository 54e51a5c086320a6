"""Embedded PostgreSQL 18 + pgvector for memexdb's zero-configuration mode.

| module | what it does |
|---|---|
| `server` | the server of a data dir: initdb, configuration, start/stop, its DSN |
| `ownership` | owner.json (which process runs the server) and the data dir's lock |
| `keeper` | relaunch after a crash, take over when the owning process ends |
| `processes` | find and stop a data dir's postgres processes (also orphaned ones) |
| `accounts` | the OS user that runs the server (``memexdb-pg`` as root), folder checks |
| `binaries` | the wheel's binaries, or a private copy the service user can read |
| `signals` | stop the server on SIGTERM/SIGHUP |
"""

from memexdb.embedded.accounts import service_account as _service_account
from memexdb.embedded.binaries import bundled_pginstall as _bundled_pginstall
from memexdb.embedded.binaries import can_use_bundle as _can_use_bundle
from memexdb.embedded.binaries import pginstall_for as _pginstall_for
from memexdb.embedded.errors import EmbeddedPostgresError
from memexdb.embedded.keeper import ServerKeeper
from memexdb.embedded.ownership import DataDirInUseError, ServerOwner
from memexdb.embedded.server import EmbeddedPostgres, default_data_dir
from memexdb.embedded.signals import install_signal_handlers

__all__ = [
    "DataDirInUseError",
    "EmbeddedPostgres",
    "EmbeddedPostgresError",
    "ServerKeeper",
    "ServerOwner",
    "_bundled_pginstall",
    "_can_use_bundle",
    "_pginstall_for",
    "_service_account",
    "default_data_dir",
    "install_signal_handlers",
]
