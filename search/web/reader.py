"""The web reader and the HTTP API, as Starlette routes the server mounts.

    reader = WebReader(service, readers, jobs=list_jobs_of_pool, problem=lambda: None)
    app = Starlette(routes=[*reader.routes(), ...])

Pages (HTML, server-rendered with Jinja2, autoescape on; they work without JavaScript):

    GET /                               search form, repositories and works, last jobs
    GET /search?q=…                     the MCP `search` tool's hits (repository, work,
                                        branch, mode, level, k)
    GET /read/<repository>              the repository's works
    GET /read/<repository>/<file>       a chapter, a summary, a work (search.web.reading)
    GET /jobs                           the indexing queue, live (a small script polls)
    GET /favicon.ico                    the site's icon
    GET|POST /-/login, POST /-/logout   when reads need a token (search.web.access)

JSON (the MCP tools' structured content, their errors as {"error": …}):

    GET /api/search?q=…                 `search`
    GET /api/nodes/<repository>/<file>  `get_node` (?chunk=&context=); …/parent, …/children
    GET /api/outline                    `outline` (?repository=&work=&depth=&excerpts=)
    GET /api/context?q=…                `context` (?budget=&work=&repository=&branch=)

Every answer passes one boundary (search.web.app's `WebBase.answer`): the read policy first (401: a login form
for a page, a JSON error for the API, never the data), then Glossator's errors as one
message with their status (400 a bad argument, 404 an unknown repository, work or
file, 503 a database that does not answer), never a traceback.
"""

from __future__ import annotations

from importlib.resources import files

from starlette.requests import Request
from starlette.responses import FileResponse, Response
from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles

from search.service import SearchService
from search.web.access import Readers
from search.web.api import Api
from search.web.app import JobsSource, Problem, WebBase
from search.web.pages import Pages


async def favicon(request: Request) -> Response:
    """Browsers ask every site for it; a 404 in each tab's log otherwise."""
    icon = files("search.web").joinpath("static", "favicon.ico")
    return FileResponse(
        str(icon), media_type="image/x-icon", headers={"Cache-Control": "max-age=86400"}
    )


class WebReader:
    """Every route of the reader and the API (search.web.pages, search.web.api)."""

    def __init__(
        self,
        service: SearchService,
        readers: Readers,
        *,
        jobs: JobsSource | None = None,
        problem: Problem = lambda: None,
    ) -> None:
        self.base = base = WebBase(service, readers, jobs=jobs, problem=problem)
        self.pages = Pages(base)
        self.api = Api(base)

    def refusal(self, request: Request, status: int, wait: float) -> Response | None:
        """A page's refusal drawn for a person (gitserver.boundary's PageRefusal): the
        login form, saying why."""
        if status == 429:
            return self.base.throttled(request, True, wait)
        return self.base.refused(request, True)

    def routes(self) -> list[BaseRoute]:
        static = files("search.web").joinpath("static")
        p, a = self.pages, self.api
        return [
            Route("/", p.home, methods=["GET"]),
            Route("/search", p.search, methods=["GET"]),
            Route("/jobs", p.jobs, methods=["GET"]),
            Route("/read/{repository}", p.repository, methods=["GET"]),
            Route("/read/{repository}/{path:path}", p.read, methods=["GET"]),
            Route("/-/login", p.login_form, methods=["GET"]),
            Route("/-/login", p.login, methods=["POST"]),
            Route("/-/logout", p.logout, methods=["POST"]),
            Mount("/-/static", app=StaticFiles(directory=str(static)), name="static"),
            Route("/favicon.ico", favicon, methods=["GET"]),
            Route("/api/search", a.search, methods=["GET"]),
            Route("/api/outline", a.outline, methods=["GET"]),
            Route("/api/context", a.context, methods=["GET"]),
            Route("/api/nodes/{repository}/{path:path}", a.nodes, methods=["GET"]),
        ]
