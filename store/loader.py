"""Sidecars → rows: make the database equal what the sidecars say, cheaply, after any change.

    sync_files(conn, repository=…, branch=…, source=…, changed=[…], deleted=[…]) -> LoadResult
    sync_tree(db_or_conn, repository=…, branch=…, source=…) -> LoadResult

Paths name the Markdown files (`corpus/…/source.md`); a sidecar path
(`…/source.md.jsonl`) is accepted too and means its `.md`; other paths are
ignored. The rows of a file
are replaced as a unit: DELETE its rows, then one binary COPY of its chunks,
inside a savepoint, so a file that fails (a bad sidecar, a database error)
keeps its previous rows while the others load. `sync_files` runs inside the
caller's transaction when one is open (the push job commits the rows with its
`indexed_commits` record) and in its own transaction otherwise.

Each loaded file has a `loaded_files` record (written in the same savepoint as
its rows, so it exists exactly when the rows do, even for a file with no
chunks). A file is skipped when that record holds the sidecar's
`source_file_hash`, `embedding_model`, chunk count and the sha256 of the
sidecar itself: a new model is seen even when the text is unchanged, and the
digest catches a new heading path or parent whose `.md` is unchanged. A file is
refused, named in `LoadResult.problems`, when its sidecar is missing or
malformed, its chunk count disagrees with the manifest, a vector has the wrong
dimension, or its `parent_source_file` has no sidecar.

tsv, doc_len and ts_config are computed by the database (migrations 002-003),
the BM25 corpus statistics follow in the same transaction, and a model's
first rows get its HNSW index at the end of the batch (store.vectors).

Bulk loads. The term indexes BM25 reads (bm25_row_terms, the chapter index) are
kept by statement triggers, file by file. A load that writes at least half of
the branch's files (a first load, a model change, a whole tree reloaded:
`bulk_load`) sets `glossator.bulk_load` for its transaction instead: the add
triggers skip, and after the last COPY either one call of `glossator_bulk_index`
writes the entries of every file loaded, sorted (migration 013), or, when the
branch holds at least as many rows as all other branches together,
`glossator_bulk_rebuild` builds the term tables anew with their indexes made
after the entries (migration 024: about twice as fast; searches read the old
tables meanwhile, other writers wait for the commit). Same entries, same
scores; a push of a few files stays incremental. `bulk=True/False` forces it.
"""

from __future__ import annotations

import hashlib
import logging
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import psycopg

from core.vocabulary import DEFAULT_BRANCH, NODE_TYPES, SIDECAR_SUFFIX
from indexer.errors import CorpusError, Problem
from indexer.sidecar import Sidecar, loads, validate
from indexer.source import FileSource
from store import vectors

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


