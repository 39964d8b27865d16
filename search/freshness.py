"""How fresh the index is: the commit a branch's rows come from, and whether it moved since.

An agent that quotes a passage should know whether the book changed after the
index was built. The worker records the commit whose sidecars a branch's rows
equal (`indexed_commits`); the branch tip is read from the bare repository in
`settings.repos_dir` (pygit2, a few refs read: well under a millisecond). A
repository that is not on this server (rows loaded with `glossator load`, or a
database shared with another server) has no tip to compare with, and its
status says so ("unknown") rather than guessing.

Statuses: `current` (indexed commit = branch tip), `behind` (the branch moved
since: a job is queued or running), `not indexed` (the branch has a tip but no
indexed commit), `unknown` (no repository or branch to compare with).
`problems` lists what the last index could not do (a summary not regenerated,
a file whose rows were refused): the branch is then not fully indexed and the
note says so, whatever the status.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any

from glossator.settings import Settings
from search.results import Freshness, FreshnessStatus

log = logging.getLogger(__name__)


def freshness(
    conn: Any, repositories: Iterable[str], branch: str, settings: Settings
) -> list[Freshness]:
    """One `Freshness` per repository (in the order given, duplicates dropped)."""
    names = list(dict.fromkeys(repositories))
    if not names:
        return []
    indexed = {}
    problems: dict[str, list[str]] = {}
    for r, c, at, p in conn.execute(
        "SELECT repository, commit, indexed_at, problems FROM indexed_commits "
        "WHERE branch = %s AND repository = ANY(%s)",
        (branch, names),
    ).fetchall():
        indexed[r] = (c, at)
        problems[r] = list(p or [])
    tips = _tips(names, branch, settings)
    out = []
    for name in names:
        commit, at = indexed.get(name, (None, None))
        at_iso = at.isoformat() if at is not None else None
        tip, why = tips[name]
        if tip is None:
            status: FreshnessStatus = "unknown"
            note = why
        elif commit is None:
            status, note = "not indexed", f"branch tip {tip[:12]} has no indexed commit yet"
        elif commit == tip:
            status, note = "current", f"indexed at the branch tip {tip[:12]}"
        else:
            status = "behind"
            note = (
                f"indexed at {commit[:12]}; the branch has moved to {tip[:12]} since "
                "(indexing is queued or running: results may miss the latest changes)"
            )
        found = problems.get(name, [])
        if found:
            note += f"; not fully indexed: {len(found)} problem(s) (retried), first: {found[0]}"
        out.append(Freshness(name, branch, status, commit, at_iso, tip, note, found[:10]))
    return out


def _tips(names: list[str], branch: str, settings: Settings) -> dict[str, tuple[str | None, str]]:
    """repository → (tip of `branch` or None, why None)."""
    from gitserver.repos import RepoStore  # pygit2 only when asked

    store = RepoStore(settings.repos_dir, data_dir=settings.data_dir)
    out: dict[str, tuple[str | None, str]] = {}
    for name in names:
        if not store.exists(name):
            out[name] = (None, "the repository is not on this server (loaded from a folder?)")
            continue
        try:
            tip = store.branches(name).get(branch)
        except Exception as e:  # a damaged repository must not break search
            log.warning("cannot read the branches of %s: %s", name, type(e).__name__)
            out[name] = (None, "the repository's branches could not be read")
            continue
        out[name] = (tip, "" if tip else f"the repository has no branch {branch!r}")
    return out
