"""The console's pages: each one validates its query string or form with the models of
the domains' models, makes AsyncMemex calls as the cookie's key, and renders a template."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any
from uuid import UUID

from pydantic import BaseModel, ConfigDict
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles

from memexdb import agentic
from memexdb.console.overview import overview_values
from memexdb.console.web import (
    PREFIX,
    ConsoleError,
    Ctx,
    Handler,
    Problems,
    form_of,
    invalid,
    is_loopback,
    page,
    safe_next,
    set_key_cookie,
    validated,
)
from memexdb.consolidation.models import DREAM_BOUNDS, DreamConfig, DreamUsersQuery, RunsQuery
from memexdb.consolidation.operations import SET_DREAM_CONFIG
from memexdb.errors import Conflict, Forbidden, NotFound, Unauthenticated
from memexdb.fields import AgentId, TenantQuery, UserId
from memexdb.files.models import (
    AccessLogQuery,
    DiffQuery,
    FileListQuery,
    RestoreRequest,
    RevisionListQuery,
    RevisionQuery,
)
from memexdb.keys.models import AuditQuery, KeyCreate, KeysQuery
from memexdb.memories.models import (
    DEFAULT_ALPHA,
    DEFAULT_HALF_LIFE_DAYS,
    DEFAULT_MODE,
    DEFAULT_TOP_K,
    HALF_LIFE_DAYS_DEFAULT,
    HALF_LIFE_DAYS_MEMEX,
    RECENCY_BOOST,
    EraseUserRequest,
    ListQuery,
)
from memexdb.memories.operations import SEARCH as MEMORY_SEARCH
from memexdb.paging import next_key
from memexdb.types import Access, MemoryType, SearchMode

STATIC = Path(__file__).with_name("static")
PAGE_SIZE = 50
ANY_METHOD = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS")


class AgentsQuery(BaseModel):
    """Query string of the tenants page."""

    model_config = ConfigDict(extra="ignore")

    agent_id: AgentId | None = None
    after: AgentId | None = None


class UsersQuery(BaseModel):
    """Query string of an agent's page."""

    model_config = ConfigDict(extra="ignore")

    agent_id: AgentId
    after: UserId | None = None


def _tenant(values: Any) -> TenantQuery:
    return validated(TenantQuery, values)


def _number(value: str | None) -> Any:
    """A form's number as a number (text that is none stays text: the model says why)."""
    if value is None or value == "":
        return None
    for kind in (int, float):
        try:
            return kind(value)
        except ValueError:
            continue
    return value


def _given(values: Any, name: str, default: Any) -> Any:
    value = _number(values.get(name))
    return default if value is None else value


# --- Log in and out ---


async def login_form(ctx: Ctx) -> Response:
    open_service = False
    if ctx.key is None:
        try:
            await ctx.memex.list_keys()
            open_service = True
        except (Unauthenticated, Forbidden):
            pass
    return ctx.render(
        "login.html",
        next=safe_next(ctx.request.query_params.get("next")),
        open_service=open_service,
        error=None,
        plain_http=_plain_http(ctx.request),
    )


def _plain_http(request: Request) -> bool:
    """Served without TLS to another machine: the browser will not keep a Secure cookie."""
    return request.url.scheme != "https" and not is_loopback(request.headers.get("host", ""))


async def login(ctx: Ctx) -> Response:
    form = await form_of(ctx)
    key = form.get("key", "").strip()
    target = safe_next(form.get("next"))
    error = None
    if not key:
        error, status = "Enter an admin API key.", 422
    else:
        try:
            await ctx.memex.with_key(key).list_keys()  # an admin key of some scope
        except Unauthenticated as exc:
            error, status = f"This key does not work: {exc}.", 401
        except Forbidden:
            error, status = "This key is not an admin key: the console needs one.", 403
    if error is not None:
        return ctx.render(
            "login.html",
            status,
            next=target,
            open_service=False,
            error=error,
            logged_in=False,
            plain_http=_plain_http(ctx.request),
        )
    response = ctx.finish(Response(status_code=303, headers={"Location": target}))
    return set_key_cookie(ctx, response, key)


async def logout(ctx: Ctx) -> Response:
    await form_of(ctx)
    return set_key_cookie(ctx, ctx.redirect("login", notice="logged_out"), None)


# --- Tenants ---


async def agents(ctx: Ctx) -> Response:
    query = validated(AgentsQuery, ctx.request.query_params)
    agent_id = query.agent_id
    try:
        rows = await ctx.memex.agent_stats(agent_id, limit=PAGE_SIZE, after=query.after)
    except Forbidden:
        if agent_id is not None:
            raise
        # an agent's admin key: it may see its own agent, once it names it
        return ctx.render("agents.html", rows=[], agent_id=None, next_after=None, scoped=True)
    more = next_key(rows, PAGE_SIZE, lambda row: row.agent_id)
    return ctx.render("agents.html", rows=rows, agent_id=agent_id, next_after=more, scoped=False)