@dataclass
class LoadResult:
    """What a sync did. `problems` name each refused file; `ok` is False if any is an error."""

    loaded: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    rows: int = 0
    problems: list[Problem] = field(default_factory=list)
    seconds: float = 0.0
    bulk: bool = False  # the term indexes were built once at the end (see the module doc)
    rebuilt: bool = False  # ...as new term tables (the branch holds most rows: migration 024)

    @property
    def ok(self) -> bool:
        return not any(p.severity == "error" for p in self.problems)

    def summary(self) -> str:
        errors = sum(p.severity == "error" for p in self.problems)
        return (
            f"{len(self.loaded)} files loaded ({self.rows} rows), {len(self.skipped)} unchanged, "
            f"{len(self.deleted)} deleted, {errors} refused, in {self.seconds:.2f} s"
            + (" (bulk, term tables rebuilt)" if self.rebuilt else " (bulk)" if self.bulk else "")
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


def _sha256(data: bytes) -> str:
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
    bulk: bool | None = None,
    rebuild: bool | None = None,
) -> LoadResult:
    """Replace the rows of `changed` files from their sidecars; drop the rows of `deleted`.

    `bulk`: build the term indexes once at the end (None: when `bulk_load` says so).
    `rebuild`: a bulk load builds new term tables (None: when the branch holds at
    least half the rows; False: never, the entries are inserted).
    """
    started = time.perf_counter()
    result = LoadResult()
    # other files of the corpus (glossator.toml, images) have no rows: ignored
    changed_md = list(dict.fromkeys(md_path(p) for p in changed if md_path(p).endswith(".md")))
    deleted_md = list(dict.fromkeys(md_path(p) for p in deleted if md_path(p).endswith(".md")))
    with conn.transaction():
        for path in deleted_md:
            if _delete_rows(conn, repository, branch, path):
                result.deleted.append(path)
            if progress:
                progress(path)
        stored = stored_files(conn, repository, branch, changed_md)
        if bulk is None:
            bulk = bulk_load(conn, repository, branch, len(changed_md))
        result.bulk = bulk
        if bulk:  # transaction-local: a failure rolls it back with the rest
            conn.execute("SELECT set_config('glossator.bulk_load', 'on', true)")
        new_models: list[tuple[str, int]] = []
        for path in changed_md:
            try:
                _sync_one(
                    conn, repository, branch, source, path, stored.get(path), result, new_models
                )
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
                # the savepoint rolled back: this file keeps its previous rows
                message = f"the database refused this file ({type(e).__name__}: {e.sqlstate})"
                result.problems.append(Problem(path, message))
                log.info("not loaded, previous rows kept: %s: %s", path, message)
            if progress:
                progress(path)
        for model, dimension in new_models:  # one build over the batch's rows (store.vectors)
            vectors.create_index(conn, model, dimension)
        rebuilt = False
        if bulk:  # last: a rebuild holds the term tables from its end until the commit
            conn.execute("SELECT set_config('glossator.bulk_load', 'off', true)")
            if result.loaded:
                rebuilt = _write_bulk_entries(conn, repository, branch, result.loaded, rebuild)
        result.rebuilt = rebuilt
        if rebuilt:  # new term tables: no statistics yet
            conn.execute(ANALYZE_SQL)
        else:
            _analyze_if_stale(conn, len(result.loaded) + len(result.deleted))
    result.seconds = time.perf_counter() - started
    log.info("%s/%s: %s", repository, branch, result.summary())
    return result


def _write_bulk_entries(
    conn: psycopg.Connection,
    repository: str,
    branch: str,
    loaded: list[str],
    rebuild: bool | None = None,
) -> bool:
    """The term entries the add triggers skipped; True when the term tables were rebuilt.

    Rebuilt (migration 024: new tables, their indexes built after the entries) when the
    branch holds at least as many rows as every other branch together, so that copying
    the others' entries costs at most what the load's own do; otherwise inserted into
    the tables as they are (migration 013).
    """
    row = conn.execute(
        "SELECT coalesce(sum(chunk_count) FILTER (WHERE repository = %s AND branch = %s), 0),"
        " coalesce(sum(chunk_count) FILTER (WHERE repository <> %s OR branch <> %s), 0)"
        " FROM loaded_files",
        (repository, branch, repository, branch),
    ).fetchone()
    mine, others = (int(row[0]), int(row[1])) if row else (0, 0)
    if rebuild if rebuild is not None else mine >= others:
        try:
            with conn.transaction():  # a savepoint: on a deadlock, the entries go in as below
                conn.execute(
                    "SELECT glossator_bulk_chapters(%s, %s, %s)", (repository, branch, loaded)
                )
                conn.execute("SELECT glossator_bulk_rebuild(%s, %s)", (repository, branch))
            return True
        except psycopg.errors.DeadlockDetected:
            # Two rebuilds at once (each had written into the tables, each wants them
            # shared): PostgreSQL chose this one to give way; the other goes on.
            log.info(
                "%s/%s: term tables busy with another bulk load; entries inserted",
                repository,
                branch,
            )
    conn.execute("SELECT glossator_bulk_index(%s, %s, %s)", (repository, branch, loaded))
    return False


# A rebuild writes the entries of the loaded files only, the deltas the same entries
# one statement per file: bulk is never more work, it pays once the files are many.
# Half the branch covers what the issue names (first load, model change, whole tree)
# and leaves a push of some files on the incremental path it was tested on.
BULK_SHARE = 0.5


