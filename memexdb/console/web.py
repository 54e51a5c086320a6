"""The console's plumbing: the admin key in a cookie, CSRF checks of every POST, forms,
templates and error pages.

The console holds no rights of its own: each page acts with the key of its cookie (or
with no key, which SQL accepts only from an open loopback service without keys), through
AsyncMemex, and SQL answers 401/403 exactly as it does for the REST API.
"""

from __future__ import annotations

import hmac
import ipaddress
import logging
import secrets
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar
from urllib.parse import parse_qsl, urlencode

from jinja2 import Environment, PackageLoader, select_autoescape
from memexdb_client.errors import INTERNAL, kind_of, render
from pydantic import BaseModel, ValidationError
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response

from memexdb.client import AsyncMemex
from memexdb.error_models import field_errors
from memexdb.errors import Forbidden, InvalidArgument, MemexError, Unauthenticated

log = logging.getLogger("memexdb.console")

PREFIX = "/admin"
KEY_COOKIE = "memex_admin_key"
CSRF_COOKIE = "memex_admin_csrf"
CSRF_FIELD = "csrf"
MAX_FORM_BYTES = 64 * 1024
LOOPBACK_NAMES = frozenset({"localhost"})

# What a redirect after an action may say (a code in the URL, never text from it).
NOTICES = {
    "logged_in": "Logged in.",
    "logged_out": "Logged out.",
    "restored": "Revision restored: the file has a new revision with that content.",
    "paused": "Consolidation paused for this user.",
    "resumed": "Consolidation resumed for this user.",
    "config_saved": "Consolidation settings saved.",
    "run_restored": "Run undone: its memories are live again, and consolidation leaves them"
    " until a newer memory arrives for the user (or an operator forces a run).",
    "ran": "Consolidation ran for this user.",
    "nothing_ran": "Nothing to do: another runner holds this user, or nothing was due.",
    "revoked": "Key revoked.",
    "erased": "User erased: every memory, file, revision and access-log entry deleted.",
}

templates = Environment(
    loader=PackageLoader("memexdb.console", "templates"),
    autoescape=select_autoescape(default=True, default_for_string=True),
    trim_blocks=True,
    lstrip_blocks=True,
)
templates.globals["prefix"] = PREFIX
templates.globals["csrf_field"] = CSRF_FIELD


def admin_url(page: str, /, **query: Any) -> str:
    """`/admin/<page>?query` (None values left out)."""
    given = {k: v for k, v in query.items() if v is not None}
    return f"{PREFIX}/{page}" + (f"?{urlencode(given)}" if given else "")


templates.globals["url"] = admin_url


class ConsoleError(Exception):
    """A page that says what went wrong, with its status."""

    def __init__(self, status: int, title: str, message: str, fields: list[str] | None = None):
        super().__init__(message)
        self.status = status
        self.title = title
        self.message = message
        self.fields = fields or []


def invalid(field: str, message: str) -> ConsoleError:
    """The 422 page of one bad field."""
    return ConsoleError(422, "Invalid input", "Some fields are not valid:", [f"{field}: {message}"])


def is_loopback(host: str) -> bool:
    """Whether a Host header names this machine (127.0.0.0/8, ::1, localhost)."""
    if host.startswith("["):  # [v6]:port
        name = host[1:].split("]", 1)[0]
    else:
        name = host.rsplit(":", 1)[0] if host.count(":") == 1 else host
    name = name.lower()
    if name in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


