"""The server's own HTTP endpoints, and every route it adds to git's, in one table.

    endpoints = Endpoints(db, store, web, problem=..., mcp_token=True)
    create_app(store, policy, extra_routes=route_table(endpoints, web, mcp),
               health_checks=[endpoints.database_ok],
               post_receive=endpoints.post_receive, ...)          # gitserver.app

    GET  /            a browser: the web reader's home page; else the endpoints, as JSON
    GET  /api/jobs    the indexing jobs (?repository=, ?status=, ?limit=) of the
                      repositories the caller may read
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
from pathlib import Path
from typing import Any

import psycopg
from psycopg_pool import PoolTimeout
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.routing import BaseRoute, Route

from core.access import caller_of
from gitserver.repos import RepoStore
from glossator import __version__
from glossator.supervision.query_model import QueryModel
from hooks.queue import DONE_WITH_PROBLEMS, STATUS_NAMES, list_jobs_async
from search.errors import BadQuery
from search.inputs import check_known, check_name, check_query_string
from search.web.openapi import describe, get, parameter
from search.web.params import Param
from search.web.reader import WebReader
from store.db import Database
from store.errors import describe_failure
from store.server import ping_async, write_probe_async

# the statuses /api/jobs filters on: the queue's, and the words of a run's outcome
JOB_STATUSES = frozenset(
    {*STATUS_NAMES.values(), DONE_WITH_PROBLEMS, "failed", "cancelled", "aborted"}
)

JOBS_PARAMS = ("repository", "status", "limit")
_LISTING = {"description": "a JSON listing", "content": {"application/json": {}}}
# the server's own routes in /openapi.json, beside the search API's (search.web.openapi)
SERVER_PATHS: dict[str, dict[str, Any]] = {
    "/api/jobs": get(
        "The indexing jobs, newest first",
        [
            parameter(Param("repository", "string", "one repository's jobs")),
            parameter(Param("status", "string", "queued, running, done, failed, cancelled…")),
            parameter(Param("limit", "integer", "at most this many, 1 to 500 (default 50)")),
        ],
        _LISTING,
    ),
    "/api/repos": get("The repositories and their branches", [], _LISTING)
    | {
        "post": {
            "summary": "Create a repository (the admin token: GLOSSATOR_ADMIN_TOKEN)",
            "security": [{"bearer": []}],
            "requestBody": {
                "required": True,
                "content": {
                    "application/json": {
                        "schema": {
                            "type": "object",
                            "properties": {"name": {"type": "string"}},
                            "required": ["name"],
                        }
                    }
                },
            },
            "responses": {"201": _LISTING, "400": {"description": "a bad name"}},
        }
    },
    "/healthz": {
        "get": {
            "summary": "ok, or 503 and what is wrong (the database)",
            "responses": {"200": {"description": "ok"}, "503": {"description": "unhealthy"}},
        }
    },
}


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
            + (", Authorization: Bearer <a read token>)" if self.mcp_token else ")"),
            "git": "/<repository>.git (clone, fetch, push)",
            "repositories": "/api/repos (GET lists, POST creates with the admin token)",
            "jobs": "/api/jobs (indexing jobs; ?repository=, ?status=, ?limit=)",
            "health": "/healthz",
            "openapi": "/openapi.json (the JSON API described)",
            "ready": "/readyz (200 once the query model is loaded: the first search is fast)",
        }
        return JSONResponse({"service": "glossator", "endpoints": endpoints})

    async def jobs(self, request: Request) -> Response:
        """The queue's jobs, newest first; 400 for a bad filter (search.inputs, as every API
        route checks it), 503 in one line while the database is down (never a 500 and a
        traceback)."""
        try:
            check_query_string(request.scope.get("query_string", b""))
            check_known(request.query_params.keys(), JOBS_PARAMS, "/api/jobs")
            check_name("repository", request.query_params.get("repository"))
        except BadQuery as e:
            return JSONResponse({"error": str(e)}, 400)
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
                    readable=caller_of(request.scope).readable,
                )
        except (psycopg.Error, PoolTimeout) as e:  # one line, never a 500 and a traceback
            why = self.problem() or describe_failure(e)  # it logs the outage once
            return JSONResponse({"error": why}, 503)
        return JSONResponse({"jobs": rows})

    async def openapi(self, request: Request) -> Response:
        """The JSON API's OpenAPI description (search.web.openapi), with the server's own."""
        return JSONResponse(describe(__version__, SERVER_PATHS))

    async def docs(self, request: Request) -> Response:
        """/docs: where the API is described (no bundled Swagger UI, no CDN)."""
        return RedirectResponse("/openapi.json", status_code=307)

    async def database_ok(self) -> None:
        """/healthz's check of the database (gitserver.app): RuntimeError saying why not."""
        problem = self.problem()
        if problem:
            raise RuntimeError(problem)
        try:
            pool = await self.db.open_async_pool()
            async with pool.connection(timeout=10) as conn:
                await ping_async(conn)
                # it also writes: reads go on when the disk is full
                await write_probe_async(conn)
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
        for it: glossator.githooks), on a connection of the server's pool (a new
        connection costs a push more than its statements): what
        `hooks.post_receive.main` prints."""
        from hooks import post_receive as hook

        config = hook.PostReceive(
            repository,
            self.db.conninfo,
            server_url=server_url,
            git_dir=str(self.store.path(repository)),
        )
        out = io.StringIO()
        db = self.db  # its pool is opened on first use, in the thread
        await asyncio.to_thread(
            hook.main, config, io.StringIO(updates), out, lambda: db.pool.connection(timeout=10)
        )
        return out.getvalue()

    async def pre_receive(
        self, git_dir: Path, quarantine: str | None, updates: str
    ) -> tuple[int, str]:
        """A push's pre-receive check, done here on the server's warm imports (the hook
        asks for it: glossator.githooks): `hooks.pre_receive.main`'s status and lines."""
        from hooks import pre_receive as hook  # pygit2 and the corpus rules: the first push's

        out = io.StringIO()
        status = await asyncio.to_thread(
            hook.main, str(git_dir), quarantine, io.StringIO(updates), out
        )
        return status, out.getvalue()


def route_table(endpoints: Endpoints, web: WebReader, mcp: Any | None) -> list[BaseRoute]:
    """Every route the server adds to git's: `/` is ours (the web reader's home page
    for a browser), then the web reader's others, MCP's, and /api/jobs. All of them are
    behind the access boundary (gitserver.boundary)."""
    routes: list[BaseRoute] = [
        Route("/", endpoints.index, methods=["GET"]),
        Route("/openapi.json", endpoints.openapi, methods=["GET"]),
        Route("/docs", endpoints.docs, methods=["GET"]),
        Route("/readyz", endpoints.ready, methods=["GET"]),
    ]
    routes.extend(r for r in web.routes() if getattr(r, "path", None) != "/")
    if mcp is not None:
        routes.extend(mcp.routes("/mcp"))
    routes.append(Route("/api/jobs", endpoints.jobs, methods=["GET"]))
    return routes
