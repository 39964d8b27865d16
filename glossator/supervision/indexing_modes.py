"""What `glossator serve` runs to index pushes: `glossator worker` as a supervised child
(glossator/supervision/worker_process.py), the same indexing service in a thread of the
server (glossator.worker.job_runner), or none.

    async with serve_indexing("process", settings, db, store, embedder=e) as running: ...
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

from core.errors import GlossatorError
from gitserver.repos import RepoStore
from glossator.settings import Settings
from glossator.supervision.search_first import SearchFirst
from glossator.supervision.worker_process import (
    WorkerSupervisor,
    worker_command,
    worker_environment,
)
from glossator.worker import job_runner
from store.db import Database

if TYPE_CHECKING:
    from hooks.job_runner import JobRunner
    from hooks.reuse import IndexFn
    from indexer.providers.embedders.base import Embedder

log = logging.getLogger(__name__)


@contextlib.asynccontextmanager
async def serve_indexing(
    mode: str,
    settings: Settings,
    db: Database,
    store: RepoStore,
    *,
    embedder: Embedder,
    index_fn: IndexFn | None = None,
    search_first: SearchFirst | None = None,
) -> AsyncIterator[JobRunner | WorkerSupervisor | None]:
    """What `glossator serve` runs to index pushes; yields the service or supervisor.

    - `process` (default): `glossator worker` as a supervised child
      (glossator/supervision/worker_process.py); with the embedded database it is the
      only possible worker (`--sole-worker`).
    - `thread`: the indexing service in the server's own event loop (one process).
    - `none`: no worker; `glossator worker` processes elsewhere run the jobs.
    The queue's schema is applied in every mode: the hooks queue into it.
    `search_first` (process mode): stops the child while searches run
    (glossator/supervision/search_first.py), from its start until before its stop."""
    from hooks.queue import ensure_schema

    if mode == "thread":
        service = job_runner(
            settings, db, store, embedder=embedder, sole_worker=db.embedded, index_fn=index_fn
        )
        await service.start()
        try:
            yield service
        finally:
            await service.stop()
        return
    await asyncio.to_thread(ensure_schema, db.conninfo)
    if mode == "none":
        log.info("no indexing worker in this server: run `glossator worker` to index pushes")
        yield None
        return
    if mode != "process":
        raise GlossatorError(f"unknown worker mode {mode!r}: process, thread or none")
    supervisor = WorkerSupervisor(
        worker_command(os.getpid(), sole_worker=db.embedded),
        worker_environment(
            settings,
            db.conninfo,
            # the level `serve -v`/-vv (or GLOSSATOR_LOG_LEVEL) gave this process
            log_level=logging.getLevelName(logging.getLogger().getEffectiveLevel()),
        ),
    )
    await supervisor.start()
    if search_first is not None:
        search_first.attach(lambda: supervisor.pid)
    try:
        yield supervisor
    finally:
        if search_first is not None:
            # a stopped child would not act on SIGTERM: continued first, stopped no more
            await asyncio.to_thread(search_first.detach)
        await supervisor.stop()