def bulk_load(conn: psycopg.Connection, repository: str, branch: str, changed: int) -> bool:
    """Whether loading `changed` files into the branch is a bulk load (see the module doc)."""
    if changed == 0:
        return False
    row = conn.execute(
        "SELECT count(*) FROM loaded_files WHERE repository = %s AND branch = %s",
        (repository, branch),
    ).fetchone()
    have = int(row[0]) if row else 0
    return changed >= BULK_SHARE * max(have, changed)


# After a big load: the rows' table (the BM25, vector and context queries are planned on
# its statistics) and the chapter index's two tables (migration 011).
ANALYZE_SQL = (
    "ANALYZE hierarchical_content_nodes, bm25_chapters, bm25_chapter_terms, bm25_row_terms"
)


def _analyze_if_stale(conn: psycopg.Connection, files: int) -> None:
    """ANALYZE after a load that changed a good part of the corpus (as autovacuum
    would, a minute later; the first searches after a first load would otherwise be
    planned on empty-table estimates: a scan of every chapter term where a primary-key
    lookup is right, 20 ms instead of 1 ms for the chapter BM25 on the example, and
    sequential scans where the GIN index is right). A small edit does not pay for it.
    """
    if files <= 0:
        return
    row = conn.execute(
        "SELECT reltuples FROM pg_class WHERE oid = 'bm25_chapters'::regclass"
    ).fetchone()
    known = float(row[0]) if row else -1.0  # -1: never analysed
    if known < 0 or files > 5 + 0.1 * known:
        conn.execute(ANALYZE_SQL)


def _sync_one(
    conn: psycopg.Connection,
    repository: str,
    branch: str,
    source: FileSource,
    path: str,
    stored: _Stored | None,
    result: LoadResult,
    new_models: list[tuple[str, int]],
) -> None:
    side = sidecar_path(path)
    if not source.exists(side):
        if not source.exists(path):  # both gone: the file was deleted
            if stored is not None:
                with conn.transaction():
                    _delete_rows(conn, repository, branch, path)
                result.deleted.append(path)
            return
        raise CorpusError(side, "sidecar is missing: run `glossator index` to generate it")
    data = source.read(side)
    digest = _sha256(data)
    sidecar = loads(side, data)
    _check(side, path, sidecar, source)
    m = sidecar.manifest
    if (
        stored is not None
        and stored.sidecar_hash == digest
        and stored.source_file_hash == m.source_file_hash
        and stored.embedding_model == m.embedding_model
        and stored.rows == m.chunk_count
    ):
        result.skipped.append(path)
        return
    new_model = False
    with conn.transaction():  # a savepoint: on any error this file keeps its previous rows
        if m.embedding_model is not None and m.dimension:
            new_model = vectors.register(conn, m.embedding_model, int(m.dimension), path=side)
        # rows exist only beside their loaded_files record (same savepoint); skipping the
        # DELETE for a new file matters on a first load into an unanalysed table, where
        # the planner may scan the whole branch for each file
        if stored is not None:
            _delete_rows(conn, repository, branch, path)
        rows = _copy_rows(conn, repository, branch, path, sidecar)
        conn.execute(
            "INSERT INTO loaded_files (repository, branch, source_file, source_file_hash,"
            " sidecar_hash, embedding_model, chunk_count) VALUES (%s, %s, %s, %s, %s, %s, %s)",
            (repository, branch, path, m.source_file_hash, digest, m.embedding_model, rows),
        )
    result.loaded.append(path)
    result.rows += rows
    if new_model:
        new_models.append((str(m.embedding_model), int(m.dimension or 0)))


def _check(side: str, path: str, sidecar: Sidecar, source: FileSource) -> None:
    validate(side, sidecar)
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


