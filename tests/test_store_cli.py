"""`glossator load` and `glossator db status` through the real CLI and a real PostgreSQL."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from glossator.cli import main
from store import migrations
from tests.store_sidecars import PETITION, example_files


def write_tree(root: Path, files: dict[str, bytes]) -> Path:
    for rel, data in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(data)
    return root


def test_load_then_status(db_url: str, tmp_path: Path) -> None:
    tree = write_tree(tmp_path / "corpus-repo", example_files())
    env = {"GLOSSATOR_DATABASE_URL": db_url, "GLOSSATOR_DATA_DIR": str(tmp_path / "data")}
    runner = CliRunner()
    first = runner.invoke(main, ["load", str(tree), "--repository", "bastiat"], env=env)
    assert first.exit_code == 0, first.output + first.stderr
    assert "bastiat/main: 85 files loaded (" in first.stderr and "0 refused" in first.stderr

    again = runner.invoke(main, ["load", str(tree), "-r", "bastiat"], env=env)
    assert again.exit_code == 0 and "0 files loaded (0 rows), 85 unchanged" in again.stderr

    # a sidecar whose manifest lies about its chunk count: named, exit code 1, rows kept
    side = tree / (PETITION + ".jsonl")
    lines = side.read_text().splitlines()
    head = json.loads(lines[0])
    head["chunk_count"] += 1
    side.write_text("\n".join([json.dumps(head, ensure_ascii=False), *lines[1:]]) + "\n")
    bad = runner.invoke(main, ["load", str(tree), "-r", "bastiat"], env=env)
    assert bad.exit_code == 1
    assert f"error: {PETITION}.jsonl: manifest says" in bad.stderr and "1 refused" in bad.stderr

    status = runner.invoke(main, ["db", "status"], env=env)
    assert status.exit_code == 0, status.output + status.stderr
    out = status.output
    version = migrations.code_version()
    assert (
        "(external)" in out
        and f"schema:    version {version} (this Glossator knows {version})" in out
    )
    assert "bastiat/main: 85 loaded" in out and "keyword:   sql-bm25" in out
    assert "section_summary" in out and "fake/hash-32" in out and "HNSW index" in out


def test_load_reports_a_bad_database_url(tmp_path: Path) -> None:
    env = {"GLOSSATOR_DATABASE_URL": "postgresql://nobody@127.0.0.1:1/none"}
    result = CliRunner().invoke(main, ["load", str(tmp_path), "-r", "x"], env=env)
    assert result.exit_code == 1
    assert "cannot connect to" in result.stderr and "GLOSSATOR_DATABASE_URL" in result.stderr
