"""The HTML pages of the web reader (routes in search.web.app, templates beside)."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, quote

import psycopg
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from search import nodes, rows
from search.citation import cite, merge, parse
from search.engine import index_freshness
from search.errors import BadQuery
from search.excerpt import excerpt
from search.mcp.views import index_lines, no_hit
from search.options import MAX_QUERY_CHARS
from search.results import Citation, Hit
from search.scope import resolve as resolve_scope
from search.web import access
from search.web import params as web_params
from search.web.app import SECURITY_HEADERS, WebBase, safe_next
from search.web.reading import chunk_link, read_url, reading_page
from search.web.render import query_words

log = logging.getLogger(__name__)

HOME_JOBS = 5  # the last jobs the home page shows; /jobs shows JOBS_PAGE
JOBS_PAGE = 50
FORM_BYTES = 16_384  # a login form is a token and two short fields
# a hit's passage longer than this shows the part holding the query's words: about five
# lines of the page's column, what a reader scans before opening the paragraph
PASSAGE_CHARS = 600


@dataclass
class Passage:
    ref: str
    link: str
    html: Any


@dataclass
class HitView:
    rank: int
    repository: str
    heading_path: str
    level: int
    quoted: bool
    passage: Passage
    passages: list[Passage] = field(default_factory=list)


def _redirect(url: str) -> Response:
    return RedirectResponse(url, status_code=303, headers=SECURITY_HEADERS)


def _cite(c: Citation) -> str:
    return cite(c.repository, c.source_file, c.chunk_index, c.line_start, c.line_end)


def _reading_link(repository: str, source_file: str, chunk: int | None) -> str:
    url = read_url(repository, web_params.source_path(source_file))
    return url if chunk is None else f"{url}?chunk={chunk}#chunk-{chunk}"


def _citation(query: str) -> str | None:
    """The reading page of a query that is a whole citation (`repository:path.md#chunk…`,
    search.citation), else None: a search for it would find nothing."""
    text = query.strip()
    if any(c.isspace() for c in text) or ".md" not in text:
        return None
    try:
        cited = parse(text)
    except BadQuery:
        return None
    if cited.repository is None or not cited.source_file.endswith(".md"):
        return None
    return _reading_link(cited.repository, cited.source_file, cited.chunk)


def group_jobs(jobs: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {"running": [], "queued": [], "finished": []}
    for job in jobs:
        key = job["status"] if job["status"] in ("running", "queued") else "finished"
        out[key].append(job)
    return out


class Pages:
    def __init__(self, base: WebBase) -> None:
        self.base = base

    # -- helpers -------------------------------------------------------------------------

    def _jobs(self, limit: int, readable: frozenset[str] | None) -> list[dict[str, Any]] | None:
        """The newest jobs of the repositories `readable` (None: all), or None when this
        server has no queue (a bare reader)."""
        if self.base.jobs_source is None:
            return None
        try:
            return self.base.jobs_source(limit, readable)
        except psycopg.errors.UndefinedTable:  # no worker ever made the queue's schema
            return []

    def _passage(self, citation: Citation, text: str, marks: frozenset[str], query: str) -> Passage:
        # a long passage shows the part that holds the query's words (search.excerpt),
        # as text; the whole paragraph, as Markdown, is a click away (marked there too)
        shown = excerpt(text, marks, PASSAGE_CHARS)
        return Passage(
            ref=_cite(citation),
            link=chunk_link(citation, text, query),
            html=self.base.text.render(text, marks)
            if shown == " ".join(text.split())
            else self.base.text.plain(shown, marks),
        )

    def _hit(self, hit: Hit, marks: frozenset[str], query: str) -> HitView:
        return HitView(
            rank=hit.rank,
            repository=hit.citation.repository,
            heading_path=hit.citation.heading_path,
            level=hit.level,
            quoted=bool(hit.scores.phrase),
            passage=self._passage(hit.citation, hit.text, marks, query),
            passages=[self._passage(p.citation, p.text, marks, query) for p in hit.passages or []],
        )

    # -- pages -----------------------------------------------------------------------------

    def home(self, request: Request) -> Response:
        def build() -> Response:
            branch = self.base.branch(web_params.text(request.query_params, "branch"))
            readable = self.base.readable(request)
            tree = nodes.outline(self.base.db, None, None, branch=branch, readable=readable)
            repos = list(dict.fromkeys(w.repository for w in tree.works if w.repository))
            with rows.connection(self.base.db) as conn:  # each on the branch it was read on
                scope = resolve_scope(conn, None, branch, readable)
                fresh = index_freshness(conn, scope, None, repos)
            return self.base.page(
                request,
                "home.html",
                works=tree.works,
                freshness=fresh,
                branch=branch,
                notes=tree.notes,
                jobs=self._jobs(HOME_JOBS, readable),
                read_url=read_url,
            )

        return self.base.answer(request, True, build, "/")

    def repository(self, request: Request) -> Response:
        def build() -> Response:
            repository = web_params.repository_name(request.path_params["repository"])
            branch = self.base.branch(web_params.text(request.query_params, "branch"))
            readable = self.base.readable(request)
            tree = nodes.outline(self.base.db, repository, None, branch=branch, readable=readable)
            with rows.connection(self.base.db) as conn:
                scope = resolve_scope(conn, repository, branch, readable)
                fresh = index_freshness(conn, scope, repository, [])
            return self.base.page(
                request,
                "repository.html",
                repository=repository,
                works=tree.works,
                freshness=fresh,
                branch=branch,
                read_url=read_url,
            )

        return self.base.answer(request, True, build, "/read/{repository}")

    def search(self, request: Request) -> Response:
        def build() -> Response:
            params = request.query_params
            form = {k: (web_params.text(params, k) or "") for k in ("repository", "work", "branch")}
            form["mode"] = web_params.text(params, "mode") or "hybrid"
            form["k"] = web_params.text(params, "k") or "10"
            if not params.get("q", "").strip():  # what to type, and what there is to search
                tree = nodes.outline(
                    self.base.db, None, None, branch=None, readable=self.base.readable(request)
                )
                return self.base.page(
                    request,
                    "search.html",
                    form=form,
                    response=None,
                    works=tree.works,
                    read_url=read_url,
                )
            if (cited := _citation(params["q"])) is not None:  # pasted from any face: open it
                return _redirect(cited)
            args = web_params.SearchArgs.parse(params)
            response = self.base.search(args, self.base.readable(request))
            marks = query_words(args.query)
            return self.base.page(
                request,
                "search.html",
                form=form,
                response=response,
                hits=[self._hit(h, marks, args.query) for h in response.hits],
                index=index_lines(response.index) + [f"note: {n}" for n in response.notes],
                no_hit=no_hit(response.index),
            )

        return self.base.answer(request, True, build, "/search")

    def read(self, request: Request) -> Response:
        def build() -> Response:
            params = request.query_params
            repository = web_params.repository_name(request.path_params["repository"])
            path = request.path_params["path"]
            if "#" in path:  # a citation, its '#' sent as %23 (search.citation): its page
                file, chunk, named = merge(path, None, repository)
                return _redirect(_reading_link(named or repository, file, chunk))
            source_file = web_params.source_path(path)
            branch = self.base.branch(web_params.text(params, "branch"))
            page = reading_page(
                self.base.db,
                repository,
                source_file,
                branch=branch,
                readable=self.base.readable(request),
            )
            cited = web_params.whole(params, "chunk", None, 0, None)
            digest = web_params.text(params, "h")
            searched = (
                web_params.text(params, "q", limit=MAX_QUERY_CHARS) or ""
            )  # from a hit's link
            marks = query_words(searched)
            notice = None
            if digest is not None:
                found = page.find(digest)
                if found is not None and found != cited:
                    url = read_url(repository, source_file)
                    extra = f"&branch={quote(branch)}" if branch else ""
                    moved = f"&moved={cited}" if cited is not None else ""
                    extra += f"&q={quote(searched)}" if searched else ""
                    return _redirect(
                        f"{url}?chunk={found}&h={quote(digest)}{moved}{extra}#chunk-{found}"
                    )
                if found is None:
                    notice = (
                        "The paragraph this link cites has been changed since the link was made: "
                        + (
                            f"paragraph {cited} is shown as it reads now."
                            if cited is not None and cited in page.hashes
                            else "it is no longer in this file."
                        )
                    )
            was = web_params.whole(params, "moved", None, 0, None)
            if was is not None and cited is not None and notice is None:
                notice = (
                    f"The paragraph this link cites moved from #{was} to #{cited} "
                    "(paragraphs before it changed since the link was made)."
                )
            render = self.base.text.render
            return self.base.page(
                request,
                "read.html",
                page=page,
                chunks=[(c.citation.chunk_index, render(c.text, marks)) for c in page.node.chunks],
                summary=[render(c.text) for c in page.summary.chunks] if page.summary else [],
                cited=cited,
                notice=notice,
                lines={c.citation.chunk_index: _cite(c.citation) for c in page.node.chunks},
                read_url=read_url,
            )

        return self.base.answer(request, True, build, "/read/{repository}/{path}")

    def jobs(self, request: Request) -> Response:
        def build() -> Response:
            jobs = self._jobs(JOBS_PAGE, self.base.readable(request))
            fragment = request.query_params.get("fragment") == "1"
            return self.base.page(
                request,
                "jobs_fragment.html" if fragment else "jobs.html",
                groups=group_jobs(jobs or []),
                has_queue=jobs is not None,
            )

        return self.base.answer(request, True, build, "/jobs")

    # -- login -------------------------------------------------------------------------------

    def login_form(self, request: Request) -> Response:
        target = safe_next(request.query_params.get("next"))
        if self.base.readers.allowed(request):
            return _redirect(target)
        return self.base.page(request, "login.html", next=target)

    async def _form(self, request: Request) -> dict[str, str]:
        body = b""
        async for piece in request.stream():
            body += piece
            if len(body) > FORM_BYTES:
                return {}
        parsed = parse_qs(body.decode("utf-8", "replace"), max_num_fields=10)
        return {k: v[-1] for k, v in parsed.items()}

    async def login(self, request: Request) -> Response:
        form = await self._form(request)
        target = safe_next(form.get("next"))
        if not access.csrf_ok(request, form.get("csrf")):
            return self.base.page(
                request,
                "login.html",
                403,
                next=target,
                message="The form expired or came from another site: log in again.",
            )
        address = access.client_address(request)
        wait = self.base.readers.throttle.retry_after(address)
        if wait:
            return self.base.throttled(request, True, wait, next=target)
        token = form.get("token", "")
        ok = bool(token) and "\x00" not in token and len(token) <= 1000
        digest = await run_in_threadpool(self.base.readers.identify, token) if ok else None
        if digest is None:
            self.base.readers.throttle.failed(address)
            log.info("refused a login: wrong token")
            return self.base.page(
                request,
                "login.html",
                401,
                next=target,
                message="That is not a read token of this server (GLOSSATOR_READ_TOKENS, "
                "a push token, or one made by `glossator token create`).",
            )
        response = _redirect(target)
        access.set_session(response, request, self.base.readers.new_session(digest))
        return response

    async def logout(self, request: Request) -> Response:
        form = await self._form(request)
        if not access.csrf_ok(request, form.get("csrf")):
            return self.base.error_page(
                request, 403, "The form expired or came from another site: reload and try again."
            )
        self.base.readers.revoke(request.cookies.get(access.SESSION_COOKIE))
        response = _redirect("/")
        access.clear_session(response, request)
        return response


__all__ = ["Pages"]
