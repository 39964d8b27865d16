"""The one boundary every HTTP request passes: who the caller is, and the door it knocks on.

    app = Boundary(starlette_app, policy, throttle=throttle, sessions=readers.session_digest,
                   pages=web.refusal)

For every request this middleware reads the credentials once (an HTTP Basic password,
a Bearer token, else the web reader's session cookie), asks the access policy
(core.access) for their grant, holds an address the throttle has blocked (429, at every
door), counts a wrong token against it (401), and leaves the caller in the scope
(core.access.caller_of). Then it refuses what the door needs and the caller lacks:

    OPEN   /healthz, /-/login, /-/logout, /-/static/…, the hooks' callbacks: nobody asked
    GIT    /<name>.git/… (and `/`): the caller only; the git route checks the repository
    ADMIN  /api/repos: an admin token
    MCP    /mcp: a token unless MCP is open (core.access.AccessPolicy.mcp_open)
    READ   everything else (/api/*, the web reader's pages, the jobs): a caller who reads
           at least one repository; what it reads is then filtered to its scope

A wrong token where none is needed (a read while reads are open) reads as anyone, as
git's anonymous first try does; anywhere else it counts against its address. A route
nobody classified is a READ route: a new face is closed until it says otherwise.
Which rows a caller may see is decided below this boundary, in the query (search.scope).
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable
from enum import Enum

import anyio.to_thread
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.types import ASGIApp, Receive, Scope, Send

from core.access import CALLER_KEY, AccessPolicy, AccessUnavailable, Grant, token_digest
from core.throttle import Throttle, client_host, wait_words
from gitserver.auth import REALM, read_credentials

log = logging.getLogger(__name__)

CALLBACK_PATH = "/api/hooks/post-receive"  # its own token (gitserver.app)
PRE_RECEIVE_PATH = "/api/hooks/pre-receive"  # the same token
HOOK_PATHS = (CALLBACK_PATH, PRE_RECEIVE_PATH)
GIT_PATH = re.compile(r"^/[^/]+/(info/refs|git-upload-pack|git-receive-pack)$")

# A page's refusal as the web reader draws it (a login form), else None: (request,
# status, wait) with status 401 or 429 and `wait` the seconds of a 429.
PageRefusal = Callable[[Request, int, float], Response | None]
Sessions = Callable[[str | None], str | None]  # a session cookie → its token's digest


class Door(Enum):
    OPEN = "open"
    GIT = "git"
    ADMIN = "admin"
    MCP = "mcp"
    READ = "read"


def door(path: str, method: str = "GET") -> Door:
    """What a request needs (module doc): listing the repositories is a read (the root
    page lists it; each caller sees those it may read), creating one the admin's."""
    if path == "/healthz" or path in HOOK_PATHS or path.startswith("/-/"):
        return Door.OPEN
    if path == "/api/repos":
        return Door.READ if method in ("GET", "HEAD") else Door.ADMIN
    if path == "/mcp" or path.startswith("/mcp/"):
        return Door.MCP
    if path == "/" or GIT_PATH.match(path):
        return Door.GIT
    return Door.READ


