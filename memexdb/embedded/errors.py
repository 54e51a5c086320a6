"""Errors of the embedded server."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from memexdb.embedded.ownership import ServerOwner


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
