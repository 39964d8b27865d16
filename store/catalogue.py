"""The catalogue of what is loaded, and the chapter documents: written by the loader.

    deltas = Deltas()                       # per text search configuration: (rows, length)
    deltas.add(delete_rows(conn, …))        # the rows a DELETE dropped (store.loader)
    apply(conn, repository, branch, deltas, files=[…])   # branch_languages, chapter_documents
    found = corpus_languages(conn, scope={"livre": "main"}, text="chandelles soleil")
    found.languages, found.pg_search, found.chapter_engine, found.query_lexemes("livre")

`branch_languages` holds, per (repository, branch, text search configuration), the
rows and their BM25 length: which repositories and languages a branch has, and N /
avgdl for store.fts. The loader keeps it exact in the load's transaction; `rebuild`
computes it again from the rows. `chapter_documents` holds one document per chapter
for the chapter BM25. `corpus_languages` reads the catalogue for a scope, with the
backend's flags and the query's lexemes in the same statement; a search sends
`candidates_statement` instead, in its first round trip, before its scope is known.
The tables and the statement: docs/store.md, "The catalogue".
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import psycopg

from store.bm25 import LEXEMES_BY_REPOSITORY, lexemes_sql
from store.keyword import BACKEND_COLUMNS
from store.roundtrip import Statement

# each repository as 'repository config,config…' (configs sorted), repositories in order
_LANGUAGES = (
    "ARRAY(SELECT repository || ' ' || string_agg(ts_config::text, ',' ORDER BY ts_config::text)"
    " FROM branch_languages WHERE {where} GROUP BY repository ORDER BY repository)"
)
_IN_SCOPE = (
    "(repository, branch) IN (SELECT * FROM unnest(%(repos)s::text[], %(branches)s::text[]))"
)
_ON_BRANCH = "branch = %(branch)s AND (%(repo)s::text IS NULL OR repository = %(repo)s::text)"


def _statement(where: str, text: bool) -> str:
    """The catalogue statement; with `text`, the query's lexemes by configuration too."""
    columns = [BACKEND_COLUMNS, _LANGUAGES.format(where=where)]
    if text:
        columns.append(LEXEMES_BY_REPOSITORY.format(where=where))
    return "SELECT " + ", ".join(columns)


@dataclass(frozen=True, slots=True)
class CorpusLanguages:
    """`corpus_languages`' answer: the backend's flags and each repository's configs."""

    pg_search: bool  # pg_search with its bm25 index
    text_search: bool  # PostgreSQL's text search with its GIN index (store.fts)
    languages: dict[str, tuple[str, ...]]  # repository -> its ts_configs, sorted; by repository
    chapter_pg_search: bool = False  # pg_search's chapters' index (store.chapters)
    # the text's lexemes by repository (store.bm25.LEXEMES_BY_REPOSITORY), when given one
    lexemes: dict[str, list[str]] = field(default_factory=dict)

    @property
    def chapter_engine(self) -> str:
        """store.chapters.chapter_evidence's `engine`: which index ranks chapters."""
        return "pg_search" if self.chapter_pg_search else "postgres-fts"

    def query_lexemes(self, repository: str) -> list[str]:
        """The terms the text is searched for in `repository` (through its configs)."""
        return list(self.lexemes.get(repository, ()))


def corpus_languages(
    conn: psycopg.Connection,
    *,
    scope: Mapping[str, str] | None = None,
    branch: str = "",
    repository: str | None = None,
    text: str | None = None,
) -> CorpusLanguages:
    """The repositories that have rows in `scope` (repository → branch), or when it is
    None on `branch` (every repository, or the one `repository`), with the text search
    configurations of their rows; the keyword engines' flags; and given a query `text`,
    its lexemes in each repository (through each of its configurations) (both BM25 statements of a search
    take them: store.bm25.LEXEMES_BY_REPOSITORY). One statement."""
    params: dict[str, Any] = {"text": text}
    if scope is not None:
        params.update(repos=list(scope), branches=list(scope.values()))
        stmt = _statement(_IN_SCOPE, text is not None)
    else:
        params.update(branch=branch, repo=repository)
        stmt = _statement(_ON_BRANCH, text is not None)
    with conn.pipeline():
        cur = conn.execute(stmt, params)
    row = cur.fetchone()
    languages: dict[str, tuple[str, ...]] = {}
    for entry in row[3] if row else []:
        name, configs = entry.split(" ", 1)
        languages[name] = tuple(configs.split(","))
    lexemes = dict(row[4] or {}) if row and text is not None else {}
    return CorpusLanguages(
        bool(row and row[0]), bool(row and row[1]), languages, bool(row and row[2]), lexemes
    )