class Boundary:
    """ASGI middleware: the access policy at one place for every face (module doc)."""

    def __init__(
        self,
        app: ASGIApp,
        policy: AccessPolicy,
        *,
        throttle: Throttle,
        sessions: Sessions | None = None,
        pages: PageRefusal | None = None,
    ) -> None:
        self.app = app
        self.policy = policy
        self.throttle = throttle
        self.sessions = sessions
        self.pages = pages

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        request = Request(scope)
        where = door(request.url.path, request.method)
        if where is Door.OPEN:
            await self.app(scope, receive, send)
            return
        response = await self._check(request, where)
        if response is not None:
            await response(scope, receive, send)
            return
        await self.app(scope, receive, send)

    async def _check(self, request: Request, where: Door) -> Response | None:
        """None: let the request in (its caller in its scope); else the refusal."""
        mcp = where is Door.MCP
        credentials = read_credentials(request.headers)
        address = client_host(request.client)
        grant: Grant | None = None
        try:
            if credentials is not None and credentials.token:
                if wait := self.throttle.retry_after(address):
                    log.warning("refused a request from a throttled address: too many wrong tokens")
                    return self._refusal(request, where, 429, wait)
                grant = await self._grant(token_digest(credentials.token), mcp)
                if grant is None and self._anonymous_suffices(request, where):
                    pass  # a wrong token where none is needed: read as anyone, as before
                elif grant is None:
                    self.throttle.failed(address)
                    log.info("refused %s: bad token", request.url.path)
                    return self._refusal(request, where, 401, 0.0, wrong=True)
            elif self.sessions is not None and where is not Door.MCP:
                digest = self.sessions(request.cookies.get("glossator_session"))
                grant = await self._grant(digest, mcp) if digest else None
        except AccessUnavailable as e:
            log.warning("the stored tokens cannot be read: %s", e)
            return _json(503, "the database does not answer: tokens cannot be checked now")
        caller = self.policy.caller(grant, mcp=mcp)
        request.scope[CALLER_KEY] = caller
        if where is Door.ADMIN and not caller.admin:
            if caller.anonymous:
                return _admin_refusal(401)
            return _admin_refusal(403)
        if where in (Door.READ, Door.MCP) and not caller.reads_anything:
            log.info("refused read of %s: no token", request.url.path)
            return self._refusal(request, where, 401, 0.0)
        return None

    def _anonymous_suffices(self, request: Request, where: Door) -> bool:
        """Whether anyone may do this request (a read while reads are open)."""
        if where is Door.MCP:
            return self.policy.mcp_open
        if where is Door.ADMIN or not self.policy.anonymous_read:
            return False
        return not _is_push(request)

    async def _grant(self, digest: str, mcp: bool) -> Grant | None:
        if self.policy.stored is None or self.policy.variable_grant(digest) is not None:
            # a variable's token, or no store: no database to wait for, so no thread
            # (the hop there and back costs a request milliseconds on a loaded machine)
            return self.policy.grant(digest, mcp=mcp)
        return await anyio.to_thread.run_sync(lambda: self.policy.grant(digest, mcp=mcp))

    def _refusal(
        self, request: Request, where: Door, status: int, wait: float, *, wrong: bool = False
    ) -> Response:
        headers = {"Retry-After": str(int(wait) + 1)} if status == 429 else {}
        throttled = f"too many wrong tokens from this address: try again in {wait_words(wait)}"
        if where is Door.MCP:
            if status == 401:
                headers["WWW-Authenticate"] = 'Bearer realm="glossator-mcp"'
                send = "send Authorization: Bearer <GLOSSATOR_MCP_TOKEN> (or another read token)"
                message = f"wrong bearer token for /mcp: {send}" if wrong else f"{send} to use /mcp"
                return _json_rpc_refusal(status, message, "unauthorized", headers)
            return _json_rpc_refusal(status, throttled, "too many wrong tokens", headers)
        if where is Door.READ and not request.url.path.startswith("/api/") and self.pages:
            page = self.pages(request, status, wait)
            if page is not None:
                return page
        if status == 401:
            headers["WWW-Authenticate"] = f'Basic realm="{REALM}", charset="UTF-8"'
        if where is Door.READ and request.url.path.startswith("/api/"):
            message = (
                "authentication required for reading: send a read token "
                "(Authorization: Bearer <token>, or as the HTTP Basic password)"
                if status == 401
                else throttled[0].upper() + throttled[1:] + "."
            )
            return JSONResponse({"error": message}, status, headers=headers)
        what = "pushing" if _is_push(request) else "reading"
        text = (
            throttled
            if status != 401
            else f"wrong token for {what}: the HTTP password is no {what[:-3]} token of this server"
            if wrong
            else "authentication required: use a Glossator token as the HTTP password"
        ) + "\n"  # git prints a text/plain body as `remote:` lines
        return PlainTextResponse(text, status, headers=headers)


def _is_push(request: Request) -> bool:
    return (
        request.url.path.endswith("/git-receive-pack")
        or request.query_params.get("service") == "git-receive-pack"
    )


# JSON-RPC's range for a server's own errors: the mcp SDK's client shows the message of an
# error in a non-2xx body, and without one a bare -32603 "Server returned an error response"
REFUSED = -32001


def _json_rpc_refusal(status: int, message: str, reason: str, headers: dict[str, str]) -> Response:
    """An MCP refusal: a JSON-RPC error (its message reaches the agent through its client),
    and the message again at the top for a plain HTTP client."""
    error = {"code": REFUSED, "message": message, "data": {"reason": reason}}
    body = {"jsonrpc": "2.0", "id": None, "error": error, "message": message}
    return JSONResponse(body, status, headers=headers)


def _admin_refusal(status: int) -> Response:
    message = (
        "admin token required (Authorization: Bearer <an admin token>: "
        "GLOSSATOR_ADMIN_TOKEN or `glossator token create --admin`)"
    )
    if status == 403:
        message = "this token is not an admin token (`glossator token create --admin` makes one)"
    headers = {"WWW-Authenticate": f'Bearer realm="{REALM}"'} if status == 401 else {}
    return JSONResponse({"error": message}, status, headers=headers)


def _json(status: int, message: str) -> Response:
    return Response(json.dumps({"error": message}), status, media_type="application/json")
