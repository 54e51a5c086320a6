"""REST frontend (Starlette): transport only, over memexdb.client.AsyncMemex."""

from memexdb.rest.app import create_app

__all__ = ["create_app"]
