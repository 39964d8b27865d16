"""Queries over the store (BM25, vector, fusion, rerank, climb) and the MCP server.

    from search import search, get_node, get_parent, get_children, outline

    search(pool, "…", mode="hybrid", k=10, embedder=…)  -> SearchResponse
    get_node(pool, "corpus/…/source.md", chunk_index=None) -> Node
    get_parent(pool, "corpus/…/source.md")                -> Node | None
    get_children(pool, "corpus/…/summary.md")             -> list[Node]
    outline(pool, repository=None, work=None)             -> Outline

Modules: engine (search), retrieval (the two rankings), fusion (RRF), rerank,
nodes (climbing, outline), rows (SQL → results), results (the types), errors,
evaluation (`glossator eval`), mcp_server and mcp_http (the MCP transports), cli.
"""

from search.engine import search
from search.errors import BadQuery, SearchError, UnknownFile, UnknownRepository
from search.nodes import get_children, get_node, get_parent, outline
from search.results import (
    Chunk,
    Citation,
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
    "Chunk",
    "Citation",
    "Hit",
    "Node",
    "Outline",
    "OutlineEntry",
    "RerankReport",
    "Scores",
    "SearchError",
    "SearchResponse",
    "UnknownFile",
    "UnknownRepository",
    "get_children",
    "get_node",
    "get_parent",
    "outline",
    "search",
]
