"""`glossator repo delete NAME`: the bare repository, its rows and its jobs, gone.

    glossator repo delete livre          # asks on a terminal
    glossator repo delete livre --yes    # anywhere else (scripts, CI)

In this order, so that nothing comes back: the repository is taken out of service
(`RepoStore.retire`: pushes and clones answer "no repository", a job opening it
fails), its queued jobs are cancelled, a running one is waited for (`--wait`), then
its rows and records go (`store.removal`, one transaction), then its jobs
(`hooks.queue`), then the repository's files. A delete stopped half-way (a job still
running after `--wait`, or a push still being received) is finished by running the
same command again.

A ghost — the records and jobs left under `.<name>.deleting`, a hidden name a
repository could have while being deleted — is not a repository name, but it is
accepted here:
`glossator repo delete .livre.deleting` drops its rows and jobs (and the folder,
if one is left).
"""

from __future__ import annotations

import re
import shutil
import sys
import time
from pathlib import Path

import click
import psycopg

from gitserver.errors import GitServerError
from glossator.commands.repos import _settings, _status_conninfo, _store
from glossator.settings import Settings
from store import connections

POLL_S = 0.5  # between looks at a running job
# gitserver.repos.RepoStore.retire's hidden name: `.<repository name>.deleting`
GHOST = re.compile(r"^\.[a-z0-9][a-z0-9._-]{0,63}\.deleting$")


@click.command("delete")
@click.argument("name")
@click.option("--yes", is_flag=True, help="Delete without asking (needed when not on a terminal).")
@click.option(
    "--wait",
    "wait_s",
    type=click.FloatRange(0),
    default=600.0,
    show_default=True,
    help="Seconds to wait for a running indexing job of NAME to end.",
)
def repo_delete(name: str, yes: bool, wait_s: float) -> None:
    """Delete repository NAME: its git repository, its indexed rows and its jobs."""
    settings = _settings()
    store = _store(settings)
    if GHOST.match(name):
        _delete_ghost(settings, store.root / name, yes, wait_s)
        return
    try:
        path = store.path(name)
    except GitServerError as e:
        raise click.ClickException(str(e)) from None
    aside = store.root / f".{name}.deleting"
    if not store.exists(name) and not aside.is_dir():
        raise click.ClickException(
            f"no repository named {name!r} in {store.root} (`glossator repo list` names them)"
        )
    if not yes:
        if not sys.stdin.isatty():
            raise click.ClickException(
                f"not deleting {name!r} without a confirmation: stdin is not a terminal; "
                f"run `glossator repo delete {name} --yes` to delete it"
            )
        click.confirm(
            f"Delete repository {name!r} ({path}), its indexed rows and its jobs? "
            "This cannot be undone",
            abort=True,
        )
    try:
        retired = store.retire(name, wait_s=wait_s)
    except GitServerError as e:
        raise click.ClickException(str(e)) from None
    rows, jobs = _forget(settings, name, wait_s)
    shutil.rmtree(retired)
    click.echo(f"deleted repository {name}: its git repository, {rows} rows, {jobs} jobs")


def _delete_ghost(settings: Settings, folder: Path, yes: bool, wait_s: float) -> None:
    """The rows, jobs and folder left under a repository's hidden name (module docstring)."""
    name = folder.name
    if not yes:
        if not sys.stdin.isatty():
            raise click.ClickException(
                f"not deleting {name!r} without a confirmation: stdin is not a terminal; "
                f"run `glossator repo delete {name} --yes` to delete it"
            )
        click.confirm(f"Delete what is left of {name!r}: its rows and its jobs?", abort=True)
    rows, jobs = _forget(settings, name, wait_s)
    there = folder.is_dir() and not folder.is_symlink()
    if there:
        shutil.rmtree(folder)
    if not (rows or jobs or there):
        raise click.ClickException(f"nothing of {name!r} to delete: no rows, jobs or folder")
    click.echo(f"deleted what was left of {name}: {rows} rows, {jobs} jobs")


def _forget(settings: Settings, name: str, wait_s: float) -> tuple[int, int]:
    """Cancel, wait, drop: (rows dropped, jobs forgotten); (0, 0) with no database yet."""
    data_dir = Path(settings.data_dir).expanduser().resolve()
    if not settings.database_url and not (data_dir / "postgres").is_dir():
        return 0, 0  # nothing was ever indexed here
    from hooks.queue import cancel_waiting, forget_jobs
    from store.removal import drop_repository

    conninfo, owned = _status_conninfo(settings)
    try:
        cancel_waiting(conninfo, name)
        _wait_for_running(conninfo, name, wait_s)
        cancel_waiting(conninfo, name)  # a failed attempt's follow-up, queued meanwhile
        with connections.connect(conninfo) as conn, conn.transaction():
            rows = drop_repository(conn, name)
        return rows, forget_jobs(conninfo, name)
    except psycopg.Error as e:
        from glossator.supervision.database import explain

        embedded = None if settings.database_url else data_dir / "postgres"
        raise click.ClickException(
            explain(e, embedded)
            + f"; {name} is no longer served: run `glossator repo delete {name} --yes` again"
        ) from None
    finally:
        if owned is not None:
            owned.stop()


def _wait_for_running(conninfo: str, name: str, wait_s: float) -> None:
    from hooks.queue import running_jobs

    deadline = time.monotonic() + wait_s
    said: set[int] = set()
    while running := running_jobs(conninfo, name):
        if new := [j for j in running if j not in said]:
            click.echo(
                f"waiting for indexing job {', '.join(map(str, new))} of {name} to end "
                f"(up to {wait_s:.0f} s; its repository is gone, it stops at its next git read)",
                err=True,
            )
            said.update(new)
        if time.monotonic() >= deadline:
            raise click.ClickException(
                f"job {', '.join(map(str, running))} of {name} still runs after {wait_s:.0f} s; "
                f"{name} is no longer served. Once it ends (`glossator status -r {name}`), run "
                f"`glossator repo delete {name} --yes` again to finish"
            )
        time.sleep(POLL_S)
