"""The Starlette app of the git server: smart HTTP, repository admin, health.

    GET  /<name>.git/info/refs?service=git-upload-pack|git-receive-pack
    POST /<name>.git/git-upload-pack | git-receive-pack        (also without ".git"; a body
                                            over `max_body` bytes: 413, backend.spool_body)
    POST /api/repos        {"name": "…"}   admin bearer token → 201 / 400 / 401 / 409
    GET  /api/repos                         admin bearer token → the repositories
    GET  /healthz                           200 "ok" (plus checks given by the caller)

Every request passes one boundary first (gitserver.boundary: the access policy of
core.access, the throttle of wrong tokens), which leaves the caller in its scope; the
routes here then check the repository a request names against it. The indexing queue
(`/api/jobs`), the web reader and the MCP mount are added by the composition root
(`glossator.server`) through `extra_routes` and `lifespan`, behind the same boundary,
so this module stays testable with no database.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
from collections.abc import Awaitable, Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any

import pygit2
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import BaseRoute, Match, Route
from starlette.types import Scope

from core import receiving
from core.access import AccessPolicy, caller_of
from core.throttle import Throttle
from gitserver import backend
from gitserver.auth import (
    REALM,
    Access,
    basic_credentials,
    bearer_token,
    required_access,
    token_matches,
)
from gitserver.boundary import (
    CALLBACK_PATH,
    HOOK_PATHS,
    PRE_RECEIVE_PATH,
    Boundary,
    PageRefusal,
    Sessions,
)
from gitserver.errors import BadRequest, BodyTooLarge, GitServerError, RepositoryNameError
from gitserver.repos import NAME, SUFFIX, RepoStore, check_name

log = logging.getLogger(__name__)

HOOK_URL = "GLOSSATOR_HOOK_URL"  # read by hooks.post_receive to tell the pusher where to look
# The post-receive hook asks this server to queue its jobs (glossator.githooks): where
# (this request's own socket address) and with which token (one per server, random).
HOOK_CALLBACK = "GLOSSATOR_HOOK_CALLBACK"
HOOK_TOKEN = "GLOSSATOR_HOOK_TOKEN"
# (repository, git's `<old> <new> <ref>` lines, the server's URL) → the lines to print
PostReceiveHandler = Callable[[str, str, str], Awaitable[str]]
# (git dir, quarantine or None, update lines) -> (the hook's exit status, its lines):
# hooks.pre_receive.main, composed by the composition root (gitserver imports no hooks)
PreReceiveHandler = Callable[[Path, str | None, str], Awaitable[tuple[int, str]]]
# A push that landed while other writers' pushes to its branch are under way or were
# just refused is answered once they had their turn, this long at most: a
# round figure, several pull-and-push cycles on a loaded machine.
HOLD_MAX_S = 30.0
HOLD_POLL_S = 0.05

# the setting's default (glossator.settings.max_push_bytes says why 1 GiB)
DEFAULT_MAX_BODY = 1024**3

HealthCheck = Callable[[], Awaitable[None]]


def _unauthorized(access: Access, wrong: bool = False) -> Response:
    """401; git prints a text/plain body as `remote:` lines, so it says which case it is."""
    what = "pushing" if access is Access.PUSH else "reading"
    setting = "GLOSSATOR_PUSH_TOKENS" if access is Access.PUSH else "GLOSSATOR_READ_TOKENS"
    said = (
        f"wrong token for {what}: the HTTP password is not one of the server's {setting}"
        if wrong
        else f"authentication required for {what}: use a Glossator token as the HTTP password"
    )
    return PlainTextResponse(
        f"{said}\n",
        status_code=401,
        headers={"WWW-Authenticate": f'Basic realm="{REALM}", charset="UTF-8"'},
    )


def _forbidden(name: str) -> Response:
    return PlainTextResponse(
        f"this token may not push to {name!r}: ask for a push token for it "
        "(glossator token create --push NAME)\n",
        status_code=403,
    )


class GitServer:
    """Request handlers bound to one repository store and hook environment; who the
    caller is, the boundary decided (gitserver.boundary)."""

    def __init__(
        self,
        store: RepoStore,
        *,
        hook_env: Mapping[str, str] | None = None,
        post_receive: PostReceiveHandler | None = None,
        pre_receive: PreReceiveHandler | None = None,
        max_body: int = DEFAULT_MAX_BODY,
    ) -> None:
        self.store = store
        self.max_body = max_body  # bytes of a request body (backend.spool_body)
        # Environment for git http-backend and through it the hooks (database URL…).
        self.hook_env = dict(hook_env or {})
        self.post_receive = post_receive
        self.pre_receive = pre_receive
        # Only this server's hooks know it: it is in the environment git gives them.
        self.hook_token = secrets.token_urlsafe(32) if post_receive is not None else ""
        self.http_backend = backend.http_backend_command()

    async def git(self, request: Request) -> Response:
        name: str = request.path_params["name"]
        rest: str = request.path_params["rest"]
        if name.endswith(SUFFIX):
            name = name[: -len(SUFFIX)]
        if rest not in backend.SMART_PATHS or not NAME.match(name) or ".." in name:
            return PlainTextResponse("not found\n", status_code=404)
        if rest == "info/refs" and request.query_params.get("service") not in backend.SERVICES:
            # without ?service= git http-backend answers the dumb protocol's ref list;
            # the dumb protocol is not served (its other paths are 404 too)
            return PlainTextResponse(
                "not found: only git's smart HTTP protocol is served (info/refs?service=…)\n",
                status_code=404,
            )
        allowed = ("POST",) if rest.startswith("git-") else ("GET", "HEAD")
        if request.method not in allowed:
            return PlainTextResponse(
                "method not allowed\n", status_code=405, headers={"Allow": ", ".join(allowed)}
            )
        access = required_access(rest, request.query_params.get("service"))
        credentials = basic_credentials(request.headers)
        caller = caller_of(request.scope)
        allowed_here = caller.may_push(name) if access is Access.PUSH else caller.may_read(name)
        if not allowed_here:
            log.info("refused %s of %s: %s", access.value, name, caller.grant or "no token")
            if caller.anonymous:
                return _unauthorized(access)
            if access is Access.PUSH and caller.may_read(name):
                return _forbidden(name)
            # a repository outside the token's scope is not there, as one that does not exist
            return PlainTextResponse(f"no repository named {name!r}\n", status_code=404)
        if not self.store.exists(name):
            return PlainTextResponse(
                f"no repository named {name!r}: create it on the server with "
                f"`glossator repo create {name}` (or POST /api/repos with the admin token)\n",
                status_code=404,
            )
        if (
            access is Access.PUSH
            and rest == "info/refs"
            and receiving.being_deleted(self.store.path(name))
        ):
            # git prints the text/plain body of a refused info/refs as `remote:` lines; a
            # push already past it is refused by its pre-receive hook (hooks.pre_receive),
            # whose lines git shows: an HTTP error on the POST would read "RPC failed"
            log.info("refused a push to %s: being deleted", name)
            return PlainTextResponse(f"{receiving.DELETING_LINE.format(name=name)}\n", 409)
        marker = None
        client = receiving.client_key(
            request.client.host if request.client else "", request.headers.get("authorization", "")
        )
        try:
            if access is Access.PUSH and rest == "info/refs":
                # a push starts: from its ref listing on, the commit-backs wait, so its
                # client never sees a ref it read move under it (core.receiving)
                receiving.advertise(self.store.path(name), client)
            elif rest == "git-receive-pack":
                log.info("push received for %s", name)
                # a push under way: the commit-backs of its branches wait (core.receiving)
                marker = receiving.begin(self.store.path(name))
        except FileNotFoundError:  # deleted since `exists` above (`glossator repo delete`)
            return PlainTextResponse(f"no repository named {name!r}\n", status_code=404)
        try:
            user = (credentials.user if credentials else "") or "glossator"
            pusher = user if caller.grant else None
            return await self._backend(request, name, rest, pusher, marker, client)
        except BaseException:
            if marker is not None:
                marker.finish()
            raise

    async def _backend(
        self,
        request: Request,
        name: str,
        rest: str,
        remote_user: str | None,
        marker: receiving.Marker | None,
        client_key: str,
    ) -> Response:
        try:
            body = (
                await backend.spool_body(request, self.max_body)
                if request.method == "POST"
                else None
            )
        except (BodyTooLarge, BadRequest) as e:
            if marker is not None:
                marker.finish()
            log.warning("refused a %s request to %s: %s", rest, name, e)
            # Connection: close: the rest of the body is not read
            return PlainTextResponse(f"{e}\n", e.status, headers={"Connection": "close"})
        if marker is not None and body is not None:
            refs = backend.pushed_refs(body, request.headers.get("content-encoding"))
            if refs == []:
                # no command, no ref moves: git's probe before a pack over 1 MiB, not a
                # push. An ended `*` marker would read as a push just refused and hold
                # this push's own answer QUIET_S (core.receiving); its ref listing's
                # advertisement holds the commit-backs until the pack's POST
                marker.remove()
                marker = None
            else:
                if refs:
                    marker.name_refs(refs)
                receiving.consume_advertisement(self.store.path(name), client_key)
        client = request.client.host if request.client else None
        cgi = backend.CgiRequest(
            project_root=self.store.root,
            path_info=f"/{name}{SUFFIX}/{rest}",
            method=request.method,
            query=request.url.query,
            content_type=request.headers.get("content-type"),
            content_encoding=request.headers.get("content-encoding"),
            git_protocol=request.headers.get("git-protocol"),
            remote_user=remote_user,  # git lets an authenticated user push (REMOTE_USER)
            remote_addr=client,
            extra_env={**self.hook_env, **self._callback_env(request)},
        )
        return await backend.run(
            cgi, body, on_finish=marker.finish if marker else None, program=self.http_backend
        )

    def _callback_env(self, request: Request) -> dict[str, str]:
        env = {HOOK_URL: str(request.base_url)}
        server = request.scope.get("server")
        if self.post_receive is not None and server and server[1]:
            host = str(server[0])
            host = f"[{host}]" if ":" in host else host
            env.update({HOOK_CALLBACK: f"http://{host}:{server[1]}", HOOK_TOKEN: self.hook_token})
        return env

    async def hook_post_receive(self, request: Request) -> Response:
        """The post-receive hook of a push this server runs: queue its jobs, answer the
        lines the hook prints (glossator.githooks: the request and answer in plain text)."""
        token = bearer_token(request.headers)
        if self.post_receive is None or not token or not token_matches(token, (self.hook_token,)):
            return PlainTextResponse("not found\n", status_code=404)
        fields = await _hook_request(request)
        if fields is None:
            return PlainTextResponse(HOOK_REQUEST_WORDS, 400)
        name, url, updates = fields
        if not self.store.exists(name):
            # answered, not 404: on an error the hook would queue the jobs itself, for a
            # name that is not served (a deleted repository's `.<name>.deleting`)
            log.warning("post-receive of %r: not a repository of the store, nothing queued", name)
            return _hook_answer(
                0, f"glossator: no repository named {name!r} here; indexing not queued\n"
            )
        output = await self.post_receive(name, updates, url)
        await self._let_other_writers_in(name, updates)
        return _hook_answer(0, output)

    async def hook_pre_receive(self, request: Request) -> Response:
        """The pre-receive check of a push this server runs, here on the server's warm
        imports, so that the hook git starts needs no Python (glossator.githooks): the
        hook's exit status, then its lines."""
        token = bearer_token(request.headers)
        if self.pre_receive is None or not token or not token_matches(token, (self.hook_token,)):
            return PlainTextResponse("not found\n", status_code=404)
        fields = await _hook_request(request)
        if fields is None:
            return PlainTextResponse(HOOK_REQUEST_WORDS, 400)
        name, quarantine, updates = fields
        if not self.store.exists(name):
            # a repository renamed aside by `glossator repo delete` has no name served
            return _hook_answer(1, receiving.DELETING_LINE.format(name=name) + "\n")
        git_dir = self.store.path(name)
        if quarantine and not Path(quarantine).resolve().is_relative_to(git_dir / "objects"):
            return PlainTextResponse("the quarantine is not the repository's\n", 400)
        status, output = await self.pre_receive(git_dir, quarantine or None, updates)
        return _hook_answer(status, output)

    async def _let_other_writers_in(self, name: str, updates: str) -> None:
        """Answer a push that landed only once the pushes to its branch that its landing
        refused had their turn: those writers pull and push again, and a writer answered
        at once pushes its next commit before they can, round after round
        (docs/push-pipeline.md, "Writers are not starved"). A lone writer never waits;
        at most HOLD_MAX_S."""
        branches = [
            (ref[len("refs/heads/") :], new)
            for _old, new, ref in (line.split() for line in updates.splitlines() if line.strip())
            if ref.startswith("refs/heads/") and new.strip("0")
        ]
        path = self.store.path(name)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + HOLD_MAX_S
        for branch, pushed in branches:
            # the first look here on the loop: a few small files, and almost always
            # nobody else but this push (a thread hop would cost a lone writer more)
            if not _others_under_way(path, branch, pushed):
                continue
            while loop.time() < deadline:
                await asyncio.sleep(HOLD_POLL_S)
                if not await asyncio.to_thread(_others_under_way, path, branch, pushed):
                    break

    async def create_repo(self, request: Request) -> Response:
        try:
            payload = await request.json()
        except ValueError:
            return JSONResponse({"error": 'body must be JSON: {"name": "<repo>"}'}, 400)
        name = payload.get("name") if isinstance(payload, dict) else None
        try:
            check_name(name)  # type: ignore[arg-type]
            self.store.create(name)  # type: ignore[arg-type]
        except GitServerError as e:
            return JSONResponse({"error": str(e)}, status_code=e.status)
        url = str(request.base_url).rstrip("/") + f"/{name}{SUFFIX}"
        return JSONResponse({"name": name, "url": url}, status_code=201)

    async def list_repos(self, request: Request) -> Response:
        """The repositories the caller may read, with their branches."""
        caller = caller_of(request.scope)
        return JSONResponse(
            [
                {"name": n, "branches": self.store.branches(n)}
                for n in self.store.names()
                if caller.may_read(n)
            ]
        )


