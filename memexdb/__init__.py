"""memexdb: Postgres-native persistent memory for AI agents."""

__version__ = "0.1.0"

from memexdb.client import AsyncMemex, Memex
from memexdb.errors import (
    Conflict,
    DatabaseUnavailable,
    InvalidArgument,
    MemexError,
    NotFound,
    RateLimited,
    SetupError,
)
from memexdb.memories.models import NewMemory
from memexdb.migrations import migrate
from memexdb.types import ImportResult, Memory, MemoryPage, MemoryType, SearchHit, SearchMode

__all__ = [
    "AsyncMemex",
    "Conflict",
    "DatabaseUnavailable",
    "ImportResult",
    "InvalidArgument",
    "Memex",
    "MemexError",
    "Memory",
    "MemoryPage",
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