async def agent(ctx: Ctx) -> Response:
    query = validated(UsersQuery, ctx.request.query_params)
    agent_id = query.agent_id
    rows = await ctx.memex.user_stats(agent_id, limit=PAGE_SIZE, after=query.after)
    more = next_key(rows, PAGE_SIZE, lambda row: row.user_id)
    return ctx.render(
        "agent.html", agent_id=agent_id, rows=rows, next_after=more, here=_here(ctx.request)
    )


def _here(request: Request) -> str:
    return request.url.path + (f"?{request.url.query}" if request.url.query else "")


# --- Memories ---


async def memories(ctx: Ctx) -> Response:
    query = validated(ListQuery, ctx.request.query_params)
    page_ = await ctx.memex.list_memories(**query.model_dump())
    return _memories_page(ctx, query, rows=page_.memories, next_cursor=page_.next_cursor)


def _memories_page(ctx: Ctx, tenant: Any, **values: Any) -> Response:
    """The memories page: a page of the list (rows, next_cursor) or search hits."""
    shown = {"rows": None, "next_cursor": None, "search": None, "hits": None, **values}
    return ctx.render(
        "memories.html",
        tenant=tenant,
        types=[t.value for t in MemoryType],
        modes=[m.value for m in SearchMode],
        # the defaults a search without options gets (params: one definition)
        boost=RECENCY_BOOST,
        half_life_default=HALF_LIFE_DAYS_DEFAULT,
        half_life_memex=HALF_LIFE_DAYS_MEMEX,
        **shown,
    )


async def search(ctx: Ctx) -> Response:
    q = ctx.request.query_params
    memory_type = q.get("memory_type") or None
    values = {
        "agent_id": q.get("agent_id", ""),
        "user_id": q.get("user_id", ""),
        "query": q.get("query", ""),
        "top_k": _given(q, "top_k", DEFAULT_TOP_K),
        "alpha": _given(q, "alpha", DEFAULT_ALPHA),
        "half_life_days": _given(q, "half_life_days", DEFAULT_HALF_LIFE_DAYS),
        "mode": q.get("mode") or DEFAULT_MODE,
        "memory_types": [memory_type] if memory_type else None,
        "include_archived": q.get("include_archived") == "true",
    }
    # validated here, not by AsyncMemex.search (which names only the first bad field)
    problems = Problems()
    request = problems.parse(
        MEMORY_SEARCH.request, {k: v for k, v in values.items() if v is not None}
    )
    problems.check()
    hits = await ctx.memex.run(MEMORY_SEARCH, request)
    return _memories_page(ctx, _tenant(q), search=q, hits=hits)


async def memory(ctx: Ctx) -> Response:
    q = ctx.request.query_params
    problems = Problems()
    tenant = problems.validated(TenantQuery, q)
    try:
        memory_id = UUID(q.get("id", ""))
    except ValueError:
        problems.add("id", "not a memory id (a UUID)")
    problems.check()
    assert tenant is not None
    found = await ctx.memex.get(tenant.agent_id, tenant.user_id, memory_id)
    return ctx.render("memory.html", tenant=tenant, m=found)


# --- Files ---


async def files(ctx: Ctx) -> Response:
    query = validated(FileListQuery, ctx.request.query_params)
    rows, after = await ctx.memex.list_files(**query.model_dump())
    return ctx.render("files.html", tenant=query, rows=rows, next_after=after)


async def file(ctx: Ctx) -> Response:
    query = validated(RevisionListQuery, ctx.request.query_params)
    revisions = await ctx.memex.list_revisions(**query.model_dump())
    if not revisions and query.before is None:
        raise NotFound(f"file {query.path} not found")
    try:
        current = await ctx.memex.read_file(query.agent_id, query.user_id, query.path)
    except NotFound:
        current = None  # deleted: its revisions remain, and a restore brings it back
    more = next_key(revisions, query.limit, lambda revision: revision.revision)
    return ctx.render(
        "file.html", tenant=query, current=current, revisions=revisions, next_before=more
    )


async def revision(ctx: Ctx) -> Response:
    query = validated(RevisionQuery, ctx.request.query_params)
    row = await ctx.memex.get_revision(**query.model_dump())
    return ctx.render("revision.html", tenant=query, r=row)


async def diff(ctx: Ctx) -> Response:
    query = validated(DiffQuery, ctx.request.query_params)
    text = await ctx.memex.diff_revisions(**query.model_dump())
    return ctx.render("diff.html", tenant=query, lines=text.splitlines())


