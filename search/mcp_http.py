"""The MCP server over streamable HTTP, as an ASGI app to mount at `/mcp/`.

    mcp = mcp_http_app(service, token=settings.mcp_token, host=settings.host)
    app = Starlette(
        routes=[*mcp.routes("/mcp"), ...],        # /mcp and /mcp/ alike
        lifespan=lambda app: mcp.lifespan(),      # REQUIRED, see below
    )

Clients connect to `http://<host>:<port>/mcp` (or `/mcp/`: both are served, no
redirect, since clients pick the transport from the URL and the MCP Inspector
takes `/mcp` for streamable HTTP but not `/mcp/`) and, when `GLOSSATOR_MCP_TOKEN`
is set, send `Authorization: Bearer <token>`; a missing or wrong token gets 401
before the request reaches the MCP layer (compared in constant time).

The host app must run `mcp.lifespan()` in its own lifespan: Starlette does not
run a mounted app's lifespan, and the SDK's session manager (a task group that
owns every MCP session) must be running before the first request, or each
request fails with "Task group is not initialized". Run standalone (uvicorn
pointed at the returned object), the app handles the lifespan protocol itself.
"""

from __future__ import annotations

import hmac
import json
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from mcp.server.mcpserver import MCPServer
from mcp.server.transport_security import TransportSecuritySettings
from starlette.routing import BaseRoute, Mount, Route
from starlette.types import ASGIApp, Receive, Scope, Send

from core.throttle import Throttle, client_host, wait_words
from search.mcp_server import LogLevel, build_server
from search.service import SearchService

log = logging.getLogger(__name__)

LOOPBACK = ("127.0.0.1", "localhost", "::1")


class McpHttpApp:
    """ASGI app: bearer-token check, then the SDK's streamable HTTP transport."""

    def __init__(
        self,
        server: MCPServer,
        *,
        token: str | None,
        host: str = "127.0.0.1",
        throttle: Throttle | None = None,
    ) -> None:
        self.server = server
        self._token = token.encode("utf-8") if token else None
        # wrong tokens a client address (core.throttle), shared with git and the web reader
        self._throttle = throttle if throttle is not None else Throttle()
        # DNS-rebinding protection (Host/Origin must be local) only makes sense when
        # listening on loopback; behind a real host name the bearer token guards.
        security = (
            None
            if host in LOOPBACK
            else TransportSecuritySettings(enable_dns_rebinding_protection=False)
        )
        self._inner = server.streamable_http_app(
            streamable_http_path="/", transport_security=security, host=host
        )
        if self._token is None and host not in LOOPBACK:
            log.warning("MCP over HTTP on %s has no token: set GLOSSATOR_MCP_TOKEN", host)

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
        if scope["type"] == "http" and self._token is not None:
            given = _bearer(scope)
            address = client_host(scope.get("client"))
            wait = self._throttle.retry_after(address) if given is not None else 0.0
            if wait:
                log.warning("refused an MCP request from a throttled address")
                await _refuse(
                    send,
                    429,
                    f"too many wrong tokens from this address: try again in {wait_words(wait)}",
                    [(b"retry-after", str(int(wait) + 1).encode())],
                )
                return
            if given is None or not hmac.compare_digest(given, self._token):
                if given is not None:
                    self._throttle.failed(address)
                await _unauthorized(send, wrong=given is not None)
                return
        await self._inner(scope, receive, send)


def _bearer(scope: Scope) -> bytes | None:
    for name, value in scope.get("headers", []):
        if name == b"authorization":
            scheme, _, given = value.partition(b" ")
            if scheme.lower() == b"bearer":
                return given.strip()
    return None


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


async def _unauthorized(send: Send, wrong: bool) -> None:
    await _refuse(
        send,
        401,
        "wrong bearer token for /mcp: send Authorization: Bearer <GLOSSATOR_MCP_TOKEN>, "
        "the server's token"
        if wrong
        else "send Authorization: Bearer <GLOSSATOR_MCP_TOKEN> to use /mcp",
        [(b"www-authenticate", b'Bearer realm="glossator-mcp"')],
        error="unauthorized",
    )


# JSON-RPC's range for a server's own errors; the SDK's client shows the message of an
# error in a non-2xx body, and a bare -32603 "Server returned an error response" without one
REFUSED = -32001


async def _refuse(
    send: Send,
    status: int,
    message: str,
    headers: list[tuple[bytes, bytes]],
    *,
    error: str = "too many wrong tokens",
) -> None:
    # a JSON-RPC error (what an MCP client reads: its message reaches the caller), and
    # the message again at the top for a plain HTTP client
    refusal = {"code": REFUSED, "message": message, "data": {"reason": error}}
    answer = {"jsonrpc": "2.0", "id": None, "error": refusal, "message": message}
    body = json.dumps(answer).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                *headers,
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


def mcp_http_app(
    service: SearchService,
    *,
    token: str | None,
    host: str = "127.0.0.1",
    log_level: LogLevel = "INFO",
    throttle: Throttle | None = None,
) -> McpHttpApp:
    """The `/mcp/` app over a search service; `token` None: no bearer token asked."""
    return McpHttpApp(
        build_server(service, log_level=log_level), token=token, host=host, throttle=throttle
    )
