"""The indexed rows as search reads them (`Row`), and the result types made of them.

The statements are store.nodes' (read through `class_row(Row)`); nothing writes.
`connection()` accepts what callers have at hand (a connection, a pool, or a started
`store.db.Database`) so the typed functions take one `conn_or_pool` argument.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any
from unicodedata import normalize

import psycopg
from psycopg.rows import class_row
from psycopg_pool import ConnectionPool

from indexer.corpus.layout import folder_order
from search.errors import BadQuery, UnknownFile
from search.results import Chunk, Citation, Node
from store import nodes as store_nodes
from store import roundtrip

ConnOrPool = Any  # psycopg.Connection | ConnectionPool | store.db.Database


@dataclass(frozen=True, slots=True)
class Row:
    """One row of the table as search reads it (the columns of store.nodes.COLUMNS)."""

    id: int
    repository: str
    branch: str
    level: int
    node_type: str
    source_file: str
    parent_source_file: str | None
    chunk_index: int
    heading_path: str
    content: str
    content_token_count: int
    work: str
    line_start: int | None
    line_end: int | None
    vectorized: bool

    @property
    def chapter(self) -> tuple[str, str]:
        """(repository, folder): shared by a chapter's source.md and summary.md (a part's
        or the work's summary is the only row of its folder)."""
        return self.repository, self.source_file.rsplit("/", 1)[0]


@contextmanager
def connection(conn_or_pool: ConnOrPool) -> Iterator[psycopg.Connection]:
    """A connection from whatever the caller passed; pooled ones go back to the pool."""
    if isinstance(conn_or_pool, psycopg.Connection):
        yield conn_or_pool
        return
    pool = getattr(conn_or_pool, "pool", conn_or_pool)  # store.db.Database has .pool
    if not isinstance(pool, ConnectionPool):
        raise TypeError(
            "expected a psycopg Connection, a ConnectionPool or a store.db.Database, "
            f"got {type(conn_or_pool).__name__}"
        )
    with pool.connection() as conn:
        yield conn


_ROW = class_row(Row)  # store.nodes.COLUMNS, read as Row


def by_ids(conn: psycopg.Connection, ids: Iterable[int]) -> dict[int, Row]:
    """The rows of `ids` that exist, by id (no query for none)."""
    ids = list(ids)
    if not ids:
        return {}
    return {r.id: r for r in store_nodes.rows_by_id(conn, ids, _ROW)}


def by_ids_statement(ids: Sequence[int]) -> roundtrip.Statement | None:
    """`by_ids`' statement, to send with others (store.roundtrip.run); None for no id."""
    return store_nodes.rows_by_id_statement(ids) if ids else None


def rows_of(found: Iterable[Sequence[Any]]) -> dict[int, Row]:
    """`by_ids_statement`'s rows (tuples of store.nodes.COLUMNS), by id."""
    rows = [Row(*r) for r in found]
    return {r.id: r for r in rows}


Branches = str | Mapping[str, str]  # one branch for every repository, or each one's


def branch_for(branches: Branches, repository: str) -> str:
    """The branch `branches` reads for `repository`."""
    return branches if isinstance(branches, str) else branches[repository]


def citation(row: Row) -> Citation:
    return Citation(
        repository=row.repository,
        branch=row.branch,
        source_file=row.source_file,
        heading_path=row.heading_path,
        chunk_index=row.chunk_index,
        line_start=row.line_start,
        line_end=row.line_end,
    )


def chunk(row: Row) -> Chunk:
    return Chunk(
        citation=citation(row),
        level=row.level,
        node_type=row.node_type,
        work=row.work,
        text=row.content,
        token_count=row.content_token_count,
        vectorized=row.vectorized,
    )


def node(rows: list[Row]) -> Node:
    """A Node from all the rows of one file (ordered by chunk_index here)."""
    rows = sorted(rows, key=lambda r: r.chunk_index)
    first = rows[0]
    return Node(
        repository=first.repository,
        branch=first.branch,
        source_file=first.source_file,
        parent_source_file=first.parent_source_file,
        level=first.level,
        node_type=first.node_type,
        work=first.work,
        heading_path=first.heading_path,
        chunks=[chunk(r) for r in rows],
    )


def group_files(rows: Iterable[Row]) -> list[Node]:
    """Rows of several files → one Node per (repository, source_file), in reading order."""
    files: dict[tuple[str, str], list[Row]] = {}
    for r in rows:
        files.setdefault((r.repository, r.source_file), []).append(r)
    nodes = [node(rs) for rs in files.values()]
    return sorted(nodes, key=lambda n: (n.repository, reading_key(n.source_file), n.level))


def reading_key(path: str) -> tuple:
    """Reading order from a path alone: the corpus's folder rule (number in the name, else name).

    The database keeps no `order` key, so a chapter ordered only by its
    frontmatter `order` sorts by folder name here; numbered folders (the norm)
    sort exactly as the indexer reads them.
    """
    folders = path.split("/")[:-1]
    return tuple(folder_order(f, {}) for f in folders)


