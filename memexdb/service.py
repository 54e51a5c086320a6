"""The service application: REST (and the MCP endpoints mounted next to it), built from
the environment so that every uvicorn worker process builds the same app."""

from __future__ import annotations

from starlette.applications import Starlette

from memexdb.client import AsyncMemex
from memexdb.config import Settings
from memexdb.embedding import build_embedder
from memexdb.errors import SetupError
from memexdb.rest import create_app


def app_from_env() -> Starlette:
    """uvicorn factory: needs MEMEX_DATABASE_URL (`memexdb serve` sets it for its
    workers after starting the embedded server and migrating)."""
    settings = Settings.from_env()
    dsn = settings.database_url
    if not dsn:
        raise SetupError("MEMEX_DATABASE_URL is not set; start the service with `memexdb serve`")

    async def connect() -> AsyncMemex:
        embedder = build_embedder(
            settings.embedder, url=settings.embedding_url, api_key=settings.embedding_api_key
        )
        # Passing the plain embedder makes the client own (and close) its batcher.
        return await AsyncMemex.connect(dsn, embedder=embedder, max_size=settings.pool_size)

    return create_app(connect, maintenance_interval=settings.maintenance_interval_seconds)