# the candidate pairs of a search not yet scoped (`candidates_statement`): the branch
# asked, the repository asked, the repositories the caller may read (each NULL: any)
_CANDIDATES = (
    "(%(branch)s::text IS NULL OR branch = %(branch)s::text)"
    " AND (%(repo)s::text IS NULL OR repository = %(repo)s::text)"
    " AND (%(readable)s::text[] IS NULL OR repository = ANY(%(readable)s::text[]))"
)
# each (repository, branch) as [repository, branch, [config, …]] (configs sorted), and
# the text's lexemes in each as [repository, branch, [lexeme, …]]
_PAIRS = (
    "(SELECT jsonb_agg(jsonb_build_array(repository, branch, configs)"
    " ORDER BY repository, branch) FROM (SELECT repository, branch,"
    " array_agg(ts_config::text ORDER BY ts_config::text) AS configs"
    " FROM branch_languages WHERE " + _CANDIDATES + " GROUP BY repository, branch) AS c)"
)
_PAIR_LEXEMES = (
    "(SELECT jsonb_agg(jsonb_build_array(p.repository, p.branch, "
    + lexemes_sql("%(text)s::text", "p.repository", "p.branch")
    + ")) FROM (SELECT DISTINCT repository, branch FROM branch_languages WHERE "
    + _CANDIDATES
    + ") AS p)"
)


def candidates_statement(
    text: str | None,
    *,
    branch: str | None = None,
    repository: str | None = None,
    readable: Iterable[str] | None = None,
) -> Statement:
    """The catalogue of every (repository, branch) a search may read, before its scope is
    known (the branch asked, else all; the repository asked, else all; within `readable`,
    None: all), with the keyword engines' flags and, given a `text`, its lexemes in each
    pair: a search sends it in its first round trip, with the statement its scope comes
    from, and keeps its scope's pairs (`Candidates.within`). Few rows whatever the size:
    one per (repository, branch, configuration)."""
    columns = [BACKEND_COLUMNS, _PAIRS] + ([_PAIR_LEXEMES] if text is not None else [])
    return Statement(
        "SELECT " + ", ".join(columns),
        {
            "text": text,
            "branch": branch,
            "repo": repository,
            "readable": sorted(readable) if readable is not None else None,
        },
    )


@dataclass(frozen=True, slots=True)
class Candidates:
    """`candidates_statement`'s answer: flags, each pair's configs and lexemes."""

    pg_search: bool
    text_search: bool
    chapter_pg_search: bool
    languages: dict[tuple[str, str], tuple[str, ...]]
    lexemes: dict[tuple[str, str], list[str]]

    @classmethod
    def of(cls, rows: list[Any]) -> Candidates:
        row = rows[0] if rows else None
        languages: dict[tuple[str, str], tuple[str, ...]] = {}
        for name, branch, configs in (row[3] or []) if row else []:
            languages[name, branch] = tuple(configs)
        lexemes = (
            {(r, b): list(found) for r, b, found in (row[4] or [])} if row and len(row) > 4 else {}
        )
        flags = [bool(row and row[n]) for n in range(3)]
        return cls(flags[0], flags[1], flags[2], languages, lexemes)

    def within(self, scope: Mapping[str, str]) -> CorpusLanguages:
        """What `corpus_languages` answers for `scope` (repository → branch)."""
        pairs = sorted((r, b) for (r, b) in self.languages if scope.get(r) == b)
        return CorpusLanguages(
            self.pg_search,
            self.text_search,
            {r: self.languages[r, b] for r, b in pairs},
            self.chapter_pg_search,
            {r: self.lexemes[r, b] for r, b in pairs if (r, b) in self.lexemes},
        )


@dataclass
class Deltas:
    """Rows and length added (negative: removed) per text search configuration."""

    by_config: dict[str, list[int]] = field(default_factory=dict)

    def add(self, rows: Iterable[tuple[str, int, int]], sign: int = 1) -> None:
        for config, n, length in rows:
            entry = self.by_config.setdefault(config, [0, 0])
            entry[0] += sign * int(n)
            entry[1] += sign * int(length)

    def merge(self, other: Deltas) -> None:
        self.add(((c, n, length) for c, (n, length) in other.by_config.items()))


