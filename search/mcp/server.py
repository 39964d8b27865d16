"""The MCP server: six thin tools over `search/`, for AI agents.

    server = build_server(service)                # service: a search.service.SearchService
    server.run("stdio")                           # `glossator mcp`
    app = mcp_http_app(service, token=…)          # streamable HTTP, mounted at /mcp

The composition root (`glossator/`) builds the service from the settings; nothing
here reads them.

Tools: `search`, `context`, `get_node`, `get_parent`, `get_children`, `outline`. Each is a
few lines over a typed function with its own tests; what it returns is written by
`search.mcp.views` (a text for the model, a lean structured twin). Glossator's
errors (`GlossatorError`: empty query, k out of range, unknown file or
repository) become tool errors carrying their message at this one boundary, so
does a database that does not answer (store.errors.describe_failure), and
arguments the schema refuses get one sentence saying what to send instead;
anything else is a bug, which the SDK logs with its traceback and reports to the
client without one.

The HTTP transport lives in `search.mcp.http`.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from typing import Annotated, Any, Literal, TypeVar

import psycopg
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
from mcp.server.mcpserver.tools import Tool
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from pydantic import ConfigDict, Field, ValidationError

from core.access import caller_of
from core.errors import GlossatorError
from search import nodes
from search.citation import merge, whole_file
from search.context import MAX_BUDGET, MIN_BUDGET
from search.inputs import check_arguments, unknown
from search.mcp import reading_views, views
from search.options import AGENT_MAX_PER_CHAPTER, MAX_K
from search.rows import ConnOrPool
from search.service import SearchService
from store.errors import describe_failure

log = logging.getLogger(__name__)

T = TypeVar("T")

INSTRUCTIONS = """\
Glossator searches books written in Markdown, indexed as a tree: a work's summary
(level 3), its parts' summaries (2), each chapter's summary (1) and its text cut
into paragraphs (0). To answer a question, call `context`: the best passages with
their chapter summaries, cited, within a token budget. To explore, `search`.
Quote paragraphs (level 0), never summaries (machine-written); cite the heading
path (the folder names spell it where no heading is shown) and the citation
repository:folder/file#chunk:lines (a group's header names repository:folder/ once,
each hit file#chunk:lines under it); the tools take it whole or relative as
source_file. A chapter summary hit names the
chapter: open its text with `get_children`; frame a paragraph with `get_parent`;
read around one with `get_node(source_file, chunk, context=2)`; `outline`
lists works, parts and chapters. Without `branch`, each repository is read on its
default branch (the one its git HEAD names); a note says when a book has rows only
on another."""

SEARCH_DESCRIPTION = """\
Hybrid search (keywords + meaning) over the books, one hit per chapter by
default. Quote exact words (« … » or "…") to find the passages that say them.
level: 0 paragraphs (quotable), 1 chapter summaries, 2 parts, 3 works. mode:
bm25 for exact words, vector for paraphrases. Spend less with fields,
snippets or max_tokens."""

CONTEXT_DESCRIPTION = """\
What to read to answer a question, within a token budget: the best paragraphs
by chapter, each chapter with its summary, all cited. found is false when
nothing is relevant: nothing is padded in."""

GET_NODE_DESCRIPTION = """\
A file as cited (source_file: a citation repository:path#chunk, or a path): all
its chunks, or one and `context` chunks either side, to read around a hit."""

GET_PARENT_DESCRIPTION = """\
Climb one level: a chapter's text → its summary → its part → its work."""

GET_CHILDREN_DESCRIPTION = """\
Descend one level, in reading order: work → parts → chapter summaries → a
chapter's text (every paragraph)."""

OUTLINE_DESCRIPTION = """\
Table of contents: works → parts → chapters, with titles and files (depth 1-3;
excerpts: each summary's opening). Names the works that `work` filters take."""


def _tool_errors(fn: Callable[..., T]) -> Callable[..., T]:
    """Glossator's own errors → a tool error with their message (the one boundary);
    a database that does not answer (down, restarting, disk full) → one line saying so."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> T:
        try:
            check_arguments(kwargs)  # the HTTP API's check too (search.inputs)
            return fn(*args, **kwargs)
        except GlossatorError as e:
            raise ToolError(str(e)) from None
        except psycopg.OperationalError as e:  # the pool's timeout is one too
            raise ToolError(describe_failure(e)) from None

    return wrapper


class GlossatorMCP(MCPServer):
    """The SDK's server with errors an agent can act on: one sentence, no prefix,
    no pydantic dump (its URL and input echo cost tokens and say nothing new)."""

    def __init__(self, *args: Any, tools: list[Tool], **kwargs: Any) -> None:
        super().__init__(*args, tools=tools, **kwargs)
        self.input_schemas = {t.name: t.parameters for t in tools}

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
        try:
            return await super().call_tool(name, arguments, context)
        except UnexpectedToolError:
            raise
        except ToolError as e:
            cause = e.__cause__
            if isinstance(cause, ValidationError):
                schema = self.input_schemas.get(name, {})
                raise ToolError(explain(cause, schema, name)) from cause
            message = str(e).removeprefix(f"Error executing tool {name}: ")
            raise ToolError(message) from cause


def explain(error: ValidationError, schema: dict[str, Any], tool: str = "this tool") -> str:
    """One sentence per refused argument, saying what to send instead."""
    props = schema.get("properties", {})
    said: list[str] = []
    for err in error.errors():
        name = str(err["loc"][0]) if err["loc"] else "arguments"  # an item's error is its list's
        if name in {s.split(" ", 1)[0] for s in said}:
            continue
        prop = props.get(name, {})
        if err["type"] == "missing":
            said.append(f"{name} is required")
            continue
        if err["type"] == "extra_forbidden":  # _tool forbids them: a typo was ignored before
            said.append(unknown(name, list(props), tool, kind="argument"))
            continue
        said.append(f"{name} must be {_expected(prop)}")
    return "; ".join(said) + "." if said else "The arguments do not match the tool's schema."


def _expected(prop: dict[str, Any]) -> str:
    if "enum" in prop:
        return "one of " + ", ".join(repr(v) for v in prop["enum"])
    kind = prop.get("type")
    if kind == "integer" or kind == "number":
        word = "a whole number" if kind == "integer" else "a number"
        low, high = prop.get("minimum"), prop.get("maximum")
        if low is not None and high is not None:
            return f"{word} from {low} to {high}"
        if low is not None:
            return f"{word} of at least {low}"
        return word
    if kind == "array":
        items = prop.get("items", {})
        if "enum" in items:
            return "a list of " + ", ".join(repr(v) for v in items["enum"])
        return "a list of " + (_expected(items) if items else "values")
    return {"string": "a string", "boolean": "true or false"}.get(str(kind), "valid")


TIMINGS_META = "glossator/timings_ms"  # in a search result's _meta, which clients keep from models


def _result(text: str, data: Any, meta: dict[str, Any] | None = None) -> CallToolResult:
    return CallToolResult(
        content=[TextContent(type="text", text=text)], structured_content=data, _meta=meta
    )


Repository = str | None  # default: every repository
Branch = str | None  # default: each repository's own (the branch its HEAD names)
Work = Annotated[str | None, Field(description="Its folder name (see outline).")]
SourceFile = str  # a citation (search.citation) or a path, maybe relative to a group's folder


LogLevel = Literal["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"]
# idempotent_hint is only meaningful for tools that are not read-only (MCP spec)
READ_ONLY = ToolAnnotations(read_only_hint=True, open_world_hint=False)


def build_server(service: SearchService, *, log_level: LogLevel = "INFO") -> GlossatorMCP:
    """The MCP server over a search service (its database, embedder and reranker)."""
    tools = [_tool(fn, description) for fn, description in _tools(service)]
    return GlossatorMCP("glossator", instructions=INSTRUCTIONS, log_level=log_level, tools=tools)


def _tool(fn: Callable[..., Any], description: str) -> Tool:
    """The SDK's tool for `fn`, its schemas compacted (`compact_schema`). The SDK reads
    a tool's fields live (FuncMetadata's contract), so they are set once, here."""
    tool = Tool.from_function(_tool_errors(fn), description=description, annotations=READ_ONLY)
    # an argument the tool does not take is refused, naming the closest (explain): ignored,
    # a typo'd `chunk` answered the whole file
    loose = tool.fn_metadata.arg_model
    strict = type(loose.__name__, (loose,), {"model_config": ConfigDict(extra="forbid")})
    tool.fn_metadata.arg_model = strict
    tool.parameters = compact_schema(tool.parameters, inputs=True) | {"additionalProperties": False}
    if tool.fn_metadata.output_schema is not None:
        tool.fn_metadata.output_schema = compact_schema(tool.fn_metadata.output_schema)
    return tool


def _tools(service: SearchService) -> list[tuple[Callable[..., Any], str]]:
    """The six tools, each a few lines over `service` and `search.nodes`: the two that
    answer a question, then the four that walk the tree (in the order tools/list says)."""
    return [*_question_tools(service), *_reading_tools(service.conn_or_pool)]


def _question_tools(service: SearchService) -> list[tuple[Callable[..., Any], str]]:
    """`search` and `context`: a question in, ranked passages out (the embedder, the
    reranker and the database of `service`)."""

    def search(
        query: Annotated[str, Field(description="Words to look for, any language.")],
        k: Annotated[int, Field(ge=1, le=MAX_K)] = 10,
        mode: Literal["hybrid", "bm25", "vector"] = "hybrid",
        level: Annotated[int | None, Field(ge=0, le=3)] = None,
        work: Work = None,
        repository: Repository = None,
        branch: Branch = None,
        fields: Annotated[
            list[views.Field] | None, Field(description="What each hit carries beyond file#chunk.")
        ] = None,
        snippets: Annotated[bool, Field(description="First ~40 words of each passage.")] = False,
        max_tokens: Annotated[
            int | None, Field(ge=100, description="Leave out the hits past this many tokens.")
        ] = None,
        max_per_chapter: Annotated[int, Field(ge=1, le=MAX_K)] = AGENT_MAX_PER_CHAPTER,
        ctx: Context | None = None,
    ) -> Annotated[CallToolResult, views.LeanSearch]:
        response = service.agent_search(
            query,
            k=k,
            mode=mode,
            level=level,
            work=work,
            repository=repository,
            branch=branch,
            max_per_chapter=max_per_chapter,
            readable=readable(ctx),
        )
        chosen = tuple(fields) if fields is not None else views.DEFAULT_FIELDS
        text, data = views.search_view(
            response, fields=chosen, snippets=snippets, max_tokens=max_tokens
        )
        return _result(text, data, {TIMINGS_META: response.timings_ms})

    def context(
        question: Annotated[str, Field(description="The question to answer.")],
        budget: Annotated[int, Field(ge=MIN_BUDGET, le=MAX_BUDGET)] = 2000,
        work: Work = None,
        repository: Repository = None,
        branch: Branch = None,
        ctx: Context | None = None,
    ) -> Annotated[CallToolResult, reading_views.LeanContext]:
        pack = service.context(
            question,
            budget=budget,
            repository=repository,
            branch=branch,
            work=work,
            readable=readable(ctx),
        )
        return _result(*reading_views.context_view(pack))

    return [(search, SEARCH_DESCRIPTION), (context, CONTEXT_DESCRIPTION)]


def _reading_tools(db: ConnOrPool) -> list[tuple[Callable[..., Any], str]]:
    """`get_node`, `get_parent`, `get_children`, `outline`: a file or a work in, its rows
    out (`search.nodes` over the database alone: no model)."""

    def get_node(
        source_file: SourceFile,
        chunk: Annotated[int | None, Field(ge=0)] = None,
        context: Annotated[int, Field(ge=0, le=20)] = 0,
        repository: Repository = None,
        branch: Branch = None,
        ctx: Context | None = None,
    ) -> Annotated[CallToolResult, views.LeanNode]:
        source_file, chunk, repository = merge(source_file, chunk, repository)
        node = nodes.get_node(
            db,
            source_file,
            chunk,
            repository=repository,
            branch=branch,
            context=context,
            readable=readable(ctx),
        )
        return _result(*views.node_view(node))

    def get_parent(
        source_file: SourceFile,
        repository: Repository = None,
        branch: Branch = None,
        ctx: Context | None = None,
    ) -> Annotated[CallToolResult, views.LeanNode]:
        source_file, repository = whole_file(source_file, repository)
        parent = nodes.get_parent(
            db, source_file, repository=repository, branch=branch, readable=readable(ctx)
        )
        if parent is None:
            raise ToolError(
                f"{source_file} is the summary of a whole work: it has no parent. "
                "Use outline to see the work's parts and chapters."
            )
        return _result(*views.node_view(parent))

    def get_children(
        source_file: SourceFile,
        repository: Repository = None,
        branch: Branch = None,
        ctx: Context | None = None,
    ) -> Annotated[CallToolResult, views.LeanChildren]:
        source_file, repository = whole_file(source_file, repository)
        kids = nodes.get_children(
            db, source_file, repository=repository, branch=branch, readable=readable(ctx)
        )
        parent = kids[0].parent_source_file if kids else None
        return _result(*views.children_view(parent or source_file, kids))

    def outline(
        work: Work = None,
        depth: Annotated[int, Field(ge=1, le=3)] = 3,
        excerpts: bool = False,
        repository: Repository = None,
        branch: Branch = None,
        ctx: Context | None = None,
    ) -> Annotated[CallToolResult, reading_views.LeanOutline]:
        tree = nodes.outline(db, repository, work, branch=branch, readable=readable(ctx))
        return _result(*reading_views.outline_view(tree, depth=depth, excerpts=excerpts))

    return [
        (get_node, GET_NODE_DESCRIPTION),
        (get_parent, GET_PARENT_DESCRIPTION),
        (get_children, GET_CHILDREN_DESCRIPTION),
        (outline, OUTLINE_DESCRIPTION),
    ]


def readable(ctx: Context | None) -> frozenset[str] | None:
    """The repositories a tool call may read: those of the caller the access boundary
    left in its HTTP request's scope (core.access; none without one: fail closed), every
    one over stdio or in process (no HTTP request: whoever runs it can open the database)."""
    try:
        request = ctx.request_context.request if ctx is not None else None
    except ValueError:  # outside a request
        request = None
    return caller_of(getattr(request, "scope", None)).readable


def compact_schema(schema: dict[str, Any], *, inputs: bool = False) -> dict[str, Any]:
    """The same JSON Schema, shorter and portable: each definition written once (a
    definition used once is inlined, one used more often or recursively stays a
    `$ref`), no pydantic `title`s, and, for `inputs`, an optional argument as its
    plain type rather than `anyOf: [X, null]`.

    Why: tools/list is read by every agent at every start (the titles alone were a
    third of it); `"type": [X, "null"]` lists, which an earlier version wrote, are
    what the MCP Inspector's `--strict` portability check warns about, and outputs
    need no null: `search.mcp.views` leaves a missing value out. For inputs,
    omitting an optional argument means None, so the SDK still accepts an explicit
    null; the schema just does not advertise it.
    """
    defs: dict[str, Any] = schema.get("$defs", {})
    uses: dict[str, int] = {}

    def count(node: Any) -> None:
        if isinstance(node, list):
            for x in node:
                count(x)
        elif isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str) and ref.startswith("#/$defs/"):
                name = ref.removeprefix("#/$defs/")
                uses[name] = uses.get(name, 0) + 1
            for v in node.values():
                count(v)

    count(schema)
    shared = {name for name, n in uses.items() if n > 1}
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
            if name in inside or name in shared:  # the $ref stays, with its definition
                kept.add(name)
                return node
            extra = {k: walk(v, inside) for k, v in node.items() if k != "$ref"}
            return {**walk(defs[name], (*inside, name)), **extra}
        out: dict[str, Any] = {}
        for k, v in node.items():
            if k in ("$defs", "title"):
                continue
            if k == "properties" and isinstance(v, dict):  # names, not keywords
                out[k] = {name: walk(p, inside) for name, p in v.items()}
            else:
                out[k] = walk(v, inside)
        alternatives = out.get("anyOf")
        if inputs and isinstance(alternatives, list) and {"type": "null"} in alternatives:
            rest = [a for a in alternatives if a != {"type": "null"}]
            if len(rest) == 1 and isinstance(rest[0], dict):
                merged = rest[0] | {k: v for k, v in out.items() if k != "anyOf"}
                if "default" in merged and merged["default"] is None:
                    del merged["default"]  # omitted means None
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
