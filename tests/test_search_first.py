"""SearchFirst against a real child process: stopped while searches run, within bounds.

The server's use of it, with a real worker embedding a book: tests/test_e2e_search_first.py.
"""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from glossator.supervision.search_first import SearchFirst


def state(pid: int) -> str:
    """The process's state letter (/proc/<pid>/stat: R, S, T for stopped…)."""
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]


def eventually(check: Callable[[], bool], timeout: float = 120.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.01)
    return check()


@pytest.fixture
def child() -> Iterator[subprocess.Popen[bytes]]:
    """A process that computes until it is killed (as an embedding worker does)."""
    proc = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        yield proc
    finally:
        proc.kill()
        proc.wait(timeout=30)


pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc")


def test_the_worker_is_stopped_from_the_first_search_to_the_last(child) -> None:
    first = SearchFirst()
    first.attach(lambda: child.pid)
    try:
        assert state(child.pid) != "T"
        with first.search():
            assert eventually(lambda: state(child.pid) == "T")
            assert first.stopped == child.pid
            with first.search():  # a second search in flight
                assert state(child.pid) == "T"
            assert state(child.pid) == "T"  # one still runs
        assert eventually(lambda: state(child.pid) != "T")
        assert first.stopped is None
        assert first.pauses == 1
    finally:
        first.detach()


def test_a_long_search_holds_the_worker_no_longer_than_the_bound(child) -> None:
    first = SearchFirst(max_pause_s=0.3, min_run_s=0.4)
    first.attach(lambda: child.pid)
    seen: list[str] = []
    try:
        with first.search():
            started = time.monotonic()
            while time.monotonic() - started < 2.0:
                seen.append(state(child.pid))
                time.sleep(0.01)
        # stopped, continued after the bound, stopped again after its run, and so on
        runs = "".join("T" if s == "T" else "r" for s in seen)
        assert "T" in runs and "r" in runs, runs
        assert first.pauses >= 2
        assert 0.3 <= first.paused_s <= 1.6
    finally:
        first.detach()
    assert eventually(lambda: state(child.pid) != "T")


def test_detach_continues_a_stopped_worker_and_stops_it_no_more(child) -> None:
    first = SearchFirst()
    first.attach(lambda: child.pid)
    entered, leave = threading.Event(), threading.Event()

    def searching() -> None:
        with first.search():
            entered.set()
            leave.wait(30)

    thread = threading.Thread(target=searching)
    thread.start()
    try:
        assert entered.wait(30)
        assert eventually(lambda: state(child.pid) == "T")
        first.detach()  # what the server does before it stops its worker
        assert eventually(lambda: state(child.pid) != "T")
        with first.search():
            time.sleep(0.1)
            assert state(child.pid) != "T"
    finally:
        leave.set()
        thread.join(30)
    # and the child acts on SIGTERM, as the supervisor's stop needs
    child.terminate()
    assert child.wait(timeout=30) != 0


def test_no_worker_or_a_worker_gone_is_no_error(child) -> None:
    first = SearchFirst()
    with first.search():  # not attached: nothing to stop
        pass
    first.attach(lambda: None)  # the supervisor between two children
    with first.search():
        pass
    child.kill()
    child.wait(timeout=30)
    first.attach(lambda: child.pid)  # a pid that ended (reaped)
    with first.search():
        pass
    first.detach()
    assert first.pauses == 0


@pytest.mark.parametrize(
    ("worker", "setting", "wired"),
    [("process", "true", True), ("process", "false", False), ("thread", "true", False)],
)
def test_serve_wires_it_to_its_worker_child_only(
    tmp_path: Path, db_url: str, worker: str, setting: str, wired: bool
) -> None:
    """GLOSSATOR_SEARCH_FIRST, and only a worker that is a child process (a thread worker
    is the server's own process); the app built, not started."""
    from glossator.server import build_app
    from glossator.settings import Settings

    settings = Settings.from_env(
        {
            "GLOSSATOR_DATABASE_URL": db_url,
            "GLOSSATOR_DATA_DIR": str(tmp_path / "data"),
            "GLOSSATOR_REPOS_DIR": str(tmp_path / "repos"),
            "GLOSSATOR_SEARCH_FIRST": setting,
        }
    )
    app = build_app(settings, worker=worker)
    assert isinstance(app.state.service["search_first"], SearchFirst) is wired