HOOK_REQUEST_WORDS = (
    "a hook's request is the repository's name, a line (the quarantine or the URL), "
    "then git's update lines, in UTF-8\n"
)


async def _hook_request(request: Request) -> tuple[str, str, str] | None:
    """(repository, its second line, git's update lines) of a hook's request, or None.
    Plain text, so that the hook git runs can be bash (glossator/githooks.bash)."""
    try:
        text = (await request.body()).decode("utf-8")
    except UnicodeDecodeError:
        return None
    name, newline, rest = text.partition("\n")
    line, newline2, updates = rest.partition("\n")
    if not (newline and newline2):
        return None
    return name, line, updates


def _hook_answer(status: int, output: str) -> Response:
    """The hook's exit status on a line, then its lines, the last one ended too (the bash
    hook counts what it read against Content-Length)."""
    if output and not output.endswith("\n"):
        output += "\n"
    return PlainTextResponse(f"{status}\n{output}")


def _others_under_way(path: Path, branch: str, pushed: str) -> int:
    """Pushes to `branch` under way or just refused, other than those that landed.
    `pushed`: the commit this post-receive's push set the branch to, landed (git runs
    post-receive after the ref moved); the repository is opened only for a marker of
    another commit, so a lone writer's look reads its own marker and nothing more."""
    tips: list[tuple[pygit2.Repository, str] | None] = []

    def branch_tip() -> tuple[pygit2.Repository, str] | None:
        if not tips:
            try:
                repo = pygit2.Repository(str(path))
                ref = repo.references.get(f"refs/heads/{branch}")
                tips.append(None if ref is None else (repo, str(ref.resolve().target)))
            except (pygit2.GitError, KeyError, ValueError):
                tips.append(None)
        return tips[0]

    def landed(commit: str) -> bool:
        if commit == pushed:
            return True
        found = branch_tip()
        if found is None:  # no branch (deleted since): nothing waits to land on it
            return True
        repo, tip = found
        try:
            return commit == tip or repo.descendant_of(tip, commit)
        except (pygit2.GitError, KeyError, ValueError):  # not in the repository: not landed
            return False

    # a ref listing not followed by its push yet is no refused writer to let in
    count = receiving.pushes_under_way(path, branch, pushed, landed=landed, advertised=False)
    return count if count and branch_tip() is not None else 0  # no branch: none to wait for


