"""`glossator search` and `glossator eval` against the loaded test database."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from glossator.cli import main
from tests.plugins.search import HACHES, PETITION


def run(args: list[str], db_url: str, tmp_path: Path, **extra: str):
    env = {
        "GLOSSATOR_DATABASE_URL": db_url,
        "GLOSSATOR_DATA_DIR": str(tmp_path / "data"),
        "GLOSSATOR_LOG_LEVEL": "WARNING",
        **extra,
    }
    return CliRunner().invoke(main, args, env=env, catch_exceptions=False)


def test_search_prints_citations_and_scores(search_db_url, tmp_path):
    r = run(["search", "chandelles soleil", "--mode", "bm25", "--k", "3"], search_db_url, tmp_path)
    assert r.exit_code == 0, r.output
    assert " 1. Sophismes économiques > Première série > Chapitre VII" in r.output
    assert f"bastiat:{PETITION}/source.md#" in r.output
    assert "bm25 " in r.output and "rerank: disabled" in r.output


def test_search_json_and_filters(search_db_url, tmp_path):
    r = run(
        ["search", "la hache du charpentier", "--level", "0", "--k", "2", "--json"],
        search_db_url,
        tmp_path,
    )
    assert r.exit_code == 0, r.output
    data = json.loads(r.output)
    assert data["mode"] == "hybrid" and len(data["hits"]) == 2
    assert data["hits"][0]["citation"]["source_file"] == f"{HACHES}/source.md"
    assert all(h["level"] == 0 for h in data["hits"])


def test_search_errors_are_one_line(search_db_url, tmp_path):
    r = run(["search", "soleil", "--mode", "bm25", "--repository", "nope"], search_db_url, tmp_path)
    assert r.exit_code == 1
    assert "no repository named 'nope'" in r.output and "Traceback" not in r.output


def test_eval_prints_each_mode(search_db_url, tmp_path):
    queries = tmp_path / "q.jsonl"
    lines = [
        {
            "query": "pétition contre la lumière du soleil",
            "relevant": [f"{PETITION}/source.md"],
            "kind": "example",
        },
        {"query": "des haches émoussées", "relevant": [f"{HACHES}/source.md"], "kind": "example"},
    ]
    queries.write_text("\n".join(json.dumps(x, ensure_ascii=False) for x in lines), "utf-8")
    r = run(["eval", str(queries), "--json"], search_db_url, tmp_path)
    assert r.exit_code == 0, r.output
    reports = {m["name"]: m for m in json.loads(r.output)}
    assert set(reports) == {"bm25", "vector", "hybrid"}  # no reranker configured
    assert reports["hybrid"]["n"] == 2 and reports["hybrid"]["mrr"] == 1.0
    r = run(["eval", str(queries), "--by-kind"], search_db_url, tmp_path)
    assert r.exit_code == 0 and "MRR@10" in r.output and "example (2)" in r.output
    r = run(["eval", str(queries), "--json"], search_db_url, tmp_path, GLOSSATOR_RERANKER="fake")
    assert [m["name"] for m in json.loads(r.output)] == [
        "bm25",
        "vector",
        "hybrid",
        "hybrid+rerank",
    ]


def test_search_shares_the_embedded_database_a_running_server_owns(tmp_path):
    """`glossator serve` holds the data dir's embedded PostgreSQL: `glossator search`
    and `glossator mcp` attach to it through the lock file instead of failing."""
    from glossator.settings import Settings
    from store.db import Database

    owner = Database(Settings.from_env({}).replace(data_dir=tmp_path / "data")).start()
    try:
        env = {"GLOSSATOR_DATA_DIR": str(tmp_path / "data"), "GLOSSATOR_LOG_LEVEL": "WARNING"}
        r = CliRunner().invoke(main, ["search", "soleil", "--mode", "bm25"], env=env)
        assert r.exit_code == 0, r.output
        assert "No hit for « soleil » (bm25)" in r.output
    finally:
        owner.stop()
