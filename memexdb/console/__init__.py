"""The admin console at `/admin`: server-rendered pages (Jinja2) over the same AsyncMemex
calls as the REST API, so SQL decides what each caller may see and do (memexdb.console.pages)."""

from memexdb.console.pages import routes

__all__ = ["routes"]
