"""Service settings: MEMEX_* environment variables, parsed and validated once.

Each field's description is what `memexdb serve --help` and docs/configuration.md's
table say about it; the CLI's options default to these values (one definition).
"""

from __future__ import annotations

import ipaddress
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Self

from pydantic import Field, ValidationError, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

ENV_PREFIX = "MEMEX_"
LogLevel = Literal["critical", "error", "warning", "info", "debug", "trace"]
LogFormat = Literal["text", "json"]


class SettingsError(ValueError):
    """A MEMEX_* variable has a value memexdb cannot use; the message names it."""


def env_name(field: str) -> str:
    """The environment variable of a Settings field, e.g. MEMEX_PORT for `port`."""
    return f"{ENV_PREFIX}{field.upper()}"


class Settings(BaseSettings):
    """Configuration of a memexdb process (see docs/configuration.md)."""

    # Empty variables count as unset, as a shell's `MEMEX_X= memexdb ...` means.
    model_config = SettingsConfigDict(
        env_prefix=ENV_PREFIX, env_ignore_empty=True, frozen=True, extra="ignore"
    )

    database_url: str | None = Field(
        None, description="libpq URL of your PostgreSQL; unset: the embedded server"
    )
    read_database_urls: str | None = Field(
        None,
        description="comma-separated libpq URLs of streaming replicas of MEMEX_DATABASE_URL"
        ' that answer searches, gets, listings and counts (docs/scaling.md, "Read'
        ' replicas"); unset: the primary answers everything',
    )
    replica_max_lag_seconds: float = Field(
        5.0,
        gt=0,
        description="a read replica further behind the primary than this is skipped",
    )
    data_dir: Path | None = Field(
        None, description="data directory of the embedded server; unset: the user data dir"
    )
    embedder: str = Field("minilm", description="minilm, fastembed:<model> or openai:<model>")
    embedding_url: str | None = Field(None, description="base URL (.../v1) of openai: embedders")
    embedding_api_key: str | None = Field(None, description="API key of openai: embedders")
    host: str = Field("127.0.0.1", description="address to listen on")
    port: int = Field(8000, ge=0, le=65535, description="TCP port to listen on")
    workers: int = Field(1, ge=1, description="uvicorn worker processes")
    log_level: LogLevel = Field("info", description="log level of the service")
    log_format: LogFormat = Field(
        "text",
        description="text, or json: one JSON object per line, and one line per HTTP request"
        " (request id, method, route, status, latency; never bodies or query text)",
    )
    metrics_token: str | None = Field(
        None,
        description="a bearer token that may read GET /metrics (besides admin keys), checked"
        " without the database, so scrapes answer while it is down",
    )
    metrics_history_seconds: float = Field(
        10.0,
        ge=0.5,
        le=60,
        description="seconds between the samples of the service's metrics that the admin"
        " console's overview charts (each worker keeps the last 360)",
    )
    pool_size: int = Field(10, ge=1, description="database connections per worker")
    rate_limit_store_per_minute: int | None = Field(
        None, ge=0, description="per-agent store limit written to memex.settings"
    )
    rate_limit_search_per_minute: int | None = Field(
        None, ge=0, description="per-agent search limit written to memex.settings"
    )
    maintenance_interval_seconds: int = Field(
        60, ge=0, description="seconds between memex.maintenance() runs; 0: never"
    )
    embed_poll_seconds: int = Field(
        10,
        ge=0,
        description="seconds between polls of the embed queue (NOTIFY memex_embed wakes the"
        " worker at once); 0: no embed worker",
    )
    condense_enabled: bool = Field(
        True,
        description="condense old episodic memories into summaries on the schedule of"
        " dream_config (once per database: one service process, or pg_cron where it runs"
        " memex-consolidate); the database's dream_config.enabled stays the master switch",
    )
    dream_enabled: bool = Field(
        False,
        description="dream over files (tidy them; with MEMEX_LLM_URL also resolve"
        " contradictions) on the schedule of dream_config, once per database as condensing;"
        " it once switched condensing too, which is MEMEX_CONDENSE_ENABLED now",
    )
    allowed_hosts: str | None = Field(
        None, description="comma-separated Host values REST and MCP accept"
    )
    allowed_origins: str | None = Field(
        None, description="comma-separated browser Origin values REST and MCP accept"
    )
    cors_origins: str | None = Field(
        None,
        description="comma-separated origins (scheme://host[:port]) whose web pages may call"
        " the REST API (CORS: preflight answered, Access-Control-Allow-Origin for them"
        " alone); they pass the Origin check too; unset: none",
    )
    llm_url: str | None = Field(
        None,
        description="base URL (.../v1) of an OpenAI-compatible chat model for memory_memorize"
        " and memory_search answers; unset: no LLM (memorize's fallback)",
    )
    llm_model: str = Field("gpt-4o-mini", description="model name sent to MEMEX_LLM_URL")
    llm_api_key: str | None = Field(None, description="API key of MEMEX_LLM_URL")
    llm_timeout_seconds: float = Field(
        60.0, gt=0, le=600, description="seconds a call to the LLM may take"
    )
    # Set by `memexdb serve --workers N` for its workers, not by users.
    api_key: str | None = Field(
        None,
        description="API key that `memexdb mcp` (stdio) acts with once the database has keys",
    )
    mcp_relay_dir: Path | None = None
    # the callers' last writes, shared by the workers (memexdb.replicas.WriteTable)
    writes_table: Path | None = None

    @property
    def read_database_url_list(self) -> list[str]:
        """MEMEX_READ_DATABASE_URLS as a list (empty: no replica)."""
        return split_list(self.read_database_urls)

    @property
    def loopback_only(self) -> bool:
        """True when `host` is a loopback address: only this machine can connect."""
        return listens_on_loopback_only(self.host)

    @field_validator("cors_origins")
    @classmethod
    def _origins(cls, value: str | None) -> str | None:
        for origin in split_list(value):
            if not _ORIGIN.fullmatch(origin):
                raise ValueError(
                    f"{origin!r} is not an origin: scheme://host[:port], e.g."
                    " https://app.example.com (no path, no wildcard)"
                )
        return value

    @property
    def cors_origin_list(self) -> list[str]:
        """MEMEX_CORS_ORIGINS as a list (empty: no origin), lower case as browsers send
        them."""
        return list(dict.fromkeys(origin.lower() for origin in split_list(self.cors_origins)))

    @field_validator("embedder")
    @classmethod
    def _embedder_spec(cls, value: str) -> str:
        # checked here, before anything starts (the model loads much later); whether an
        # openai: embedder has its URL is _embedder_url's
        from memexdb.embedding.factory import parse_spec

        parse_spec(value, url="(checked by _embedder_url)")
        return value

    @model_validator(mode="after")
    def _embedder_url(self) -> Self:
        from memexdb.embedding.factory import parse_spec

        if parse_spec(self.embedder, url="-")[0] == "openai" and not self.embedding_url:
            raise ValueError(
                f"{env_name('embedder')}={self.embedder!r} needs {env_name('embedding_url')},"
                " e.g. https://api.openai.com/v1"
            )
        return self

    @field_validator("data_dir")
    @classmethod
    def _expand_user(cls, value: Path | None) -> Path | None:
        return value.expanduser() if value is not None else None

    @field_validator("log_level", "log_format", mode="before")
    @classmethod
    def _lower(cls, value: Any) -> Any:
        return value.lower() if isinstance(value, str) else value

    @classmethod
    def from_env(cls) -> Settings:
        """Read the environment; SettingsError names each bad variable in one line (the
        memex service's variables too: MEMEX_SERVICE_SETTINGS)."""
        given = memex_service_settings(os.environ)
        try:
            return cls(**given)
        except ValidationError as exc:
            raise SettingsError(_describe(exc)) from None


