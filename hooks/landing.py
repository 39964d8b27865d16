"""Rows before vectors: the job's `Landing` (indexer.indexing.sidecars), onto PostgreSQL.

    landing = RowLanding(pool, "livre", "main")
    index(source, …, landing=landing)     # the indexer calls it between chunking and the end

Three calls, each its own short transaction under the branch's writer lock
(store.commits.lock_branch, the attempt's lease checked under it: hooks.lease), so
searches never wait long and a kill loses at most the slice under way
(docs/push-pipeline.md, "Rows before vectors"):

- `resumed`: the vectors an interrupted attempt (a crash, a kill -9, a restart) left beside
  the rows it loaded before their vectors; the indexer takes them as computed.
- `rows`: the rebuilt files' rows, from their sidecars as they will be but without the
  vectors not computed yet (`store.loader.sync_files(partial=True)`: a file's rows are
  replaced whole, as in any load), and the branch's coverage (store.landing.start).
- `vectors`: one slice of computed vectors, each beside its row if that row still holds
  the text it was computed for (store.landing.land).

The job's final load then makes the rows equal the committed sidecars, file by file
(a partial record never equals a sidecar's digest), and clears the coverage.
"""

from __future__ import annotations

import logging

from psycopg_pool import ConnectionPool

from hooks.lease import Lease, lock_branch
from indexer.corpus.sidecar_format import VectorSlot
from indexer.corpus.source import FileSource
from store import landing
from store.loader import sync_files

log = logging.getLogger(__name__)


class RowLanding:
    """A branch's rows before its vectors (indexer.indexing.sidecars.Landing)."""

    def __init__(
        self,
        pool: ConnectionPool,
        repository: str,
        branch: str,
        slice_texts: int | None = None,
        lease: Lease | None = None,
    ) -> None:
        self.pool = pool
        self.lease = lease  # checked under the writer lock before each write (hooks.lease)
        self.repository = repository
        self.branch = branch
        self.slice_texts = slice_texts  # texts per slice of vectors (None: the indexer's)
        self.landed = 0  # vectors that reached their row (one per row)

    def resumed(self, files: list[str], model: str) -> list[tuple[str, int, str, str, list[float]]]:
        with self.pool.connection() as conn:
            return landing.loaded_vectors(conn, self.repository, self.branch, files, model)

    def rows(self, source: FileSource, files: list[str], missing: int) -> None:
        with self.pool.connection() as conn, conn.transaction():
            lock_branch(conn, self.repository, self.branch, self.lease)
            result = sync_files(
                conn,
                repository=self.repository,
                branch=self.branch,
                source=source,
                changed=files,
                deleted=[],
                partial=True,
            )
            landing.start(conn, self.repository, self.branch, missing)
        log.info(
            "%s/%s: rows before vectors: %d files, %d rows; %d vectors to compute",
            self.repository,
            self.branch,
            len(result.loaded),
            result.rows,
            missing,
        )

    def vectors(self, model: str, slots: list[tuple[VectorSlot, list[float]]]) -> None:
        if not slots:
            return
        with self.pool.connection() as conn, conn.transaction():
            lock_branch(conn, self.repository, self.branch, self.lease)
            self.landed += landing.land(conn, self.repository, self.branch, model, slots)
