"""The Starlette app of the git server: smart HTTP, repository admin, health.

    GET  /<name>.git/info/refs?service=git-upload-pack|git-receive-pack
    POST /<name>.git/git-upload-pack | git-receive-pack        (also without ".git")
    POST /api/repos        {"name": "…"}   admin bearer token → 201 / 400 / 401 / 409
    GET  /api/repos                         admin bearer token → the repositories
    GET  /healthz                           200 "ok" (plus checks given by the caller)

The indexing queue (`/api/jobs`), the worker and the MCP mount are added by the
composition root (`glossator.server`) through `read_routes` (guarded by the same
read policy as clone and fetch: one policy for every route that shows a
repository's content or names), `extra_routes` (their own guard, like MCP's
bearer token) and `lifespan`, so this module stays testable with no database.
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

from core.throttle import Throttle, client_host, wait_words
from gitserver import backend
from gitserver.auth import (
    REALM,
    Access,
    Credentials,
    Policy,
    basic_credentials,
    bearer_token,
    read_credentials,
    required_access,
    token_matches,
)
from gitserver.errors import GitServerError, RepositoryNameError
from gitserver.repos import NAME, SUFFIX, RepoStore, check_name
from hooks import receiving

log = logging.getLogger(__name__)

HOOK_URL = "GLOSSATOR_HOOK_URL"  # read by hooks.post_receive to tell the pusher where to look
# The post-receive hook asks this server to queue its jobs (glossator.githooks): where
# (this request's own socket address) and with which token (one per server, random).
HOOK_CALLBACK = "GLOSSATOR_HOOK_CALLBACK"
HOOK_TOKEN = "GLOSSATOR_HOOK_TOKEN"
CALLBACK_PATH = "/api/hooks/post-receive"
# (repository, git's `<old> <new> <ref>` lines, the server's URL) → the lines to print
PostReceiveHandler = Callable[[str, str, str], Awaitable[str]]
# A push that landed while other writers' pushes to its branch are under way or were
# just refused is answered once they had their turn, this long at most (issue 23): a
# round figure, several pull-and-push cycles on a loaded machine.
HOLD_MAX_S = 30.0
HOLD_POLL_S = 0.05

HealthCheck = Callable[[], Awaitable[None]]
Endpoint = Callable[[Request], Awaitable[Response]]


def _throttled(wait: float) -> Response:
    log.warning("refused a request from a throttled address: too many wrong tokens")
    return PlainTextResponse(
        f"too many wrong tokens from this address: try again in {wait_words(wait)}\n",
        status_code=429,
        headers={"Retry-After": str(int(wait) + 1)},
    )


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


class GitServer:
    """Request handlers bound to one repository store, auth policy and hook environment."""

    def __init__(
        self,
        store: RepoStore,
        policy: Policy,
        *,
        admin_token: str | None = None,
        hook_env: Mapping[str, str] | None = None,
        post_receive: PostReceiveHandler | None = None,
        throttle: Throttle | None = None,
    ) -> None:
        self.store = store
        # wrong tokens a client address (core.throttle): shared with the web reader's logins
        self.throttle = throttle if throttle is not None else Throttle()
        self.policy = policy
        self.admin_token = admin_token
        # Environment for git http-backend and through it the hooks (database URL…).
        self.hook_env = dict(hook_env or {})
        self.post_receive = post_receive
        # Only this server's hooks know it: it is in the environment git gives them.
        self.hook_token = secrets.token_urlsafe(32) if post_receive is not None else ""

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
        wait = self._held(request, credentials is not None)
        if wait:
            return _throttled(wait)
        if not self.policy.allows(access, credentials):
            self._failed(request, credentials is not None)
            log.info(
                "refused %s of %s: %s",
                access.value,
                name,
                "bad token" if credentials else "no token",
            )
            return _unauthorized(access, wrong=credentials is not None)
        if not self.store.exists(name):
            return PlainTextResponse(
                f"no repository named {name!r}: create it on the server with "
                f"`glossator repo create {name}` (or POST /api/repos with the admin token)\n",
                status_code=404,
            )
        marker = None
        if rest == "git-receive-pack":
            log.info("push received for %s", name)
            # a push under way: the commit-backs of its branches wait (hooks.receiving)
            marker = receiving.begin(self.store.path(name))
        try:
            return await self._backend(request, name, rest, credentials, marker)
        except BaseException:
            if marker is not None:
                marker.finish()
            raise

    async def _backend(
        self,
        request: Request,
        name: str,
        rest: str,
        credentials: Credentials | None,
        marker: receiving.Marker | None,
    ) -> Response:
        body = await backend.spool_body(request) if request.method == "POST" else None
        if marker is not None and body is not None:
            refs = backend.pushed_refs(body, request.headers.get("content-encoding"))
            if refs:
                marker.name_refs(refs)
        client = request.client.host if request.client else None
        cgi = backend.CgiRequest(
            project_root=self.store.root,
            path_info=f"/{name}{SUFFIX}/{rest}",
            method=request.method,
            query=request.url.query,
            content_type=request.headers.get("content-type"),
            content_encoding=request.headers.get("content-encoding"),
            git_protocol=request.headers.get("git-protocol"),
            remote_user=(credentials.user or "glossator") if credentials else None,
            remote_addr=client,
            extra_env={**self.hook_env, **self._callback_env(request)},
        )
        return await backend.run(cgi, body, on_finish=marker.finish if marker else None)

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
        lines the hook prints (glossator.githooks)."""
        token = bearer_token(request.headers)
        if self.post_receive is None or not token or not token_matches(token, (self.hook_token,)):
            return PlainTextResponse("not found\n", status_code=404)
        try:
            data = await request.json()
            name, updates = str(data["repository"]), str(data["updates"])
            url = str(data.get("url") or "")
        except (ValueError, KeyError, TypeError):
            return JSONResponse({"error": "repository and updates required"}, 400)
        if not self.store.exists(name):
            return PlainTextResponse(f"no repository named {name!r}\n", status_code=404)
        output = await self.post_receive(name, updates, url)
        await self._let_other_writers_in(name, updates)
        return JSONResponse({"output": output})

    async def _let_other_writers_in(self, name: str, updates: str) -> None:
        """Answer a push that landed only once the pushes to its branch that its landing
        refused had their turn: those writers pull and push again, and a writer answered
        at once pushes its next commit before they can, round after round (issue 23: one
        push refused 19 times while the others went through). A lone writer never waits;
        at most HOLD_MAX_S."""
        branches = [
            ref[len("refs/heads/") :]
            for _old, new, ref in (line.split() for line in updates.splitlines() if line.strip())
            if ref.startswith("refs/heads/") and new.strip("0")
        ]
        path = self.store.path(name)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + HOLD_MAX_S
        for branch in branches:
            while loop.time() < deadline:
                if not await asyncio.to_thread(_others_under_way, path, branch):
                    break
                await asyncio.sleep(HOLD_POLL_S)

    def read_refusal(self, request: Request) -> Response | None:
        """None when the read policy lets `request` in (Basic or Bearer token)."""
        credentials = read_credentials(request.headers)
        wait = self._held(request, credentials is not None)
        if wait:
            return _throttled(wait)
        if self.policy.allows(Access.READ, credentials):
            return None
        self._failed(request, credentials is not None)
        log.info(
            "refused read of %s: %s", request.url.path, "bad token" if credentials else "no token"
        )
        return _unauthorized(Access.READ, wrong=credentials is not None)

    def _held(self, request: Request, presented: bool) -> float:
        """Seconds a request presenting credentials waits (0: none); anonymous never does."""
        if not presented:
            return 0.0
        return self.throttle.retry_after(client_host(request.client))

    def _failed(self, request: Request, presented: bool) -> None:
        if presented:
            self.throttle.failed(client_host(request.client))

    def guarded(self, endpoint: Endpoint) -> Endpoint:
        async def guarded_endpoint(request: Request) -> Response:
            refusal = self.read_refusal(request)
            return refusal if refusal is not None else await endpoint(request)

        return guarded_endpoint

    def _admin_refusal(self, request: Request) -> Response | None:
        if not self.admin_token:
            return JSONResponse(
                {"error": "admin routes are disabled: set GLOSSATOR_ADMIN_TOKEN on the server"},
                status_code=403,
            )
        given = bearer_token(request.headers)
        wait = self._held(request, given is not None)
        if wait:
            return _throttled(wait)
        if not token_matches(given, (self.admin_token,)):
            self._failed(request, given is not None)
            return JSONResponse(
                {"error": "admin token required (Authorization: Bearer <GLOSSATOR_ADMIN_TOKEN>)"},
                status_code=401,
                headers={"WWW-Authenticate": f'Bearer realm="{REALM}"'},
            )
        return None

    async def create_repo(self, request: Request) -> Response:
        refusal = self._admin_refusal(request)
        if refusal is not None:
            return refusal
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
        """The repositories and their branches: a read, under clone's policy (the root
        page lists it beside the other reads); creating one is the admin's."""
        refusal = self.read_refusal(request)
        if refusal is not None:
            return refusal
        return JSONResponse(
            [{"name": n, "branches": self.store.branches(n)} for n in self.store.names()]
        )