# --- the memex service's variables ------------------------------------------------------


@dataclass(frozen=True)
class Alias:
    """A memex service variable read as this Settings field."""

    field: str


@dataclass(frozen=True)
class Refused:
    """A memex service variable memexdb does not read from the environment: starting with
    it set stops with this line, so it is never silently ignored."""

    use: str


# Every variable the memex service's README documents (docs/configuration.md, "The memex
# service's variables"). SUMMARIZATION_* is memexdb's condensing (consolidation); its
# threshold, batch and interval live in the database, shared by every replica and pg_cron.
_DREAM_CONFIG = "PUT /v1/admin/dream/config or SQL memex.set_dream_config"
MEMEX_SERVICE_SETTINGS: dict[str, Alias | Refused] = {
    "DB_MAX_POOL_SIZE": Alias("pool_size"),
    "SUMMARIZATION_ENABLED": Alias("condense_enabled"),
    "SUMMARIZATION_THRESHOLD": Refused(f"the database's dream_config.threshold ({_DREAM_CONFIG})"),
    "SUMMARIZATION_BATCH_SIZE": Refused(
        f"the database's dream_config.batch_size ({_DREAM_CONFIG})"
    ),
    "SUMMARIZATION_INTERVAL_SECONDS": Refused(
        f"the database's dream_config.interval_seconds ({_DREAM_CONFIG})"
    ),
}


