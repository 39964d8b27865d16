"""How fresh the index is: the commit a branch's rows come from, and whether it moved since.

An agent that quotes a passage should know whether the book changed after the
index was built. The worker records the commit whose sidecars a branch's rows
equal (`indexed_commits`); the server records each branch's tip as pushed
(`branch_tips`: the post-receive hook, the worker's commit-back, reconciliation
at start; `store.tips`). Both are read here, with the vectors' coverage while a job
embeds, in two small queries sent together (one round trip): search never opens
git. A repository with no recorded tip is not on this server (rows loaded with
`glossator load`, or a database shared with another server): its status says
so ("unknown") rather than guessing.

Statuses: `current` (indexed commit = branch tip), `behind` (the branch moved
since: a job is queued or running), `not indexed` (the branch has a tip but no
indexed commit), `unknown` (no repository or branch to compare with).
`problems` lists what the last index could not do (a summary not regenerated,
a file whose rows were refused): the branch is then not fully indexed and the
note says so, whatever the status.

While a job embeds, its rows are loaded and their vectors land slice by slice
(store.landing): `vectors` is the share of the branch's vectorized rows that have
theirs, and the note starts "vectors 40 %, keyword search complete".
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

import psycopg

from search.results import Freshness, FreshnessStatus
from store import commits
from store.roundtrip import run
from store.tips import tips_of, tips_statement


def freshness(
    conn: psycopg.Connection, repositories: Iterable[str], branch: str
) -> list[Freshness]:
    """One `Freshness` per repository (in the order given, duplicates dropped)."""
    names = list(dict.fromkeys(repositories))
    if not names:
        return []
    # the indexed commits and the recorded tips in one round trip
    indexed_rows, tip_rows = run(
        conn, [commits.indexed_on_statement(branch, names), tips_statement(names)]
    )
    return freshness_of(names, branch, commits.indexed_on_rows(indexed_rows), tips_of(tip_rows))


def freshness_of(
    repositories: Iterable[str],
    branch: str,
    indexed_on: Iterable[commits.IndexedOn],
    branches: dict[str, dict[str, str]],
) -> list[Freshness]:
    """`freshness` from what the store read: `indexed_on` (store.commits.indexed_on, of
    `branch`; other repositories' rows are passed over) and the recorded tips
    (store.tips.tips: repository → {branch: tip}; those of other repositories too)."""
    names = list(dict.fromkeys(repositories))
    indexed: dict[str, tuple[str | None, datetime | None]] = {}
    problems: dict[str, list[str]] = {}
    coverage: dict[str, tuple[int, int]] = {}
    for repository, commit_, at, left, vectors in indexed_on:
        if commit_ is not None:
            indexed[repository] = (commit_, at)
        problems[repository] = left
        if vectors is not None:
            coverage[repository] = vectors
    out = []
    for name in names:
        commit, at = indexed.get(name, (None, None))
        at_iso = at.isoformat() if at is not None else None
        tip = branches.get(name, {}).get(branch)
        if tip is None:
            status: FreshnessStatus = "unknown"
            note = (
                f"the repository has no branch {branch!r}"
                if name in branches
                else "the repository is not on this server (loaded from a folder?)"
            )
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
        share = None
        if name in coverage:
            total, missing = coverage[name]
            share = (total - missing) / total if total else 1.0
            note = f"{vectors_words(share)}; {note}"
        out.append(Freshness(name, branch, status, commit, at_iso, tip, note, found[:10], share))
    return out


def vectors_words(share: float) -> str:
    """How a surface says the vectors' coverage: "vectors 40 %, keyword search complete"
    (floored: 100 % only when every vector is in)."""
    return f"vectors {int(share * 100)} %, keyword search complete"