def _others_under_way(path: Path, branch: str) -> int:
    """Pushes to `branch` under way or just refused, other than those that landed."""
    try:
        repo = pygit2.Repository(str(path))
        ref = repo.references.get(f"refs/heads/{branch}")
        if ref is None:
            return 0
        tip = str(ref.resolve().target)
    except (pygit2.GitError, KeyError, ValueError):
        return 0

    def landed(commit: str) -> bool:
        try:
            return commit == tip or repo.descendant_of(tip, commit)
        except (pygit2.GitError, KeyError, ValueError):  # not in the repository: not landed
            return False

    return receiving.pushes_under_way(path, branch, tip, landed=landed)


class GitRoute(Route):
    """`/<name>/<rest>` only where `rest` is a path of git's smart HTTP protocol: any other
    path falls through to the router's own 404, and a wrong method on another route's
    path gets that route's 405 (this catch-all no longer answers every POST)."""

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
    policy: Policy,
    *,
    admin_token: str | None = None,
    hook_env: Mapping[str, str] | None = None,
    extra_routes: Sequence[BaseRoute] = (),
    read_routes: Sequence[Route] = (),
    health_checks: Sequence[HealthCheck] = (),
    lifespan: Callable[[Starlette], AbstractAsyncContextManager[Any]] | None = None,
    post_receive: PostReceiveHandler | None = None,
    throttle: Throttle | None = None,
) -> Starlette:
    """The ASGI app. `extra_routes` come before the git routes (which match `/<name>/…`).
    `post_receive`: what a push's post-receive hook asks of the server (HOOK_CALLBACK)."""
    server = GitServer(
        store,
        policy,
        admin_token=admin_token,
        hook_env=hook_env,
        post_receive=post_receive,
        throttle=throttle,
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
        *[
            Route(r.path, server.guarded(r.endpoint), methods=sorted(r.methods or ("GET",)))
            for r in read_routes
        ],
        *extra_routes,
        GitRoute("/{name}/{rest:path}", server.git, methods=["GET", "POST"]),
    ]
    app = Starlette(
        routes=routes,
        lifespan=lifespan,
        exception_handlers={404: http_error, 405: http_error},
    )
    app.state.git = server
    return app


__all__ = ["GitServer", "RepositoryNameError", "create_app"]
