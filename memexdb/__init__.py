"""memexdb: Postgres-native persistent memory for AI agents."""

__version__ = "0.1.0"

from memexdb.client import AsyncMemex, Memex  # noqa: E402
from memexdb.errors import (  # noqa: E402
    DatabaseUnavailable,
    InvalidArgument,
    MemexError,
    NotFound,
    RateLimited,
    SetupError,
)
from memexdb.migrations import migrate  # noqa: E402
from memexdb.types import Memory, MemoryType, NewMemory, SearchHit, SearchMode  # noqa: E402

__all__ = [
    "AsyncMemex",
    "DatabaseUnavailable",
    "InvalidArgument",
    "Memex",
    "MemexError",
    "Memory",
    "MemoryType",
    "NewMemory",
    "NotFound",
    "RateLimited",
    "SearchHit",
    "SearchMode",
    "SetupError",
    "__version__",
    "migrate",
]
