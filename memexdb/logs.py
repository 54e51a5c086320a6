"""Logging of memexdb processes: the format and level of MEMEX_LOG_FORMAT / MEMEX_LOG_LEVEL,
the same in `memexdb serve`, each of its workers and `memexdb mcp`.

`text` is one human line per record. `json` is one JSON object per line (for log
shippers): `ts`, `level`, `logger`, `message`, the fields a record carries in `extra`
(the access log's request id, route, status, latency...) and `exc` for tracebacks.
Memory content never reaches a log by default: the access log names routes and
statuses, not bodies, query strings or search text.
"""

from __future__ import annotations

import json
import logging
import os
import sys
from datetime import UTC, datetime
from typing import Any

from memexdb.config import LogFormat

TEXT_FORMAT = "%(levelname)s %(name)s: %(message)s"

# Attributes every LogRecord has; whatever else a record carries came from `extra=`.
_STANDARD = frozenset(vars(logging.LogRecord("", 0, "", 0, "", None, None))) | {
    "message",
    "asctime",
    "taskName",
    "color_message",  # uvicorn's colored copy of the message
}


class JsonFormatter(logging.Formatter):
    """One JSON object per record, on one line."""

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "ts": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
            "pid": record.process,
        }
        for key, value in vars(record).items():
            if key not in _STANDARD and not key.startswith("_"):
                entry[key] = value
        if record.exc_info:
            entry["exc"] = self.formatException(record.exc_info)
        return json.dumps(entry, ensure_ascii=False, default=str)


def python_level(level: str) -> str:
    """A MEMEX_LOG_LEVEL as the logging module names it (uvicorn's `trace` is DEBUG)."""
    return level.upper().replace("TRACE", "DEBUG")


def formatter(fmt: LogFormat) -> logging.Formatter:
    return JsonFormatter() if fmt == "json" else logging.Formatter(TEXT_FORMAT)


def configure(level: str, fmt: LogFormat) -> None:
    """The root logger of this process: stderr, `fmt`, `level` (again: replaces the
    handlers a previous call, uvicorn or the MCP SDK installed)."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(formatter(fmt))
    root = logging.getLogger()
    root.handlers = [handler]
    root.setLevel(python_level(level))


def uvicorn_log_config(level: str, fmt: LogFormat) -> dict[str, Any] | None:
    """uvicorn's `log_config` for `fmt` (it applies it in each worker too). None in text
    mode: uvicorn's own format and access log, as without memexdb's settings. In json
    mode uvicorn's loggers go through the root logger and its access log is off (the
    service writes one JSON line per request itself, memexdb.rest.observe)."""
    if fmt != "json":
        return None
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "formatters": {"json": {"()": JsonFormatter}},
        "handlers": {
            "stderr": {
                "class": "logging.StreamHandler",
                "formatter": "json",
                "stream": "ext://sys.stderr",
            }
        },
        "root": {"handlers": ["stderr"], "level": python_level(level)},
        "loggers": {
            name: {"handlers": [], "propagate": True}
            for name in ("uvicorn", "uvicorn.error", "uvicorn.access")
        },
    }


def export_to_workers(level: str, fmt: LogFormat) -> None:
    """Make worker processes (which read the environment) log as this one does."""
    os.environ["MEMEX_LOG_LEVEL"] = level
    os.environ["MEMEX_LOG_FORMAT"] = fmt
