"""Service settings, read once from MEMEX_* environment variables."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path


def _int(name: str, default: int) -> int:
    raw = os.environ.get(name)
    return int(raw) if raw else default


def _opt_int(name: str) -> int | None:
    raw = os.environ.get(name)
    return int(raw) if raw else None


@dataclass(frozen=True)
class Settings:
    """Configuration of a memexdb service (see the README's configuration table)."""

    database_url: str | None = None
    data_dir: Path | None = None
    embedder: str = "minilm"
    embedding_url: str | None = None
    embedding_api_key: str | None = None
    host: str = "127.0.0.1"
    port: int = 8000
    pool_size: int = 10
    rate_limit_store_per_minute: int | None = None
    rate_limit_search_per_minute: int | None = None
    maintenance_interval_seconds: int = 60
    allowed_hosts: str | None = None
    allowed_origins: str | None = None
    mcp_relay_dir: Path | None = None

    @classmethod
    def from_env(cls) -> Settings:
        data_dir = os.environ.get("MEMEX_DATA_DIR")
        return cls(
            database_url=os.environ.get("MEMEX_DATABASE_URL") or None,
            data_dir=Path(data_dir).expanduser() if data_dir else None,
            embedder=os.environ.get("MEMEX_EMBEDDER", "minilm"),
            embedding_url=os.environ.get("MEMEX_EMBEDDING_URL") or None,
            embedding_api_key=os.environ.get("MEMEX_EMBEDDING_API_KEY") or None,
            host=os.environ.get("MEMEX_HOST", "127.0.0.1"),
            port=_int("MEMEX_PORT", 8000),
            pool_size=_int("MEMEX_POOL_SIZE", 10),
            rate_limit_store_per_minute=_opt_int("MEMEX_RATE_LIMIT_STORE_PER_MINUTE"),
            rate_limit_search_per_minute=_opt_int("MEMEX_RATE_LIMIT_SEARCH_PER_MINUTE"),
            maintenance_interval_seconds=_int("MEMEX_MAINTENANCE_INTERVAL_SECONDS", 60),
            allowed_hosts=os.environ.get("MEMEX_ALLOWED_HOSTS") or None,
            allowed_origins=os.environ.get("MEMEX_ALLOWED_ORIGINS") or None,
            # Set by `memexdb serve --workers N` for its workers, not by users.
            mcp_relay_dir=Path(relay) if (relay := os.environ.get("MEMEX_MCP_RELAY_DIR")) else None,
        )