async def restore_revision(ctx: Ctx) -> Response:
    form = await form_of(ctx)
    request = validated(RestoreRequest, {**form, "revision": _number(form.get("revision"))})
    await ctx.memex.restore_revision(**request.model_dump())
    return ctx.redirect(
        "file",
        agent_id=request.agent_id,
        user_id=request.user_id,
        path=request.path,
        notice="restored",
    )


async def erase_user(ctx: Ctx) -> Response:
    """Erase a user (memex.erase_user): the form names the user twice, the second time
    typed by the admin (`confirm`), which SQL checks."""
    form = await form_of(ctx)
    request = validated(EraseUserRequest, form)
    await ctx.memex.erase_user(**request.model_dump())
    return ctx.redirect("agent", agent_id=request.agent_id, notice="erased")


async def access_log(ctx: Ctx) -> Response:
    query = validated(AccessLogQuery, ctx.request.query_params)
    events = await ctx.memex.access_log(**query.model_dump())
    more = next_key(events, query.limit, lambda event: event.id)
    return ctx.render("access_log.html", tenant=query, events=events, next_before=more)


# --- Consolidation and dreaming ---


async def dream(ctx: Ctx) -> Response:
    problems = Problems()
    runs_query = problems.validated(RunsQuery, ctx.request.query_params)
    users_query = problems.validated(DreamUsersQuery, ctx.request.query_params)
    problems.check()
    assert runs_query is not None and users_query is not None
    runs = await ctx.memex.consolidation_runs(**runs_query.model_dump())
    users = await ctx.memex.dream_users(
        users_query.agent_id, limit=users_query.limit, after=users_query.after_tenant()
    )
    config = await ctx.memex.dream_config()
    more = next_key(runs, runs_query.limit, lambda run: run.id)
    return ctx.render(
        "dream.html",
        filters=runs_query,
        runs=runs,
        users=users,
        config=config.model_dump(),
        bounds=DREAM_BOUNDS,
        next_before=more,
        here=_here(ctx.request),
    )


async def dream_config(ctx: Ctx) -> Response:
    form = await form_of(ctx)
    changes: dict[str, Any] = {}
    for name in DreamConfig.model_fields:
        value = form.get(name, "")
        if name == "enabled":
            if value:
                changes[name] = value == "true"
        elif value != "":
            changes[name] = _number(value)
    if not changes:
        raise ConsoleError(422, "Nothing to change", "Fill in at least one setting.")
    problems = Problems()  # every bad setting at once (AsyncMemex names only the first)
    request = problems.parse(SET_DREAM_CONFIG.request, changes)
    problems.check()
    await ctx.memex.run(SET_DREAM_CONFIG, request)
    return ctx.redirect("dream", notice="config_saved")


async def dream_pause(ctx: Ctx) -> Response:
    form = await form_of(ctx)
    tenant = _tenant(form)
    paused = form.get("paused") == "true"
    await ctx.memex.set_dream_paused(tenant.agent_id, tenant.user_id, paused)
    target = safe_next(form.get("next"))
    notice = "paused" if paused else "resumed"
    return ctx.finish(Response(status_code=303, headers={"Location": _with_notice(target, notice)}))


def _with_notice(target: str, notice: str) -> str:
    kept = "&".join(p for p in target.partition("?")[2].split("&") if p and "notice=" not in p)
    base = target.partition("?")[0]
    return f"{base}?{kept + '&' if kept else ''}notice={notice}"


async def dream_restore(ctx: Ctx) -> Response:
    form = await form_of(ctx)
    run_id = _number(form.get("run_id"))
    if not isinstance(run_id, int) or not 1 <= run_id <= 2**63 - 1:
        raise invalid("run_id", "a run id (a positive integer)")
    agent_id = form.get("agent_id")
    await ctx.memex.restore_consolidation(run_id, agent_id=agent_id or None)
    return ctx.redirect("dream", notice="run_restored")


async def dream_run(ctx: Ctx) -> Response:
    form = await form_of(ctx)
    tenant = _tenant(form)
    # the same operation as REST's "run now": abstractive when the service has an LLM
    result = await ctx.memex.call(
        agentic.RUN_NOW, agent_id=tenant.agent_id, user_id=tenant.user_id, force=True
    )
    notice = "ran" if result.runs else "nothing_ran"
    return ctx.redirect("dream", agent_id=tenant.agent_id, user_id=tenant.user_id, notice=notice)


# --- Keys and audit ---


