"""The `glossator worker` process: the job runner composed from the settings, run
until SIGTERM, and (when a server supervises it) its side of the bargain, never to
outlive that server. What `glossator serve` runs to index pushes (this process
supervised, the same service in a thread, or none) is glossator/supervision/indexing_modes.py.

    run_worker(settings)                       # `glossator worker`: until SIGTERM

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
import threading
from typing import TYPE_CHECKING

from core.errors import GlossatorError
from gitserver.repos import RepoStore
from glossator.settings import Settings
from glossator.wiring import database
from store.db import Database

if TYPE_CHECKING:  # imported where used: `glossator --help` does not load them
    from hooks.job_runner import JobRunner
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


def job_runner(
    settings: Settings,
    db: Database,
    store: RepoStore,
    *,
    embedder: Embedder,
    concurrency: int = 1,
    sole_worker: bool = False,
    index_fn: IndexFn | None = None,
    predecessor: str | None = None,
) -> JobRunner:
    from glossator.logs import quiet_expected_failures
    from glossator.providers import get_summarizer
    from hooks.job_runner import JobRunner

    quiet_expected_failures()  # an outage: one line each, not procrastinate's tracebacks
    from hooks.commitback import GitCommitBack
    from hooks.job import BranchIndexer
    from hooks.loading import RowLoader
    from hooks.reuse import ReusingIndexer

    indexer = BranchIndexer(
        store,
        ReusingIndexer(embedder, get_summarizer(settings), index_fn),
        RowLoader(db.pool, vector_slice=settings.vector_slice),
        GitCommitBack(store),
    )
    indexed = None
    if settings.warm_gate:
        from glossator.search_wiring import search_service
        from search.warming import GateWarmer

        # its own search service: the gate it measures is kept in PostgreSQL, where
        # every server process reads it (search.warming)
        indexed = GateWarmer(search_service(settings, db.pool, reranker=None).warm)
    return JobRunner(
        indexed=indexed,
        conninfo=db.conninfo,
        store=store,
        indexer=indexer,
        retries=settings.job_retries,
        job_nice=settings.job_nice,
        exclusive_database=sole_worker,
        concurrency=concurrency,
        predecessor=predecessor,
    )


def run_worker(
    settings: Settings,
    *,
    concurrency: int = 1,
    sole_worker: bool = False,
    supervised_by: int | None = None,
    ready_fd: int | None = None,
    replaces: int | None = None,
) -> int:
    """`glossator worker`: run jobs until SIGTERM or SIGINT; the exit code.

    Leaves with os._exit: a job still running after STOP_GRACE_S is abandoned, and
    the interpreter would otherwise wait for its thread however long it takes."""
    if supervised_by is not None:
        die_with_parent(supervised_by)
    loop = asyncio.new_event_loop()
    try:
        code = loop.run_until_complete(
            _worker(settings, concurrency, sole_worker, ready_fd, replaces)
        )
    except BaseException:
        loop.close()
        raise  # start-up errors: glossator.cli prints them as one line
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


async def _worker(
    settings: Settings,
    concurrency: int,
    sole_worker: bool,
    ready_fd: int | None,
    replaces: int | None = None,
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
    from hooks.jobthread import worker_name

    # `serve`'s child restarted after its predecessor died: that process's jobs are orphans
    predecessor = None if replaces is None else worker_name(replaces)
    service = job_runner(
        settings,
        db,
        store,
        embedder=embedder,
        concurrency=concurrency,
        sole_worker=sole_worker,
        predecessor=predecessor,
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


def die_with_parent(parent: int) -> None:
    """In the child: never outlive the server `parent`: SIGKILL when it dies (Linux), and
    an exit when stdin, a pipe only the server holds, reaches end of file (any platform;
    glossator/supervision/worker_process.py starts the child with it)."""
    if sys.platform.startswith("linux"):
        import ctypes

        pr_set_pdeathsig = 1
        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL(None, use_errno=True).prctl(pr_set_pdeathsig, signal.SIGKILL)
    if os.getppid() != parent:  # it died before we could ask
        os._exit(1)

    def watch() -> None:
        with contextlib.suppress(OSError, ValueError):
            while sys.stdin.buffer.read(65536):
                pass
        # a crash of the server: behave as part of it (no cleanup; every step of a job
        # is safe to interrupt, and the next worker recovers the job)
        log.warning("the server (pid %s) is gone: the worker stops at once", parent)
        os._exit(1)

    threading.Thread(target=watch, name="glossator-parent-watch", daemon=True).start()