def check_text(name: str, value: str) -> str:
    """`value` as PostgreSQL can take it: text never holds NUL, and UTF-8 has no lone
    surrogates (a JSON client can send both; the driver would fail mid-query)."""
    if "\x00" in value:
        raise BadQuery(f"the {name} contains a NUL character (\\u0000): remove it and ask again")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as e:
        raise BadQuery(
            f"the {name} contains {value[e.start]!r} at position {e.start}, which is not "
            "a Unicode character (a lone surrogate): send valid UTF-8 text"
        ) from None
    return value


def resolve_work(
    conn: psycopg.Connection, work: str, scope: Sequence[tuple[str, str]], read: str
) -> str:
    """The work as stored (`work`, or its spelling in the other Unicode normalization);
    UnknownFile when no row of the (repository, branch) pairs `scope` belongs to it (as
    for an unknown repository: a misspelt filter is an error, not an empty page); `read`
    names them in the message (search.scope.Scope.described). Asked only when a search found nothing, so a page of hits
    pays no extra query."""
    check_text("work", work)
    found = store_nodes.stored_work(conn, scope, spellings(work))
    if found is not None:
        return found
    works = store_nodes.works(conn, scope)
    repositories = sorted({r for r, _ in scope})
    known = f"; indexed works: {', '.join(works)}" if works else ""
    raise UnknownFile(
        f"no work named {work!r} is indexed on {read}"
        + (f" in {repositories[0]!r}" if len(repositories) == 1 else "")
        + known
        + " (works are the folder names under corpus/; outline lists them)"
    )


def file_rows(
    conn: psycopg.Connection, source_file: str, scope: Sequence[tuple[str, str]], read: str
) -> list[Row]:
    """All rows of one file, in order, among the (repository, branch) pairs `scope`
    (search.scope.resolve); UnknownFile (with a hint) when there are none. `read` names
    the branches read in the message ("branch 'main'", search.scope.Scope.described).

    Across several repositories the file must be unambiguous.
    """
    check_text("source_file", source_file or "")
    if not source_file or not source_file.strip():
        raise UnknownFile(
            "source_file must be a repository-relative path such as corpus/…/source.md"
        )
    rows = store_nodes.scoped_file_rows(conn, scope, source_file, _ROW)
    if not rows and (stored := _stored_spelling(conn, source_file, scope)):
        # the same path in another Unicode normalization (a folder pushed in NFD, asked in NFC)
        rows = store_nodes.scoped_file_rows(conn, scope, stored, _ROW)
    if not rows and (full := _unique_suffix(conn, source_file, scope)):
        # a path relative to the folder a search page's group header names
        rows = store_nodes.scoped_file_rows(conn, scope, full, _ROW)
    if not rows:
        raise UnknownFile(_unknown_file_message(conn, source_file, scope, read))
    repos = sorted({r.repository for r in rows})
    if len(repos) > 1:
        raise UnknownFile(
            f"{source_file} is indexed in several repositories ({', '.join(repos)}): "
            "pass repository to say which"
        )
    return rows


def spellings(text: str) -> list[str]:
    """`text` and its NFC and NFD forms, each once: the spellings one path may be stored under.

    git keeps a path's bytes as pushed: a folder named on macOS (or by a tool that writes
    NFD) reads `e` + U+0301 where every keyboard types `é` (NFC). A push holding both
    spellings of one path is refused (hooks.pre_receive), so at most one of them is stored."""
    out = [text]
    for form in ("NFC", "NFD"):
        if (other := normalize(form, text)) not in out:
            out.append(other)
    return out


def _stored_spelling(
    conn: psycopg.Connection, source_file: str, scope: Sequence[tuple[str, str]]
) -> str | None:
    """The path as stored when it differs from `source_file` only by Unicode normalization.

    The whole path in NFC or NFD first (the index on source_file answers); then, for a
    path mixing both (one folder NFD, another NFC), PostgreSQL's normalize() over the
    files read: a scan, paid only when the file was not found otherwise."""
    others = spellings(source_file)[1:]
    if others and (found := store_nodes.stored_path(conn, scope, others)) is not None:
        return found
    if source_file.isascii():
        return None  # an ASCII path has one spelling in every form
    return store_nodes.normalized_path(conn, scope, normalize("NFC", source_file))


def _unique_suffix(
    conn: psycopg.Connection, source_file: str, scope: Sequence[tuple[str, str]]
) -> str | None:
    """The one indexed file whose path ends with `/source_file` (in either Unicode
    normalization), if exactly one does."""
    tail = source_file.strip().lstrip("/")
    if not tail or tail.startswith("corpus/"):
        return None
    found = store_nodes.paths_ending(conn, scope, spellings("/" + tail), limit=2)
    return found[0] if len(found) == 1 else None


def _unknown_file_message(
    conn: psycopg.Connection, source_file: str, scope: Sequence[tuple[str, str]], read: str
) -> str:
    repositories = sorted({r for r, _ in scope})
    where = f" in repository {repositories[0]!r}" if len(repositories) == 1 else ""
    message = f"{source_file} is not indexed{where} on {read}"
    # suggest files that end like the one asked for (a path given without its prefix)
    tail = "/".join(source_file.strip("/").split("/")[-2:])
    close = store_nodes.paths_ending(conn, scope, spellings(tail), limit=3)
    if close:
        message += "; did you mean " + " or ".join(close) + "?"
    else:
        message += (
            "; paths are repository-relative (corpus/<work>/…/source.md): use outline to list them"
        )
    return message
