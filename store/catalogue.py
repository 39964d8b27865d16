"""What a search reads before it ranks: the keyword backend that is set up and, for each
repository searched, the text search configurations its rows use.

    found = corpus_languages(conn, scope={"livre": "main"})        # the pairs of search.scope
    found = corpus_languages(conn, branch="main", repository=None)  # every repository's branch
    found.languages        # {"livre": ("french",), …}, by repository
    found.pg_search, found.text_search                               # store.keyword.backend_for

The catalogue of repositories, branches and languages is `bm25_corpus` today (one row
per (repository, branch, ts_config), kept exact by the term tables' triggers, migration
002): `corpus_languages` is the one function that reads it for search, so the body is
what changes when the catalogue does. The backend's two flags (store.keyword's
BACKEND_COLUMNS) come in the same statement, sent in a pipeline: with the BEGIN that
opens a search's transaction it is one round trip (search.retrieval.keyword_split).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import psycopg

from store.keyword import BACKEND_COLUMNS

# each repository as 'repository config,config…' (configs sorted), repositories in order
_LANGUAGES = (
    "ARRAY(SELECT repository || ' ' || string_agg(ts_config::text, ',' ORDER BY ts_config::text)"
    " FROM bm25_corpus WHERE {where} GROUP BY repository ORDER BY repository)"
)
_IN_SCOPE = f"SELECT {BACKEND_COLUMNS}, " + _LANGUAGES.format(
    where="(repository, branch) IN (SELECT * FROM unnest(%s::text[], %s::text[]))"
)
_ON_BRANCH = f"SELECT {BACKEND_COLUMNS}, " + _LANGUAGES.format(
    where="branch = %s AND (%s::text IS NULL OR repository = %s::text)"
)


@dataclass(frozen=True, slots=True)
class CorpusLanguages:
    """`corpus_languages`' answer: the backend's flags and each repository's configs."""

    pg_search: bool  # pg_search with its bm25 index
    text_search: bool  # PostgreSQL's text search with its GIN index (store.fts)
    languages: dict[str, tuple[str, ...]]  # repository -> its ts_configs, sorted; by repository


def corpus_languages(
    conn: psycopg.Connection,
    *,
    scope: Mapping[str, str] | None = None,
    branch: str = "",
    repository: str | None = None,
) -> CorpusLanguages:
    """The repositories that have rows in `scope` (repository → branch), or when it is
    None on `branch` (every repository, or the one `repository`), with the text search
    configurations of their rows; and the keyword backend's flags. One statement."""
    with conn.pipeline():
        if scope is not None:
            cur = conn.execute(_IN_SCOPE, (list(scope), list(scope.values())))
        else:
            cur = conn.execute(_ON_BRANCH, (branch, repository, repository))
    row = cur.fetchone()
    languages: dict[str, tuple[str, ...]] = {}
    for entry in row[2] if row else []:
        name, configs = entry.split(" ", 1)
        languages[name] = tuple(configs.split(","))
    return CorpusLanguages(bool(row and row[0]), bool(row and row[1]), languages)
