"""Branch tips as the server last saw them (`branch_tips`, migration 022).

    record_tip(conn, "livre", "main", new)          # post-receive: the pushed tip
    record_tip(conn, "livre", "draft", None)        # a deleted branch
    move_tip(conn, "livre", "main", old, new)       # the worker's commit-back
    sync_tips(conn, store.iter_branches)            # reconciliation: git's refs, all
    record_heads(conn, {"livre": "master"})         # the branch each HEAD names (migration 025)
    default_branches(conn, "main")                  # repository → its default, its branches

Search reads tips and default branches in its first round trip: their statements
(`tips_statement`, `default_branches_statement`) go to `store.roundtrip.run`.

Search compares them with the indexed commit (search.freshness) without opening
git. Each writer commits its own statement on an autocommit connection or within
the caller's transaction; none of them reads git.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from store.roundtrip import Statement, run

ZERO = "0" * 40  # git's name for "no commit" in a ref update (a deleted branch)


def record_tip(conn: Any, repository: str, branch: str, commit: str | None) -> None:
    """The branch's tip is now `commit` (None or git's zeros: the branch was deleted)."""
    if commit is None or commit.strip("0") == "":
        conn.execute(
            "DELETE FROM branch_tips WHERE repository = %s AND branch = %s", (repository, branch)
        )
        return
    conn.execute(
        "INSERT INTO branch_tips (repository, branch, commit, updated_at) VALUES (%s, %s, %s, clock_timestamp())"
        " ON CONFLICT (repository, branch)"
        " DO UPDATE SET commit = EXCLUDED.commit, updated_at = clock_timestamp()",
        (repository, branch, commit),
    )


def move_tip(conn: Any, repository: str, branch: str, old: str, new: str) -> None:
    """The worker moved the branch from `old` to `new`: recorded unless a push recorded a
    later tip meanwhile (its post-receive runs after the ref moved, so its row wins)."""
    conn.execute(
        "INSERT INTO branch_tips (repository, branch, commit, updated_at) VALUES (%s, %s, %s, clock_timestamp())"
        " ON CONFLICT (repository, branch) DO UPDATE"
        " SET commit = EXCLUDED.commit, updated_at = clock_timestamp() WHERE branch_tips.commit = %s",
        (repository, branch, new, old),
    )


def sync_tips(conn: Any, read_refs: Callable[[], Iterable[tuple[str, str, str]]]) -> None:
    """Make the table what git's refs say: every (repository, branch, tip) `read_refs`
    gives, and no row for another branch of those repositories (deleted while no hook
    could say; a repository it does not name may be another server's, sharing the
    database: left alone).

    A row written after the refs were read (a push's hook, meanwhile) is newer than
    what was read: it is kept. So the clock is read first, then the refs."""
    (read_at,) = conn.execute("SELECT clock_timestamp()").fetchone()
    rows = list(read_refs())
    conn.execute(
        "DELETE FROM branch_tips b WHERE b.updated_at < %s AND b.repository = ANY(%s)"
        " AND NOT EXISTS (SELECT 1 FROM unnest(%s::text[], %s::text[]) AS t(repository, branch)"
        " WHERE t.repository = b.repository AND t.branch = b.branch)",
        (
            read_at,
            sorted({r for r, _, _ in rows}),
            [r for r, _, _ in rows],
            [b for _, b, _ in rows],
        ),
    )
    for repository, branch, commit in rows:
        conn.execute(
            "INSERT INTO branch_tips (repository, branch, commit, updated_at) VALUES (%s, %s, %s, clock_timestamp())"
            " ON CONFLICT (repository, branch) DO UPDATE SET commit = EXCLUDED.commit,"
            " updated_at = clock_timestamp()"
            " WHERE branch_tips.commit <> EXCLUDED.commit AND branch_tips.updated_at < %s",
            (repository, branch, commit, read_at),
        )


def tips(conn: Any, repositories: Sequence[str]) -> dict[str, dict[str, str]]:
    """repository → {branch: tip}, for the repositories that have any recorded."""
    return tips_of(run(conn, [tips_statement(repositories)])[0])


def tips_statement(repositories: Sequence[str] | None) -> Statement:
    """`tips`' statement, for `store.roundtrip.run` (a search sends it in its first round
    trip, with store.commits.indexed_statement); its rows go to `tips_of`. None: every
    repository's (a few rows: one per branch)."""
    if repositories is None:
        return Statement("SELECT repository, branch, commit FROM branch_tips")
    return Statement(
        "SELECT repository, branch, commit FROM branch_tips WHERE repository = ANY(%(r)s)",
        {"r": list(repositories)},
    )


def tips_of(rows: Sequence[Any]) -> dict[str, dict[str, str]]:
    out: dict[str, dict[str, str]] = {}
    for repository, branch, commit in rows:
        out.setdefault(repository, {})[branch] = commit
    return out


def record_heads(conn: Any, heads: Mapping[str, str | None]) -> None:
    """repository → the branch its HEAD names (None: the repository is gone)."""
    for repository, branch in heads.items():
        if branch is None:
            conn.execute("DELETE FROM repository_heads WHERE repository = %s", (repository,))
            continue
        conn.execute(
            "INSERT INTO repository_heads (repository, branch, updated_at)"
            " VALUES (%s, %s, clock_timestamp()) ON CONFLICT (repository)"
            " DO UPDATE SET branch = EXCLUDED.branch, updated_at = clock_timestamp()"
            " WHERE repository_heads.branch <> EXCLUDED.branch",
            (repository, branch),
        )


@dataclass(frozen=True)
class DefaultBranch:
    """A repository's default branch, where it comes from, and its indexed branches."""

    branch: str
    source: str  # "HEAD" (the bare repository's), "only branch" or "default"
    indexed: tuple[str, ...]  # the branches that have rows, sorted


_DEFAULT_BRANCHES = (
    "SELECT repository, h.branch, coalesce(i.branches, '{}')"
    " FROM (SELECT repository, array_agg(DISTINCT branch ORDER BY branch) AS branches"
    "         FROM branch_languages GROUP BY repository) AS i"
    " FULL JOIN repository_heads h USING (repository) ORDER BY repository"
)


def default_branches(conn: Any, fallback: str) -> dict[str, DefaultBranch]:
    """Every repository with rows or a recorded HEAD → its default branch: the branch its
    HEAD names (repository_heads), else its only indexed branch (rows loaded from a
    folder on another branch), else `fallback`. `branch_languages` holds a row per
    (repository, branch, language) with rows: a few rows to read, whatever the size."""
    return default_branches_of(conn.execute(_DEFAULT_BRANCHES).fetchall(), fallback)


def default_branches_statement() -> Statement:
    """`default_branches`' statement, for `store.roundtrip.run` (a search sends it in its
    first round trip); its rows go to `default_branches_of`."""
    return Statement(_DEFAULT_BRANCHES)


def default_branches_of(rows: Sequence[Any], fallback: str) -> dict[str, DefaultBranch]:
    out: dict[str, DefaultBranch] = {}
    for repository, head, indexed in rows:
        if head is not None:
            out[repository] = DefaultBranch(head, "HEAD", tuple(indexed))
        elif len(indexed) == 1:
            out[repository] = DefaultBranch(indexed[0], "only branch", tuple(indexed))
        else:
            out[repository] = DefaultBranch(fallback, "default", tuple(indexed))
    return out
