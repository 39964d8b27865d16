"""The MCP server over streamable HTTP, as an ASGI app to mount at `/mcp/`.

    mcp = mcp_http_app(service, host=settings.host)
    app = Starlette(
        routes=[*mcp.routes("/mcp"), ...],        # /mcp and /mcp/ alike
        lifespan=lambda app: mcp.lifespan(),      # REQUIRED, see below
    )
    app = Boundary(app, policy, throttle=…)       # gitserver.boundary: who may call

Clients connect to `http://<host>:<port>/mcp` (or `/mcp/`: both are served, no
redirect, since clients pick the transport from the URL and the MCP Inspector
takes `/mcp` for streamable HTTP but not `/mcp/`). Who may call it is the access
boundary's business (gitserver.boundary, the same policy as every other face: a
token unless MCP is open, 401 before the request reaches the MCP layer, the throttle
of wrong tokens); each tool reads only the repositories of the caller the boundary
left in the request's scope (search.mcp.server), and nothing without one.

The host app must run `mcp.lifespan()` in its own lifespan: Starlette does not
run a mounted app's lifespan, and the SDK's session manager (a task group that
owns every MCP session) must be running before the first request, or each
request fails with "Task group is not initialized". Run standalone (uvicorn
pointed at the returned object), the app handles the lifespan protocol itself.

Sessions are bounded: a client that never closes its sessions (anyone, when reads are
open) must not hold the server's memory or lock the other clients out. The SDK ends a
session after SESSION_IDLE_S without a request and refuses new ones at its cap (503);
here the cap is MAX_SESSIONS and a new session takes the place of the least recently
used idle one, whose client gets 404 and opens another, as the MCP specification asks.
"""

from __future__ import annotations

import logging
import math
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from mcp.server.mcpserver import MCPServer
from mcp.server.transport_security import TransportSecuritySettings
from starlette.routing import BaseRoute, Mount, Route
from starlette.types import ASGIApp, Receive, Scope, Send

from search.mcp.server import LogLevel, build_server
from search.service import SearchService

log = logging.getLogger(__name__)

LOOPBACK = ("127.0.0.1", "localhost", "::1")
# The SDK's default: an agent may think for many minutes between two calls of one task.
SESSION_IDLE_S = 30 * 60
# An idle session holds ~36 KiB and two tasks (SDK 2.3.0, measured with tracemalloc over
# 500 sessions), so 1,000 hold ~36 MB: far more clients than one server answers at once.
# The SDK's own cap, 10,000, let one client that never closes a session hold ~360 MB and
# refuse everyone else for half an hour.
MAX_SESSIONS = 1000


class McpHttpApp:
    """ASGI app: the SDK's streamable HTTP transport, behind the host app's boundary."""

    def __init__(
        self, server: MCPServer, *, host: str = "127.0.0.1", max_sessions: int = MAX_SESSIONS
    ) -> None:
        self.server = server
        self.max_sessions = max_sessions
        # DNS-rebinding protection (Host/Origin must be local) only makes sense when
        # listening on loopback; behind a real host name the tokens guard.
        security = (
            None
            if host in LOOPBACK
            else TransportSecuritySettings(enable_dns_rebinding_protection=False)
        )
        self._inner = server.streamable_http_app(
            streamable_http_path="/",
            transport_security=security,
            host=host,
            session_idle_timeout=SESSION_IDLE_S,
            # the SDK refuses a new session (503) only when every one is busy: see _make_room
            max_sessions=max_sessions,
        )

    def routes(self, prefix: str = "/mcp") -> list[BaseRoute]:
        """`prefix` and `prefix/` both reach the transport (a Mount alone answers the
        first with a redirect, which a POST from an MCP client does not follow)."""
        return [Route(prefix, endpoint=_Unslashed(self, prefix)), Mount(prefix, app=self)]

    @asynccontextmanager
    async def lifespan(self) -> AsyncIterator[None]:
        """Run the SDK's session manager; the host app must enter this in its lifespan."""
        async with self.server.session_manager.run():
            yield

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["method"] == "POST" and not _session_of(scope):
            await self._make_room()  # the request may open a session
        await self._inner(scope, receive, send)

    async def _make_room(self) -> None:
        """End the least recently used idle sessions until a new one fits under the cap.

        Reads the SDK's registry of sessions (the SDK is pinned; tests/test_mcp_sessions.py
        fails if it changes): a session's idle deadline is infinite while a request of its
        own is in flight (an open GET stream included), else its last request's end plus
        SESSION_IDLE_S, so the smallest one is the least recently used."""
        manager = self.server.session_manager
        sessions = manager._server_instances
        while len(sessions) >= self.max_sessions:
            idle = [
                (transport.idle_scope.deadline, session, transport)
                for session, transport in sessions.items()
                if transport.idle_scope is not None and transport.idle_scope.deadline != math.inf
            ]
            if not idle:
                return  # every session is busy: the SDK refuses the new one (503)
            _, session, transport = min(idle, key=lambda each: each[0])
            log.info("MCP: %d sessions open, the least recently used idle one ends", len(sessions))
            await manager._discard_session(session, transport)


class _Unslashed:
    """`/mcp` answered as the Mount answers `/mcp/`: the same scope a Mount would make."""

    def __init__(self, app: ASGIApp, prefix: str) -> None:
        self.app, self.prefix = app, prefix

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        root = scope.get("root_path", "")
        inner = dict(scope, root_path=root + self.prefix, path=scope["path"] + "/")
        if "raw_path" in scope and scope["raw_path"] is not None:
            inner["raw_path"] = scope["raw_path"] + b"/"
        await self.app(inner, receive, send)


def _session_of(scope: Scope) -> bytes | None:
    """The request's Mcp-Session-Id header, if any."""
    return next((v for k, v in scope["headers"] if k == b"mcp-session-id"), None)


def mcp_http_app(
    service: SearchService,
    *,
    host: str = "127.0.0.1",
    log_level: LogLevel = "INFO",
    max_sessions: int = MAX_SESSIONS,
) -> McpHttpApp:
    """The `/mcp/` app over a search service (mount it behind gitserver.boundary)."""
    return McpHttpApp(
        build_server(service, log_level=log_level), host=host, max_sessions=max_sessions
    )
