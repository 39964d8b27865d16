"""`glossator repo delete` against a running server (issue 23, item 4): the bare
repository, its rows and its jobs go; another repository keeps all of its; without a
terminal it needs `--yes` and deletes nothing without it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import httpx
import psycopg
import pytest

from search import SearchOptions, search
from tests.gitserver_support import ServeProcess, commit_all, git
from tests.plugins.corpus import make_small_corpus
from tests.plugins.serve import TOKEN, create_repo, rows, server_env

pytestmark = pytest.mark.slow

GLOSSATOR = str(Path(sys.executable).with_name("glossator"))


def glossator(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    full = {k: v for k, v in os.environ.items() if not k.startswith(("GLOSSATOR_", "GIT_"))}
    full.update(env)
    return subprocess.run(  # stdin is not a terminal here
        [GLOSSATOR, *args], env=full, capture_output=True, text=True, timeout=900,
        stdin=subprocess.DEVNULL,
    )  # fmt: skip


def records(db_url: str, repository: str) -> dict[str, int]:
    """How many rows each table holds of `repository` (what a delete must empty)."""
    out = {}
    with psycopg.connect(db_url) as conn:
        for table, column in (
            ("hierarchical_content_nodes", "repository"),
            ("loaded_files", "repository"),
            ("branch_languages", "repository"),
            ("chapter_documents", "repository"),
            ("indexed_commits", "repository"),
            ("branch_tips", "repository"),
            ("repository_heads", "repository"),
            ("glossator_job_runs", "repository"),
            ("procrastinate_jobs", "args->>'repository'"),
        ):
            (n,) = conn.execute(
                f"SELECT count(*) FROM {table} WHERE {column} = %s", (repository,)
            ).fetchone()
            out[table] = n
    return out


def test_repo_delete_removes_the_repository_its_rows_and_its_jobs(
    tmp_path: Path, db_url: str
) -> None:
    env = server_env(tmp_path, db_url)
    server = ServeProcess(tmp_path, env).start(timeout=180)
    try:
        for name in ("doomed", "kept"):
            create_repo(server, name)
            work = make_small_corpus(tmp_path / name, 2)
            git("init", "-q", "-b", "main", str(work))
            commit_all(work, "two chapters")
            git("push", "-q", server.url(name, token=TOKEN), "main", cwd=work, timeout=300)
        for name in ("doomed", "kept"):
            assert all(j["status"] == "done" for j in server.wait_idle(name, timeout=300))
        kept_before = records(db_url, "kept")
        assert all(kept_before[t] > 0 for t in ("hierarchical_content_nodes", "procrastinate_jobs"))
        assert records(db_url, "doomed")["hierarchical_content_nodes"] > 0

        # no terminal, no --yes: a clear error, nothing deleted
        refused = glossator(env, "repo", "delete", "doomed")
        assert refused.returncode == 1
        assert "stdin is not a terminal" in refused.stderr and "--yes" in refused.stderr
        assert (Path(env["GLOSSATOR_REPOS_DIR"]) / "doomed.git").is_dir()
        assert records(db_url, "doomed")["hierarchical_content_nodes"] > 0
        unknown = glossator(env, "repo", "delete", "nowhere", "--yes")
        assert unknown.returncode == 1 and "no repository named 'nowhere'" in unknown.stderr

        # a push right before the delete: its job is waited for or cancelled, not left behind
        work = tmp_path / "doomed"
        git("pull", "-q", "--rebase", server.url("doomed", token=TOKEN), "main", cwd=work)
        chapter = sorted(work.glob("corpus/**/source.md"))[0]
        chapter.write_text(chapter.read_text("utf-8") + "\nUn paragraphe de plus.\n", "utf-8")
        commit_all(work, "one more paragraph")
        git("push", "-q", server.url("doomed", token=TOKEN), "main", cwd=work, timeout=300)
        done = glossator(env, "repo", "delete", "doomed", "--yes")
        assert done.returncode == 0, done.stderr
        assert "deleted repository doomed" in done.stdout, done.stdout

        repos = Path(env["GLOSSATOR_REPOS_DIR"])
        assert sorted(p.name for p in repos.iterdir()) == ["kept.git"]
        assert all(n == 0 for n in records(db_url, "doomed").values()), records(db_url, "doomed")
        assert server.jobs("doomed") == []
        assert glossator(env, "repo", "list").stdout.split("\t")[0] == "kept"
        # clone and push answer "no repository"
        r = httpx.get(f"{server.base}/doomed.git/info/refs?service=git-upload-pack", timeout=30)
        assert r.status_code == 404
        # the other repository kept every row and job; a search no longer meets doomed
        assert records(db_url, "kept") == kept_before
        assert rows(db_url, "kept")
        with psycopg.connect(db_url) as conn:
            answer = search(conn, "abondance", SearchOptions(mode="bm25"))
        assert answer.hits and {h.citation.repository for h in answer.hits} == {"kept"}
        # the same name can be created again, empty
        create_repo(server, "doomed")
    finally:
        server.stop()
