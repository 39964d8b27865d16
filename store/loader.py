"""Sidecars → rows: make the database equal what the sidecars say, cheaply, after any change.

    sync_files(conn, repository=…, branch=…, source=…, changed=[…], deleted=[…]) -> LoadResult
    store.tree.sync_tree(db_or_conn, repository=…, branch=…, source=…) -> LoadResult

A file's rows are replaced as a unit (DELETE, then one binary COPY, in a savepoint), so
a file that fails keeps its previous rows while the others load; many new files load
in batches (BATCH_ROWS), a failed batch again file by file. A file whose `loaded_files`
record matches its sidecar is skipped; a missing or malformed sidecar is refused and
named in `LoadResult.problems`. The catalogue, the chapter documents and a new model's
HNSW index are kept in the same transaction. The contract in full: docs/loading.md,
"What a load does".
"""

from __future__ import annotations

import functools
import hashlib
import logging
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import psycopg

from core.vocabulary import NODE_TYPES, SIDECAR_SUFFIX
from indexer.corpus.errors import CorpusError, Problem
from indexer.corpus.sidecar_format import Sidecar, loads, validate
from indexer.corpus.source import FileSource
from store import catalogue, vectors
from store.errors import is_outage
from store.landing import PARTIAL

log = logging.getLogger(__name__)

COPY_COLUMNS = (
    ("repository", "text"),
    ("branch", "text"),
    ("level", "int2"),
    ("parent_source_file", "text"),
    ("node_type", "text"),
    ("source_file", "text"),
    ("source_file_hash", "text"),
    ("chunk_index", "int4"),
    ("heading_path", "text"),
    ("content", "text"),
    ("content_token_count", "int4"),
    ("embedding_model", "text"),
    ("embedding", "vector"),
    ("work", "text"),
    ("lang", "text"),
    ("line_start", "int4"),
    ("line_end", "int4"),
)
COPY_SQL = (
    "COPY hierarchical_content_nodes ("
    + ", ".join(c for c, _ in COPY_COLUMNS)
    + ") FROM STDIN (FORMAT BINARY)"
)

Progress = Callable[[str], None]

# pgvector builds an HNSW graph in memory while it fits in maintenance_work_mem, then
# inserts the rest on disk, ~4x slower (its NOTICE "hnsw graph no longer fits into
# maintenance_work_mem after N tuples"). An element took 2,252 bytes at 384 dimensions
# (pgvector 0.8.2, m = 16: 8 MB held 3,725 of them; bench/RESULTS.md): its
# vector, 4 bytes a dimension, and ~700 bytes of neighbour lists; 1,024 leaves a margin.
# store.vectors' 256 MB held ~119,000 such rows, so a 200,000-row first load went on
# disk. The setting is local to the load's transaction and raised only; above the cap
# the build goes on disk (slower, still right) rather than take more of the server's memory.
HNSW_ELEMENT_OVERHEAD = 1024
HNSW_MEMORY_CAP = 1 << 30


@dataclass
class LoadResult:
    """What a sync did. `problems` name each refused file; `ok` is False if any is an error."""

    loaded: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    rows: int = 0
    problems: list[Problem] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return not any(p.severity == "error" for p in self.problems)

    def summary(self) -> str:
        errors = sum(p.severity == "error" for p in self.problems)
        return (
            f"{len(self.loaded)} files loaded ({self.rows} rows), {len(self.skipped)} unchanged, "
            f"{len(self.deleted)} deleted, {errors} refused, in {self.seconds:.2f} s"
        )


@dataclass(frozen=True)
class _Stored:
    source_file_hash: str
    embedding_model: str | None
    sidecar_hash: str
    rows: int


def md_path(path: str) -> str:
    """`X.md` for `X.md` or `X.md.jsonl`."""
    return path[: -len(SIDECAR_SUFFIX)] if path.endswith(".md" + SIDECAR_SUFFIX) else path


def sidecar_path(path: str) -> str:
    return md_path(path) + SIDECAR_SUFFIX