class GitRoute(Route):
    """`/<name>/<rest>` only where `rest` is a path of git's smart HTTP protocol: any other
    path falls through to the router's own 404, and a wrong method on another route's
    path gets that route's 405 (this catch-all does not answer every POST)."""

    def matches(self, scope: Scope) -> tuple[Match, Scope]:
        match, child = super().matches(scope)
        if match is not Match.NONE and child["path_params"]["rest"] not in backend.SMART_PATHS:
            return Match.NONE, {}
        return match, child


async def http_error(request: Request, exc: Exception) -> Response:
    """The router's 404 and 405: JSON under /api (what an API client parses), plain text
    elsewhere; 405 keeps its Allow header."""
    assert isinstance(exc, HTTPException)
    headers = dict(exc.headers or {})
    if request.url.path.startswith("/api/") or request.url.path == "/api":
        words = "no such route" if exc.status_code == 404 else "method not allowed"
        allow = headers.get("Allow")
        if allow:
            words += f": this route takes {allow}"
        else:
            words += ": see /openapi.json for the API's routes"
        return JSONResponse({"error": words}, exc.status_code, headers=headers)
    text = "not found" if exc.status_code == 404 else "method not allowed"
    return PlainTextResponse(f"{text}\n", exc.status_code, headers=headers)


