"""The web reader's shared base: the one boundary every page and API answer passes.

    base = WebBase(service, readers, jobs=list_jobs_of_pool, problem=lambda: None)

Every request passed the access boundary first (gitserver.boundary: who the caller is,
what it may read; its refusals of a page are drawn here, a login form). Every answer then
passes one boundary of its own (`WebBase.answer`): a caller who reads nothing is refused
again (401: a login form for a page, a JSON error for the API, never the data), then
Glossator's errors as
one message with their status (400 a bad argument, 404 an unknown repository, work or
file, 503 a database that does not answer), never a traceback. The pages
(search.web.pages) and the API (search.web.api) build on it; search.web.reader mounts
them.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from importlib.resources import files
from typing import Any

import psycopg
from jinja2 import Environment, FileSystemLoader, select_autoescape
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response

from core.access import caller_of
from core.errors import GlossatorError
from core.throttle import wait_words
from search.errors import BadQuery, UnknownFile, UnknownRepository
from search.inputs import MAX_NAME_CHARS, check_arguments
from search.options import MAX_QUERY_CHARS
from search.results import SearchResponse
from search.service import SearchService
from search.web.access import (
    SESSION_COOKIE,
    Readers,
    csrf_token,
    remember_csrf,
)
from search.web.params import SearchArgs, check
from search.web.render import BookText
from store.errors import describe_failure

log = logging.getLogger(__name__)

# No inline script or style, nothing from elsewhere: book text that slipped through as
# markup could not run, load or frame anything (search.web.render keeps it text).
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
    "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
)
SECURITY_HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
    "X-Frame-Options": "DENY",
}

# newest first, at most n, of the repositories the caller reads (None: every one)
JobsSource = Callable[[int, frozenset[str] | None], list[dict[str, Any]]]
Problem = Callable[[], str | None]  # the database's known outage, or None


def status_of(error: Exception) -> int:
    if isinstance(error, UnknownRepository | UnknownFile):
        return 404
    if isinstance(error, psycopg.OperationalError):
        return 503
    return 400


class WebBase:
    """What pages and the API share: the service, the policy, templates, the boundary."""

    def __init__(
        self,
        service: SearchService,
        readers: Readers,
        *,
        jobs: JobsSource | None = None,
        problem: Problem = lambda: None,
    ) -> None:
        self.service = service
        self.db = service.conn_or_pool
        self.readers = readers
        self.jobs_source = jobs
        self.problem = problem
        self.text = BookText()
        folder = files("search.web").joinpath("templates")
        self.env = Environment(
            loader=FileSystemLoader(str(folder)),
            autoescape=select_autoescape(default=True, default_for_string=True),
            trim_blocks=True,
            lstrip_blocks=True,
        )

    @staticmethod
    def branch(given: str | None) -> str | None:
        # None: each repository's default branch (search.scope), as in the MCP tools
        return given or None

    @staticmethod
    def readable(request: Request) -> frozenset[str] | None:
        """The repositories the request's caller may read (core.access; None: all)."""
        return caller_of(request.scope).readable

    def search(self, args: SearchArgs, readable: frozenset[str] | None) -> SearchResponse:
        """The MCP search tool's search (SearchService.agent_search) for a page's or the
        API's parsed arguments, within the caller's repositories."""
        return self.service.agent_search(
            args.query,
            k=args.k,
            mode=args.mode,
            level=args.level,
            work=args.work,
            repository=args.repository,
            branch=self.branch(args.branch),
            max_per_chapter=args.max_per_chapter,
            readable=readable,
        )

    def page(self, request: Request, template: str, status: int = 200, **context: Any) -> Response:
        csrf = csrf_token(request)
        body = self.env.get_template(template).render(
            request_path=request.url.path,
            logged_in=bool(request.cookies.get(SESSION_COOKIE)) and not self.readers.open,
            csrf=csrf,
            **context,
        )
        response = HTMLResponse(body, status_code=status, headers=SECURITY_HEADERS)
        remember_csrf(response, request, csrf)
        return response

    @staticmethod
    def json(data: Any, status: int = 200) -> Response:
        return JSONResponse(data, status_code=status, headers=SECURITY_HEADERS)

    def error_page(self, request: Request, status: int, message: str, **context: Any) -> Response:
        """The error, and a search box holding what was asked (a query over the limit cut
        to it), so the next try is one edit away."""
        params = request.query_params

        def field(name: str, default: str, limit: int) -> str:
            return params.get(name, default)[:limit].replace("\x00", "")

        form = {k: field(k, "", MAX_NAME_CHARS) for k in ("repository", "work", "branch")}
        form |= {
            "q": field("q", "", MAX_QUERY_CHARS),
            "mode": field("mode", "hybrid", 10),
            "k": field("k", "10", 3),
        }
        context.setdefault("form", form)
        return self.page(request, "error.html", status, code=status, message=message, **context)

    def answer(
        self, request: Request, html: bool, build: Callable[[], Response], route: str
    ) -> Response:
        """The one boundary (module doc); `route`: the path whose query parameters
        (search.web.params.PARAMS) the request may send."""
        if not caller_of(request.scope).reads_anything:  # gitserver.boundary refuses first
            return self.refused(request, html)
        try:
            check(request.scope.get("query_string", b""), request.query_params, route)
            check_arguments(request.path_params)
            return build()
        except (GlossatorError, psycopg.OperationalError) as e:
            status = status_of(e)
            if isinstance(e, GlossatorError):
                message = str(e)
            else:  # the database: down, restarting, full (the supervisor knows first)
                message = self.problem() or describe_failure(e)
            if html:
                return self.error_page(request, status, message)
            return self.json({"error": message}, status)

    def refused(self, request: Request, html: bool) -> Response:
        log.info("refused read of %s: no token or session", request.url.path)
        if html:  # no WWW-Authenticate: a browser would ask in its own dialog, not the form
            target = request.url.path + (f"?{request.url.query}" if request.url.query else "")
            return self.page(request, "login.html", 401, next=safe_next(target))
        response = self.json(
            {
                "error": "authentication required for reading: send a read token "
                "(Authorization: Bearer <token>, or as the HTTP Basic password)"
            },
            401,
        )
        response.headers["WWW-Authenticate"] = 'Basic realm="Glossator", charset="UTF-8"'
        return response

    def throttled(self, request: Request, html: bool, wait: float, **context: Any) -> Response:
        """429: too many wrong tokens from this address lately (search.web.access.Throttle)."""
        log.warning("refused a login from a throttled address: too many wrong tokens")
        message = f"Too many wrong tokens from this address: try again in {wait_words(wait)}."
        if html:
            response = self.page(request, "login.html", 429, message=message, **context)
        else:
            response = self.json({"error": message}, 429)
        response.headers["Retry-After"] = str(int(wait) + 1)
        return response


def safe_next(target: str | None) -> str:
    """Where to go after logging in: a path on this server, never another site."""
    if not target or not target.startswith("/") or target.startswith("//") or "\\" in target:
        return "/"
    return target[:2000]


__all__ = ["CSP", "BadQuery", "Readers"]
