"""The HTTP JSON API: the MCP tools' structured content over GET (search.web.app).

    GET /api/search?q=…&k=&mode=&level=&work=&repository=&branch=&fields=&snippets=
                   &max_tokens=&max_per_chapter=                    → `search`
    GET /api/nodes/<repository>/<file>?chunk=&context=              → `get_node`
        (<file> may be a citation's file#chunk:lines, the '#' sent as %23)
    GET /api/nodes/<repository>/<file>/parent                       → `get_parent`
    GET /api/nodes/<repository>/<file>/children                     → `get_children`
    GET /api/outline?repository=&work=&depth=&excerpts=             → `outline`
    GET /api/context?q=…&budget=&work=&repository=&branch=          → `context`

`format=text` (search, context) answers the tool's text instead, as text/plain;
`format=response` (search) the whole search response, what `glossator search --json`
prints: the CLI asks a running server with it rather than load the model itself.

Arguments and bounds are the tools' (search.web.params); so are the answers, built
by the same functions (SearchService.agent_search, search.nodes, search.mcp.views,
search.mcp.reading_views). Errors: {"error": "<the tool's message>"} with 400, 404 or 503.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response

from search import nodes, rows
from search.citation import merge
from search.context import MAX_BUDGET, MIN_BUDGET
from search.errors import BadQuery, UnknownFile
from search.mcp import reading_views, views
from search.web import params as arguments
from search.web.app import SECURITY_HEADERS, WebBase


class Api:
    def __init__(self, base: WebBase) -> None:
        self.base = base

    def search(self, request: Request) -> Response:
        def build() -> Response:
            args = arguments.SearchArgs.parse(request.query_params)
            response = self.base.search(args, self.base.readable(request))
            form = answer_format(request, ("json", "text", "response"))
            if form == "response":
                return self.base.json(asdict(response))
            text, data = views.search_view(
                response, fields=args.fields, snippets=args.snippets, max_tokens=args.max_tokens
            )
            return self._view(form, text, data)

        return self.base.answer(request, False, build, "/api/search")

    def outline(self, request: Request) -> Response:
        def build() -> Response:
            params = request.query_params
            depth = arguments.whole(params, "depth", 3, 1, 3) or 3
            tree = nodes.outline(
                self.base.db,
                arguments.text(params, "repository"),
                arguments.text(params, "work"),
                branch=self.base.branch(arguments.text(params, "branch")),
                readable=self.base.readable(request),
            )
            _, data = reading_views.outline_view(
                tree, depth=depth, excerpts=arguments.flag(params, "excerpts")
            )
            return self.base.json(data)

        return self.base.answer(request, False, build, "/api/outline")

    def nodes(self, request: Request) -> Response:
        path: str = request.path_params["path"]
        view = "node"
        for suffix in ("parent", "children"):
            if path.endswith(f".md/{suffix}"):
                view, path = suffix, path.removesuffix(f"/{suffix}")
        route = "/api/nodes/{repository}/{path}" + ("" if view == "node" else f"/{view}")

        def build() -> Response:
            params = request.query_params
            repository = arguments.repository_name(request.path_params["repository"])
            # a citation as every face prints it, its '#' sent as %23 (search.citation)
            cited, chunk, named = merge(
                path, arguments.whole(params, "chunk", None, 0, None), repository
            )
            repository = named or repository
            source_file = arguments.source_path(cited)
            branch = self.base.branch(arguments.text(params, "branch"))
            db = self.base.db
            readable = self.base.readable(request)
            if view == "parent":
                parent = nodes.get_parent(
                    db, source_file, repository=repository, branch=branch, readable=readable
                )
                if parent is None:
                    raise UnknownFile(
                        f"{source_file} is the summary of a whole work: it has no parent. "
                        "Use /api/outline to see the work's parts and chapters."
                    )
                return self.base.json(views.node_view(parent)[1])
            if view == "children":
                kids = nodes.get_children(
                    db, source_file, repository=repository, branch=branch, readable=readable
                )
                return self.base.json(views.children_view(source_file, kids)[1])
            node = nodes.get_node(
                db,
                source_file,
                chunk,
                repository=repository,
                branch=branch,
                context=arguments.whole(params, "context", 0, 0, 20) or 0,
                readable=readable,
            )
            return self.base.json(views.node_view(node)[1])

        return self.base.answer(request, False, build, route)

    def context(self, request: Request) -> Response:
        def build() -> Response:
            params = request.query_params
            form = answer_format(request, ("json", "text"))
            question = params.get("q", "")
            rows.check_text("question", question)
            pack = self.base.service.context(
                question,
                budget=arguments.whole(params, "budget", 2000, MIN_BUDGET, MAX_BUDGET) or 2000,
                repository=arguments.text(params, "repository"),
                branch=self.base.branch(arguments.text(params, "branch")),
                work=arguments.text(params, "work"),
                readable=self.base.readable(request),
            )
            return self._view(form, *reading_views.context_view(pack))

        return self.base.answer(request, False, build, "/api/context")

    def _view(self, form: str, text: str, data: Any) -> Response:
        if form == "text":
            return PlainTextResponse(text + "\n", headers=SECURITY_HEADERS)
        return self.base.json(data)


def answer_format(request: Request, allowed: tuple[str, ...]) -> str:
    form = request.query_params.get("format") or allowed[0]
    if form not in allowed:
        raise BadQuery(f"format must be one of {', '.join(allowed)}, got {form!r}")
    return form
