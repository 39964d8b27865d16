"""`glossator repo create|list` and `glossator status` (the repositories and their jobs).

`glossator serve` and `glossator worker` are in glossator/commands/serve.py."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import click
import psycopg
from rich.console import Console
from rich.table import Table

from gitserver.errors import GitServerError
from gitserver.repos import SUFFIX, RepoStore
from glossator.settings import Settings
from store import connections

log = logging.getLogger(__name__)
err = Console(stderr=True)
# hooks.queue.DONE_WITH_PROBLEMS; not imported here: procrastinate would load with
# every `glossator` command
DONE_WITH_PROBLEMS = "done with problems"


def _settings() -> Settings:
    obj = click.get_current_context().obj  # glossator.cli.Context: settings read once
    settings = getattr(obj, "settings", None)
    return settings if isinstance(settings, Settings) else Settings.from_env()


def _store(settings: Settings) -> RepoStore:
    return RepoStore(settings.repos_dir, data_dir=settings.data_dir)


@click.group()
def repo() -> None:
    """Create, list and delete the bare repositories the server serves."""


@repo.command("create")
@click.argument("name")
def repo_create(name: str) -> None:
    """Create repository NAME (bare, configured and hooked for Glossator)."""
    settings = _settings()
    try:
        path = _store(settings).create(name)
    except GitServerError as e:
        raise click.ClickException(str(e)) from None
    click.echo(f"created {path}")
    click.echo(
        f"push to it with: git push http://<any>:<push token>@{settings.host}:{settings.port}/"
        f"{name}{SUFFIX} main"
    )


@repo.command("list")
def repo_list() -> None:
    """List repositories and their branches."""
    store = _store(_settings())
    for name in store.names():
        branches = store.branches(name)
        shown = ", ".join(f"{b}@{t[:12]}" for b, t in sorted(branches.items())) or "(empty)"
        click.echo(f"{name}\t{shown}")


def _status_conninfo(settings: Settings) -> tuple[str, Any]:
    """A database URL for `status`: the setting, the running server's, or our own embedded."""
    if settings.database_url:
        return settings.database_url.get_secret_value(), None
    data_dir = Path(settings.data_dir).expanduser().resolve()
    if not (data_dir / "postgres").is_dir():
        raise click.ClickException(
            f"no database in {data_dir} yet: run `glossator serve` first, or set "
            "GLOSSATOR_DATA_DIR (or GLOSSATOR_DATABASE_URL) to the server's"
        )
    lock = data_dir / "postgres.lock"
    from glossator.wiring import database
    from store.errors import DataDirLocked

    db = database(settings)
    try:
        db.start()
    except DataDirLocked:
        lines = lock.read_text().splitlines() if lock.exists() else []
        if len(lines) < 2:
            raise
        return lines[1], None
    return db.conninfo, db


@click.command()
@click.option("--repository", "-r", default=None, help="Only this repository.")
@click.option(
    "--status",
    "status_filter",
    default=None,
    type=click.Choice(["queued", "running", "done", "done with problems", "failed", "cancelled"]),
)
@click.option("--limit", default=20, show_default=True)
@click.option("--json", "as_json", is_flag=True, help="Print JSON (as GET /api/jobs does).")
@click.option(
    "--follow",
    "-f",
    is_flag=True,
    help="Print the running jobs' progress until nothing is queued or running.",
)
@click.option("--interval", default=2.0, show_default=True, help="Seconds between --follow polls.")
def status(
    repository: str | None,
    status_filter: str | None,
    limit: int,
    as_json: bool,
    follow: bool,
    interval: float,
) -> None:
    """Indexing jobs: queued, running, done and failed, with errors, durations, progress.

    Exits 1 while a branch is failing (its latest job failed or met problems), after
    saying what to fix."""

    settings = _settings()
    conninfo, owned = _status_conninfo(settings)
    try:
        rows, indexed, failing = _read_status(
            conninfo, repository, status_filter, limit, follow, interval
        )
    except psycopg.Error as e:
        from glossator.supervision.database import explain

        embedded = None if settings.database_url else Path(settings.data_dir).expanduser()
        raise click.ClickException(explain(e, embedded and embedded / "postgres")) from None
    finally:
        if owned is not None:
            owned.stop()
    _print_status(rows, indexed, as_json, failing)
    if failing:
        click.get_current_context().exit(1)


def _read_status(
    conninfo: str,
    repository: str | None,
    status_filter: str | None,
    limit: int,
    follow: bool,
    interval: float,
) -> tuple[list[dict[str, Any]], list[Any], list[dict[str, Any]]]:
    from hooks.queue import failing_branches, list_jobs
    from store import commits, jobqueue, jobs

    if follow:
        _follow(conninfo, repository, interval)
    with connections.connect(conninfo, autocommit=True) as conn:
        rows = (
            list_jobs(conn, repository=repository, status=status_filter, limit=limit)
            if jobqueue.queue_exists(conn)
            else []
        )
        indexed = commits.indexed_list(conn)
        failing = failing_branches(conn, repository=repository) if jobs.runs_exist(conn) else []
    return rows, indexed, failing


