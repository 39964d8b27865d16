"""Queries over the store (BM25, vector, fusion, rerank, climb) and the MCP server.

    from search import SearchService, SearchOptions, get_node, get_parent, get_children, outline

    service = SearchService(pool, embedder=…)            # owns the query cache, the lock
    service.search("…", mode="hybrid", k=10)              -> SearchResponse
    service.context("question", budget=2000)              -> ContextPack
    search(pool, "…", SearchOptions(k=10), query_vector=…) -> SearchResponse (no embedding)
    get_node(pool, "corpus/…/source.md", chunk_index=None) -> Node
    get_parent(pool, "corpus/…/source.md")                -> Node | None
    get_children(pool, "corpus/…/summary.md")             -> list[Node]
    outline(pool, repository=None, work=None)             -> Outline

Modules: service (what the faces call; it holds query_vectors, the query vectors
with their cache and lock, and gates, each corpus's calibrated gate), options (SearchOptions,
the QueryEmbedder protocol), engine (search), stages (its steps), retrieval (the
two rankings), fusion (RRF, caps), chapters (chapter evidence), rerank, nodes
(climbing, outline), passages (a summary's best paragraphs), context and
relevance (context packs and their gate), freshness (indexed commit vs branch
tip, from the database), tuning (the fitted constants), rows (SQL → results),
results (the types), errors, evaluation (`glossator eval`). The faces live apart:
`search.mcp` (the MCP server) and `search.web` (the web reader and its JSON API)
import the engine, never the reverse. Nothing here reads settings: `glossator/` builds
the service (glossator/search_wiring.py).
"""

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the names below, for type checkers; at run time see __getattr__
    from search.context import ChapterContext, ContextPack, Passage
    from search.engine import search
    from search.errors import BadQuery, SearchError, UnknownFile, UnknownRepository
    from search.nodes import get_children, get_node, get_parent, outline
    from search.options import QueryEmbedder, QueryVector, SearchOptions
    from search.results import (
        Chunk,
        Citation,
        Freshness,
        Hit,
        Node,
        Outline,
        OutlineEntry,
        RerankReport,
        Scores,
        SearchResponse,
    )
    from search.service import SearchService

# Each name's module, imported at the name's first use (PEP 562): `import search.results`
# (the CLI asking a running server, glossator.remote) must not load the engine, numpy and
# psycopg. `context`, the function, is `search.context.context`: the package attribute
# `context` is the submodule once anything imported it.
_HOMES = {
    "ChapterContext": "search.context",
    "ContextPack": "search.context",
    "Passage": "search.context",
    "search": "search.engine",
    "BadQuery": "search.errors",
    "SearchError": "search.errors",
    "UnknownFile": "search.errors",
    "UnknownRepository": "search.errors",
    "get_children": "search.nodes",
    "get_node": "search.nodes",
    "get_parent": "search.nodes",
    "outline": "search.nodes",
    "QueryEmbedder": "search.options",
    "QueryVector": "search.options",
    "SearchOptions": "search.options",
    "SearchService": "search.service",
    **dict.fromkeys(
        (
            "Chunk",
            "Citation",
            "Freshness",
            "Hit",
            "Node",
            "Outline",
            "OutlineEntry",
            "RerankReport",
            "Scores",
            "SearchResponse",
        ),
        "search.results",
    ),
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'search' has no attribute {name!r}")
    return getattr(importlib.import_module(home), name)


__all__ = [
    "BadQuery",
    "ChapterContext",
    "Chunk",
    "Citation",
    "ContextPack",
    "Freshness",
    "Hit",
    "Node",
    "Outline",
    "OutlineEntry",
    "Passage",
    "QueryEmbedder",
    "QueryVector",
    "RerankReport",
    "Scores",
    "SearchError",
    "SearchOptions",
    "SearchResponse",
    "SearchService",
    "UnknownFile",
    "UnknownRepository",
    "get_children",
    "get_node",
    "get_parent",
    "outline",
    "search",
]