def create_app(
    store: RepoStore,
    policy: AccessPolicy,
    *,
    hook_env: Mapping[str, str] | None = None,
    extra_routes: Sequence[BaseRoute] = (),
    health_checks: Sequence[HealthCheck] = (),
    lifespan: Callable[[Starlette], AbstractAsyncContextManager[Any]] | None = None,
    post_receive: PostReceiveHandler | None = None,
    pre_receive: PreReceiveHandler | None = None,
    throttle: Throttle | None = None,
    max_body: int = DEFAULT_MAX_BODY,
    sessions: Sessions | None = None,
    pages: PageRefusal | None = None,
) -> Starlette:
    """The ASGI app, behind the access boundary (gitserver.boundary: `policy`, `throttle`,
    the web reader's `sessions` and login `pages`). `extra_routes` come before the git
    routes (which match `/<name>/…`). `post_receive`, `pre_receive`: what a push's hooks
    ask of the server (HOOK_CALLBACK; pre-receive only where post-receive is asked too)."""
    server = GitServer(
        store,
        hook_env=hook_env,
        post_receive=post_receive,
        pre_receive=pre_receive if post_receive is not None else None,
        max_body=max_body,
    )

    async def healthz(request: Request) -> Response:
        for check in health_checks:
            try:
                await check()
            except Exception as e:  # a failing dependency is reported, not raised
                log.warning("health check failed: %s", e)
                return PlainTextResponse(f"unhealthy: {e}\n", status_code=503)
        return PlainTextResponse("ok\n")

    routes: list[BaseRoute] = [
        Route("/healthz", healthz, methods=["GET"]),
        Route("/api/repos", server.create_repo, methods=["POST"]),
        Route("/api/repos", server.list_repos, methods=["GET"]),
        Route(CALLBACK_PATH, server.hook_post_receive, methods=["POST"]),
        Route(PRE_RECEIVE_PATH, server.hook_pre_receive, methods=["POST"]),
        *extra_routes,
        GitRoute("/{name}/{rest:path}", server.git, methods=["GET", "POST"]),
    ]
    app = Starlette(
        routes=routes,
        lifespan=lifespan,
        exception_handlers={404: http_error, 405: http_error},
    )
    app.add_middleware(
        Boundary,
        policy=policy,
        throttle=throttle if throttle is not None else Throttle(),
        sessions=sessions,
        pages=pages,
    )
    app.state.git = server
    return app


__all__ = ["HOOK_PATHS", "GitServer", "RepositoryNameError", "create_app"]
