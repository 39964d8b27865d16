"""The HTTP JSON API: the MCP tools' structured content over GET (search.web.app).

    GET /api/search?q=…&k=&mode=&level=&work=&repository=&branch=&fields=&snippets=
                   &max_tokens=&max_per_chapter=                    → `search`
    GET /api/nodes/<repository>/<file>?chunk=&context=              → `get_node`
    GET /api/nodes/<repository>/<file>/parent                       → `get_parent`
    GET /api/nodes/<repository>/<file>/children                     → `get_children`
    GET /api/outline?repository=&work=&depth=&excerpts=             → `outline`

Arguments and bounds are the tools' (search.web.params); so are the answers, built
by the same functions (search.tools, search.nodes, search.mcp_views,
search.mcp_reading). Errors: {"error": "<the tool's message>"} with 400, 404 or 503.
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from search import mcp_reading as P
from search import mcp_views as V
from search import nodes as N
from search.errors import UnknownFile
from search.tools import agent_search
from search.web import params as Q
from search.web.app import WebBase


class Api:
    def __init__(self, base: WebBase) -> None:
        self.base = base

    def search(self, request: Request) -> Response:
        def build() -> Response:
            args = Q.SearchArgs.parse(request.query_params)
            response = agent_search(
                self.base.service,
                args.query,
                k=args.k,
                mode=args.mode,
                level=args.level,
                work=args.work,
                repository=args.repository,
                branch=self.base.branch(args.branch),
                max_per_chapter=args.max_per_chapter,
            )
            _, data = V.search_view(
                response, fields=args.fields, snippets=args.snippets, max_tokens=args.max_tokens
            )
            return self.base.json(data)

        return self.base.answer(request, False, build)

    def outline(self, request: Request) -> Response:
        def build() -> Response:
            params = request.query_params
            depth = Q.whole(params, "depth", 3, 1, 3) or 3
            tree = N.outline(
                self.base.db,
                Q.text(params, "repository"),
                Q.text(params, "work"),
                branch=self.base.branch(Q.text(params, "branch")),
            )
            _, data = P.outline_view(tree, depth=depth, excerpts=Q.flag(params, "excerpts"))
            return self.base.json(data)

        return self.base.answer(request, False, build)

    def nodes(self, request: Request) -> Response:
        def build() -> Response:
            params = request.query_params
            repository = Q.repository_name(request.path_params["repository"])
            path: str = request.path_params["path"]
            view = "node"
            for suffix in ("parent", "children"):
                if path.endswith(f".md/{suffix}"):
                    view, path = suffix, path.removesuffix(f"/{suffix}")
            source_file = Q.source_path(path)
            branch = self.base.branch(Q.text(params, "branch"))
            db = self.base.db
            if view == "parent":
                parent = N.get_parent(db, source_file, repository=repository, branch=branch)
                if parent is None:
                    raise UnknownFile(
                        f"{source_file} is the summary of a whole work: it has no parent. "
                        "Use /api/outline to see the work's parts and chapters."
                    )
                return self.base.json(V.node_view(parent)[1])
            if view == "children":
                kids = N.get_children(db, source_file, repository=repository, branch=branch)
                return self.base.json(V.children_view(source_file, kids)[1])
            node = N.get_node(
                db,
                source_file,
                Q.whole(params, "chunk", None, 0, None),
                repository=repository,
                branch=branch,
                context=Q.whole(params, "context", 0, 0, 20) or 0,
            )
            return self.base.json(V.node_view(node)[1])

        return self.base.answer(request, False, build)
