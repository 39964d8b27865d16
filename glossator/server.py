"""The composition of `glossator serve`: git server + MCP, and its indexing worker.

    app = build_app(settings)        # nothing started yet; worker="process" by default
    uvicorn.Server(uvicorn.Config(app)).run()

The Starlette lifespan starts, in order: the database (embedded PostgreSQL by
default, migrations applied), the repositories' hooks (rewritten, so they call
this interpreter), the indexing (glossator/worker.py: procrastinate's schema,
then `glossator worker` as a supervised child process, or the indexing service
in this process with worker="thread", or no worker at all with "none"), and the
MCP session manager when `search.mcp_http` is installed. The hooks get the
database URL through git http-backend's environment, never through a file.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import io
import logging
from collections.abc import AsyncIterator
from typing import Any

import psycopg
from psycopg_pool import PoolTimeout
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from core.throttle import Throttle
from gitserver.app import create_app
from gitserver.auth import Access, Credentials, Policy, read_credentials
from gitserver.repos import RepoStore
from glossator.db_supervisor import DatabaseSupervisor
from glossator.paths import forget_server, record_server
from glossator.search_service import search_service
from glossator.settings import Settings, reveal
from glossator.wiring import auth_policy, database
from glossator.worker import serve_indexing
from hooks.queue import DONE_WITH_PROBLEMS, STATUS_NAMES, list_jobs, list_jobs_async
from search.service import SearchService
from search.web.access import Readers
from search.web.app import WebReader
from store.db import Database
from store.errors import describe_failure
from store.server import ping_async

log = logging.getLogger(__name__)


def hook_environment(settings: Settings, db: Database) -> dict[str, str]:
    """What the hooks need, as GLOSSATOR_* variables (no tokens: hooks never check them)."""
    return {
        "GLOSSATOR_DATABASE_URL": db.conninfo,
        "GLOSSATOR_DATA_DIR": str(settings.data_dir.expanduser().resolve()),
        "GLOSSATOR_REPOS_DIR": str(settings.repos_dir.expanduser().resolve()),
        "GLOSSATOR_LOG_LEVEL": settings.log_level,
    }


def _mcp_app(settings: Settings, service: SearchService, throttle: Throttle) -> Any | None:
    """MCP over the search service, which embeds queries with its own embedder (the
    worker's counts stay the worker's) and owns the query cache and the engine lock."""
    if importlib.util.find_spec("search.mcp_http") is None:
        return None
    from search.mcp_http import mcp_http_app

    return mcp_http_app(
        service,
        token=reveal(settings.mcp_token) or None,
        host=settings.host,
        log_level=settings.log_level,
        throttle=throttle,
    )


def readers(policy: Policy, throttle: Throttle) -> Readers:
    """The web reader's read policy: clone's (gitserver.auth), with its login sessions, and
    the git server's throttle of wrong tokens."""
    return Readers(
        throttle=throttle,
        open=policy.anonymous_read,
        token_ok=lambda token: policy.allows(Access.READ, Credentials("", token)),
        headers_ok=lambda headers: (
            (c := read_credentials(headers)) is not None and policy.allows(Access.READ, c)
        ),
    )


def web_reader(
    service: SearchService, db: Database, policy: Policy, throttle: Throttle, problem: Any
) -> WebReader:
    """Pages and the JSON API over the search service; the jobs from the queue."""

    def jobs(limit: int) -> list[dict[str, Any]]:
        with db.pool.connection(timeout=10) as conn:
            return list_jobs(conn, limit=limit)

    return WebReader(service, readers(policy, throttle), jobs=jobs, problem=problem)


