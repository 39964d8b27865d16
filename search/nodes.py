"""Climbing the tree: a file, its parent, its children, a paragraph's neighbours, the outline.

The corpus is a tree of files (DESIGN §3): a work's summary.md at the top,
part summaries, chapter summaries, and each chapter's source.md (its
paragraphs) at the bottom; every row names its parent's file in
`parent_source_file`. These lookups let a reader (or an agent) go from a
paragraph up to the chapter summary that frames it, or from a summary down to
the text it summarises.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import psycopg
from psycopg.rows import class_row

from indexer.corpus.lang import strip_summary_suffix
from indexer.corpus.layout import humanize
from search import rows as search_rows
from search.errors import BadQuery, UnknownFile
from search.results import Chunk, Node, Outline, OutlineEntry
from search.scope import resolve as resolve_scope
from store import nodes as store_nodes

_ROW = class_row(search_rows.Row)  # store.nodes.COLUMNS, read as search.rows.Row

EXCERPT_CHARS = 300


def get_node(
    conn_or_pool: search_rows.ConnOrPool,
    source_file: str,
    chunk_index: int | None = None,
    *,
    repository: str | None = None,
    branch: str | None = None,
    context: int = 0,
    readable: frozenset[str] | None = None,
) -> Node:
    """A whole file, or one chunk of it with `context` chunks either side. Without a
    branch, each repository's default one (search.scope); likewise below."""
    if chunk_index is not None and chunk_index < 0:
        raise BadQuery(f"chunk must be 0 or more, got {chunk_index}")
    if not 0 <= context <= 20:
        raise BadQuery(f"context must be from 0 to 20 chunks, got {context}")
    with search_rows.connection(conn_or_pool) as conn:
        rows = _file_rows(conn, source_file, repository, branch, readable)
    if chunk_index is None:
        return search_rows.node(rows)
    last = max(r.chunk_index for r in rows)
    if chunk_index > last:
        raise UnknownFile(
            f"{source_file} has chunks 0 to {last}; chunk {chunk_index} does not exist"
        )
    keep = [r for r in rows if abs(r.chunk_index - chunk_index) <= context]
    return search_rows.node(keep)


def get_parent(
    conn_or_pool: search_rows.ConnOrPool,
    source_file: str,
    *,
    repository: str | None = None,
    branch: str | None = None,
    readable: frozenset[str] | None = None,
) -> Node | None:
    """The node `source_file` hangs from (all its rows), or None for a work's summary."""
    with search_rows.connection(conn_or_pool) as conn:
        rows = _file_rows(conn, source_file, repository, branch, readable)
        parent = rows[0].parent_source_file
        if parent is None:
            return None
        repo, branch = rows[0].repository, rows[0].branch
        found = store_nodes.file_rows(conn, repo, branch, parent, _ROW)
    if not found:
        raise UnknownFile(
            f"the parent of {source_file}, {parent}, is not indexed on branch {branch!r} "
            "(its sidecar may be missing: run `glossator index` on the corpus)"
        )
    return search_rows.node(found)


def get_children(
    conn_or_pool: search_rows.ConnOrPool,
    source_file: str,
    *,
    repository: str | None = None,
    branch: str | None = None,
    readable: frozenset[str] | None = None,
) -> list[Node]:
    """The nodes whose parent is `source_file`, in reading order (empty for a source.md)."""
    with search_rows.connection(conn_or_pool) as conn:
        rows = _file_rows(conn, source_file, repository, branch, readable)
        found = children_rows(conn, [(rows[0].repository, rows[0].source_file)], rows[0].branch)
    return search_rows.group_files(found)


def _file_rows(
    conn: psycopg.Connection,
    source_file: str,
    repository: str | None,
    branch: str | None,
    readable: frozenset[str] | None,
) -> list[search_rows.Row]:
    """The rows of `source_file` among the repositories and branches a request reads."""
    scope = resolve_scope(conn, repository, branch, readable)
    try:
        return search_rows.file_rows(conn, source_file, scope.pairs, scope.described)
    except UnknownFile as e:
        if notes := scope.notes(found=False):  # the file may be on another branch: say so
            raise UnknownFile(f"{e}; " + "; ".join(notes)) from None
        raise


def children_rows(
    conn: psycopg.Connection, parents: Iterable[tuple[str, str]], branch: search_rows.Branches
) -> list[search_rows.Row]:
    """Rows of every file whose parent is one of (repository, source_file), on `branch`
    (or each repository's, a mapping)."""
    pairs = list(dict.fromkeys(parents))
    if not pairs:
        return []
    return store_nodes.children_rows(
        conn, [(p[0], search_rows.branch_for(branch, p[0]), p[1]) for p in pairs], _ROW
    )


