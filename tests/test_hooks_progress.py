"""A running job's progress: phases and counts, an ETA, a bounded publication rate,
seen from inside the job through `glossator status` and list_jobs (GET /api/jobs)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import psycopg
from click.testing import CliRunner

from glossator.cli import main as cli
from hooks.progress import JobProgress
from hooks.queue import defer_sync, list_jobs
from hooks.reuse import pipeline_index
from tests.fakes import FakeEmbedder
from tests.test_hooks_races import Branch, assert_settled, drain, service_for


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_publication_is_bounded_and_the_eta_follows_the_rate() -> None:
    clock = Clock()
    published: list[dict[str, Any]] = []
    logged: list[str] = []
    progress = JobProgress(published.append, log=logged.append, clock=clock)
    progress("summaries", 1, 2)  # a new phase: published at once
    progress("summaries", 2, 2)
    for i in range(1, 1001):  # 1,000 texts embedded over 100 s
        clock.now += 0.1
        progress("chunks", i, 1000)
        if i == 500:
            mid = progress.snapshot()
    progress.loaded(3, 3, rows=40)
    assert 45 <= len(published) <= 60  # every 2 s and at phase changes, not 1,000 times
    assert len(logged) <= 5  # every 30 s
    assert mid["phase"] == "embeddings" and abs(mid["eta_s"] - 50.0) < 0.5  # 0.1 s per text
    assert mid["counts"] == {"summaries": "2/2", "embeddings": "500/1000"}
    assert "summaries 2/2" in mid["line"] and "ETA 50 s" in mid["line"]
    last = published[-1]
    assert last["phase"] == "loading" and last["rows"] == 40 and "rows 40" in last["line"]


async def test_a_running_job_shows_its_progress(
    tmp_path: Path, database: Any, fake_summarizer: Any
) -> None:
    seen: list[tuple[list[dict[str, Any]], str]] = []
    conninfo = database.conninfo

    class Watching(FakeEmbedder):
        """Looks at the job's public state from inside the job, while it embeds."""

        def embed_batch(self, texts: list[str], input_type: Any) -> list[list[float]]:
            if not seen:
                with psycopg.connect(conninfo) as conn:
                    listed = list_jobs(conn, repository="livre")
                table = CliRunner().invoke(
                    cli, ["status"], env={"GLOSSATOR_DATABASE_URL": conninfo, "COLUMNS": "300"}
                )
                seen.append((listed, table.output))
            return super().embed_batch(texts, input_type)

    branch = Branch(tmp_path)
    service = service_for(branch, database, Watching(), fake_summarizer, pipeline_index())
    defer_sync(conninfo, "livre", "main")
    await drain(service)

    assert_settled(branch, conninfo)
    [(listed, table)] = seen
    running = listed[0]
    assert running["status"] == "running"
    progress = running["progress"]
    assert progress["phase"] == "embeddings" and progress["total"] > 0
    assert "summaries" in progress["counts"]  # the phase before, with its count
    assert "running" in table and "vectors 0/" in table
    assert "rows loaded" in table  # the rows came before the vectors (hooks.landing)

    follow = CliRunner().invoke(
        cli, ["status", "--follow"], env={"GLOSSATOR_DATABASE_URL": conninfo, "COLUMNS": "300"}
    )
    assert follow.exit_code == 0, follow.output  # nothing pending: it returns at once
    with psycopg.connect(conninfo) as conn:
        done = list_jobs(conn, repository="livre")[0]
    assert done["status"] == "done" and done["progress"]["phase"] == "done"