def sidecar_digest(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def stored_files(
    conn: psycopg.Connection, repository: str, branch: str, paths: Iterable[str] | None = None
) -> dict[str, _Stored]:
    """What was loaded for each file (all files of the branch when `paths` is None)."""
    query = (
        "SELECT source_file, source_file_hash, embedding_model, sidecar_hash, chunk_count"
        " FROM loaded_files WHERE repository = %s AND branch = %s"
    )
    params: list[Any] = [repository, branch]
    if paths is not None:
        query += " AND source_file = ANY(%s)"
        params.append(list(paths))
    rows = conn.execute(query, params).fetchall()
    return {r[0]: _Stored(r[1], r[2], r[3], r[4]) for r in rows}


def sync_files(
    conn: psycopg.Connection,
    *,
    repository: str,
    branch: str,
    source: FileSource,
    changed: Iterable[str],
    deleted: Iterable[str],
    progress: Progress | None = None,
    partial: bool = False,
) -> LoadResult:
    """Replace the rows of `changed` files from their sidecars; drop the rows of `deleted`.

    `partial`: sidecars whose vectors are not all computed yet (a job's rows loaded before
    its vectors, store.landing): their records say so, and the next load of the file
    replaces its rows whole, whatever its sidecar."""
    started = time.perf_counter()
    result = LoadResult()
    # other files of the corpus (glossator.toml, images) have no rows: ignored
    changed_md = list(dict.fromkeys(md_path(p) for p in changed if md_path(p).endswith(".md")))
    deleted_md = list(dict.fromkeys(md_path(p) for p in deleted if md_path(p).endswith(".md")))
    load = _Load(conn, repository, branch, source, result, partial=partial)
    with conn.transaction():
        for path in deleted_md:
            if _delete_rows(conn, repository, branch, path, load.removed):
                result.deleted.append(path)
            if progress:
                progress(path)
        stored = stored_files(conn, repository, branch, changed_md)
        # a first load of many files: theirs copied in batches (see _copy_batch)
        batching = sum(p not in stored for p in changed_md) >= BATCH_MIN_FILES
        for path in changed_md:
            if batching and path not in stored:
                _guarded(load, path, functools.partial(load.queue, path))
            else:
                _guarded(load, path, functools.partial(_sync_one, load, path, stored.get(path)))
            if progress:
                progress(path)
        load.flush()
        for model, dimension in load.new_models:  # one build over the rows (store.vectors)
            _hnsw_memory(conn, load.vector_rows.get(model, 0), dimension)
            vectors.create_index(conn, model, dimension)
        # the catalogue and the chapter documents, in the rows' transaction
        deltas = catalogue.Deltas()
        deltas.add(catalogue.loaded_rows(conn, repository, branch, result.loaded))
        deltas.add(((c, n, length) for c, (n, length) in load.removed.by_config.items()), sign=-1)
        catalogue.apply(conn, repository, branch, deltas, [*result.loaded, *result.deleted])
        analyze_if_stale(conn, len(result.loaded) + len(result.deleted))
        for path, rows in load.confirmed:
            result.loaded.append(path)
            result.rows += rows
    result.seconds = time.perf_counter() - started
    log.info("%s/%s: %s", repository, branch, result.summary())
    return result


# A first load of at least BATCH_MIN_FILES new files copies them BATCH_ROWS rows at a time:
# one COPY statement, one savepoint and one INSERT of their loaded_files records for many
# files, instead of one of each per file. pg_search writes a segment per statement into
# its index (mutable_segment_rows = 0, store.pgsearch), so a 200,000-row first load of
# 100-row files wrote ~2,000 segments and merged them as it went; per-file statements
# and savepoints cost the rest (bench/RESULTS.md). A batch that fails (a
# database error, a model's dimension refused) is rolled back to its savepoint and its
# files loaded again one by one, each in its own savepoint: a bad file is reported and
# the others load, as without batches. Edits (files already loaded) stay file by file.
BATCH_MIN_FILES = 8
BATCH_ROWS = 20_000


@dataclass
class _Load:
    """One sync_files call: where it writes, what it did, and the files it has queued."""

    conn: psycopg.Connection
    repository: str
    branch: str
    source: FileSource
    result: LoadResult
    partial: bool = False  # sidecars without all their vectors (store.landing.PARTIAL)
    removed: catalogue.Deltas = field(default_factory=catalogue.Deltas)
    new_models: list[tuple[str, int]] = field(default_factory=list)
    vector_rows: dict[str, int] = field(default_factory=dict)  # rows loaded with each model
    pending: list[tuple[str, str, Sidecar]] = field(default_factory=list)
    pending_rows: int = 0
    # files loaded before their vectors whose rows turned out equal to their sidecar:
    # only their record changed (`_confirm`); loaded, but nothing for the catalogue
    confirmed: list[tuple[str, int]] = field(default_factory=list)

    def loaded(self, path: str, sidecar: Sidecar, rows: int, new_model: bool) -> None:
        m = sidecar.manifest
        self.result.loaded.append(path)
        self.result.rows += rows
        if m.embedding_model is not None:
            self.vector_rows[m.embedding_model] = self.vector_rows.get(m.embedding_model, 0) + rows
        if new_model:
            self.new_models.append((str(m.embedding_model), int(m.dimension or 0)))

    def queue(self, path: str) -> None:
        """A new file's sidecar read and checked, its rows left for the next batch."""
        read = _read_sidecar(self.source, path, self.partial)
        if read is None:
            return
        self.pending.append((path, *read))
        self.pending_rows += len(read[1].chunks)
        if self.pending_rows >= BATCH_ROWS:
            self.flush()

    def flush(self) -> None:
        batch, self.pending, self.pending_rows = self.pending, [], 0
        if not batch:
            return
        try:
            with self.conn.transaction():  # a savepoint: all of the batch or none of it
                news = _copy_batch(self, batch)
        except (psycopg.Error, CorpusError) as e:
            log.info("a batch of %d files failed (%s), loading them one by one", len(batch), e)
            for path, _, _ in batch:
                _guarded(self, path, functools.partial(_sync_one, self, path, None))
            return
        for (path, _, sidecar), new_model in zip(batch, news, strict=True):
            self.loaded(path, sidecar, len(sidecar.chunks), new_model)


def _guarded(load: _Load, path: str, work: Callable[[], None]) -> None:
    """Run one file's work; a refused file is a problem of the result, its rows kept."""
    result = load.result
    try:
        work()
    except CorpusError as e:
        # INFO, not WARNING: each problem is returned and reported by the caller
        # (`glossator load` one line, the worker the job's problems); a warning
        # here printed every refused file twice on a command's stderr
        result.problems.append(Problem.from_error(e))
        log.info("not loaded, previous rows kept: %s", e)
    except OSError as e:
        message = f"cannot read its sidecar ({type(e).__name__}: {e.strerror or e})"
        result.problems.append(Problem(sidecar_path(path), message))
        log.info("not loaded, previous rows kept: %s: %s", path, message)
    except psycopg.Error as e:
        if is_outage(e):
            # not this file's fault, and every other file would meet it too (a
            # full disk would make each file a problem and the job "done, loaded 0"): the job
            # fails with the failure's sentence (store.errors.describe_failure)
            raise
        # the savepoint rolled back: this file keeps its previous rows
        message = f"the database refused this file ({type(e).__name__}: {e.sqlstate})"
        result.problems.append(Problem(path, message))
        log.info("not loaded, previous rows kept: %s: %s", path, message)


def _read_sidecar(
    source: FileSource, path: str, partial: bool = False
) -> tuple[str, Sidecar] | None:
    """The file's sidecar (its digest, parsed and checked); None when both it and its `.md`
    are gone (a deletion). `partial`: the digest marked, so that no sidecar equals it."""
    side = sidecar_path(path)
    if not source.exists(side):
        if not source.exists(path):
            return None
        raise CorpusError(side, "sidecar is missing: run `glossator index` to generate it")
    data = source.read(side)
    sidecar = loads(side, data)
    _check(side, path, sidecar, source, partial)
    digest = sidecar_digest(data)
    return (PARTIAL + digest if partial else digest), sidecar


def _copy_batch(load: _Load, batch: list[tuple[str, str, Sidecar]]) -> list[bool]:
    """New files' rows in one COPY and their records in one INSERT (the caller's savepoint);
    for each file, whether its model was new."""
    conn = load.conn
    news = []
    for path, _, sidecar in batch:
        m = sidecar.manifest
        news.append(
            m.embedding_model is not None
            and bool(m.dimension)
            and vectors.register(
                conn, m.embedding_model, int(m.dimension or 0), path=sidecar_path(path)
            )
        )
    with conn.cursor() as cur, cur.copy(COPY_SQL) as copy:
        copy.set_types([t for _, t in COPY_COLUMNS])
        for path, _, sidecar in batch:
            _write_rows(copy, load.repository, load.branch, path, sidecar)
    with conn.cursor() as cur:
        cur.executemany(
            "INSERT INTO loaded_files (repository, branch, source_file, source_file_hash,"
            " sidecar_hash, embedding_model, chunk_count) VALUES (%s, %s, %s, %s, %s, %s, %s)",
            [
                (
                    load.repository,
                    load.branch,
                    path,
                    s.manifest.source_file_hash,
                    digest,
                    s.manifest.embedding_model,
                    len(s.chunks),
                )
                for path, digest, s in batch
            ],
        )
    return news


def _sync_one(load: _Load, path: str, stored: _Stored | None) -> None:
    conn, repository, branch = load.conn, load.repository, load.branch
    # what this file's DELETE drops counts once its savepoint holds
    dropped = catalogue.Deltas()
    read = _read_sidecar(load.source, path, load.partial)
    if read is None:  # both gone: the file was deleted
        if stored is not None:
            with conn.transaction():
                _delete_rows(conn, repository, branch, path, dropped)
            load.removed.merge(dropped)
            load.result.deleted.append(path)
        return
    digest, sidecar = read
    m = sidecar.manifest
    if (
        stored is not None
        and stored.sidecar_hash == digest
        and stored.source_file_hash == m.source_file_hash
        and stored.embedding_model == m.embedding_model
        and stored.rows == m.chunk_count
    ):
        load.result.skipped.append(path)
        return
    if (
        stored is not None
        and stored.sidecar_hash.startswith(PARTIAL)
        and not load.partial
        and stored.source_file_hash == m.source_file_hash
        and stored.embedding_model == m.embedding_model
        and stored.rows == len(sidecar.chunks)
        and _confirm(load, path, digest, sidecar)
    ):
        return
    new_model = False
    with conn.transaction():  # a savepoint: on any error this file keeps its previous rows
        if m.embedding_model is not None and m.dimension:
            new_model = vectors.register(
                conn, m.embedding_model, int(m.dimension), path=sidecar_path(path)
            )
        # rows exist only beside their loaded_files record (same savepoint); skipping the
        # DELETE for a new file matters on a first load into an unanalysed table, where
        # the planner may scan the whole branch for each file
        if stored is not None:
            _delete_rows(conn, repository, branch, path, dropped)
        rows = _copy_rows(conn, repository, branch, path, sidecar)
        conn.execute(
            "INSERT INTO loaded_files (repository, branch, source_file, source_file_hash,"
            " sidecar_hash, embedding_model, chunk_count) VALUES (%s, %s, %s, %s, %s, %s, %s)",
            (repository, branch, path, m.source_file_hash, digest, m.embedding_model, rows),
        )
    load.removed.merge(dropped)
    load.loaded(path, sidecar, rows, new_model)


def _confirm(load: _Load, path: str, digest: str, sidecar: Sidecar) -> bool:
    """A file loaded before its vectors (store.landing) whose rows now hold exactly its
    sidecar's chunks, texts and vectors (as float4: the sidecar's rounding, which the
    landed vectors have): its record takes the sidecar's digest, and its rows stay —
    the second write of every row and of its vector into the indexes is saved. False
    when anything differs: the file is loaded whole, as any other."""
    import numpy as np  # as in _write_rows

    conn = load.conn
    rows = conn.execute(
        "SELECT chunk_index, content, content_token_count, heading_path, parent_source_file,"
        " level, node_type, work, lang, line_start, line_end, embedding_model,"
        " embedding::real[] FROM hierarchical_content_nodes"
        " WHERE repository = %s AND branch = %s AND source_file = %s ORDER BY chunk_index",
        (load.repository, load.branch, path),
    ).fetchall()
    m = sidecar.manifest
    work, lang = work_of(path, sidecar), str(m.extra.get("lang") or "fr")
    if len(rows) != len(sidecar.chunks):
        return False
    for row, c in zip(rows, sidecar.chunks, strict=True):
        *columns, vector = row
        model = m.embedding_model if c.embedding is not None else None
        if tuple(columns) != (
            c.chunk_index,
            c.text,
            c.content_token_count,
            m.heading_path,
            m.parent_source_file,
            m.level,
            m.node_type,
            work,
            lang,
            c.line_start,
            c.line_end,
            model,
        ):
            return False
        if (vector is None) != (c.embedding is None):
            return False
        if vector is not None and not np.array_equal(
            np.asarray(vector, dtype=np.float32), np.asarray(c.embedding, dtype=np.float32)
        ):
            return False
    conn.execute(
        "UPDATE loaded_files SET sidecar_hash = %s, loaded_at = now()"
        " WHERE repository = %s AND branch = %s AND source_file = %s",
        (digest, load.repository, load.branch, path),
    )
    load.confirmed.append((path, len(rows)))
    return True


def _check(
    side: str, path: str, sidecar: Sidecar, source: FileSource, partial: bool = False
) -> None:
    validate(side, sidecar, partial)
    m = sidecar.manifest
    if m.source_file != path:
        raise CorpusError(
            side, f"manifest names source_file {m.source_file!r}, expected {path!r}; regenerate it"
        )
    if m.node_type not in NODE_TYPES or not 0 <= m.level <= 3:
        raise CorpusError(side, f"unknown node_type {m.node_type!r} or level {m.level}")
    if m.embedding_model is not None and not m.dimension:
        raise CorpusError(side, "manifest names an embedding model but no dimension")
    parent = m.parent_source_file
    if parent and not source.exists(sidecar_path(parent)):
        raise CorpusError(
            side,
            f"its parent_source_file {parent} has no sidecar ({sidecar_path(parent)}): "
            "index the parent too (`glossator index`) before loading",
        )


def _delete_rows(
    conn: psycopg.Connection,
    repository: str,
    branch: str,
    path: str,
    removed: catalogue.Deltas,
) -> bool:
    """Drop a file's rows (counted into `removed`) and its `loaded_files` record; True
    if it had been loaded."""
    removed.add(catalogue.delete_rows(conn, repository, branch, path))
    cur = conn.execute(
        "DELETE FROM loaded_files WHERE repository = %s AND branch = %s AND source_file = %s",
        (repository, branch, path),
    )
    return cur.rowcount > 0


def _hnsw_memory(conn: psycopg.Connection, rows: int, dimension: int) -> None:
    """Raise maintenance_work_mem, for the rest of the transaction, to what an HNSW graph
    of `rows` vectors needs in memory (HNSW_ELEMENT_OVERHEAD), at most HNSW_MEMORY_CAP."""
    wanted = min(HNSW_MEMORY_CAP, rows * (4 * dimension + HNSW_ELEMENT_OVERHEAD))
    conn.execute(
        "SELECT set_config('maintenance_work_mem', %(kb)s || 'kB', true)"
        " WHERE pg_size_bytes(current_setting('maintenance_work_mem')) < %(bytes)s",
        {"kb": str(wanted // 1024), "bytes": wanted},
    )


def analyze_if_stale(conn: psycopg.Connection, files: int) -> None:
    """ANALYZE after a load that changed a good part of the corpus (as autovacuum
    would, a minute later; the first searches after a first load would otherwise be
    planned on empty-table estimates: sequential scans where an index is right). A
    small edit does not pay for it. The chapter documents count the files seen.
    """
    if files <= 0:
        return
    row = conn.execute(
        "SELECT reltuples FROM pg_class WHERE oid = 'chapter_documents'::regclass"
    ).fetchone()
    known = float(row[0]) if row else -1.0  # -1: never analysed
    if known < 0 or files > 5 + 0.1 * known:
        conn.execute("ANALYZE hierarchical_content_nodes, chapter_documents, branch_languages")


def work_of(path: str, sidecar: Sidecar) -> str:
    """The work a file belongs to: the manifest's `work`, else `corpus/<work>/…`."""
    work = sidecar.manifest.extra.get("work")
    if isinstance(work, str) and work:
        return work
    parts = path.split("/")
    return parts[1] if len(parts) > 2 and parts[0] == "corpus" else parts[0]


def _copy_rows(
    conn: psycopg.Connection,
    repository: str,
    branch: str,
    path: str,
    sidecar: Sidecar,
) -> int:
    """One binary COPY of the file's chunks; vectors through pgvector's binary dumper."""
    with conn.cursor() as cur, cur.copy(COPY_SQL) as copy:
        copy.set_types([t for _, t in COPY_COLUMNS])
        _write_rows(copy, repository, branch, path, sidecar)
    return len(sidecar.chunks)


def _write_rows(copy: Any, repository: str, branch: str, path: str, sidecar: Sidecar) -> None:
    """The file's chunks as rows of an open binary COPY (COPY_COLUMNS)."""
    import numpy as np  # here: a delete (`store.removal`) loads no rows and needs none

    m = sidecar.manifest
    work = work_of(path, sidecar)
    lang = str(m.extra.get("lang") or "fr")
    for c in sidecar.chunks:
        embedding = np.asarray(c.embedding, dtype=np.float32) if c.embedding is not None else None
        copy.write_row(
            (
                repository,
                branch,
                m.level,
                m.parent_source_file,
                m.node_type,
                path,
                m.source_file_hash,
                c.chunk_index,
                m.heading_path,
                c.text,
                c.content_token_count,
                m.embedding_model if embedding is not None else None,
                embedding,
                work,
                lang,
                c.line_start,
                c.line_end,
            )
        )
