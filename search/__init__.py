"""Queries over the store (BM25, vector, fusion, rerank, climb) and the MCP server.

    from search import search, context, get_node, get_parent, get_children, outline

    search(pool, "…", mode="hybrid", k=10, embedder=…)  -> SearchResponse
    context(pool, "question", budget=2000, embedder=…)   -> ContextPack
    get_node(pool, "corpus/…/source.md", chunk_index=None) -> Node
    get_parent(pool, "corpus/…/source.md")                -> Node | None
    get_children(pool, "corpus/…/summary.md")             -> list[Node]
    outline(pool, repository=None, work=None)             -> Outline

Modules: engine (search), retrieval (the two rankings), fusion (RRF, caps),
rerank, nodes (climbing, outline), passages (a summary's best paragraphs),
context (context packs), freshness (indexed commit vs branch tip), rows (SQL →
results), results (the types), errors, evaluation (`glossator eval`),
mcp_server and mcp_http (the MCP transports), cli.
"""

from search.context import ChapterContext, ContextPack, Passage, context
from search.engine import search
from search.errors import BadQuery, SearchError, UnknownFile, UnknownRepository
from search.nodes import get_children, get_node, get_parent, outline
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
    "RerankReport",
    "Scores",
    "SearchError",
    "SearchResponse",
    "UnknownFile",
    "UnknownRepository",
    "context",
    "get_children",
    "get_node",
    "get_parent",
    "outline",
    "search",
]
