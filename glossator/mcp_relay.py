"""`glossator mcp` through the running server: its MCP tools, relayed over stdio.

A desktop client starts `glossator mcp` in a process of its own. Serving the tools
there means loading the query model and the language detector (~6 s before the first
answer) and a pool on the database. When `glossator serve` runs on the same
data directory (its `server.json`, glossator.paths), its `/mcp/` endpoint holds all of
that already: this module connects to it as an MCP client (with GLOSSATOR_MCP_TOKEN
when set) and serves the same tools, instructions and answers on stdin/stdout.

    served = anyio.run(relay, "http://127.0.0.1:8080/mcp/", token)
    if not served: ...               # no server to relay to: serve the tools here

A server that cannot be reached, or refuses the token, at start is not an error: the
command serves the tools itself and says why at INFO (`-v`), as `glossator search`
does (glossator.remote). One that stops later makes each call fail with its reason.
"""

from __future__ import annotations

import contextlib
import logging
from typing import Any

log = logging.getLogger(__name__)

# Connecting is quick or the server is not there; a call may take as long as the
# server's own bounds allow (glossator.remote's reason).
CONNECT_TIMEOUT_S = 10.0
READ_TIMEOUT_S = 120.0


async def relay(url: str, token: str | None) -> bool:
    """Serve MCP on stdio by relaying every request to the MCP server at `url`; False
    (nothing served, stdin untouched) when it cannot be connected to."""
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    headers = {"Authorization": f"Bearer {token}"} if token else {}
    timeout = httpx2.Timeout(READ_TIMEOUT_S, connect=CONNECT_TIMEOUT_S)
    async with contextlib.AsyncExitStack() as stack:
        http = await stack.enter_async_context(httpx2.AsyncClient(headers=headers, timeout=timeout))
        try:
            upstream = await stack.enter_async_context(
                Client(
                    streamable_http_client(url, http_client=http),
                    read_timeout_seconds=READ_TIMEOUT_S,
                )
            )
        except Exception as e:  # not there, or it refuses the token: serve here
            log.info("the MCP server at %s does not answer (%s): serving here", url, _why(e))
            return False
        log.info("relaying MCP to the server at %s", url)
        await _serve_stdio(upstream)
    return True


async def _serve_stdio(upstream: Any) -> None:
    """The SDK's low-level server on stdio, each handler a call to `upstream`."""
    from mcp.server.lowlevel import Server
    from mcp.server.stdio import stdio_server

    async def list_tools(ctx: Any, params: Any) -> Any:
        return await upstream.list_tools(cursor=getattr(params, "cursor", None))

    async def call_tool(ctx: Any, params: Any) -> Any:
        return await upstream.call_tool(params.name, params.arguments)

    server: Any = Server(
        "glossator",
        instructions=upstream.instructions,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


def _why(error: BaseException) -> str:
    """The first leaf of an exception group, in one line."""
    while isinstance(error, BaseExceptionGroup) and error.exceptions:
        error = error.exceptions[0]
    return f"{type(error).__name__}: {error}".splitlines()[0]