def delete_rows(
    conn: psycopg.Connection, repository: str, branch: str, source_file: str
) -> list[tuple[str, int, int]]:
    """DELETE a file's rows; what they were per configuration (rows, length)."""
    return [
        (str(c), int(n), int(length))
        for c, n, length in conn.execute(
            "WITH d AS (DELETE FROM hierarchical_content_nodes"
            " WHERE repository = %s AND branch = %s AND source_file = %s"
            " RETURNING ts_config, doc_len)"
            " SELECT ts_config::text, count(*), coalesce(sum(doc_len), 0) FROM d GROUP BY 1",
            (repository, branch, source_file),
        ).fetchall()
    ]


def loaded_rows(
    conn: psycopg.Connection, repository: str, branch: str, files: list[str]
) -> list[tuple[str, int, int]]:
    """The rows of `files` per configuration (rows, length): one aggregate."""
    if not files:
        return []
    return [
        (str(c), int(n), int(length))
        for c, n, length in conn.execute(
            "SELECT ts_config::text, count(*), coalesce(sum(doc_len), 0)"
            " FROM hierarchical_content_nodes"
            " WHERE repository = %s AND branch = %s AND source_file = ANY(%s) GROUP BY 1",
            (repository, branch, files),
        ).fetchall()
    ]


def apply(
    conn: psycopg.Connection,
    repository: str,
    branch: str,
    deltas: Deltas,
    files: list[str],
) -> None:
    """The catalogue's figures moved by `deltas`, and the chapters of `files` made again."""
    changes = [(c, n, length) for c, (n, length) in sorted(deltas.by_config.items()) if n or length]
    if changes:
        # ORDER BY: concurrent loaders lock the catalogue's rows in one order (no deadlock)
        conn.execute(
            "INSERT INTO branch_languages AS b (repository, branch, ts_config, n_docs, total_len)"
            " SELECT %s, %s, c::regconfig, n, len"
            "   FROM unnest(%s::text[], %s::bigint[], %s::bigint[]) AS d(c, n, len) ORDER BY c"
            " ON CONFLICT (repository, branch, ts_config) DO UPDATE"
            "   SET n_docs = b.n_docs + excluded.n_docs,"
            "       total_len = b.total_len + excluded.total_len",
            (
                repository,
                branch,
                [c for c, _, _ in changes],
                [n for _, n, _ in changes],
                [length for _, _, length in changes],
            ),
        )
        conn.execute(
            "DELETE FROM branch_languages WHERE repository = %s AND branch = %s AND n_docs <= 0",
            (repository, branch),
        )
    if files:
        conn.execute(
            "SELECT glossator_chapter_documents(%s, %s, %s)", (repository, branch, sorted(files))
        )


def rebuild(conn: psycopg.Connection) -> None:
    """Both tables computed again from the rows (what migration 034 does once)."""
    conn.execute("DELETE FROM branch_languages")
    conn.execute(
        "INSERT INTO branch_languages (repository, branch, ts_config, n_docs, total_len)"
        " SELECT repository, branch, ts_config, count(*), sum(doc_len)"
        " FROM hierarchical_content_nodes GROUP BY 1, 2, 3"
    )
    for repository, branch in conn.execute(
        "SELECT DISTINCT repository, branch FROM hierarchical_content_nodes"
        " UNION SELECT DISTINCT repository, branch FROM chapter_documents"
    ).fetchall():
        files = [
            f
            for (f,) in conn.execute(
                "SELECT DISTINCT source_file FROM hierarchical_content_nodes"
                " WHERE repository = %s AND branch = %s AND level = 0"
                " UNION SELECT source_file FROM chapter_documents"
                " WHERE repository = %s AND branch = %s",
                (repository, branch, repository, branch),
            ).fetchall()
        ]
        apply(conn, repository, branch, Deltas(), files)


def branch_languages(conn: psycopg.Connection) -> list[tuple[str, str, str, int, int]]:
    """Every catalogue row (repository, branch, configuration, rows, length), sorted."""
    return [
        (str(r), str(b), str(c), int(n), int(length))
        for r, b, c, n, length in conn.execute(
            "SELECT repository, branch, ts_config::text, n_docs, total_len"
            " FROM branch_languages ORDER BY 1, 2, 3"
        ).fetchall()
    ]