async def keys(ctx: Ctx) -> Response:
    query = validated(KeysQuery, ctx.request.query_params)
    rows = await ctx.memex.list_keys(query.agent_id)
    # created_by names a key by id (key:<uuid>): shown by its prefix, as keys are listed
    prefixes = {f"key:{k.id}": f"key {k.prefix}" for k in rows}
    return ctx.render(
        "keys.html",
        rows=rows,
        creators={k.id: prefixes.get(k.created_by, k.created_by) for k in rows},
        agent_id=query.agent_id,
        access=[a.value for a in Access],
    )


def _key_request(form: dict[str, str]) -> KeyCreate:
    users = [u.strip() for u in form.get("user_ids", "").split(",") if u.strip()]
    values: dict[str, Any] = {
        "access": form.get("access", ""),
        "agent_id": form.get("agent_id") or None,
        "user_ids": users or None,
        "name": form.get("name", ""),
    }
    problems = Problems()
    if form.get("expires_at"):
        try:
            values["expires_at"] = datetime.fromisoformat(form["expires_at"])
        except ValueError:
            problems.add("expires_at", "a date and time such as 2030-01-31T12:00")
    request = problems.parse(KeyCreate, values)
    problems.check()
    assert request is not None
    return request


async def create_key(ctx: Ctx) -> Response:
    request = _key_request(await form_of(ctx))
    created = await ctx.memex.create_key(**request.model_dump())
    return ctx.render("key_created.html", 201, k=created)


async def revoke_key(ctx: Ctx) -> Response:
    form = await form_of(ctx)
    key = form.get("key", "").strip()
    if not key or len(key) > 200:
        raise invalid("key", "required (an id or prefix)")
    try:
        await ctx.memex.revoke_key(key, confirm_last=form.get("confirm_last") == "yes")
    except Conflict as exc:
        # the last live key: say what revoking it does, and ask again
        return ctx.render("key_revoke_last.html", 409, key=key, message=str(exc))
    return ctx.redirect("keys", notice="revoked")


async def audit(ctx: Ctx) -> Response:
    query = validated(AuditQuery, ctx.request.query_params)
    events = await ctx.memex.audit_events(query.limit, query.before)
    more = next_key(events, query.limit, lambda event: event.id)
    return ctx.render("audit.html", events=events, next_before=more)


async def overview(ctx: Ctx) -> Response:
    app = ctx.request.app
    values = await overview_values(ctx.memex, app.state.memex, app.state.history)
    return ctx.render("overview.html", **values)


async def not_found(ctx: Ctx) -> Response:
    raise ConsoleError(404, "No such page", f"There is no console page at {ctx.request.url.path}.")


def _route(
    path: str, get: Handler | None = None, post: Handler | None = None, *, admin: bool = True
) -> Route:
    """One route per path answering every method: a method it lacks is a 405 page.
    `admin`: every request needs an admin key (all pages but the login and logout)."""
    handlers = {
        "GET": page(get, admin=admin) if get else None,
        "HEAD": page(get, admin=admin) if get else None,
        "POST": page(post, admin=admin) if post else None,
    }
    allowed = ", ".join(m for m, h in handlers.items() if h)

    async def wrong_method(ctx: Ctx) -> Response:
        response = ctx.render(
            "error.html",
            405,
            title="Method not allowed",
            message=f"{ctx.request.method} is not allowed here (allowed: {allowed}).",
            fields=[],
        )
        response.headers["Allow"] = allowed
        return response

    refuse = page(wrong_method, admin=admin)

    async def dispatch(request: Request) -> Response:
        handler = handlers.get(request.method) or refuse
        return await handler(request)

    return Route(f"{PREFIX}{path}", dispatch, methods=list(ANY_METHOD))


def routes() -> list[BaseRoute]:
    return [
        Route(PREFIX, lambda _: Response(status_code=307, headers={"Location": f"{PREFIX}/"})),
        Mount(f"{PREFIX}/static", app=StaticFiles(directory=STATIC), name="console-static"),
        _route("/", get=agents),
        _route("/overview", get=overview),
        _route("/login", get=login_form, post=login, admin=False),
        _route("/logout", post=logout, admin=False),
        _route("/agent", get=agent),
        _route("/memories", get=memories),
        _route("/search", get=search),
        _route("/memory", get=memory),
        _route("/files", get=files),
        _route("/file", get=file),
        _route("/revision", get=revision),
        _route("/diff", get=diff),
        _route("/restore", post=restore_revision),
        _route("/access-log", get=access_log),
        _route("/erase", post=erase_user),
        _route("/dream", get=dream),
        _route("/dream/config", post=dream_config),
        _route("/dream/pause", post=dream_pause),
        _route("/dream/restore", post=dream_restore),
        _route("/dream/run", post=dream_run),
        _route("/keys", get=keys, post=create_key),
        _route("/keys/revoke", post=revoke_key),
        _route("/audit", get=audit),
        _route("/{rest:path}", get=not_found, post=not_found),
    ]