@dataclass
class Ctx:
    """One request to the console: who it acts as and its CSRF token."""

    request: Request
    memex: AsyncMemex
    key: str | None
    csrf: str
    new_csrf: bool

    def render(self, template: str, status: int = 200, **values: Any) -> Response:
        notice = NOTICES.get(self.request.query_params.get("notice", ""))
        page = {"csrf": self.csrf, "logged_in": self.key is not None, "notice": notice}
        html = templates.get_template(template).render({**page, **values})
        return self.finish(HTMLResponse(html, status_code=status))

    def finish(self, response: Response) -> Response:
        secure = not is_loopback(self.request.headers.get("host", ""))
        if self.new_csrf:
            response.set_cookie(
                CSRF_COOKIE,
                self.csrf,
                path=PREFIX,
                httponly=True,
                samesite="strict",
                secure=secure,
            )
        response.headers["Cache-Control"] = "no-store"
        response.headers["X-Frame-Options"] = "DENY"
        response.headers["Content-Security-Policy"] = (
            "default-src 'self'; style-src 'self'; script-src 'self'; img-src 'self' data:;"
            " form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
        )
        response.headers["Referrer-Policy"] = "same-origin"
        return response

    def redirect(self, page: str, /, **query: Any) -> Response:
        return self.finish(RedirectResponse(admin_url(page, **query), status_code=303))


Handler = Callable[[Ctx], Awaitable[Response]]


def context(request: Request) -> Ctx:
    memex: AsyncMemex = request.app.state.memex
    key = request.cookies.get(KEY_COOKIE) or None
    csrf = request.cookies.get(CSRF_COOKIE) or ""
    new = len(csrf) < 32
    if new:
        csrf = secrets.token_urlsafe(32)
    return Ctx(request, memex.with_key(key), key, csrf, new)


def _same_origin(request: Request) -> bool:
    """A POST from this console's own pages: SameSite=Strict keeps the cookies off
    cross-site requests, and a browser's Origin (or Referer) must name this host."""
    host = request.headers.get("host", "")
    if request.headers.get("sec-fetch-site", "same-origin") not in ("same-origin", "none"):
        return False
    source = request.headers.get("origin") or request.headers.get("referer")
    if source is None:
        return True  # not a browser (curl...): the token below still has to match
    scheme, _, rest = source.partition("://")
    return scheme in ("http", "https") and rest.split("/", 1)[0] == host


async def form_of(ctx: Ctx) -> dict[str, str]:
    """The POSTed form (urlencoded), after the CSRF checks."""
    request = ctx.request
    kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if kind != "application/x-www-form-urlencoded":
        raise ConsoleError(415, "Unsupported form", "Send the console's forms from its pages.")
    if int(request.headers.get("content-length") or 0) > MAX_FORM_BYTES:
        raise ConsoleError(413, "Form too large", f"Forms are at most {MAX_FORM_BYTES} bytes.")
    raw = await request.body()
    if len(raw) > MAX_FORM_BYTES:
        raise ConsoleError(413, "Form too large", f"Forms are at most {MAX_FORM_BYTES} bytes.")
    try:
        pairs = parse_qsl(raw.decode("utf-8"), keep_blank_values=True, max_num_fields=200)
    except (UnicodeDecodeError, ValueError) as exc:
        raise ConsoleError(400, "Unreadable form", "The form could not be read.") from exc
    form = dict(pairs)
    cookie = request.cookies.get(CSRF_COOKIE, "")
    token = form.pop(CSRF_FIELD, "")
    if not (
        _same_origin(request)
        and cookie
        and token
        and hmac.compare_digest(cookie.encode(), token.encode())
    ):
        raise ConsoleError(
            403,
            "Form refused",
            "This form did not come from this console's own page (or the page is too old):"
            " go back, reload the page and submit it again.",
        )
    return form


Model = TypeVar("Model", bound=BaseModel)


def _given(model: type[BaseModel], values: Mapping[str, str | None]) -> dict[str, Any]:
    return {k: values[k] for k in model.model_fields if values.get(k) not in (None, "")}


def validated(model: type[Model], values: Mapping[str, str | None]) -> Model:
    """The model's fields from `values` (a query string or form; empty fields left out)."""
    return model.model_validate(_given(model, values))


