"""`glossator summarize` through the real CLI group, with the recording fake."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from glossator.cli import main
from tests.fakes import FakeSummarizer
from tests.plugins.corpus import FIRST_SERIES, WORK, make_small_corpus

ENV = {"GLOSSATOR_SUMMARIZER": "fake"}


def test_summarize_dry_run_then_run(tmp_path: Path, fake_summarizer: FakeSummarizer) -> None:
    root = make_small_corpus(tmp_path / "c", 2)
    runner = CliRunner()
    dry = runner.invoke(main, ["summarize", str(root), "--dry-run"], env=ENV)
    assert dry.exit_code == 0, dry.output
    assert "summaries due (4):" in dry.output
    assert f"level 3  {WORK}/summary.md: provider changed (extractive:" in dry.output
    assert "estimate with fake:fake-1: 4 calls" in dry.output
    assert fake_summarizer.history == []
    assert not (root / FIRST_SERIES / "chapitre-01-abondance-disette" / "summary.md").exists()

    run = runner.invoke(main, ["summarize", str(root)], env=ENV)
    assert run.exit_code == 0, run.output
    assert "4 summaries generated (4 due) by fake:fake-1: 4 calls" in run.output
    assert len(fake_summarizer.history) == 4
    assert (root / FIRST_SERIES / "chapitre-01-abondance-disette" / "summary.md").is_file()

    again = runner.invoke(main, ["summarize", str(root)], env=ENV)
    assert again.exit_code == 0 and "summaries: all up to date" in again.output
    assert len(fake_summarizer.history) == 4


def test_summarize_failure_exits_1_naming_the_file(
    tmp_path: Path, fake_summarizer: FakeSummarizer
) -> None:
    root = make_small_corpus(tmp_path / "c", 1)
    target = f"{FIRST_SERIES}/00-introduction/summary.md"
    fake_summarizer.fail_paths.add(target)
    result = CliRunner().invoke(main, ["summarize", str(root)], env=ENV)
    assert result.exit_code == 1
    assert f"error: {target}: fake failure" in result.output
    assert f"warning: {FIRST_SERIES}/summary.md: not regenerated" in result.output
    # no summary at all would keep the chapter's rows out: its lead stands in, still due
    written = (root / target).read_text()
    assert "  fallback: lead\n" in written and "  fallback_retry: true\n" in written
    fake_summarizer.fail_paths.clear()
    again = CliRunner().invoke(main, ["summarize", str(root)], env=ENV)
    assert again.exit_code == 0, again.output
    assert "fallback" not in (root / target).read_text()


def test_summarize_json(tmp_path: Path, fake_summarizer: FakeSummarizer) -> None:
    root = make_small_corpus(tmp_path / "c", 2)
    runner = CliRunner()
    dry = runner.invoke(main, ["summarize", str(root), "--dry-run", "--json"], env=ENV)
    assert dry.exit_code == 0, dry.output
    plan = json.loads(dry.stdout)  # one JSON object, nothing else on stdout
    assert plan["ok"] is True and plan["dry_run"] is True and plan["generated"] == []
    assert len(plan["plan"]) == 4 and plan["plan"][-1]["path"] == f"{WORK}/summary.md"
    assert plan["estimate"]["calls"] == 4 and fake_summarizer.history == []

    run = runner.invoke(main, ["summarize", str(root), "--json"], env=ENV)
    assert run.exit_code == 0, run.output
    done = json.loads(run.stdout)
    assert len(done["generated"]) == 4 and done["usage"]["calls"] == 4
    assert done["by"] == "fake:fake-1" and done["problems"] == []

    fake_summarizer.fail_paths.add(f"{FIRST_SERIES}/00-introduction/summary.md")
    (root / FIRST_SERIES / "00-introduction" / "summary.md").unlink()
    failed = runner.invoke(main, ["summarize", str(root), "--json"], env=ENV)
    assert failed.exit_code == 1
    problems = json.loads(failed.stdout)["problems"]
    failure = next(p for p in problems if p["path"].endswith("00-introduction/summary.md"))
    assert failure["severity"] == "error" and failure["message"].startswith("fake failure")