def _delete_rows(conn: psycopg.Connection, repository: str, branch: str, path: str) -> bool:
    """Drop a file's rows and its `loaded_files` record; True if it had been loaded."""
    conn.execute(
        "DELETE FROM hierarchical_content_nodes"
        " WHERE repository = %s AND branch = %s AND source_file = %s",
        (repository, branch, path),
    )
    cur = conn.execute(
        "DELETE FROM loaded_files WHERE repository = %s AND branch = %s AND source_file = %s",
        (repository, branch, path),
    )
    return cur.rowcount > 0


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
    m = sidecar.manifest
    work = work_of(path, sidecar)
    lang = str(m.extra.get("lang") or "fr")
    with conn.cursor() as cur, cur.copy(COPY_SQL) as copy:
        copy.set_types([t for _, t in COPY_COLUMNS])
        for c in sidecar.chunks:
            embedding = (
                np.asarray(c.embedding, dtype=np.float32) if c.embedding is not None else None
            )
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
    return len(sidecar.chunks)


@dataclass
class TreeChanges:
    changed: list[str]
    unchanged: list[str]
    deleted: list[str]
    warnings: list[Problem]


def tree_changes(
    conn: psycopg.Connection, *, repository: str, branch: str, source: FileSource
) -> TreeChanges:
    """What differs between a corpus tree's sidecars and the branch's rows.

    Changed: every sidecar whose bytes differ from those the rows were loaded
    from (so a new hash or a new model, even on the same text). Deleted: files
    with rows but neither a sidecar nor a `.md` any more.
    """
    paths = set(source.paths())
    sidecars = sorted(p for p in paths if p.endswith(".md" + SIDECAR_SUFFIX))
    stored = stored_files(conn, repository, branch)
    changed: list[str] = []
    unchanged: list[str] = []
    warnings: list[Problem] = []
    for side in sidecars:
        path = md_path(side)
        have = stored.get(path)
        if have is None or have.sidecar_hash != _sha256(source.read(side)):
            changed.append(path)
        else:
            unchanged.append(path)
    with_sidecar = {md_path(s) for s in sidecars}
    for path in sorted(p for p in paths if p.endswith(".md") and p not in with_sidecar):
        if path.startswith("corpus/"):
            warnings.append(
                Problem(path, "has no sidecar: not loaded (run `glossator index`)", "warning")
            )
    deleted = sorted(p for p in stored if p not in with_sidecar and p not in paths)
    # a file whose .md still exists but lost its sidecar keeps its rows (see warnings)
    return TreeChanges(changed, unchanged, deleted, warnings)


def sync_tree(
    db_or_conn: Any,
    *,
    repository: str,
    branch: str = DEFAULT_BRANCH,
    source: FileSource,
    progress: Progress | None = None,
    on_plan: Callable[[int], None] | None = None,
    bulk: bool | None = None,
    rebuild: bool | None = None,
) -> LoadResult:
    """Sync a whole corpus tree (the CLI): find what changed, then `sync_files`, one transaction.

    `db_or_conn` is a `store.db.Database` (its pool; committed here) or a
    connection (the caller commits). `on_plan(n)` is told how many files will be
    visited, for a progress bar.
    """
    if isinstance(db_or_conn, psycopg.Connection):
        return _sync_tree(db_or_conn, repository, branch, source, progress, on_plan, bulk, rebuild)
    with db_or_conn.pool.connection() as conn:
        return _sync_tree(conn, repository, branch, source, progress, on_plan, bulk, rebuild)


def _sync_tree(
    conn: psycopg.Connection,
    repository: str,
    branch: str,
    source: FileSource,
    progress: Progress | None,
    on_plan: Callable[[int], None] | None,
    bulk: bool | None = None,
    rebuild: bool | None = None,
) -> LoadResult:
    started = time.perf_counter()
    with conn.transaction():
        plan = tree_changes(conn, repository=repository, branch=branch, source=source)
        if on_plan:
            on_plan(len(plan.changed) + len(plan.deleted))
        result = sync_files(
            conn,
            repository=repository,
            branch=branch,
            source=source,
            changed=plan.changed,
            deleted=plan.deleted,
            progress=progress,
            bulk=bulk,
            rebuild=rebuild,
        )
    result.skipped[:0] = plan.unchanged
    result.problems[:0] = plan.warnings
    result.seconds = time.perf_counter() - started
    return result
