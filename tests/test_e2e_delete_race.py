"""A push that races `glossator repo delete` (issue 38, item 3): either the push is
refused with a `remote:` line saying why, or the delete waits for it and then deletes
everything; never "accepted" and then lost, never a job for a repository that is gone,
never a ghost `.<name>.deleting` left in the database. 20 races on one server, the push
started at offsets that straddle the moment the delete takes the repository away."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import psycopg
import pytest

from tests.gitserver_support import ServeProcess, commit_all, git
from tests.plugins.corpus import make_small_corpus
from tests.plugins.serve import TOKEN, create_repo, server_env

pytestmark = pytest.mark.slow

GLOSSATOR = str(Path(sys.executable).with_name("glossator"))
RUNS = 20
# The delete command takes the repository away ~0.5 s after its start on a quiet machine,
# ~1-3 s on a loaded one, more past load 8 (Python, then the database): offsets from 0
# to 1.95 s every 0.15 s, then to 6 s, put the push before, during and after that
# moment at either; each run also has a job of the repository queued or running. A
# delete that ends before the offset has the push started at its end (a quiet machine
# does not wait out the long offsets).
OFFSETS = [0.15 * i for i in range(RUNS - 6)] + [2.4, 3.0, 3.6, 4.4, 5.2, 6.0]


def _env(env: dict[str, str]) -> dict[str, str]:
    full = {k: v for k, v in os.environ.items() if not k.startswith(("GLOSSATOR_", "GIT_"))}
    full.update(env)
    return full


def leftovers(db_url: str, like: str) -> dict[str, int]:
    """Rows and jobs of every repository whose name is LIKE `like`."""
    out = {}
    with psycopg.connect(db_url) as conn:
        for table, column in (
            ("hierarchical_content_nodes", "repository"),
            ("indexed_commits", "repository"),
            ("branch_tips", "repository"),
            ("glossator_job_runs", "repository"),
            ("procrastinate_jobs", "args->>'repository'"),
        ):
            (n,) = conn.execute(
                f"SELECT count(*) FROM {table} WHERE {column} LIKE %s", (like,)
            ).fetchone()
            out[table] = n
    return out


def refusal(said: str, name: str) -> str | None:
    """Which refusal of a push to `name` git's stderr `said` tells, or None when it tells
    none: a push whose own check failed is no refusal, however it ends.

    - info/refs refused by the server with a text/plain body (409 while the repository
      is being deleted, 404 once it is gone): git prints the body as `remote:` lines;
    - the pre-receive hook (a push already past info/refs): its `remote:` line;
    - a 404 from `git http-backend` itself (the repository went after the server's own
      checks): no body, so no `remote:` line, only git's own words, "repository '…'
      not found" on info/refs or "RPC failed; HTTP 404" on the push's POST (where git
      never prints a body, the server's own 404 reads the same)."""
    if "push check failed" in said:
        return None
    if f"remote: glossator: repository {name} is being deleted" in said:
        return "refused: being deleted"
    if f"remote: no repository named '{name}'" in said:
        return "refused: no repository"
    if "RPC failed; HTTP 404" in said:
        return "refused: RPC 404"
    if f"/{name}.git/' not found" in said:
        return "refused: not found"
    return None


