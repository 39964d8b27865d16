"""`glossator search` and `glossator eval` against the loaded test database."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from glossator.cli import main
from tests.plugins.search import HACHES, PETITION

# the store and search suite runs on both keyword backends (tests/plugins/db.py)
pytestmark = pytest.mark.pg_backends("postgres", "pg_search")


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
    assert "index bastiat@main: unknown" in r.output  # freshness stated, not guessed


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
    # an unknown work is an error too, with the same exit code, not an empty page
    for mode in ("bm25", "hybrid"):
        r = run(["search", "soleil", "--mode", mode, "--work", "nosuch"], search_db_url, tmp_path)
        assert r.exit_code == 1, r.output
        assert "no work named 'nosuch'" in r.output and "sophismes-economiques" in r.output
    # a known work that holds no match still answers "No hit", exit 0
    r = run(
        ["search", "zzzxq", "--mode", "bm25", "--work", "sophismes-economiques"],
        search_db_url,
        tmp_path,
    )
    assert r.exit_code == 0 and "No hit" in r.output, r.output


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
    out = json.loads(r.output)
    assert list(out) == ["all"]  # no split in the file: one table
    reports = {m["name"]: m for m in out["all"]}
    agents = "hybrid, ≤1/chapter (agents)"
    assert set(reports) == {"bm25", "vector", "hybrid", agents}  # no reranker configured
    assert reports["hybrid"]["n"] == 2 and reports["hybrid"]["mrr"] == 1.0
    assert reports["hybrid"]["paraphrase_mrr"] is None  # no paraphrase in this file
    r = run(["eval", str(queries), "--by-kind"], search_db_url, tmp_path)
    assert r.exit_code == 0 and "MRR@10" in r.output and "example (2)" in r.output
    # --misses: the queries agents' hybrid gets wrong (none here), in JSON and as a table
    r = run(["eval", str(queries), "--json", "--misses"], search_db_url, tmp_path)
    assert r.exit_code == 0, r.output
    assert json.loads(r.output)["misses"] == {"all": {"mode": agents, "queries": []}}
    wrong = tmp_path / "wrong.jsonl"
    wrong.write_text(
        json.dumps({"query": "des haches émoussées", "relevant": [f"{PETITION}/source.md"]}),
        "utf-8",
    )
    r = run(["eval", str(wrong), "--json", "--misses"], search_db_url, tmp_path)
    (miss,) = json.loads(r.output)["misses"]["all"]["queries"]
    assert miss["query"] == "des haches émoussées" and miss["first"] != 1 and miss["relevant"] == 1
    assert miss["top"][0] == HACHES.split("/", 2)[2]  # the chapter it found instead
    r = run(["eval", str(wrong), "--misses"], search_db_url, tmp_path)
    assert r.exit_code == 0 and "1 of 1 queries missed something" in r.output
    r = run(["eval", str(queries), "--json"], search_db_url, tmp_path, GLOSSATOR_RERANKER="fake")
    assert [m["name"] for m in json.loads(r.output)["all"]] == [
        "bm25",
        "vector",
        "hybrid",
        agents,
        "hybrid+rerank",
    ]


def test_eval_reports_each_half_of_a_split_query_file(search_db_url, tmp_path):
    queries = tmp_path / "q.jsonl"
    lines = [
        {
            "query": "une industrie demande qu'on la défende contre un rival gratuit",
            "relevant": [f"{PETITION}/source.md"],
            "kind": "paraphrase",
            "split": "tune",
        },
        {
            "query": "des haches émoussées",
            "relevant": [f"{HACHES}/source.md"],
            "kind": "example",
            "split": "test",
        },
    ]
    queries.write_text("\n".join(json.dumps(x, ensure_ascii=False) for x in lines), "utf-8")
    r = run(["eval", str(queries), "--json", "--rrf-k", "10"], search_db_url, tmp_path)
    assert r.exit_code == 0, r.output
    out = json.loads(r.output)
    assert list(out) == ["tune", "test"]
    assert all(m["n"] == 1 for half in out.values() for m in half)
    assert out["tune"][2]["paraphrase_mrr"] is not None and out["test"][2]["paraphrase_mrr"] is None
    r = run(["eval", str(queries), "--split", "test"], search_db_url, tmp_path)
    assert r.exit_code == 0 and "test: 1 queries" in r.output and "tune" not in r.output
    r = run(["eval", str(queries), "--json", "--max-per-chapter", "1"], search_db_url, tmp_path)
    assert [m["name"] for m in json.loads(r.output)["test"]] == ["bm25", "vector", "hybrid"]


def test_search_shares_the_embedded_database_a_running_server_owns(private_dir):
    """`glossator serve` holds the data dir's embedded PostgreSQL: `glossator search`
    and `glossator mcp` attach to it through the lock file instead of failing."""
    tmp_path = private_dir  # its embedded PostgreSQL: outside pytest's tmp root (private_dir)
    from glossator.settings import Settings
    from glossator.wiring import database

    owner = database(Settings.from_env({}).replace(data_dir=tmp_path / "data")).start()
    try:
        env = {"GLOSSATOR_DATA_DIR": str(tmp_path / "data"), "GLOSSATOR_LOG_LEVEL": "WARNING"}
        r = CliRunner().invoke(main, ["search", "soleil", "--mode", "bm25"], env=env)
        assert r.exit_code == 0, r.output
        assert 'No hit for "soleil" (bm25)' in r.output
    finally:
        owner.stop()


def test_eval_judges_the_context_gate_on_foreign_questions(search_db_url, tmp_path):
    """--foreign: one context pack per question, each verdict counted per kind of
    question, and the precision and recall of `found` computed from those counts."""
    queries = tmp_path / "q.jsonl"
    lines = [
        {
            "query": "la pétition des fabricants de chandelles",
            "relevant": [f"{PETITION}/source.md"],
        },
        {"query": "des haches émoussées", "relevant": [f"{HACHES}/source.md"]},
    ]
    queries.write_text("\n".join(json.dumps(x, ensure_ascii=False) for x in lines), "utf-8")
    foreign = tmp_path / "foreign.jsonl"
    far = [
        {"query": "horaires d'ouverture de la mairie le samedi", "kind": "everyday"},
        {"query": "réinitialiser le mot de passe d'un routeur wifi", "kind": "everyday"},
        {"query": "la Banque centrale européenne relève ses taux directeurs", "kind": "near"},
    ]
    foreign.write_text("\n".join(json.dumps(x, ensure_ascii=False) for x in far), "utf-8")
    r = run(["eval", str(queries), "--foreign", str(foreign), "--json"], search_db_url, tmp_path)
    assert r.exit_code == 0, r.output
    gate = json.loads(r.output)["gate"]["all"]
    print(json.dumps(gate, indent=1))  # the margins, for the log
    assert gate["on_topic"]["n"] == 2 and set(gate["foreign"]) == {"everyday", "near"}
    assert gate["foreign"]["everyday"]["n"] == 2 and gate["foreign"]["near"]["n"] == 1
    for shares in (gate["on_topic"], *gate["foreign"].values()):
        total = sum(shares[v] for v in ("relevant", "uncertain", "nothing relevant", "other"))
        assert total == pytest.approx(1.0)
    found_on, found_off = gate["found_on_topic"], gate["found_foreign"]
    assert found_on == round(gate["on_topic"]["relevant"] * 2)
    assert gate["recall"] == found_on / 2
    assert gate["precision"] == (
        found_on / (found_on + found_off) if found_on + found_off else None
    )
    assert gate["found_holding"] <= found_on
    # the table: one row per kind, the flag's figures in its title
    r = run(["eval", str(queries), "--foreign", str(foreign)], search_db_url, tmp_path)
    assert r.exit_code == 0, r.output
    assert "context gate, precision of found" in r.output and "recall" in r.output
    assert "foreign, everyday" in r.output and "foreign, near" in r.output
    # no --foreign: no gate (and no context pack made)
    r = run(["eval", str(queries), "--json"], search_db_url, tmp_path)
    assert "gate" not in json.loads(r.output)


def test_eval_refuses_a_bad_foreign_file(search_db_url, tmp_path):
    queries = tmp_path / "q.jsonl"
    queries.write_text(json.dumps({"query": "x", "relevant": [f"{HACHES}/source.md"]}), "utf-8")
    for text, said in (
        ("{not json", "not valid JSON"),
        (json.dumps({"kind": "near"}), 'expected {"query"'),
        (json.dumps({"query": "x", "relevant": ["a.md"]}), "names no relevant item"),
        ("", "no queries"),
    ):
        bad = tmp_path / "bad.jsonl"
        bad.write_text(text, "utf-8")
        r = run(["eval", str(queries), "--foreign", str(bad)], search_db_url, tmp_path)
        assert r.exit_code == 1, r.output
        assert said in r.output and "Traceback" not in r.output, r.output