def _print_status(
    rows: list[dict[str, Any]],
    indexed: list[Any],
    as_json: bool,
    failing: list[dict[str, Any]] | None = None,
) -> None:
    failing = failing or []
    if as_json:
        click.echo(json.dumps({"jobs": rows, "failing": failing}, indent=2, default=str))
        return
    from glossator.commands.base import out_console

    table = Table(title="indexing jobs")
    for col in ("job", "repository/branch", "status", "attempts", "queued", "seconds", "detail"):
        table.add_column(col, overflow="fold")
    for r in rows:
        table.add_row(
            str(r["id"]),
            f"{r['repository']}/{r['branch']}",
            r["status"],
            str(r["attempts"]),
            (r["queued_at"] or "")[:19],
            "" if r["duration_s"] is None else f"{r['duration_s']:.2f}",
            job_detail(r),
        )
    out_console().print(table)
    shown: set[tuple[str, str]] = set()
    for r in rows:  # newest first: the problems of each branch's latest finished job
        key = (r["repository"], r["branch"])
        if key in shown or r["status"] not in ("done", DONE_WITH_PROBLEMS):
            continue
        shown.add(key)
        if r["problems"]:
            stats = r.get("stats") or {}
            if stats.get("awaits_push_at"):
                retried = "is not retried until a push: fix these files and push"
            elif stats.get("gave_up"):
                retried = "is no longer retried (push to try again)"
            else:
                retried = "is retried"
            click.echo(
                f"job {r['id']} ({key[0]}/{key[1]}) had {r['problem_count']} problem(s); "
                f"the branch is not fully indexed and {retried}:"
            )
            for line in r["problems"][:20]:
                click.echo(f"  - {line}")
    behind = {(f["repository"], f["branch"]): f for f in failing}
    for repo_name, branch, commit, at in indexed:
        # a branch whose last job failed or met problems is not current at that commit:
        # its rows are those of an earlier index, or miss what the job could not load
        f = behind.get((repo_name, branch))
        why = "" if f is None else f"; not current: its last job (job {f['job']}) {f['status']}"
        click.echo(f"indexed {repo_name}/{branch} at {commit[:12]} ({at:%Y-%m-%d %H:%M:%S}){why}")
    for f in failing:  # the exit code is 1: say why, and what to do
        what = f["error"] or f"{f['problem_count']} problem(s), first: {(f['problems'] or [''])[0]}"
        click.echo(
            f"failing: {f['repository']}/{f['branch']} (job {f['job']}, {f['status']}): "
            f"{what}; {f['todo']}"
        )


def _follow(conninfo: str, repository: str | None, interval: float) -> None:
    """One line per change of a queued or running job, until none is left (or Ctrl-C)."""
    import time

    from hooks.queue import list_jobs
    from store import jobqueue

    last: dict[int, str] = {}
    while True:
        with connections.connect(conninfo, autocommit=True) as conn:
            rows = (
                list_jobs(conn, repository=repository, limit=50)
                if jobqueue.queue_exists(conn)
                else []
            )
        pending = [r for r in rows if r["status"] in ("queued", "running")]
        for r in reversed(rows):
            line = f"job {r['id']} {r['repository']}/{r['branch']}: {r['status']} {job_detail(r)}"
            if (r["id"] in last and last[r["id"]] != line) or (
                r["id"] not in last and r in pending
            ):
                click.echo(line.rstrip())
            last[r["id"]] = line
        if not pending:
            return
        try:
            time.sleep(interval)
        except KeyboardInterrupt:
            return


def _gave_up(stats: dict[str, Any]) -> str:
    if stats.get("awaits_push_at"):
        return "; the pushed files are at fault: not retried until a push"
    if not stats.get("gave_up"):
        return ""
    return (
        f"; gave up after {stats.get('failures', '?')} attempts in a row:"
        " no more retries until a push to the branch"
    )


def job_detail(r: dict[str, Any]) -> str:
    """The table's last column: what a job did, is doing, or why it failed."""
    stats = r.get("stats") or {}
    if r["status"] == "failed":
        return (r.get("error") or "") + _gave_up(stats)
    if r["status"] == "queued":
        retry = f"retry {r['failures']} " if r.get("failures") else ""
        at = (r.get("scheduled_at") or "")[11:19]
        return f"{retry}at {at}".strip() if at else retry.strip()
    if r["status"] == "running":
        progress = r.get("progress") or {}
        where = f" (worker {r['worker']})" if r.get("worker") else ""
        return f"{progress.get('line', '')}{where}".strip()
    if r["status"] in ("done", DONE_WITH_PROBLEMS):
        line = (
            f"{(r.get('result_commit') or '')[:12]} loaded {len(stats.get('loaded', []))}"
            f" deleted {len(stats.get('deleted', []))} embedded {stats.get('embedded', 0)}"
        )
        if r["problems"]:
            line += f"; {r['problem_count']} problem(s), first: {r['problems'][0]}"
        if stats.get("moved"):
            line += "; the branch moved: the next job indexes it"
        return line + _gave_up(stats)
    return r.get("error") or ""
