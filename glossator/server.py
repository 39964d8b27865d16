"""The composition of `glossator serve`: git server, web reader, MCP, and its indexing.

    app = build_app(settings)        # nothing started yet; worker="process" by default
    uvicorn.Server(uvicorn.Config(app)).run()

`worker` is where the indexing runs: "process" (a `glossator worker` child, supervised),
"thread" (in this process; tests pass their indexer as `index_fn`) or "none"
(glossator.supervision.indexing_modes).

`build_app` only composes: it builds the collaborators from the settings and mounts
the routes of glossator/routes.py (the server's own endpoints: `/`, `/api/jobs`, the
health check, the post-receive callback; the web reader's and MCP's) on the git
server's app (gitserver.app). What starts and stops with the server, in which order
(the database and its supervisor, the hooks, the indexing worker, the MCP session
manager), is glossator/supervision/lifespan.py. The hooks get the database URL through
git http-backend's environment, never through a file.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from typing import Any

from starlette.applications import Starlette

from core.access import AccessPolicy, token_digest
from core.throttle import Throttle
from gitserver.app import create_app
from gitserver.repos import RepoStore
from glossator.logs import quiet_expected_failures
from glossator.providers import get_embedder
from glossator.routes import Endpoints, route_table
from glossator.search_wiring import search_service, warm_query_model
from glossator.settings import Settings
from glossator.supervision.database import DatabaseSupervisor
from glossator.supervision.lifespan import ServerLifespan
from glossator.supervision.query_model import QueryModel
from glossator.supervision.search_first import SearchFirst
from glossator.wiring import access_policy, database, stored_tokens
from hooks.queue import list_jobs
from hooks.reuse import IndexFn
from search.service import SearchService
from search.web.access import Readers
from search.web.reader import WebReader
from store.db import Database


def _mcp_app(settings: Settings, service: SearchService) -> Any | None:
    """MCP over the search service, which embeds queries with its own embedder (the
    worker's counts stay the worker's) and owns the query cache and the engine lock."""
    if importlib.util.find_spec("search.mcp.http") is None:
        return None
    from search.mcp.http import mcp_http_app

    return mcp_http_app(service, host=settings.host, log_level=settings.log_level)


def readers(policy: AccessPolicy, throttle: Throttle) -> Readers:
    """The web reader's login sessions over the access policy (core.access), and the
    boundary's throttle of wrong tokens."""

    def identify(token: str) -> str | None:
        digest = token_digest(token)
        return digest if policy.grant(digest) is not None else None

    return Readers(throttle=throttle, open=policy.anonymous_read, identify=identify)


def web_reader(
    service: SearchService,
    db: Database,
    policy: AccessPolicy,
    throttle: Throttle,
    problem: Callable[[], str | None],
) -> WebReader:
    """Pages and the JSON API over the search service; the jobs from the queue."""

    def jobs(limit: int, readable: frozenset[str] | None) -> list[dict[str, Any]]:
        with db.pool.connection(timeout=10) as conn:
            return list_jobs(conn, limit=limit, readable=readable)

    return WebReader(service, readers(policy, throttle), jobs=jobs, problem=problem)


def build_app(
    settings: Settings, *, worker: str = "process", index_fn: IndexFn | None = None
) -> Starlette:
    """The whole server as one ASGI app (`worker`, `index_fn`: see the module's docstring)."""
    quiet_expected_failures()  # the queue's loops log an outage once a line, not a traceback
    store = RepoStore(settings.repos_dir, data_dir=settings.data_dir)
    db = database(settings)
    supervisor = DatabaseSupervisor(db)  # started with the database, in the lifespan
    # the worker process stopped while searches run (search_first.py); not in a thread
    # worker's mode (the server's own process) nor with no worker
    first = SearchFirst() if settings.search_first and worker == "process" else None
    # MCP and the web reader share its query cache
    service = search_service(settings, db, foreground=first.search if first else None)
    throttle = Throttle()  # wrong tokens an address, at every door (core.throttle)
    mcp = _mcp_app(settings, service)
    policy = access_policy(settings, stored=stored_tokens(db))
    web = web_reader(service, db, policy, throttle, lambda: supervisor.problem)
    query_model = QueryModel(lambda: warm_query_model(settings, service))  # loaded at start
    endpoints = Endpoints(
        db,
        store,
        web,
        problem=lambda: supervisor.problem,
        mcp_token=not policy.mcp_open,
        query_model=query_model,
    )
    lifespan = ServerLifespan(
        settings,
        db,
        supervisor,
        store,
        worker=worker,
        embedder=get_embedder(settings),  # the thread worker's; a process worker builds its own
        index_fn=index_fn,
        mcp=mcp,
        query_model=query_model,
        search_first=first,
    )
    app = create_app(
        store,
        policy,
        extra_routes=route_table(endpoints, web, mcp),
        health_checks=[endpoints.database_ok],
        lifespan=lifespan,
        post_receive=endpoints.post_receive,
        pre_receive=endpoints.pre_receive,
        throttle=throttle,
        max_body=settings.max_push_bytes,
        sessions=web.base.readers.session_digest,
        pages=web.refusal,
    )
    app.state.service = lifespan.state
    return app
