"""memexdb-client: the HTTP client of a memexdb service (`memexdb serve`), with the
methods, arguments, result types and typed errors of the in-process memexdb.AsyncMemex.

    from memexdb_client import MemexClient

    with MemexClient("http://127.0.0.1:8000", api_key=...) as memex:
        memex.store("assistant", "bob", "Bob is allergic to peanuts")
"""

# The version of memexdb-client, defined here only (clients/python/pyproject.toml reads
# it); always memexdb's (memexdb/__init__.py) and @memexdb/client's (package.json).
__version__ = "0.1.0"

from memexdb_client._transport import HTTPError, Retries
from memexdb_client.api import AsyncMemoryAPI
from memexdb_client.client import AsyncMemexClient, MemexClient
from memexdb_client.errors import (
    Busy,
    Conflict,
    DatabaseUnavailable,
    Forbidden,
    InvalidArgument,
    MemexError,
    NotFound,
    RateLimited,
    Unauthenticated,
    Unavailable,
)
from memexdb_client.types import Access, Memory, MemoryType, SearchHit, SearchMode

__all__ = [
    "Access",
    "AsyncMemexClient",
    "AsyncMemoryAPI",
    "Busy",
    "Conflict",
    "DatabaseUnavailable",
    "Forbidden",
    "HTTPError",
    "InvalidArgument",
    "MemexClient",
    "MemexError",
    "Memory",
    "MemoryType",
    "NotFound",
    "RateLimited",
    "Retries",
    "SearchHit",
    "SearchMode",
    "Unauthenticated",
    "Unavailable",
    "__version__",
]