def file_rows_many(
    conn: psycopg.Connection, files: Iterable[tuple[str, str]], branch: search_rows.Branches
) -> dict[tuple[str, str], Node]:
    """(repository, source_file) → Node, for each file that has rows on `branch` (or
    each repository's, a mapping)."""
    pairs = list(dict.fromkeys(files))
    if not pairs:
        return {}
    found = store_nodes.files_rows(
        conn, [(p[0], search_rows.branch_for(branch, p[0]), p[1]) for p in pairs], _ROW
    )
    return {(n.repository, n.source_file): n for n in search_rows.group_files(found)}


def neighbours(
    conn: psycopg.Connection, chunks: Iterable[tuple[str, str, int]], branch: search_rows.Branches
) -> dict[tuple[str, str, int], Chunk]:
    """The chunks just before and after each (repository, source_file, chunk_index)."""
    wanted = {(r, f, i + d) for r, f, i in chunks for d in (-1, 1) if i + d >= 0}
    if not wanted:
        return {}
    w = sorted(wanted)
    found = store_nodes.chunk_rows(
        conn, [(x[0], search_rows.branch_for(branch, x[0]), x[1], x[2]) for x in w], _ROW
    )
    return {(r.repository, r.source_file, r.chunk_index): search_rows.chunk(r) for r in found}


# -- outline -----------------------------------------------------------------------


def outline(
    conn_or_pool: search_rows.ConnOrPool,
    repository: str | None = None,
    work: str | None = None,
    *,
    branch: str | None = None,
    readable: frozenset[str] | None = None,
) -> Outline:
    """Works → parts → chapters (and liminary pieces), with titles and summary excerpts.

    Built from folders, so a chapter whose summary is not indexed yet still
    appears (titled from its text's heading), and a part without a summary.md
    gets its folder's name.
    """
    with search_rows.connection(conn_or_pool) as conn:
        scope = resolve_scope(conn, repository, branch, readable)
        # the work as typed, or in the other Unicode normalization (search_rows.spellings)
        spelt = search_rows.spellings(work) if work is not None else None
        files = store_nodes.outline_files(conn, scope.pairs, spelt)
    if work is not None and not files:
        raise UnknownFile(
            f"no work named {work!r} is indexed on {scope.described}"
            + (f" in {repository!r}" if repository else "")
            + "; works are the folder names under corpus/ (use outline without work to list them)"
        )
    works: list[OutlineEntry] = []
    for repo in sorted({f["repository"] for f in files}):
        works.extend(_outline_repository(repo, [f for f in files if f["repository"] == repo]))
    return Outline(
        repository=repository, branch=scope.label, works=works, notes=scope.notes(bool(works))
    )


def _folder(path: str) -> str:
    return path.rsplit("/", 1)[0]


def _title(heading_path: str) -> str:
    last = heading_path.split(" > ")[-1]
    return strip_summary_suffix(last)


def _excerpt(text: str | None) -> str | None:
    if not text:
        return None
    text = " ".join(text.split())
    if len(text) <= EXCERPT_CHARS:
        return text
    cut = text[:EXCERPT_CHARS].rsplit(" ", 1)[0]
    return cut + " …"


def _outline_repository(repository: str, files: list[dict[str, Any]]) -> list[OutlineEntry]:
    by_folder: dict[str, dict[str, dict]] = {}
    for f in files:
        name = f["source_file"].rsplit("/", 1)[-1]
        by_folder.setdefault(_folder(f["source_file"]), {})[name] = f
    # every ancestor folder up to corpus/<work> is an entry, even without files
    folders = set(by_folder)
    for folder in list(folders):
        parts = folder.split("/")
        for depth in range(2, len(parts)):
            folders.add("/".join(parts[:depth]))
    folders = {f for f in folders if f.count("/") >= 1}  # corpus/<work> and below
    entries: dict[str, OutlineEntry] = {}
    for folder in sorted(folders, key=lambda p: (p.count("/"), search_rows.reading_key(p + "/x"))):
        own = by_folder.get(folder, {})
        summary, source = own.get("summary.md"), own.get("source.md")
        main = summary or source
        depth = folder.count("/")  # 1: work, 2: part or liminary piece, 3: chapter
        if depth == 1:
            kind = "work"
        elif depth == 2 and (summary is None or summary["level"] == 2):
            kind = "part" if source is None else "chapter"
        else:
            kind = "chapter"
        entry = OutlineEntry(
            kind=kind,  # type: ignore[arg-type]
            title=_title(main["heading_path"]) if main else humanize(folder.rsplit("/", 1)[-1]),
            heading_path=(strip_summary_suffix(main["heading_path"]) if main else ""),
            level=main["level"] if main else 3 - min(depth - 1, 2),
            source_file=main["source_file"] if main else None,
            text_file=source["source_file"] if source else None,
            summary_excerpt=_excerpt(summary["first_text"]) if summary else None,
            paragraphs=source["chunks"] if source else None,
            repository=repository if depth == 1 else None,
        )
        entries[folder] = entry
        if depth > 1 and _folder(folder) in entries:
            entries[_folder(folder)].children.append(entry)
    return [e for f, e in entries.items() if f.count("/") == 1]