def test_a_push_racing_a_delete_is_refused_or_waited_for(tmp_path: Path, db_url: str) -> None:
    env = server_env(tmp_path, db_url)
    server = ServeProcess(tmp_path, env).start(timeout=180)
    repos = Path(env["GLOSSATOR_REPOS_DIR"])
    outcomes: list[str] = []
    try:
        # the shapes a race makes by chance, made on purpose: a repository that went after
        # the server's checks (a folder with its HEAD alone: the server serves it, `git
        # http-backend` finds no repository and answers 404 with no body), one never made
        work = make_small_corpus(tmp_path / "shapes", 1)
        git("init", "-q", "-b", "main", str(work))
        commit_all(work, "one chapter")
        (repos / "gone.git").mkdir(parents=True)
        (repos / "gone.git" / "HEAD").write_text("ref: refs/heads/main\n")
        gone = git("push", server.url("gone", token=TOKEN), "main", cwd=work, check=False)
        assert gone.returncode != 0 and "remote:" not in gone.stderr, gone.stderr
        assert refusal(gone.stderr, "gone") == "refused: not found", gone.stderr
        shutil.rmtree(repos / "gone.git")
        never = git("push", server.url("never", token=TOKEN), "main", cwd=work, check=False)
        assert never.returncode != 0, never.stderr
        assert refusal(never.stderr, "never") == "refused: no repository", never.stderr
        for i, offset in enumerate(OFFSETS):
            name = f"race{i}"
            create_repo(server, name)
            work = make_small_corpus(tmp_path / name, 1)
            git("init", "-q", "-b", "main", str(work))
            commit_all(work, "one chapter")
            url = server.url(name, token=TOKEN)
            git("push", "-q", url, "main", cwd=work, timeout=300)  # its job queued or running
            # the push below is forced: the job's commit-back may have moved main meanwhile
            chapter = sorted(work.glob("corpus/**/source.md"))[0]
            chapter.write_text(chapter.read_text("utf-8") + "\nUn paragraphe de plus.\n", "utf-8")
            commit_all(work, "one more paragraph")

            delete = subprocess.Popen(
                [GLOSSATOR, "repo", "delete", name, "--yes"],
                env=_env(env), stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            )  # fmt: skip
            with contextlib.suppress(subprocess.TimeoutExpired):
                # the offset, or less when the delete is over by then: a push after its end
                # meets what any later one would (the repository gone, its jobs and rows too)
                delete.wait(timeout=offset)
            push = subprocess.run(
                ["git", "push", url, "+main"], cwd=work, env=_env({}),
                capture_output=True, text=True, timeout=300,
            )  # fmt: skip
            out, err = delete.communicate(timeout=600)
            assert delete.returncode == 0, f"run {i}: {err}"
            assert f"deleted repository {name}" in out, out
            said = push.stderr
            assert "push check failed" not in said, said
            if push.returncode == 0:
                # received before the delete took the repository: the delete waited for it,
                # then deleted it with its new job
                outcomes.append("waited")
            else:
                kind = refusal(said, name)
                assert kind is not None, f"run {i}: {said}"
                outcomes.append(kind)
            assert not (repos / f"{name}.git").exists()
            assert not (repos / f".{name}.deleting").exists()
            assert all(n == 0 for n in leftovers(db_url, name).values()), (i, said)

        # no job for a repository that is gone, and no ghost
        time.sleep(2)  # a job queued by a late hook would show by now
        assert all(n == 0 for n in leftovers(db_url, "race%").values())
        assert all(n == 0 for n in leftovers(db_url, ".%").values())
        status = subprocess.run(
            [GLOSSATOR, "status"], env=_env(env), capture_output=True, text=True, timeout=300
        )
        assert status.returncode == 0, status.stdout + status.stderr
        print("outcomes:", {o: outcomes.count(o) for o in set(outcomes)})

        # a ghost as the race left them before: a job for the hidden name, which the worker
        # drops (saying so) instead of retrying it for ever, and `repo delete` clears
        from hooks.queue import defer_sync

        ghost = ".race0.deleting"
        job = defer_sync(db_url, ghost, "main").job_id
        wait_for_log = time.monotonic() + 120
        while f"job {job} ({ghost}/main) dropped" not in server.log():
            assert time.monotonic() < wait_for_log, server.log()[-3000:]
            time.sleep(0.2)
        assert leftovers(db_url, ghost)["glossator_job_runs"] == 0
        cleared = subprocess.run(
            [GLOSSATOR, "repo", "delete", ghost, "--yes"], env=_env(env),
            capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL,
        )  # fmt: skip
        assert cleared.returncode == 0, cleared.stderr
        assert f"deleted what was left of {ghost}: 0 rows, 1 jobs" in cleared.stdout
        assert all(n == 0 for n in leftovers(db_url, ghost).values())
        again = subprocess.run(
            [GLOSSATOR, "repo", "delete", ghost, "--yes"], env=_env(env),
            capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL,
        )  # fmt: skip
        assert again.returncode == 1 and f"nothing of {ghost!r} to delete" in again.stderr
    finally:
        server.stop()
