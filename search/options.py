"""What a search is asked: one frozen `SearchOptions` value, and the query's vector.

    options = SearchOptions(mode="hybrid", k=5, max_per_chapter=1)
    response = search(pool, "la pétition des chandelles", options, query_vector=vector)

The composition root (`glossator/`) builds the defaults once from the settings
(`SearchOptions(rrf_k=settings.rrf_k, …)`) and every caller derives its own with
`options.replace(k=…)`; nothing in `search/` reads the settings or the environment.
A vector or hybrid search needs the query's vector (`QueryVector`): the
`search.service.SearchService` embeds it (cached, see there), a caller that already
has one (`glossator eval`, the benchmarks) passes it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from core.vocabulary import NODE_TYPES
from search.errors import BadQuery
from search.results import MODES, Mode

MAX_K = 100
MAX_QUERY_CHARS = 2000
# diversity on by default for agents (the MCP tools, the "agents" row of `glossator eval`):
# one row per chapter, so a page of 10 names 10 chapters; the best of 1, 2 and 3 on the
# tuning half (bench/RESULTS.md, issue 7). A chapter summary hit still brings its best
# paragraphs (climb_down), and `context` gives several passages of one chapter.
AGENT_MAX_PER_CHAPTER = 1


class QueryEmbedder(Protocol):
    """What search needs of an embedder: its model's name and dimension, and a query's
    vector (`indexer.providers.embedders.Embedder` is one)."""

    @property
    def model(self) -> str: ...

    @property
    def dimension(self) -> int: ...

    def embed_query(self, text: str) -> Sequence[float]: ...


@dataclass(frozen=True)
class QueryVector:
    """A query embedded by `model`: the vector ranking reads the rows of that model only."""

    model: str
    dimension: int
    values: Sequence[float]

    def __post_init__(self) -> None:
        if len(self.values) != self.dimension:
            raise ValueError(
                f"the query vector has {len(self.values)} dimensions, not {self.dimension}"
            )


@dataclass(frozen=True)
class SearchOptions:
    """Everything a search is asked besides the query text; checked by `checked()`.

    `rrf_k` None: the tuning's (search.tuning.Tuning.rrf_k). `max_per_file` caps the
    hits per file, `max_per_chapter` per chapter (its source.md and summary.md
    together; and then one part or work summary per page at most: diversity);
    `climb_down` > 0 gives each chapter-summary hit its chapter's `climb_down`
    paragraphs nearest the query (`hit.passages`; not in bm25 mode); `candidates` is
    how deep each ranking goes before fusion (None: max(50, 3k)); `query_lang` is the
    query's language (ISO 639-1, search.language; None: unknown): in hybrid mode the
    keyword evidence of repositories in other languages is weighed down. `branch` None: each
    repository on its own default branch (search.scope), a name: that branch of each.
    `readable` None: every repository; else the only ones read (the caller's, core.access).
    """

    mode: Mode = "hybrid"
    k: int = 10
    repository: str | None = None
    branch: str | None = None
    work: str | None = None
    level: int | tuple[int, ...] | None = None
    node_type: str | tuple[str, ...] | None = None
    rrf_k: int | None = None
    bm25_weight: float = 1.0
    vector_weight: float = 1.0
    chapter_weight: float = 1.0
    rerank: bool = True
    with_parent: bool = False
    with_children: bool = False
    with_neighbours: bool = False
    max_per_file: int | None = None
    max_per_chapter: int | None = None
    climb_down: int = 0
    candidates: int | None = None
    query_lang: str | None = None
    readable: frozenset[str] | None = None

    def replace(self, **changes: object) -> SearchOptions:
        """A copy with `changes` (None values are changes too: `repository=None` is all)."""
        return dataclasses.replace(self, **changes)  # type: ignore[arg-type]

    @property
    def levels(self) -> tuple[int, ...] | None:
        return _levels(self.level)

    @property
    def node_types(self) -> tuple[str, ...] | None:
        return _node_types(self.node_type)

    @property
    def depth(self) -> int:
        """How deep each ranking goes before fusion."""
        return self.candidates or max(50, 3 * self.k)

    def checked(self) -> SearchOptions:
        """Self when every value is one search can take; BadQuery saying what to send."""
        k = self.k
        if not isinstance(k, int) or isinstance(k, bool) or not 1 <= k <= MAX_K:
            raise BadQuery(f"k must be a whole number from 1 to {MAX_K}, got {k!r}")
        if self.mode not in MODES:
            raise BadQuery(f"mode must be one of {', '.join(MODES)}, got {self.mode!r}")
        from search import rows as search_rows  # psycopg: not for the CLI's import of MAX_K

        for name in ("repository", "branch", "work"):
            value = getattr(self, name)
            if isinstance(value, str):
                search_rows.check_text(name, value)
        self.levels, self.node_types  # noqa: B018 - each raises BadQuery when wrong
        if self.chapter_weight < 0:
            raise BadQuery(f"chapter_weight must be 0 or more, got {self.chapter_weight}")
        if self.rrf_k is not None and self.rrf_k < 1:
            raise BadQuery(f"rrf_k must be 1 or more, got {self.rrf_k}")
        if not 1 <= self.depth <= 1000:
            raise BadQuery(f"candidates must be from 1 to 1000, got {self.depth}")
        return self


def check_query(query: str) -> str:
    """The query stripped; BadQuery when it is empty, too long or not valid text."""
    if not isinstance(query, str) or not query.strip():
        raise BadQuery("the query is empty: ask in words, e.g. « la pétition des chandelles »")
    from search import rows as search_rows  # psycopg: not for the CLI's import of MAX_K

    search_rows.check_text("query", query)
    if len(query) > MAX_QUERY_CHARS:
        raise BadQuery(f"the query is {len(query)} characters long; the limit is {MAX_QUERY_CHARS}")
    return query.strip()


def _levels(level: int | Sequence[int] | None) -> tuple[int, ...] | None:
    if level is None:
        return None
    levels = (level,) if isinstance(level, int) else tuple(level)
    bad = [x for x in levels if not isinstance(x, int) or isinstance(x, bool) or not 0 <= x <= 3]
    if bad or not levels:
        raise BadQuery(
            f"level must be 0 (paragraphs), 1 (chapter summaries), 2 (part summaries) "
            f"or 3 (work summaries), got {level!r}"
        )
    return levels


def _node_types(node_type: str | Sequence[str] | None) -> tuple[str, ...] | None:
    if node_type is None:
        return None
    types = (node_type,) if isinstance(node_type, str) else tuple(node_type)
    bad = [t for t in types if t not in NODE_TYPES]
    if bad or not types:
        raise BadQuery(f"node_type must be one of {', '.join(NODE_TYPES)}, got {node_type!r}")
    return types
