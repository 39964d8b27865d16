"""`glossator load` and `glossator db status` through the real CLI and a real PostgreSQL."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from glossator.cli import main
from store import migrations
from tests.store_sidecars import PETITION, example_files

CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")  # ESC, CR, …: anything but \t and \n


def write_tree(root: Path, files: dict[str, bytes]) -> Path:
    for rel, data in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(data)
    return root


@pytest.mark.pg_backends("postgres", "pg_search")
def test_load_then_status(db_url: str, pg_server, tmp_path: Path) -> None:
    tree = write_tree(tmp_path / "corpus-repo", example_files())
    env = {"GLOSSATOR_DATABASE_URL": db_url, "GLOSSATOR_DATA_DIR": str(tmp_path / "data")}
    runner = CliRunner()
    first = runner.invoke(main, ["load", str(tree), "--repository", "bastiat"], env=env)
    assert first.exit_code == 0, first.output + first.stderr
    assert (
        first.stdout.startswith("bastiat/main: 85 files loaded (") and "0 refused" in first.stdout
    )
    assert first.stdout.count("\n") == 1  # one summary line

    again = runner.invoke(main, ["load", str(tree), "-r", "bastiat", "--json"], env=env)
    assert again.exit_code == 0, again.output
    summary = json.loads(again.stdout)  # one JSON object, nothing else on stdout
    assert summary["ok"] is True and summary["command"] == "load"
    assert (summary["loaded"], summary["unchanged"], summary["refused"]) == (0, 85, 0)
    assert summary["repository"] == "bastiat" and summary["problems"] == []

    # a sidecar whose manifest lies about its chunk count: named, exit code 1, rows kept
    side = tree / (PETITION + ".jsonl")
    lines = side.read_text().splitlines()
    head = json.loads(lines[0])
    head["chunk_count"] += 1
    side.write_text("\n".join([json.dumps(head, ensure_ascii=False), *lines[1:]]) + "\n")
    bad = runner.invoke(main, ["load", str(tree), "-r", "bastiat"], env=env)
    assert bad.exit_code == 1
    assert f"error: {PETITION}.jsonl: manifest says" in bad.stderr and "1 refused" in bad.stdout
    bad_json = runner.invoke(main, ["load", str(tree), "-r", "bastiat", "--json"], env=env)
    assert bad_json.exit_code == 1
    refused = json.loads(bad_json.stdout)
    assert refused["ok"] is False and refused["refused"] == 1
    assert refused["problems"][0]["path"] == f"{PETITION}.jsonl"
    assert refused["problems"][0]["severity"] == "error"

    status = runner.invoke(main, ["db", "status"], env=env)
    assert status.exit_code == 0, status.output + status.stderr
    out = status.output
    version = migrations.code_version()
    assert (
        "(external)" in out
        and f"schema:    version {version} (this Glossator knows {version})" in out
    )
    # the keyword engine of the server's databases (tests/plugins/db.py)
    keyword = "pg_search" if pg_server.backend == "pg_search" else "postgres-fts"
    assert "bastiat/main: 85 loaded" in out and f"keyword:   {keyword}" in out
    assert ("no pg_search" in out) == (keyword == "postgres-fts")  # the fallback's caveat
    assert "section_summary" in out and "fake/hash-32" in out and "HNSW index" in out
    as_json = runner.invoke(main, ["db", "status", "--json"], env=env)
    data = json.loads(as_json.output)
    assert data["server"]["kind"] == "external" and data["schema_version"] == version
    assert data["keyword_backend"] == keyword and data["kept_data_dirs"] == []
    assert {"repository": "bastiat", "branch": "main", "loaded": 85} in data["files"]
    assert any(r["node_type"] == "section_summary" for r in data["rows"])


def test_load_reports_a_bad_database_url(tmp_path: Path) -> None:
    env = {"GLOSSATOR_DATABASE_URL": "postgresql://nobody@127.0.0.1:1/none"}
    result = CliRunner().invoke(main, ["load", str(tmp_path), "-r", "x"], env=env)
    assert result.exit_code == 1
    assert "cannot connect to" in result.stderr and "GLOSSATOR_DATABASE_URL" in result.stderr


def test_a_command_prints_one_summary_line_and_no_info_log(db_url: str, tmp_path: Path) -> None:
    """As a user runs it (a process of its own, no GLOSSATOR_LOG_LEVEL): WARNING by
    default, so the summary is said once; -v brings the INFO log back."""
    import os
    import subprocess
    import sys

    tree = write_tree(tmp_path / "corpus-repo", example_files())
    glossator = Path(sys.executable).with_name("glossator")
    env = {k: v for k, v in os.environ.items() if not k.startswith("GLOSSATOR_") or "TEST" in k} | {
        "GLOSSATOR_DATABASE_URL": db_url,
        "GLOSSATOR_DATA_DIR": str(tmp_path / "data"),
    }
    quiet = subprocess.run(
        [str(glossator), "load", str(tree), "-r", "bastiat"],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert quiet.returncode == 0, quiet.stderr
    assert quiet.stdout.count("85 files loaded") == 1 and "85 files loaded" not in quiet.stderr
    assert "INFO" not in quiet.stderr, quiet.stderr
    # piped: no progress bar, no control character on either stream
    assert not CONTROL.search(quiet.stdout + quiet.stderr), repr(quiet.stderr)
    loud = subprocess.run(
        [str(glossator), "-v", "load", str(tree), "-r", "bastiat"],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert loud.returncode == 0 and "INFO" in loud.stderr, loud.stderr
    # a refused file: said once on stderr (not again as a log line), exit code 1
    side = tree / (PETITION + ".jsonl")
    side.write_text("{not json\n", encoding="utf-8")
    refused = subprocess.run(
        [str(glossator), "load", str(tree), "-r", "bastiat"],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert refused.returncode == 1, refused.stderr
    assert refused.stderr.count(PETITION) == 1, refused.stderr
    assert refused.stderr.startswith("error: ") and "1 refused" in refused.stdout


def test_load_draws_a_bar_on_a_terminal_only(db_url: str, tmp_path: Path) -> None:
    """A terminal (forced, as rich lets a user force it) gets the bar on stderr; the
    summary line on stdout stays plain, and --json turns the bar off."""
    tree = write_tree(tmp_path / "corpus-repo", example_files())
    env = {"GLOSSATOR_DATABASE_URL": db_url, "GLOSSATOR_DATA_DIR": str(tmp_path / "data")}
    terminal = env | {"TTY_COMPATIBLE": "1", "TERM": "xterm-256color", "COLUMNS": "120"}
    shown = CliRunner().invoke(main, ["load", str(tree), "-r", "bastiat"], env=terminal)
    assert shown.exit_code == 0, shown.output
    assert "loading" in shown.stderr and "85/85" in shown.stderr and "\x1b[" in shown.stderr
    assert shown.stdout.startswith("bastiat/main: 85 files loaded") and "\x1b" not in shown.stdout
    quiet = CliRunner().invoke(main, ["load", str(tree), "-r", "b2", "--json"], env=terminal)
    assert quiet.exit_code == 0 and json.loads(quiet.stdout)["loaded"] == 85
    assert "loading" not in quiet.stderr and "\x1b" not in quiet.stderr
