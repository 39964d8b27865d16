"""The post-receive hook: queue indexing of each pushed branch and return at once.

git runs this after the refs moved, with `<old> <new> <ref>` lines on stdin; what
we print reaches the pusher as `remote:` lines. The push already succeeded, so
nothing here can fail it: when the queue cannot be reached we say so, and the
branch is indexed anyway when `glossator serve` next starts (it reconciles every
branch with its last indexed commit). A deleted branch is queued too: its job
drops the branch's rows.

It takes plain values (`PostReceive`): the entry point git runs,
`glossator.githooks`, reads them from the environment the server gave
`git http-backend` (the database URL, never from a file), the repository name
from the git dir, and the server's URL (to tell the pusher where to follow the
job) from GLOSSATOR_HOOK_URL, which the server sets per request. The server that
took the push runs `main` itself, on a connection of its pool (glossator.routes: the
hook only asks it); the hook runs it only without a server, on a short connection.
Either way the push's statements go in one transaction (hooks.queue.queue_push).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

import psycopg

from hooks.heads import settle_head
from hooks.queue import queue_push
from hooks.refupdates import parse_updates
from store import connections
from store.errors import describe_failure

SUFFIX = ".git"  # gitserver.repos.SUFFIX (gitserver is not below hooks)
# A connection for the push's one transaction, closed or given back by its `with`.
Connect = Callable[[], AbstractContextManager[psycopg.Connection]]


@dataclass(frozen=True)
class PostReceive:
    """What the hook needs to know; `database_url` None when the environment has none."""

    repository: str
    database_url: str | None
    server_url: str = ""  # the server's base URL, to say where to follow the job
    git_dir: str = ""  # the repository's (GIT_DIR); empty: HEAD is left alone


def repository_name(git_dir: str) -> str:
    path = Path(git_dir).resolve()
    return path.name[: -len(SUFFIX)] if path.name.endswith(SUFFIX) else path.name


def main(
    config: PostReceive,
    stdin: TextIO = sys.stdin,
    out: TextIO = sys.stdout,
    connect: Connect | None = None,
) -> int:
    """`connect`: the connection to queue on (the server's pool); by default a short one
    to `config.database_url`. Either way one connection and one transaction for the
    whole push (hooks.queue.queue_push)."""
    branches = []
    tips = {}  # branch → the tip the push left (search's freshness reads it)
    created = []  # branches this push created
    for old, new, ref in parse_updates(stdin):
        if ref.startswith("refs/heads/"):
            branches.append(ref[len("refs/heads/") :])
            tips[branches[-1]] = new
            if old.strip("0") == "" and new.strip("0") != "":
                created.append(branches[-1])
    if not branches:
        return 0
    repository, url = config.repository, config.database_url
    if config.git_dir and not Path(config.git_dir).resolve().name.endswith(SUFFIX):
        # a repository renamed aside by `glossator repo delete` (gitserver.repos.retire):
        # its name is not served, and a job for it would retry for ever (issue 38)
        print(
            f"glossator: repository {repository} is being deleted; indexing not queued",
            file=out,
        )
        return 0
    head = _settle_head(config, created, out)
    if connect is None and not url:
        print(
            "glossator: indexing not queued (no database in this environment); "
            "the branch is indexed when `glossator serve` starts",
            file=out,
        )
        return 0
    opener = connect if connect is not None else _short_connection(url or "")
    base = config.server_url.rstrip("/")
    try:
        with opener() as conn:
            queued = queue_push(conn, repository, tips, head)
    except Exception as e:
        queued = {}
        # One line of ours, never the driver's message: it may quote the URL. Nothing was
        # written (one transaction); reconciliation records HEAD and queues the branches.
        for branch in branches:
            print(
                f"glossator: indexing of {branch} not queued: {describe_failure(e)}; "
                "the server queues it by itself within 5 minutes once the database is back",
                file=out,
            )
    for branch in branches:
        if branch not in queued:
            continue
        done = queued[branch]
        _say_problems(branch, done.last_job, done.last_problems, out)
        if done.enqueued.coalesced:
            print(
                f"glossator: indexing queued (job {done.enqueued.job_id}): {branch} already "
                "waits and will index this push too",
                file=out,
            )
        else:
            print(
                f"glossator: indexing queued (job {done.enqueued.job_id}) for {branch}",
                file=out,
            )
    follow = f"GET {base}/api/jobs?repository={repository}" if base else "GET /api/jobs"
    print(f"glossator: follow it with `glossator status --follow` or {follow}", file=out)
    out.flush()
    return 0


def _short_connection(conninfo: str) -> Connect:
    def connect() -> AbstractContextManager[psycopg.Connection]:
        # connect_timeout: a database that does not answer is said at once
        return connections.connect(conninfo, autocommit=True, connect_timeout=10)

    return connect


def _settle_head(config: PostReceive, created: list[str], out: TextIO) -> str | None:
    """HEAD's branch, pointed at a branch this push created when it named none (hooks.heads)."""
    if not config.git_dir:
        return None
    try:
        settled = settle_head(config.git_dir, created)
    except Exception:  # HEAD is a convenience here: never fail the hook over it
        return None
    if settled is None:
        return None
    before, head = settled
    if head != before:
        print(
            f"glossator: {head} is the repository's default branch now (HEAD named {before}, "
            "which does not exist); searches without a branch read it",
            file=out,
        )
    return head


SHOWN_PROBLEMS = 5  # remote: lines per branch; `glossator status` lists the rest


def _say_problems(branch: str, job_id: int | None, problems: list[str], out: TextIO) -> None:
    """What the last index of `branch` could not do: the pusher may be the one to fix it."""
    if not problems:
        return
    print(
        f"glossator: the last index of {branch} (job {job_id}) had {len(problems)} "
        "problem(s), so the branch is not fully indexed; this push indexes it again "
        "(fix these if they are in your files):",
        file=out,
    )
    for line in problems[:SHOWN_PROBLEMS]:
        print(f"glossator:   {line}", file=out)
    if len(problems) > SHOWN_PROBLEMS:
        print(f"glossator:   … and {len(problems) - SHOWN_PROBLEMS} more", file=out)
