"""The indexing side of the composition: the `glossator worker` process, and what
`glossator serve` runs to index pushes (a supervised child worker, a thread, or none).

    run_worker(settings)                       # `glossator worker`: until SIGTERM
    async with serve_indexing("process", settings, db, store, embedder=e): ...

A worker needs the server's database and repositories, nothing else: the queue,
the per-branch locks and the job history are in PostgreSQL, and the bare
repositories are on a volume every worker mounts (docs/push-pipeline.md, "N
workers", says why a shared volume rather than workers as git clients).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import sys
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

from core.errors import GlossatorError
from gitserver.repos import RepoStore
from glossator.settings import Settings
from glossator.wiring import database
from store.db import Database

if TYPE_CHECKING:  # imported where used: `glossator --help` does not load them
    from glossator.supervision.worker_process import WorkerSupervisor
    from hooks.indexing_service import IndexingService
    from hooks.reuse import IndexFn
    from indexer.providers.embedders.base import Embedder

log = logging.getLogger(__name__)

# What a stopping worker gives its running job before it abandons it (the next
# worker recovers it: every step of a job is safe to interrupt). Below compose's
# default stop_grace_period (10 s) plus margin is not possible with long jobs; the
# compose file gives workers 30 s.
STOP_GRACE_S = 15.0


def _database(settings: Settings, pool_max: int) -> Database:
    """The server's database: its URL, or the embedded one a running `serve` holds."""
    if settings.embedded_database:
        from glossator.paths import running_server

        if running_server(settings) is None:
            raise GlossatorError(
                "glossator worker needs the server's database: set GLOSSATOR_DATABASE_URL "
                "to it, or start `glossator serve` on this data directory "
                f"({settings.data_dir}) first"
            )
        return database(settings, share=True, pool_max=pool_max)
    return database(settings, pool_max=pool_max)


def _service(
    settings: Settings,
    db: Database,
    store: RepoStore,
    *,
    embedder: Embedder,
    concurrency: int = 1,
    sole_worker: bool = False,
    index_fn: IndexFn | None = None,
) -> IndexingService:
    from glossator.logs import quiet_expected_failures
    from glossator.providers import get_summarizer
    from hooks.indexing_service import IndexingService

    quiet_expected_failures()  # an outage: one line each, not procrastinate's tracebacks
    from hooks.commitback import GitCommitBack
    from hooks.job import BranchIndexer
    from hooks.loading import RowLoader
    from hooks.reuse import ReusingIndexer

    indexer = BranchIndexer(
        store,
        ReusingIndexer(embedder, get_summarizer(settings), index_fn),
        RowLoader(db.pool),
        GitCommitBack(store),
    )
    indexed = None
    if settings.warm_gate:
        from glossator.search_service import search_service
        from search.warming import GateWarmer

        # its own search service: the gate it measures is kept in PostgreSQL, where
        # every server process reads it (search.warming)
        indexed = GateWarmer(search_service(settings, db.pool, reranker=None).warm)
    return IndexingService(
        indexed=indexed,
        conninfo=db.conninfo,
        store=store,
        indexer=indexer,
        retries=settings.job_retries,
        job_nice=settings.job_nice,
        exclusive_database=sole_worker,
        concurrency=concurrency,
    )


def run_worker(
    settings: Settings,
    *,
    concurrency: int = 1,
    sole_worker: bool = False,
    supervised_by: int | None = None,
    ready_fd: int | None = None,
) -> int:
    """`glossator worker`: run jobs until SIGTERM or SIGINT; the exit code.

    Leaves with os._exit: a job still running after STOP_GRACE_S is abandoned, and
    the interpreter would otherwise wait for its thread however long it takes."""
    if supervised_by is not None:
        from glossator.supervision.worker_process import die_with_parent

        die_with_parent(supervised_by)
    loop = asyncio.new_event_loop()
    try:
        code = loop.run_until_complete(_worker(settings, concurrency, sole_worker, ready_fd))
    except BaseException:
        loop.close()
        raise  # start-up errors: glossator.cli prints them as one line
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


async def _worker(
    settings: Settings, concurrency: int, sole_worker: bool, ready_fd: int | None
) -> int:
    from glossator.providers import get_embedder

    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    db = _database(settings, pool_max=max(4, concurrency + 2))
    await asyncio.to_thread(db.start)
    store = RepoStore(settings.repos_dir, data_dir=settings.data_dir)
    embedder = await asyncio.to_thread(get_embedder, settings)
    service = _service(
        settings, db, store, embedder=embedder, concurrency=concurrency, sole_worker=sole_worker
    )
    await service.start()
    # one line a supervisor, a script or a test can wait for
    print(
        f"glossator: worker {service.name} ready (concurrency {concurrency})",
        file=sys.stderr,
        flush=True,
    )
    # the supervising server waits for this (glossator.supervision.worker_process)
    if ready_fd is not None:
        with contextlib.suppress(OSError):
            os.write(ready_fd, b"ready\n")
            os.close(ready_fd)
    await stop.wait()
    log.info("worker %s stopping", service.name)
    stopping = asyncio.create_task(service.stop())
    done, _ = await asyncio.wait({stopping}, timeout=STOP_GRACE_S)
    if not done:
        log.warning(
            "a job was still running %.0f s after the stop: abandoned, the next worker "
            "takes it over",
            STOP_GRACE_S,
        )
        return 0
    await asyncio.to_thread(db.stop)
    return 0


@contextlib.asynccontextmanager
async def serve_indexing(
    mode: str,
    settings: Settings,
    db: Database,
    store: RepoStore,
    *,
    embedder: Embedder,
    index_fn: IndexFn | None = None,
) -> AsyncIterator[IndexingService | WorkerSupervisor | None]:
    """What `glossator serve` runs to index pushes; yields the service or supervisor.

    - `process` (default): `glossator worker` as a supervised child
      (glossator/supervision/worker_process.py); with the embedded database it is the
      only possible worker (`--sole-worker`).
    - `thread`: the indexing service in the server's own event loop (one process).
    - `none`: no worker; `glossator worker` processes elsewhere run the jobs.
    The queue's schema is applied in every mode: the hooks queue into it."""
    from hooks.queue import ensure_schema

    if mode == "thread":
        service = _service(
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
    from glossator.supervision.worker_process import (
        WorkerSupervisor,
        worker_command,
        worker_environment,
    )

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
    try:
        yield supervisor
    finally:
        await supervisor.stop()
