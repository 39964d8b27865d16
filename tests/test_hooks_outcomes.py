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
from hooks.worker import _default_index
from search.freshness import freshness
from search.mcp_views import index_lines, lean_index
from tests.gitserver_support import commit_all
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
    service = service_for(branch, database, fake_embedder, fake_summarizer, _default_index())
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
    assert status.exit_code == 0, status.output
    assert "done with problems" in status.output and "not fully indexed" in status.output
    assert f"{chapter}/summary.md" in status.output.replace("\n", "")

    # the next push to the branch is told, and brings the waiting retry forward
    out = io.StringIO()
    environ = {"GIT_DIR": str(branch.bare), "GLOSSATOR_DATABASE_URL": database.conninfo}
    zero = "0" * 40
    githooks.post_receive(io.StringIO(f"{zero} {branch.tip()} refs/heads/main\n"), out, environ)
    said = out.getvalue()
    assert "had 2 problem(s)" in said and "rows: " in said and f"{chapter}/summary.md" in said, said

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
    service = service_for(branch, database, fake_embedder, fake_summarizer, _default_index())
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
