"""The MCP server: six thin tools over `search/`, for AI agents.

    server = build_server(settings, database)     # an mcp.server.mcpserver.MCPServer
    server.run("stdio")                           # `glossator mcp`
    app = mcp_http_app(settings, database)        # streamable HTTP, mounted at /mcp/

Tools: `search`, `context`, `get_node`, `get_parent`, `get_children`, `outline`. Each is a
few lines over a typed function with its own tests; their descriptions are
written for the agent that reads them (what the levels mean, when to climb,
how to cite). Glossator's errors (`GlossatorError`: empty query, k out of
range, unknown file or repository) become tool errors carrying their message at
this one boundary; anything else is a bug, which the SDK logs with its
traceback and reports to the client without one.

The HTTP transport lives in `search.mcp_http`.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any, Literal, TypeVar

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations
from pydantic import Field

from glossator.errors import GlossatorError
from glossator.settings import Settings
from search import nodes as N
from search.context import MAX_BUDGET, MIN_BUDGET, ContextPack
from search.context import context as build_context
from search.engine import AGENT_MAX_PER_CHAPTER, MAX_K
from search.engine import search as run_search
from search.rerank import Reranker, get_reranker
from search.results import Node, Outline, SearchResponse

log = logging.getLogger(__name__)

T = TypeVar("T")

INSTRUCTIONS = """\
Glossator searches books written in Markdown and indexed as a tree. Each book (a
"work") has a summary (level 3); its parts (« séries », « livres ») have summaries
(level 2); each chapter or liminary piece has a summary (level 1) and its text,
cut into paragraphs (level 0). Every result carries its citation: repository,
source_file, heading_path, chunk_index and line span.

How to work: to answer a question, `context` returns the best passages with
their chapter summaries, cited, within a token budget (or says that nothing
relevant was found). To explore, use `search` (hybrid keyword + meaning). Paragraph hits
(level 0) are the author's own words: quote them, citing heading_path and
source_file#chunk_index (and lines). A summary hit (level 1-3) tells you which
chapter or part treats the question: open its text with `get_children`. To frame
a paragraph, climb to its chapter summary with `get_parent`; read around it with
`get_node(source_file, chunk_index, context=2)`. Use `outline` to see the
structure of a work before browsing. Summaries are machine-written digests: quote
the text, not the summaries."""

SEARCH_DESCRIPTION = f"""\
Search the indexed books: keyword (BM25, exact words, French stemming, accents
ignored) and meaning (multilingual embeddings), fused by reciprocal rank fusion;
in hybrid mode whole chapters are ranked too (their words, paragraphs and
summary), so a question that restates a chapter's argument finds that chapter.
Put exact words in quotes (« … » or "…") to bring first the passages that
say them (`scores.phrase`). Returns the best rows, each with its text,
citation and scores.

Levels: 0 = a paragraph of the text (quote these); 1 = a chapter's summary;
2 = a part's summary; 3 = the work's summary. Filter with `level` (e.g. 0 for
quotable passages only, 1 to find which chapter discusses an idea), `work`
(folder name under corpus/, see `outline`), `repository`, `node_type`.
Modes: "hybrid" (default, best), "bm25" (exact words: quotations, names),
"vector" (paraphrases, ideas asked in other words or another language).
with_parent adds each hit's enclosing node (a paragraph's chapter summary);
with_children opens a summary hit onto its chapter's paragraphs (large);
with_neighbours adds the paragraphs just before and after a hit.
max_per_chapter (default {AGENT_MAX_PER_CHAPTER}) keeps the page from filling with one chapter.
A chapter-summary hit carries `passages`: its chapter's paragraphs nearest the query.
k: 1 to {MAX_K}. `rerank` reports whether a reranker reordered the results.
`index` says how fresh the index is: the indexed commit of each repository's
branch and whether the branch has moved since (status current / behind /
not indexed / unknown).

Next steps: a summary hit (level 1-3) names the chapter or part that treats the
question: open its text with get_children(source_file). To frame a paragraph,
climb to its chapter summary with get_parent(source_file). Cite a paragraph as
heading_path + source_file#chunk_index (lines line_start-line_end)."""

CONTEXT_DESCRIPTION = """\
Gather what to read to answer a question, within a token budget: the best
paragraphs (the author's words), grouped by chapter, each chapter with its
summary for framing, passages in reading order, every passage cited
(source_file, heading_path, chunk_index, lines). Token counts are the stored
cl100k counts. When no passage is relevant enough, `found` is false and
`message` says so: nothing is padded in. `index` states the freshness of the
index (indexed commit, whether the branch moved since). Use search instead to
explore, browse or filter by level."""

GET_NODE_DESCRIPTION = """\
Read one file of the corpus by its source_file (repository-relative path, as in
citations): all its chunks in order, or, with chunk_index, that chunk and
`context` chunks either side (0 to 20). Use it to quote exactly and to read
around a search hit before citing it."""

