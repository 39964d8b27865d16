"""Which commit each branch's rows equal (`indexed_commits`, migrations 001 and 020).

    lock_branch(conn, "livre", "main")                 # serialise the branch's writers
    indexed_state(conn, "livre", "main")               # (commit, problems) or (None, [])
    record_indexed(conn, "livre", "main", sha, job_id, problems)
    forget_indexed(conn, "livre", "main")              # a deleted branch
    last_index(conn, "livre", "main")                  # (job id, problems) of the last index
    indexed_map(conn)                                  # (repository, branch) → commit
    incomplete(conn)                                   # branches whose index left problems
    indexed_list(conn)                                 # rows for `glossator status`
    indexed_on(conn, "main", ["livre"])                # for search.freshness
    indexed_of(conn, [("livre", "main")])              # what a calibration stands on

The job's loader (hooks.loading) writes a branch's record in the transaction that loads its
rows, so the record never names a commit the rows do not equal. Each function runs
on the caller's connection.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

from psycopg.types.json import Jsonb

from store import landing
from store.roundtrip import Statement, run


def lock_branch(conn: Any, repository: str, branch: str) -> None:
    """Hold the branch's writer lock until the caller's transaction ends (belt and
    braces: the queue already runs one job per branch)."""
    conn.execute(
        "SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", (f"{repository}/{branch}",)
    )


def indexed_state(conn: Any, repository: str, branch: str) -> tuple[str | None, list[str]]:
    """The commit the rows equal, and the problems its index left (empty: complete)."""
    row = conn.execute(
        "SELECT commit, problems FROM indexed_commits WHERE repository = %s AND branch = %s",
        (repository, branch),
    ).fetchone()
    return (row[0], list(row[1] or [])) if row else (None, [])


def record_indexed(
    conn: Any,
    repository: str,
    branch: str,
    commit: str,
    job_id: int | None,
    problems: list[str],
) -> None:
    """The branch's rows now equal `commit`; `problems`: what its index could not load."""
    conn.execute(
        """INSERT INTO indexed_commits
               (repository, branch, commit, job_id, indexed_at, problems)
           VALUES (%s, %s, %s, %s, now(), %s)
           ON CONFLICT (repository, branch)
           DO UPDATE SET commit = EXCLUDED.commit, job_id = EXCLUDED.job_id,
                         indexed_at = EXCLUDED.indexed_at,
                         problems = EXCLUDED.problems""",
        (repository, branch, commit, job_id, Jsonb(problems)),
    )
    # the rows now equal the sidecars, vectors included (store.landing)
    landing.clear(conn, repository, branch)


def forget_indexed(conn: Any, repository: str, branch: str) -> None:
    conn.execute(
        "DELETE FROM indexed_commits WHERE repository = %s AND branch = %s", (repository, branch)
    )
    landing.clear(conn, repository, branch)


def last_index(conn: Any, repository: str, branch: str) -> tuple[int | None, list[str]]:
    """(job id, problems) of the branch's last index ((None, []) before the first)."""
    return send_last_index(conn, repository, branch)()


def send_last_index(
    conn: Any, repository: str, branch: str
) -> Callable[[], tuple[int | None, list[str]]]:
    """`last_index`, its statement sent now and its row read by the function returned: in
    psycopg's pipeline mode, a push's statements go in one round trip (hooks.queue)."""
    cursor = conn.execute(
        "SELECT job_id, problems FROM indexed_commits WHERE repository = %s AND branch = %s",
        (repository, branch),
    )

    def read() -> tuple[int | None, list[str]]:
        row = cursor.fetchone()
        return (row[0], list(row[1] or [])) if row else (None, [])

    return read


def indexed_map(conn: Any) -> dict[tuple[str, str], str]:
    """(repository, branch) → the commit its rows equal, for every indexed branch."""
    rows = conn.execute("SELECT repository, branch, commit FROM indexed_commits").fetchall()
    return {(r[0], r[1]): r[2] for r in rows}


