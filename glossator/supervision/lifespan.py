"""`glossator serve`'s start-up and shut-down, in order: the app's Starlette `lifespan`.

    lifespan = ServerLifespan(settings, db, db_supervisor, store, worker="process", ...)
    app = create_app(..., lifespan=lifespan)    # gitserver.app
    app.state.service = lifespan.state          # {"supervisor": …, "indexing": …} (tests)

Start-up, in order: the database (embedded PostgreSQL by default, migrations
applied), its supervisor (glossator/supervision/database.py), `server.json` (commands
run elsewhere find the repositories from it), the repositories' hooks (rewritten, so
they call this interpreter), the hooks' environment handed to git http-backend (the
database URL, never through a file), the indexing (glossator.supervision.indexing_modes:
procrastinate's schema, then `glossator worker` as a supervised child process, the
indexing service in this process with worker="thread", or no worker with "none"),
the MCP session manager when `search.mcp.http` is installed, and last the query
model's load in the background (glossator.supervision.query_model: nothing waits for
it, `/readyz` says when it is in). Shut-down, in
order: the MCP session manager, the indexing, then `server.json`, the database's
supervisor, the pools and the database (these four also when a step after the
database's start failed).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from typing import Any

from starlette.applications import Starlette

from gitserver.repos import RepoStore
from glossator.paths import forget_server, record_server
from glossator.settings import Settings
from glossator.supervision.database import DatabaseSupervisor
from glossator.supervision.indexing_modes import serve_indexing
from glossator.supervision.query_model import QueryModel
from glossator.supervision.search_first import SearchFirst
from hooks.reuse import IndexFn
from indexer.providers.embedders.base import Embedder
from store.db import Database

log = logging.getLogger(__name__)


def hook_environment(settings: Settings, db: Database) -> dict[str, str]:
    """What the hooks need, as GLOSSATOR_* variables (no tokens: hooks never check them)."""
    return {
        "GLOSSATOR_DATABASE_URL": db.conninfo,
        "GLOSSATOR_DATA_DIR": str(settings.data_dir.expanduser().resolve()),
        "GLOSSATOR_REPOS_DIR": str(settings.repos_dir.expanduser().resolve()),
        "GLOSSATOR_LOG_LEVEL": settings.log_level,
    }


class ServerLifespan:
    """Starlette's `lifespan=`: called with the app, an async context around serving.

    `worker`: process, thread or none (glossator.supervision.indexing_modes); `index_fn`
    replaces the indexer of a thread worker (tests); `mcp`: the MCP app whose session
    manager runs while the server does, or None."""

    def __init__(
        self,
        settings: Settings,
        db: Database,
        db_supervisor: DatabaseSupervisor,
        store: RepoStore,
        *,
        worker: str,
        embedder: Embedder,
        index_fn: IndexFn | None,
        mcp: Any | None,
        query_model: QueryModel | None = None,
        search_first: SearchFirst | None = None,
    ) -> None:
        self.settings = settings
        self.db = db
        self.db_supervisor = db_supervisor
        self.store = store
        self.worker = worker
        self.embedder = embedder
        self.index_fn = index_fn
        self.mcp = mcp
        self.query_model = query_model
        self.search_first = search_first  # the worker process stopped while searches run
        # what a test reaches through app.state.service: the database's supervisor, and
        # once started, the indexing service or the worker's supervisor
        self.state: dict[str, Any] = {"supervisor": db_supervisor, "search_first": search_first}

    @contextlib.asynccontextmanager
    async def __call__(self, app: Starlette) -> AsyncIterator[None]:
        db, settings = self.db, self.settings
        await asyncio.to_thread(db.start)
        self.db_supervisor.start()
        record_server(settings)  # commands run elsewhere find the repositories from it
        try:
            for name in await asyncio.to_thread(self.store.names):
                await asyncio.to_thread(self.store.refresh, name)
            app.state.git.hook_env.update(hook_environment(settings, db))
            async with contextlib.AsyncExitStack() as stack:
                self.state["indexing"] = await stack.enter_async_context(
                    serve_indexing(
                        self.worker,
                        settings,
                        db,
                        self.store,
                        embedder=self.embedder,
                        index_fn=self.index_fn,
                        search_first=self.search_first,
                    )
                )
                if self.mcp is not None:
                    await stack.enter_async_context(self.mcp.lifespan())
                log.info("glossator serving repositories in %s", self.store.root)
                if self.query_model is not None:
                    # once the server answers: on two cores, loaded beside the database's
                    # start it held git's first answer back by seconds (bench/startup.py)
                    self.query_model.start()
                yield
        finally:
            forget_server(settings)
            await self.db_supervisor.stop()
            await db.close_async_pool()
            await asyncio.to_thread(db.stop)
