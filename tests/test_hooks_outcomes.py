"""Honest outcomes: a job that met problems is `done with problems`, never a plain
`done`; the branch stays not fully indexed and is retried; the problems are shown
by `glossator status`, `/api/jobs` (list_jobs), the search freshness block and the
next push's `remote:` lines. On the real PostgreSQL and procrastinate worker."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import psycopg
from click.testing import CliRunner

from glossator import githooks
from glossator.cli import main as cli
from hooks.queue import defer_sync, list_jobs
from hooks.reuse import pipeline_index
from search.freshness import freshness
from search.mcp.views import index_lines, lean_index
from tests.gitserver_support import commit_all, git
from tests.test_hooks_races import Branch, assert_settled, drain, jobs, runs, service_for


def problems_of(conninfo: str) -> list[str]:
    with psycopg.connect(conninfo) as conn:
        (found,) = conn.execute(
            "SELECT problems FROM indexed_commits WHERE repository = 'livre'"
        ).fetchone()
    return list(found)


async def test_a_summary_not_made_is_done_with_problems_and_retried(
    tmp_path: Path, database: Any, db_settings: Any, fake_embedder: Any, fake_summarizer: Any
) -> None:
    branch = Branch(tmp_path)
    chapter = branch.chapters[0].parent.relative_to(branch.work).as_posix()
    fake_summarizer.fail_paths = {f"{chapter}/summary.md"}  # the LLM is unreachable for it
    service = service_for(branch, database, fake_embedder, fake_summarizer, pipeline_index())
    defer_sync(database.conninfo, "livre", "main")
    await drain(service)  # the first attempt and its quick retries (no delay in tests)

    found = jobs(database.conninfo)
    assert [s for _, s, _ in found] == ["succeeded"] * 4 + ["todo"]  # then every 5 min
    assert [r[1] for r in runs(database.conninfo)] == ["problems"] * 4
    left = problems_of(database.conninfo)
    assert left and f"{chapter}/summary.md" in left[0]

    with psycopg.connect(database.conninfo) as conn:
        listed = list_jobs(conn, repository="livre")
        [fresh] = freshness(conn, ["livre"], "main")
    assert listed[0]["status"] == "queued" and listed[0]["failures"] == 4
    assert listed[1]["status"] == "done with problems" and listed[1]["problem_count"] >= 1
    assert f"{chapter}/summary.md" in listed[1]["problems"][0]
    assert fresh.problems and "not fully indexed" in fresh.note
    [line] = index_lines([fresh])  # the MCP answer's freshness block
    assert "not fully indexed" in line and lean_index(fresh)["note"] == fresh.note

    env = {"GLOSSATOR_DATABASE_URL": database.conninfo, "COLUMNS": "400"}
    status = CliRunner().invoke(cli, ["status"], env=env)
    assert status.exit_code == 1, status.output  # a branch is failing (issue 23)
    assert "done with problems" in status.output and "not fully indexed" in status.output
    assert f"{chapter}/summary.md" in status.output.replace("\n", "")
    assert "failing: livre/main" in status.output and "retried by itself" in status.output

    # the next push to the branch is told, and brings the waiting retry forward
    out = io.StringIO()
    environ = {"GIT_DIR": str(branch.bare), "GLOSSATOR_DATABASE_URL": database.conninfo}
    zero = "0" * 40
    githooks.post_receive(io.StringIO(f"{zero} {branch.tip()} refs/heads/main\n"), out, environ)
    said = out.getvalue()
    # the summary is missing, not the text: its lead stands in, the chapter's rows load
    assert "had 1 problem(s)" in said and "rows: " not in said, said
    assert f"{chapter}/summary.md" in said
    with psycopg.connect(database.conninfo) as conn:
        (n,) = conn.execute(
            "SELECT count(*) FROM hierarchical_content_nodes WHERE source_file = %s",
            (f"{chapter}/source.md",),
        ).fetchone()
    assert n >= 1

    fake_summarizer.fail_paths = set()  # the LLM is back
    await drain(service)
    assert_settled(branch, database.conninfo)
    assert problems_of(database.conninfo) == []
    assert runs(database.conninfo)[-1][1] == "done"
    with psycopg.connect(database.conninfo) as conn:
        (n,) = conn.execute(
            "SELECT count(*) FROM hierarchical_content_nodes WHERE source_file = %s",
            (f"{chapter}/summary.md",),
        ).fetchone()
    assert n >= 1


async def test_a_300_kb_one_line_chapter_is_indexed_like_any_other(
    tmp_path: Path, database: Any, fake_embedder: Any, fake_summarizer: Any
) -> None:
    """Its summary failed (no space to cut at for map-reduce), its rows were then
    refused (no parent summary) and the job said `done`: now it is split, summarised
    and findable."""
    branch = Branch(tmp_path)
    fake_summarizer.context_tokens = 8000  # a model whose window the chapter overflows
    source = branch.chapters[1]
    head, _body = source.read_text().split("\n---\n", 1)
    words = " ".join(f"mot{i % 997}" for i in range(60_000))[:200_000]
    blob = "".join(chr(0x4E00 + (i * 7919) % 20000) for i in range(100_000))
    source.write_text(f"{head}\n---\n\n{words} {blob} FINDUCHAPITRE\n")
    commit_all(branch.work, "a 300 KB line")
    branch.push()
    service = service_for(branch, database, fake_embedder, fake_summarizer, pipeline_index())
    defer_sync(database.conninfo, "livre", "main")
    await drain(service)

    assert_settled(branch, database.conninfo)
    assert [r[1] for r in runs(database.conninfo)] == ["done"]
    assert problems_of(database.conninfo) == []
    rel = source.relative_to(branch.work).as_posix()
    with psycopg.connect(database.conninfo) as conn:
        counts = dict(
            conn.execute(
                "SELECT source_file, count(*) FROM hierarchical_content_nodes GROUP BY 1"
            ).fetchall()
        )
        (tail,) = conn.execute(
            "SELECT count(*) FROM hierarchical_content_nodes WHERE content LIKE '%FINDUCHAPITRE%'"
        ).fetchone()
    assert counts[rel] > 100 and counts[rel.replace("source.md", "summary.md")] >= 1
    assert tail == 1


async def test_a_user_error_is_not_retried_on_the_same_tip(
    tmp_path: Path, database: Any, fake_embedder: Any, fake_summarizer: Any
) -> None:
    """Issue 23 item 8: a problem only the pushed files can fix (here a path too deep,
    in a tree that reached the repository before pre-receive refused it) was retried
    5 times in a minute, then every few minutes for hours. Now: one attempt, no
    follow-up, reconciliation leaves the tip alone, `status` says what to fix and
    exits 1 (its --json too), and the push that fixes it is indexed."""
    import json

    from hooks.job_runner import JobRunner

    branch = Branch(tmp_path)
    chapter = branch.chapters[0].parent
    deep = chapter / "annexe" / "source.md"
    deep.parent.mkdir()
    deep.write_text("---\ntitle: Annexe\n---\n\nUne annexe rangée trop profond.\n")
    commit_all(branch.work, "too deep")
    no_hooks = "--receive-pack=git -c core.hooksPath=/dev/null receive-pack"
    git("push", "-q", no_hooks, str(branch.bare), "HEAD:main", cwd=branch.work, env=branch.env)
    service = service_for(branch, database, fake_embedder, fake_summarizer, pipeline_index())
    defer_sync(database.conninfo, "livre", "main")
    await drain(service)  # runs every due job: a follow-up with no delay would run too

    rel = deep.relative_to(branch.work).as_posix()
    assert [s for _, s, _ in jobs(database.conninfo)] == ["succeeded"]  # nothing queued
    [(_, status, _, stats)] = runs(database.conninfo)
    assert status == "problems" and stats is not None
    assert stats["user_problems"] is True and stats["awaits_push_at"] == branch.tip()
    assert stats["next_job"] is None and any(rel in p for p in stats["problems"])

    async def reconcile(service: JobRunner) -> int:
        await service.app.open_async()
        try:
            return await service.maintenance.reconcile()
        finally:
            await service.app.close_async()

    assert await reconcile(service) == 0  # the branch is not fully indexed, and waits
    assert len(jobs(database.conninfo)) == 1

    env = {"GLOSSATOR_DATABASE_URL": database.conninfo, "COLUMNS": "400"}
    status_run = CliRunner().invoke(cli, ["status"], env=env)
    assert status_run.exit_code == 1, status_run.output
    assert "failing: livre/main" in status_run.output and rel in status_run.output
    assert "fix these files and push" in status_run.output
    as_json = CliRunner().invoke(cli, ["status", "--json"], env=env)
    assert as_json.exit_code == 1
    [failing] = json.loads(as_json.output)["failing"]
    assert failing["awaits_push"] is True and failing["branch"] == "main"
    assert any(rel in p for p in failing["problems"])

    # the fix, pushed (through pre-receive this time): indexed, status back to 0
    git("rm", "-q", "-r", str(deep.parent), cwd=branch.work)
    commit_all(branch.work, "the annex goes")
    branch.push()
    assert await reconcile(service) == 1  # a new tip: the branch is indexed again
    await drain(service)
    assert_settled(branch, database.conninfo)
    assert runs(database.conninfo)[-1][1] == "done" and problems_of(database.conninfo) == []
    assert CliRunner().invoke(cli, ["status"], env=env).exit_code == 0