def incomplete(conn: Any) -> set[tuple[str, str]]:
    """Branches whose last index left problems."""
    rows = conn.execute(
        "SELECT repository, branch FROM indexed_commits WHERE problems <> '[]'::jsonb"
    ).fetchall()
    return {(r[0], r[1]) for r in rows}


def indexed_list(conn: Any) -> list[tuple[str, str, str, datetime]]:
    """(repository, branch, commit, indexed_at) of every indexed branch, in name order."""
    rows = conn.execute(
        "SELECT repository, branch, commit, indexed_at FROM indexed_commits"
        " ORDER BY repository, branch"
    ).fetchall()
    return [(r[0], r[1], r[2], r[3]) for r in rows]


IndexedOn = tuple[str, str | None, datetime | None, list[str], tuple[int, int] | None]


def indexed_on(conn: Any, branch: str, repositories: Sequence[str]) -> list[IndexedOn]:
    """(repository, commit, indexed_at, problems, vectors) of `branch` in each of
    `repositories` that has it indexed or a job embedding on it; `vectors` is (vectorized
    rows, of which without their vector yet) while a job embeds (store.landing), else None.
    One statement (`indexed_on_statement`): a search sends it with the branch tips'."""
    return indexed_on_rows(run(conn, [indexed_on_statement(branch, repositories)])[0])


def indexed_on_statement(branch: str, repositories: Sequence[str]) -> Statement:
    """`indexed_on`'s statement, for `store.roundtrip.run`; its rows go to `indexed_on_rows`."""
    return Statement(
        "SELECT coalesce(i.repository, c.repository), i.commit, i.indexed_at, i.problems,"
        " c.total, c.missing"
        " FROM (SELECT * FROM indexed_commits WHERE branch = %(b)s"
        "       AND repository = ANY(%(r)s)) AS i"
        " FULL JOIN (SELECT * FROM vector_coverage WHERE branch = %(b)s"
        "       AND repository = ANY(%(r)s)) AS c USING (repository)",
        {"b": branch, "r": list(repositories)},
    )


def indexed_statement(repositories: Sequence[str] | None) -> Statement:
    """`indexed_on_statement` for every branch of `repositories` (None: of every
    repository; a row per indexed or embedding branch): a search sends it in its first
    round trip, before it knows which repositories its hits come from. Its rows go to
    `indexed_by_branch`."""
    where = "" if repositories is None else " WHERE repository = ANY(%(r)s)"
    return Statement(
        "SELECT repository, branch, i.commit, i.indexed_at, i.problems, c.total, c.missing"
        f" FROM (SELECT * FROM indexed_commits{where}) AS i"
        f" FULL JOIN (SELECT * FROM vector_coverage{where}) AS c USING (repository, branch)",
        {} if repositories is None else {"r": list(repositories)},
    )


def indexed_by_branch(rows: Sequence[Any]) -> dict[str, list[IndexedOn]]:
    """`indexed_statement`'s rows: branch → what `indexed_on` gives for it."""
    out: dict[str, list[IndexedOn]] = {}
    for repository, branch, *rest in rows:
        out.setdefault(branch, []).extend(indexed_on_rows([(repository, *rest)]))
    return out


def indexed_on_rows(rows: Sequence[Any]) -> list[IndexedOn]:
    return [
        (r[0], r[1], r[2], list(r[3] or []), (r[4], r[5]) if r[4] is not None else None)
        for r in rows
    ]


def indexed_of(conn: Any, pairs: Sequence[tuple[str, str]]) -> list[tuple[str, str, str, str]]:
    """(repository, branch, commit, indexed_at as text) of each indexed (repository,
    branch) pair, in name order."""
    rows = conn.execute(
        'SELECT repository, branch, "commit", indexed_at::text FROM indexed_commits'
        " WHERE (repository, branch) IN (SELECT * FROM unnest(%s::text[], %s::text[]))"
        " ORDER BY 1, 2",
        ([r for r, _ in pairs], [b for _, b in pairs]),
    ).fetchall()
    return [(r[0], r[1], r[2], r[3]) for r in rows]