def memex_service_settings(environ: Mapping[str, str]) -> dict[str, Any]:
    """The Settings fields the memex service's variables in `environ` set (empty ones
    count as unset). SettingsError for a refused one, or for an alias whose MEMEX_*
    variable is set to something else."""
    given: dict[str, Any] = {}
    for name, meaning in MEMEX_SERVICE_SETTINGS.items():
        value = environ.get(name, "").strip()
        if not value:
            continue
        if isinstance(meaning, Refused):
            raise SettingsError(
                f"{name}={value!r} is the memex service's; memexdb does not read it: use"
                f" {meaning.use}"
            )
        own = env_name(meaning.field)
        if environ.get(own, "").strip().lower() not in ("", value.lower()):
            raise SettingsError(
                f"{name}={value!r}: {own}={environ[own]!r} is set too, to something else;"
                f" keep one ({name} is the memex service's name for {own})"
            )
        given[meaning.field] = value
    return given


# An origin as a browser sends it: scheme, host (a name, an IPv4 or a bracketed IPv6
# address) and an optional port; no path, no trailing slash, no wildcard.
_ORIGIN = re.compile(
    r"https?://(?:[A-Za-z0-9](?:[A-Za-z0-9.-]*[A-Za-z0-9])?|\[[0-9A-Fa-f:.]+\])(?::[0-9]{1,5})?"
)


def split_list(raw: str | None) -> list[str]:
    """A comma-separated setting as its items (blank items left out)."""
    return [item.strip() for item in (raw or "").split(",") if item.strip()]


def listens_on_loopback_only(host: str) -> bool:
    """Whether a server bound to `host` is reachable from this machine only (127.0.0.0/8,
    ::1, localhost). Wildcards (0.0.0.0, ::, empty) and other names are not."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _describe(exc: ValidationError) -> str:
    problems = []
    for error in exc.errors(include_url=False):
        if not error["loc"]:  # a check of several settings: its message names them
            problems.append(str(error["msg"]).removeprefix("Value error, "))
            continue
        field = str(error["loc"][0])
        problems.append(f"{_variable_of(field)}={error['input']!r}: {error['msg']}")
    return "; ".join(problems)


def _variable_of(field: str) -> str:
    """The variable a field's value came from: its MEMEX_* one, or the memex service's
    alias when only that is set."""
    if not os.environ.get(env_name(field), "").strip():
        for name, meaning in MEMEX_SERVICE_SETTINGS.items():
            if meaning == Alias(field) and os.environ.get(name, "").strip():
                return name
    return env_name(field)