def build_app(settings: Settings, *, worker: str = "process", index_fn: Any = None) -> Starlette:
    """The whole server as one ASGI app. `worker`: process, thread or none
    (glossator.worker.serve_indexing); `index_fn` replaces the indexer of a
    thread worker (tests)."""
    from glossator.logs import quiet_expected_failures
    from glossator.providers import get_embedder

    quiet_expected_failures()  # the queue's loops log an outage once a line, not a traceback
    store = RepoStore(settings.repos_dir, data_dir=settings.data_dir)
    db = database(settings)
    supervisor = DatabaseSupervisor(db)  # started with the database, in the lifespan
    embedder = get_embedder(settings)
    service = search_service(settings, db)  # MCP and the web reader share its query cache
    throttle = Throttle()  # wrong tokens an address, at every door (core.throttle)
    mcp = _mcp_app(settings, service, throttle)
    policy = auth_policy(settings)
    web = web_reader(service, db, policy, throttle, lambda: supervisor.problem)
    state: dict[str, Any] = {}

    async def jobs(request: Request) -> Response:
        status = request.query_params.get("status")
        if status is not None and status not in {
            *STATUS_NAMES.values(),
            DONE_WITH_PROBLEMS,
            "failed",
            "cancelled",
            "aborted",
        }:
            return JSONResponse(
                {
                    "error": "status must be queued, running, done, done with problems, "
                    "failed or cancelled"
                },
                400,
            )
        try:
            limit = min(max(int(request.query_params.get("limit", "50")), 1), 500)
        except ValueError:
            return JSONResponse({"error": "limit must be a whole number"}, 400)
        if supervisor.problem:  # known down: say so now, not after the pool's timeout
            return JSONResponse({"error": supervisor.problem}, 503)
        try:
            pool = await db.open_async_pool()
            async with pool.connection(timeout=10) as conn:
                rows = await list_jobs_async(
                    conn,
                    repository=request.query_params.get("repository"),
                    status=status,
                    limit=limit,
                )
        except (psycopg.Error, PoolTimeout) as e:  # one line, never a 500 and a traceback
            why = supervisor.problem or describe_failure(e)  # it logs the outage once
            return JSONResponse({"error": why}, 503)
        return JSONResponse({"jobs": rows})

    async def db_ok() -> None:
        if supervisor.problem:
            raise RuntimeError(supervisor.problem)
        try:
            pool = await db.open_async_pool()
            async with pool.connection(timeout=10) as conn:
                await ping_async(conn)
        except (psycopg.Error, PoolTimeout) as e:
            raise RuntimeError(describe_failure(e)) from None

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        await asyncio.to_thread(db.start)
        supervisor.start()
        record_server(settings)  # commands run elsewhere find the repositories from it
        try:
            for name in await asyncio.to_thread(store.names):
                await asyncio.to_thread(store.refresh, name)
            app.state.git.hook_env.update(hook_environment(settings, db))
            async with contextlib.AsyncExitStack() as stack:
                state["indexing"] = await stack.enter_async_context(
                    serve_indexing(
                        worker, settings, db, store, embedder=embedder, index_fn=index_fn
                    )
                )
                if mcp is not None:
                    await stack.enter_async_context(mcp.lifespan())
                log.info("glossator serving repositories in %s", store.root)
                yield
        finally:
            forget_server(settings)
            await supervisor.stop()
            await db.close_async_pool()
            await asyncio.to_thread(db.stop)

    async def index(request: Request) -> Response:
        """A browser gets the web reader's home page; `curl http://host:port/` the endpoints."""
        if "text/html" in request.headers.get("accept", ""):
            return await run_in_threadpool(web.pages.home, request)
        endpoints = {
            "web": "/ (in a browser), /search?q=…, /read/<repository>/<file>, /jobs",
            "api": "/api/search?q=…, /api/nodes/<repository>/<file>, /api/outline",
            "mcp": "/mcp (MCP over streamable HTTP"
            + (", Authorization: Bearer <GLOSSATOR_MCP_TOKEN>)" if settings.mcp_token else ")"),
            "git": "/<repository>.git (clone, fetch, push)",
            "repositories": "/api/repos (GET lists, POST creates with the admin token)",
            "jobs": "/api/jobs (indexing jobs; ?repository=, ?status=, ?limit=)",
            "health": "/healthz",
        }
        return JSONResponse({"service": "glossator", "endpoints": endpoints})

    async def post_receive(repository: str, updates: str, server_url: str) -> str:
        """A push's post-receive, done here on the server's warm imports (the hook asks
        for it: glossator.githooks); what `hooks.post_receive.main` prints."""
        from hooks import post_receive as hook

        config = hook.PostReceive(
            repository, db.conninfo, server_url=server_url, git_dir=str(store.path(repository))
        )
        out = io.StringIO()
        await asyncio.to_thread(hook.main, config, io.StringIO(updates), out)
        return out.getvalue()

    extra: list[BaseRoute] = [Route("/", index, methods=["GET"])]
    extra.extend(r for r in web.routes() if getattr(r, "path", None) != "/")
    if mcp is not None:
        extra.extend(mcp.routes("/mcp"))
    app = create_app(
        store,
        policy,
        admin_token=reveal(settings.admin_token),
        extra_routes=extra,
        read_routes=[Route("/api/jobs", jobs, methods=["GET"])],
        health_checks=[db_ok],
        lifespan=lifespan,
        post_receive=post_receive,
        throttle=throttle,
    )
    state["supervisor"] = supervisor
    app.state.service = state
    return app