class Problems:
    """Every bad field of one form or query string, reported together: a page naming only
    the first would send the operator back once per field."""

    def __init__(self) -> None:
        self.fields: list[str] = []

    def add(self, field: str, message: str) -> None:
        problem = f"{field}: {message}"
        if problem not in self.fields:  # two models of one query may share a field
            self.fields.append(problem)

    def parse(self, model: type[Model], values: Mapping[str, Any]) -> Model | None:
        """`model` from `values`; None (its errors noted) when they are not valid."""
        try:
            return model.model_validate(values)
        except ValidationError as exc:
            for error in field_errors(exc):
                self.add(error.field, error.message)
            return None

    def validated(self, model: type[Model], values: Mapping[str, str | None]) -> Model | None:
        """As `validated`, noting the errors instead of raising them."""
        return self.parse(model, _given(model, values))

    def check(self) -> None:
        """The 422 page of every bad field noted, if any."""
        if self.fields:
            raise ConsoleError(422, "Invalid input", "Some fields are not valid:", self.fields)


def _error_page(ctx: Ctx, exc: Exception) -> Response:
    if isinstance(exc, ConsoleError):
        status, title, message, fields = exc.status, exc.title, exc.message, exc.fields
    elif isinstance(exc, ValidationError):
        status, title = 422, "Invalid input"
        fields = [f"{e.field}: {e.message}" for e in field_errors(exc)]
        message = "Some fields are not valid:"
    elif isinstance(exc, MemexError):  # as its row of the error table says
        kind = kind_of(exc)
        if kind is INTERNAL:
            log.error("unexpected memexdb error: %r", exc)
        title, template = kind.console
        status, message = kind.status, render(template, exc)
        fields = [f"{exc.field}: {exc.message}"] if isinstance(exc, InvalidArgument) else []
    else:
        log.error("unexpected error: %r", exc)
        status, title, message, fields = 500, "Internal error", "Internal server error.", []
    return ctx.render("error.html", status, title=title, message=message, fields=fields)


def page(
    handler: Handler, *, login: bool = True, admin: bool = True
) -> Callable[[Request], Awaitable[Response]]:
    """A console route: errors become pages; without a usable key, the login page.
    `admin`: the cookie's key must be an admin key (as the login asks), checked on every
    request before the page does anything (one round trip): any key can be put in the
    cookie, and a tenant's own key would otherwise see its tenant through the console."""

    async def run(request: Request) -> Response:
        ctx = context(request)
        try:
            if admin:
                try:
                    await ctx.memex.authenticate(admin=True)
                except Forbidden as exc:  # not a key of this console: forget it
                    response = _error_page(ctx, exc)
                    if ctx.key is not None:
                        response.delete_cookie(KEY_COOKIE, path=PREFIX)
                    return response
            return await handler(ctx)
        except Unauthenticated as exc:
            if not login:
                return _error_page(ctx, ConsoleError(401, "Not logged in", str(exc)))
            target = request.url.path if request.method == "GET" else None
            query = f"?{request.url.query}" if request.url.query and target else ""
            response = ctx.redirect("login", next=(target + query) if target else None)
            if ctx.key is not None:
                response.delete_cookie(KEY_COOKIE, path=PREFIX)
            return response
        except (ConsoleError, ValidationError, MemexError) as exc:
            return _error_page(ctx, exc)
        except Exception:
            # a page, not the API's JSON; logged once, with its traceback, never shown
            log.exception("unhandled console error on %s %s", request.method, request.url.path)
            return ctx.render(
                "error.html",
                500,
                title="Internal error",
                message="Internal server error.",
                fields=[],
            )

    return run


def safe_next(value: str | None) -> str:
    """A redirect target inside the console only (no scheme, host or `//`)."""
    if value and value.startswith(f"{PREFIX}/") and "//" not in value and "\\" not in value:
        return value
    return f"{PREFIX}/"


def set_key_cookie(ctx: Ctx, response: Response, key: str | None) -> Response:
    if key is None:
        response.delete_cookie(KEY_COOKIE, path=PREFIX)
        return response
    response.set_cookie(
        KEY_COOKIE,
        key,
        path=PREFIX,
        httponly=True,
        samesite="strict",
        secure=not is_loopback(ctx.request.headers.get("host", "")),
    )
    return response
