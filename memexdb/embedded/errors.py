"""Errors of the embedded server."""

from __future__ import annotations


class EmbeddedPostgresError(RuntimeError):
    """The embedded server could not be prepared, started or stopped."""
