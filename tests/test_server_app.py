"""`glossator.server.build_app` in-process (uvicorn thread): start-up reconciliation,
/api/jobs, /healthz and the MCP mount, on the real PostgreSQL."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from gitserver.repos import RepoStore
from glossator.server import build_app
from tests.gitserver_support import ServerThread, commit_all, git
from tests.plugins.corpus import make_small_corpus


@pytest.fixture
def settings(db_settings: Any, tmp_path: Path) -> Any:
    return db_settings.replace(
        repos_dir=tmp_path / "repos",
        embedder="fake",
        summarizer="fake",
        push_tokens=("tok",),
        mcp_token="mcp-secret",
    )


def wait_done(base: str, repository: str, timeout: float = 600) -> list[dict[str, Any]]:
    """The jobs of `repository` once all are finished (a deadline for a condition, generous:
    a loaded machine)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        jobs = httpx.get(f"{base}/api/jobs", params={"repository": repository}, timeout=120).json()[
            "jobs"
        ]
        if jobs and all(j["status"] in ("done", "failed") for j in jobs):
            return jobs
        time.sleep(0.2)
    raise TimeoutError(jobs)


def test_start_up_reconciles_branches_pushed_while_down(settings: Any, tmp_path: Path) -> None:
    store = RepoStore(settings.repos_dir, data_dir=settings.data_dir)
    bare = store.create("horsligne")
    work = make_small_corpus(tmp_path / "work", 2)
    git("init", "-q", "-b", "main", str(work))
    commit_all(work, "pushed while the server was down")
    pushed = git("push", str(bare), "main", cwd=work)  # file://: no server, no queue
    assert "indexing not queued" in pushed.stderr

    with ServerThread(build_app(settings), lifespan="on") as server:
        assert httpx.get(f"{server.base}/healthz", timeout=120).text == "ok\n"
        [job] = wait_done(server.base, "horsligne")
        assert job["status"] == "done" and job["duration_s"] is not None
        assert job["result_commit"] == store.branches("horsligne")["main"]
        assert job["stats"]["loaded"]
        # run by `glossator worker`, the server's child process, not by this process
        assert job["worker"] and not job["worker"].endswith(f":{os.getpid()}"), job
        bad = httpx.get(f"{server.base}/api/jobs", params={"status": "bogus"}, timeout=120)
        assert bad.status_code == 400
        for path in ("/mcp/", "/mcp"):  # both served (no redirect), guarded by the token
            assert httpx.post(f"{server.base}{path}", json={}, timeout=120).status_code == 401, path
        root = httpx.get(f"{server.base}/", timeout=120)
        assert root.status_code == 200 and root.json()["endpoints"]["mcp"].startswith("/mcp ")
        page = httpx.get(f"{server.base}/", headers={"Accept": "text/html"}, timeout=120)
        # a browser gets the web reader's home page (tests/test_web.py): the search form
        assert "<h1>Glossator</h1>" in page.text and '<input id="q" name="q"' in page.text
    # a restart with nothing new to index queues nothing
    with ServerThread(build_app(settings), lifespan="on") as server:
        jobs = httpx.get(f"{server.base}/api/jobs", timeout=120).json()["jobs"]
        assert [j["id"] for j in jobs] == [job["id"]]
    # anonymous reads off: /api/jobs (repository names, commits, errors) needs a token
    closed = settings.replace(anonymous_read=False, read_tokens=("lecture",))
    with ServerThread(build_app(closed), lifespan="on") as server:
        refused = httpx.get(f"{server.base}/api/jobs", timeout=120)
        assert refused.status_code == 401 and "horsligne" not in refused.text
        allowed = httpx.get(f"{server.base}/api/jobs", auth=("u", "lecture"), timeout=120)
        assert allowed.status_code == 200 and allowed.json()["jobs"]


def test_lost_database_connections_are_one_line_then_recover(settings: Any, tmp_path: Path) -> None:
    """Every connection of the server killed at once (what a PostgreSQL restart or a
    PANIC does): /api/jobs gets fresh connections (a 503 in one line at worst), and the
    indexing worker (its connections were killed too) still runs the next job. The
    server itself killed: tests/test_db_supervisor.py."""
    import psycopg

    from hooks.queue import defer_sync

    store = RepoStore(settings.repos_dir, data_dir=settings.data_dir)
    bare = store.create("coupure")
    work = make_small_corpus(tmp_path / "work", 1)
    git("init", "-q", "-b", "main", str(work))
    commit_all(work, "one chapter")
    git("push", "-q", str(bare), "main", cwd=work)  # reconciled at start
    with ServerThread(build_app(settings), lifespan="on") as server:
        wait_done(server.base, "coupure")
        with psycopg.connect(settings.database_url.get_secret_value(), autocommit=True) as conn:
            conn.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                " WHERE datname = current_database() AND pid <> pg_backend_pid()"
            )
        answers = []
        for _ in range(20):  # bounded: the pool replaces a broken connection when used
            r = httpx.get(f"{server.base}/api/jobs", timeout=30)
            answers.append(r.status_code)
            if r.status_code == 200:
                break
            assert r.status_code == 503, r.text
            assert "does not answer" in r.json()["error"] and "\n" not in r.json()["error"]
        # the pools test a connection before handing it out (store.db, _CHECK): a killed
        # one is replaced unseen, or at worst one request answers 503 in one line
        assert answers[-1] == 200, answers
        # the worker lost its connections too: a new push is still indexed
        (work / "corpus" / "note.md").write_text("une note\n")
        commit_all(work, "after the cut")
        git("push", "-q", "-f", str(bare), "main", cwd=work)
        defer_sync(settings.database_url.get_secret_value(), "coupure", "main")
        deadline = time.monotonic() + 600  # a deadline for a condition: a loaded machine
        while time.monotonic() < deadline:
            jobs = httpx.get(
                f"{server.base}/api/jobs", params={"repository": "coupure"}, timeout=120
            ).json()
            if len(jobs["jobs"]) >= 2 and jobs["jobs"][0]["status"] in ("done", "failed"):
                break
            time.sleep(0.5)
        assert jobs["jobs"][0]["status"] == "done", jobs
