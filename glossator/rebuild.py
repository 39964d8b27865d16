"""The rows of a new embedded data directory rebuilt from the repositories' sidecars.

    Database(config, on_new_cluster=partial(from_sidecars, RepoStore(repos, data_dir=…)))

store.embedded moves an embedded data directory of another PostgreSQL major version
aside (PostgreSQL 17 cannot open the 18 that the embedded server was before) and
makes a new one; `Database.start()` then calls this once the schema is in place.
Every branch of every repository of the server gets the rows of the sidecars at its
tip, read from git (`GitTreeSource`, as the worker reads them) and loaded as
`glossator load` loads a tree (store.tree.sync_tree): the vectors are the sidecars',
nothing is embedded again. Branch tips and default branches are recorded as the
server's reconciliation does (store.tips).

`indexed_commits` is left empty on purpose: the tip's sidecars may be older than
its text (a push whose job had not run yet), and the worker, finding no indexed
commit, indexes each branch again when `glossator serve` starts (its vectors reused
from the same sidecars, so no embedding either) and then records it. What lived
only in the old database starts afresh: the job history and the search
calibrations (a cache). The old directory stays where it was moved, to delete by hand.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path

from gitserver.repos import RepoStore
from hooks.gitsource import GitTreeSource
from store.db import Database
from store.tips import record_heads, sync_tips
from store.tree import sync_tree

log = logging.getLogger("store.db")  # the database's lifecycle: one logger


def from_sidecars(store: RepoStore, db: Database, old: Path) -> int:
    """Load every branch's sidecars into the new database; the number of rows loaded."""
    started = time.monotonic()
    branches = list(store.iter_branches())
    log.warning(
        "rebuilding the rows of %d branch(es) of %d repositories from their sidecars "
        "(no re-embedding; the old data directory is kept in %s)",
        len(branches),
        len({r for r, _, _ in branches}),
        old,
    )
    rows = refused = 0
    for repository, branch, tip in branches:
        source = GitTreeSource.at(store.open(repository), tip)
        with db.pool.connection() as conn:
            result = sync_tree(conn, repository=repository, branch=branch, source=source)
            conn.commit()
        rows += result.rows
        errors = [p for p in result.problems if p.severity == "error"]
        refused += len(errors)
        log.warning(
            "rebuilt %s/%s from its sidecars at %s: %s",
            repository,
            branch,
            tip[:12],
            result.summary(),
        )
        for problem in errors:
            log.warning("%s/%s: %s", repository, branch, problem)
    with db.pool.connection() as conn:
        sync_tips(conn, lambda: branches)
        record_heads(conn, {r: store.head(r) for r in sorted({r for r, _, _ in branches})})
        conn.commit()
    log.warning(
        "rebuild done: %d rows in %.1f s%s; `glossator serve` indexes each branch again "
        "to record it as indexed (vectors reused, nothing embedded)",
        rows,
        time.monotonic() - started,
        f", {refused} file(s) refused (see above)" if refused else "",
    )
    return rows
