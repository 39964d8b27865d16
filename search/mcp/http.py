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
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from mcp.server.mcpserver import MCPServer
from mcp.server.transport_security import TransportSecuritySettings
from starlette.routing import BaseRoute, Mount, Route
from starlette.types import ASGIApp, Receive, Scope, Send

from search.mcp.server import LogLevel, build_server
from search.service import SearchService

LOOPBACK = ("127.0.0.1", "localhost", "::1")


class McpHttpApp:
    """ASGI app: the SDK's streamable HTTP transport, behind the host app's boundary."""

    def __init__(self, server: MCPServer, *, host: str = "127.0.0.1") -> None:
        self.server = server
        # DNS-rebinding protection (Host/Origin must be local) only makes sense when
        # listening on loopback; behind a real host name the tokens guard.
        security = (
            None
            if host in LOOPBACK
            else TransportSecuritySettings(enable_dns_rebinding_protection=False)
        )
        self._inner = server.streamable_http_app(
            streamable_http_path="/", transport_security=security, host=host
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
        await self._inner(scope, receive, send)


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


def mcp_http_app(
    service: SearchService, *, host: str = "127.0.0.1", log_level: LogLevel = "INFO"
) -> McpHttpApp:
    """The `/mcp/` app over a search service (mount it behind gitserver.boundary)."""
    return McpHttpApp(build_server(service, log_level=log_level), host=host)
