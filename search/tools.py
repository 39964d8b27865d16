"""The calls the MCP tools make, shared with the HTTP API and the web reader.

    response = agent_search(service, "la pétition des chandelles", k=10)

`search` over MCP, `GET /api/search` and the `/search` page give the same hits for
the same arguments because all three call this: one row per chapter by default
(AGENT_MAX_PER_CHAPTER), a chapter summary hit bringing its best paragraphs
(the tuning's climb_down), the caller's filters.
"""

from __future__ import annotations

from search.options import AGENT_MAX_PER_CHAPTER
from search.results import Mode, SearchResponse
from search.service import SearchService


def agent_search(
    service: SearchService,
    query: str,
    *,
    k: int = 10,
    mode: Mode = "hybrid",
    level: int | None = None,
    work: str | None = None,
    repository: str | None = None,
    branch: str | None = None,
    max_per_chapter: int = AGENT_MAX_PER_CHAPTER,
    readable: frozenset[str] | None = None,
) -> SearchResponse:
    """The `search` tool's search; `branch` None: each repository's default branch;
    `readable`: the repositories the caller may read (None: all)."""
    options = service.options(
        mode=mode,
        k=k,
        repository=repository,
        work=work,
        level=level,
        max_per_chapter=max_per_chapter,
        climb_down=service.tuning.packing.climb_down,
        readable=readable,
    )
    if branch is not None:
        options = options.replace(branch=branch)
    return service.search(query, options)