GET_PARENT_DESCRIPTION = """\
Climb one level: the node a file hangs from, with all its text. A chapter's
source.md → the chapter's summary.md; a chapter summary → its part's summary;
a part summary → the work's summary. Use it to put a paragraph in the context
of its chapter's argument. The work's summary has no parent (an error says so)."""

GET_CHILDREN_DESCRIPTION = """\
Descend one level: the nodes that hang from a summary, in reading order. A work
summary → its parts and liminary pieces; a part summary → its chapter summaries;
a chapter summary → the chapter's text (source.md, every paragraph). Use it when
a summary matched your question and you need the author's own words."""

OUTLINE_DESCRIPTION = """\
The table of contents: works → parts → chapters (and liminary pieces such as an
introduction), with titles, heading paths, file paths and the first lines of
each summary. Use it to find a chapter by its title, to learn the `work` names
that filters take, or to browse a book before searching it."""


@dataclass
class Children:
    source_file: str
    children: list[Node]


def _tool_errors(fn: Callable[..., T]) -> Callable[..., T]:
    """Glossator's own errors → a tool error with their message (the one boundary)."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> T:
        try:
            return fn(*args, **kwargs)
        except GlossatorError as e:
            raise ToolError(str(e)) from None

    return wrapper


class SearchService:
    """What the tools share: the database, the settings, the embedder and reranker (lazy)."""

    def __init__(
        self,
        settings: Settings,
        conn_or_pool: Any,
        *,
        embedder: Any = None,
        reranker: Reranker | Literal["settings"] | None = "settings",
    ) -> None:
        self.settings = settings
        self.conn_or_pool = conn_or_pool
        self._embedder = embedder
        self.reranker = get_reranker(settings) if reranker == "settings" else reranker

    @property
    def embedder(self) -> Any:
        if self._embedder is None:
            from indexer.embedders import get_embedder

            self._embedder = get_embedder(self.settings)
        return self._embedder


Repository = Annotated[
    str | None, Field(description="Repository name; omit to search every indexed repository.")
]
Branch = Annotated[str, Field(description="Branch of the repository (default main).")]
SourceFile = Annotated[
    str,
    Field(description="Repository-relative path from a citation, e.g. corpus/<work>/…/source.md."),
]


def build_server(
    settings: Settings,
    conn_or_pool: Any,
    *,
    embedder: Any = None,
    reranker: Reranker | Literal["settings"] | None = "settings",
) -> MCPServer:
    """The MCP server over a database (a `store.db.Database`, a pool or a connection)."""
    service = SearchService(settings, conn_or_pool, embedder=embedder, reranker=reranker)
    server: MCPServer = MCPServer(
        "glossator", instructions=INSTRUCTIONS, log_level=settings.log_level
    )
    read_only = ToolAnnotations(read_only_hint=True, idempotent_hint=True, open_world_hint=False)

    @server.tool(description=SEARCH_DESCRIPTION, annotations=read_only)
    @_tool_errors
    def search(
        query: Annotated[str, Field(description="What to look for, in words (any language).")],
        k: Annotated[int, Field(ge=1, le=MAX_K, description="How many hits (1-100).")] = 10,
        mode: Literal["hybrid", "bm25", "vector"] = "hybrid",
        repository: Repository = None,
        branch: Branch = N.DEFAULT_BRANCH,
        work: Annotated[str | None, Field(description="Work folder name (see outline).")] = None,
        level: Annotated[
            int | None, Field(ge=0, le=3, description="0 paragraphs, 1 chapter, 2 part, 3 work.")
        ] = None,
        node_type: Literal["source", "section_summary", "part_summary", "work_summary"]
        | None = None,
        with_parent: bool = False,
        with_children: bool = False,
        with_neighbours: bool = False,
        max_per_chapter: Annotated[
            int | None, Field(ge=1, le=MAX_K, description="Hits per chapter at most.")
        ] = AGENT_MAX_PER_CHAPTER,
    ) -> SearchResponse:
        needs_vectors = mode != "bm25"
        return run_search(
            service.conn_or_pool,
            query,
            mode=mode,
            k=k,
            repository=repository,
            branch=branch,
            work=work,
            level=level,
            node_type=node_type,
            with_parent=with_parent,
            with_children=with_children,
            with_neighbours=with_neighbours,
            max_per_chapter=max_per_chapter,
            climb_down=2,
            embedder=service.embedder if needs_vectors else None,
            reranker=service.reranker,
            settings=service.settings,
        )

    @server.tool(description=CONTEXT_DESCRIPTION, annotations=read_only)
    @_tool_errors
    def context(
        question: Annotated[str, Field(description="The question to answer, in words.")],
        budget: Annotated[
            int, Field(ge=MIN_BUDGET, le=MAX_BUDGET, description="Tokens the pack may use.")
        ] = 2000,
        repository: Repository = None,
        branch: Branch = N.DEFAULT_BRANCH,
        work: Annotated[str | None, Field(description="Work folder name (see outline).")] = None,
    ) -> ContextPack:
        return build_context(
            service.conn_or_pool,
            question,
            budget=budget,
            repository=repository,
            branch=branch,
            work=work,
            embedder=service.embedder,
            reranker=service.reranker,
            settings=service.settings,
        )

    @server.tool(description=GET_NODE_DESCRIPTION, annotations=read_only)
    @_tool_errors
    def get_node(
        source_file: SourceFile,
        chunk_index: Annotated[int | None, Field(ge=0, description="One chunk only.")] = None,
        context: Annotated[int, Field(ge=0, le=20, description="Chunks either side.")] = 0,
        repository: Repository = None,
        branch: Branch = N.DEFAULT_BRANCH,
    ) -> Node:
        return N.get_node(
            service.conn_or_pool,
            source_file,
            chunk_index,
            repository=repository,
            branch=branch,
            context=context,
        )

    @server.tool(description=GET_PARENT_DESCRIPTION, annotations=read_only)
    @_tool_errors
    def get_parent(
        source_file: SourceFile, repository: Repository = None, branch: Branch = N.DEFAULT_BRANCH
    ) -> Node:
        parent = N.get_parent(
            service.conn_or_pool, source_file, repository=repository, branch=branch
        )
        if parent is None:
            raise ToolError(
                f"{source_file} is the summary of a whole work: it has no parent. "
                "Use outline to see the work's parts and chapters."
            )
        return parent

    @server.tool(description=GET_CHILDREN_DESCRIPTION, annotations=read_only)
    @_tool_errors
    def get_children(
        source_file: SourceFile, repository: Repository = None, branch: Branch = N.DEFAULT_BRANCH
    ) -> Children:
        kids = N.get_children(
            service.conn_or_pool, source_file, repository=repository, branch=branch
        )
        return Children(source_file=source_file, children=kids)

    @server.tool(description=OUTLINE_DESCRIPTION, annotations=read_only)
    @_tool_errors
    def outline(
        repository: Repository = None,
        work: Annotated[str | None, Field(description="One work's folder name.")] = None,
        branch: Branch = N.DEFAULT_BRANCH,
    ) -> Outline:
        return N.outline(service.conn_or_pool, repository, work, branch=branch)

    for tool in server._tool_manager.list_tools():  # no public setter in mcp 2.3
        if tool.fn_metadata.output_schema is not None:
            tool.fn_metadata.output_schema = compact_schema(tool.fn_metadata.output_schema)
    return server


def compact_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """The same JSON Schema without `$ref`s and nullable `anyOf`s, which clients check
    2.5x faster (the MCP SDK's Python client validates every structured result
    against the tool's `outputSchema` with jsonschema: 4.1 -> 1.7 ms for a page of
    10 hits; bench/RESULTS.md, "Latency").

    Pydantic writes `Optional[X]` as `anyOf: [X, {"type": "null"}]` and each model
    once under `$defs`. Here a `$ref` is replaced by its definition (a recursive one
    is kept, with the `$defs` it needs), and `anyOf: [X, null]` becomes X with
    `"type": [X's type, "null"]` (`enum`/`const` gain `null`): X's other keywords
    (`properties`, `minimum`, ...) do not apply to null, so the same instances pass.
    """
    defs: dict[str, Any] = schema.get("$defs", {})
    kept: set[str] = set()

    def walk(node: Any, inside: tuple[str, ...]) -> Any:
        if isinstance(node, list):
            return [walk(x, inside) for x in node]
        if not isinstance(node, dict):
            return node
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/"):
            name = ref.removeprefix("#/$defs/")
            if name not in defs:  # not pydantic's: left as it is
                return node
            if name in inside:  # recursive: the $ref stays, with its definition
                kept.add(name)
                return node
            extra = {k: walk(v, inside) for k, v in node.items() if k != "$ref"}
            return {**walk(defs[name], (*inside, name)), **extra}
        out = {k: walk(v, inside) for k, v in node.items() if k != "$defs"}
        alternatives = out.get("anyOf")
        if isinstance(alternatives, list):
            rest = [a for a in alternatives if a != {"type": "null"}]
            if (
                len(rest) == 1
                and len(alternatives) == 2
                and isinstance(rest[0].get("type"), str)
                and not {"anyOf", "oneOf", "allOf", "not"} & rest[0].keys()
                and not rest[0].keys() & (out.keys() - {"anyOf"} - ANNOTATIONS)
            ):
                # the outer annotations (title, description, default) win over X's
                merged = rest[0] | {k: v for k, v in out.items() if k != "anyOf"}
                merged["type"] = [rest[0]["type"], "null"]
                if "const" in merged:
                    merged["enum"] = [merged.pop("const")]
                if "enum" in merged and None not in merged["enum"]:
                    merged["enum"] = [*merged["enum"], None]
                return merged
        return out

    compact = walk(schema, ())
    kept_defs: dict[str, Any] = {}
    while missing := sorted(kept - kept_defs.keys()):  # walking one may keep another
        for name in missing:
            kept_defs[name] = walk(defs[name], (name,))
    if kept_defs:
        compact["$defs"] = kept_defs
    return compact


ANNOTATIONS = {"title", "description", "default", "examples"}
