"""`glossator doctor` against a real PostgreSQL and a real bare repository."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from gitserver.repos import RepoStore
from glossator.checks import run
from glossator.commands.doctor import doctor
from tests.plugins.corpus import EXAMPLE_DIR


def _push_tree(store: RepoStore, name: str, tree: Path) -> str:
    """Commit `tree` with the real git and push it into the bare repository; return the tip."""

    def run_git(*a):
        return subprocess.run(["git", *a], cwd=tree, check=True, capture_output=True, text=True)

    run_git("init", "-q", "-b", "main")
    run_git("-c", "user.name=T", "-c", "user.email=t@example.invalid", "add", "-A")
    run_git(
        "-c", "user.name=T", "-c", "user.email=t@example.invalid", "commit", "-q", "-m", "corpus"
    )
    run_git("push", "-q", str(store.path(name)), "main", "--no-verify")
    return run_git("rev-parse", "HEAD").stdout.strip()


@pytest.mark.pg_backends("postgres", "pg_search")
def test_healthy_then_each_problem_named_with_its_fix(
    db_settings, database, conn, tmp_path, pg_server
):
    settings = db_settings.replace(repos_dir=tmp_path / "repos", embedder="fake")
    store = RepoStore(settings.repos_dir, data_dir=settings.data_dir)
    store.create("bastiat")
    corpus = tmp_path / "work"
    shutil.copytree(EXAMPLE_DIR, corpus)  # indexed: every sidecar up to date
    tip = _push_tree(store, "bastiat", corpus)

    findings = {f.check: f for f in run(settings)}
    assert findings["database"].status == "ok"
    assert findings["extension vector"].status == "ok"
    assert findings["migrations"].status == "ok"
    keyword = findings["keyword search"]  # which engine, said plainly
    if pg_server.backend == "pg_search":
        assert (keyword.status, keyword.detail) == ("ok", "pg_search")
    else:  # the fallback on a plain PostgreSQL, its cost said (store.fts)
        assert keyword.status == "warn" and keyword.detail.startswith("postgres-fts: ")
    assert findings["embedder"].status == "ok"
    assert findings["jobs"].status == "warn" and "glossator serve" in findings["jobs"].fix
    # never indexed: a warning that says how the server catches up
    assert findings["bastiat@main"].status == "warn"
    assert "glossator serve" in findings["bastiat@main"].fix
    assert findings["bastiat@main sidecars"].status == "ok"  # the example's sidecars are committed

    conn.execute(
        "INSERT INTO indexed_commits (repository, branch, commit) VALUES (%s, %s, %s)",
        ("bastiat", "main", tip),
    )
    conn.commit()
    findings = {f.check: f for f in run(settings)}
    assert findings["bastiat@main"].status == "ok"

    # a chapter edited without its sidecar regenerated: stale, named
    chapter = next(corpus.glob("corpus/*/*/*/source.md"))
    chapter.write_text(
        chapter.read_text(encoding="utf-8") + "\nUn paragraphe de plus.\n", encoding="utf-8"
    )
    subprocess.run(
        [
            "git",
            "-c",
            "user.name=T",
            "-c",
            "user.email=t@example.invalid",
            "commit",
            "-qam",
            "edit",
        ],
        cwd=corpus,
        check=True,
    )
    subprocess.run(
        ["git", "push", "-q", str(store.path("bastiat")), "main", "--no-verify"],
        cwd=corpus,
        check=True,
    )
    findings = {f.check: f for f in run(settings)}
    assert findings["bastiat@main"].status == "warn" and "moved" in findings["bastiat@main"].detail
    sidecars = findings["bastiat@main sidecars"]
    assert sidecars.status == "warn" and "1 stale" in sidecars.detail
    assert chapter.relative_to(corpus).as_posix() in sidecars.detail


def test_cli_exit_code_says_whether_something_failed(db_settings, database, tmp_path, monkeypatch):
    monkeypatch.setenv("GLOSSATOR_DATABASE_URL", db_settings.database_url.get_secret_value())
    monkeypatch.setenv("GLOSSATOR_REPOS_DIR", str(tmp_path / "repos"))
    monkeypatch.setenv("GLOSSATOR_EMBEDDER", "fake")
    result = CliRunner().invoke(doctor, [])
    assert result.exit_code == 0, result.output
    assert "0 failed" in result.output
    monkeypatch.setenv("GLOSSATOR_EMBEDDER", "voyage:voyage-3.5")
    monkeypatch.delenv("VOYAGE_API_KEY", raising=False)
    result = CliRunner().invoke(doctor, [])
    assert result.exit_code == 1
    assert "VOYAGE_API_KEY" in result.output
    as_json = CliRunner().invoke(doctor, ["--json"])
    assert as_json.exit_code == 1  # the same verdict, for scripts
    findings = json.loads(as_json.output)
    assert {"check", "status", "detail", "fix"} == set(findings[0])
    assert any(
        f["status"] == "fail" and "VOYAGE_API_KEY" in f["fix"] + f["detail"] for f in findings
    )


def test_a_branch_without_corpus_is_a_warning_with_the_layout(db_settings, database, tmp_path):
    """Pushes without corpus/ are refused at pre-receive now; a branch pushed before that
    (or written by another tool) is named by doctor, not reported ok."""
    import pygit2

    settings = db_settings.replace(repos_dir=tmp_path / "repos", embedder="fake")
    store = RepoStore(settings.repos_dir, data_dir=settings.data_dir)
    store.create("plain")
    repo = pygit2.Repository(str(store.path("plain")))
    builder = repo.TreeBuilder()
    builder.insert("README.md", repo.create_blob(b"# A book\n"), pygit2.GIT_FILEMODE_BLOB)
    who = pygit2.Signature("T", "t@example.invalid")
    repo.create_commit("refs/heads/main", who, who, "no corpus", builder.write(), [])
    findings = {f.check: f for f in run(settings)}
    corpus = findings["plain@main corpus"]
    assert corpus.status == "warn" and "nothing is indexed" in corpus.detail
    assert "corpus/<work>/<chapter>/source.md" in corpus.fix
    assert "plain@main sidecars" not in findings
