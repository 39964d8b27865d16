"""The server's own HTTP endpoints, and every route it adds to git's, in one table.

    endpoints = Endpoints(db, store, web, problem=..., mcp_token=True)
    table = route_table(endpoints, web, mcp)
    create_app(store, policy, extra_routes=table.public, read_routes=table.read,
               health_checks=[endpoints.database_ok],
               post_receive=endpoints.post_receive, ...)          # gitserver.app

    GET  /            a browser: the web reader's home page; else the endpoints, as JSON
    GET  /api/jobs    the indexing jobs (?repository=, ?status=, ?limit=): the read policy
    GET  /readyz      200 once the query model is loaded and the database answers, else 503
    …                 the web reader's pages and JSON API (search/web/), MCP at /mcp

git's own routes (clone, fetch, push, /api/repos, /healthz, the post-receive
callback) are gitserver.app's; the handlers here take their collaborators as
arguments (Starlette's factory style) and read no settings.
"""

from __future__ import annotations

import asyncio
import io
from collections.abc import Callable
from typing import Any, NamedTuple

import psycopg
from psycopg_pool import PoolTimeout
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from gitserver.repos import RepoStore
from glossator.supervision.query_model import QueryModel
from hooks.queue import DONE_WITH_PROBLEMS, STATUS_NAMES, list_jobs_async
from search.web.reader import WebReader
from store.db import Database
from store.errors import describe_failure
from store.server import ping_async

# the statuses /api/jobs filters on: the queue's, and the words of a run's outcome
JOB_STATUSES = frozenset(
    {*STATUS_NAMES.values(), DONE_WITH_PROBLEMS, "failed", "cancelled", "aborted"}
)


class Endpoints:
    """The handlers over one database, repository store and web reader. `problem`: the
    database's supervisor's line while the database is down, else None; `mcp_token`:
    whether /mcp asks for a bearer token (the index says so); `query_model`: the query
    model's load at start (/readyz)."""

    def __init__(
        self,
        db: Database,
        store: RepoStore,
        web: WebReader,
        *,
        problem: Callable[[], str | None],
        mcp_token: bool,
        query_model: QueryModel | None = None,
    ) -> None:
        self.db = db
        self.store = store
        self.web = web
        self.problem = problem
        self.mcp_token = mcp_token
        self.query_model = query_model

    async def index(self, request: Request) -> Response:
        """A browser gets the web reader's home page; `curl http://host:port/` the endpoints."""
        if "text/html" in request.headers.get("accept", ""):
            return await run_in_threadpool(self.web.pages.home, request)
        endpoints = {
            "web": "/ (in a browser), /search?q=…, /read/<repository>/<file>, /jobs",
            "api": "/api/search?q=…, /api/nodes/<repository>/<file>, /api/outline",
            "mcp": "/mcp (MCP over streamable HTTP"
            + (", Authorization: Bearer <GLOSSATOR_MCP_TOKEN>)" if self.mcp_token else ")"),
            "git": "/<repository>.git (clone, fetch, push)",
            "repositories": "/api/repos (GET lists, POST creates with the admin token)",
            "jobs": "/api/jobs (indexing jobs; ?repository=, ?status=, ?limit=)",
            "health": "/healthz",
            "ready": "/readyz (200 once the query model is loaded: the first search is fast)",
        }
        return JSONResponse({"service": "glossator", "endpoints": endpoints})

    async def jobs(self, request: Request) -> Response:
        """The queue's jobs, newest first; 400 for a bad filter, 503 in one line while the
        database is down (never a 500 and a traceback)."""
        status = request.query_params.get("status")
        if status is not None and status not in JOB_STATUSES:
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
        problem = self.problem()
        if problem:  # known down: say so now, not after the pool's timeout
            return JSONResponse({"error": problem}, 503)
        try:
            pool = await self.db.open_async_pool()
            async with pool.connection(timeout=10) as conn:
                rows = await list_jobs_async(
                    conn,
                    repository=request.query_params.get("repository"),
                    status=status,
                    limit=limit,
                )
        except (psycopg.Error, PoolTimeout) as e:  # one line, never a 500 and a traceback
            why = self.problem() or describe_failure(e)  # it logs the outage once
            return JSONResponse({"error": why}, 503)
        return JSONResponse({"jobs": rows})

    async def database_ok(self) -> None:
        """/healthz's check of the database (gitserver.app): RuntimeError saying why not."""
        problem = self.problem()
        if problem:
            raise RuntimeError(problem)
        try:
            pool = await self.db.open_async_pool()
            async with pool.connection(timeout=10) as conn:
                await ping_async(conn)
        except (psycopg.Error, PoolTimeout) as e:
            raise RuntimeError(describe_failure(e)) from None

    async def ready(self, request: Request) -> Response:
        """/readyz: 200 when a search is answered at full speed (the query model loaded,
        the database answering), else 503 with what is not; /healthz is only alive."""
        model = self.query_model
        body: dict[str, Any] = {"query_model": "ready" if model is None else model.state}
        if model is not None and model.seconds is not None:
            body["query_model_seconds"] = round(model.seconds, 2)
        try:
            await self.database_ok()
            body["database"] = "ok"
        except RuntimeError as e:
            body["database"] = str(e)
        body["ready"] = body["query_model"] == "ready" and body["database"] == "ok"
        return JSONResponse(body, 200 if body["ready"] else 503)

    async def post_receive(self, repository: str, updates: str, server_url: str) -> str:
        """A push's post-receive, done here on the server's warm imports (the hook asks
        for it: glossator.githooks); what `hooks.post_receive.main` prints."""
        from hooks import post_receive as hook

        config = hook.PostReceive(
            repository,
            self.db.conninfo,
            server_url=server_url,
            git_dir=str(self.store.path(repository)),
        )
        out = io.StringIO()
        await asyncio.to_thread(hook.main, config, io.StringIO(updates), out)
        return out.getvalue()


class RouteTable(NamedTuple):
    public: list[BaseRoute]  # each with its own guard (the web reader's logins, MCP's token)
    read: list[Route]  # behind the read policy of clone and fetch (gitserver.app)


def route_table(endpoints: Endpoints, web: WebReader, mcp: Any | None) -> RouteTable:
    """Every route the server adds to git's: `/` is ours (the web reader's home page
    for a browser), then the web reader's others, MCP's, and /api/jobs."""
    public: list[BaseRoute] = [
        Route("/", endpoints.index, methods=["GET"]),
        Route("/readyz", endpoints.ready, methods=["GET"]),
    ]
    public.extend(r for r in web.routes() if getattr(r, "path", None) != "/")
    if mcp is not None:
        public.extend(mcp.routes("/mcp"))
    return RouteTable(public=public, read=[Route("/api/jobs", endpoints.jobs, methods=["GET"])])
