"""MCP sessions are bounded (search.mcp.http): anonymous clients (reads open) that never
close a session cannot pile them up; at the cap a new session takes the place of the
least recently used idle one, whose client gets 404. The real SDK server behind the
real access boundary, over HTTP (uvicorn on port 0), sessions opened with raw requests
as a client that never sends DELETE would."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest
from starlette.applications import Starlette
from starlette.routing import Mount

from core.access import AccessPolicy
from core.throttle import Throttle
from gitserver.boundary import Boundary
from glossator.search_wiring import search_service
from search.mcp.http import McpHttpApp, mcp_http_app
from store.db import Database
from tests.gitserver_support import ServerThread

HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "forgetful", "version": "1"},
    },
}


@pytest.fixture
def open_mcp(database: Database, db_settings) -> Iterator[tuple[str, McpHttpApp]]:
    """`/mcp/` with room for 3 sessions, open to anyone (reads open, no MCP token)."""
    service = search_service(db_settings, database, embedder=None, reranker=None)
    mcp = mcp_http_app(service, max_sessions=3)
    app = Starlette(routes=[Mount("/mcp", app=mcp)], lifespan=lambda app: mcp.lifespan())
    policy = AccessPolicy.from_tokens(anonymous_read=True)
    assert policy.mcp_open
    with ServerThread(Boundary(app, policy, throttle=Throttle()), lifespan="on") as server:
        yield f"{server.base}/mcp/", mcp


def open_session(http: httpx.Client, url: str) -> str:
    r = http.post(url, json=INITIALIZE, headers=HEADERS)
    assert r.status_code == 200, r.text
    return r.headers["mcp-session-id"]


def ping(http: httpx.Client, url: str, session: str) -> int:
    body = {"jsonrpc": "2.0", "id": 2, "method": "ping"}
    headers = HEADERS | {"mcp-session-id": session, "mcp-protocol-version": "2025-06-18"}
    return http.post(url, json=body, headers=headers).status_code


def test_the_least_recently_used_idle_session_makes_room(
    open_mcp: tuple[str, McpHttpApp],
) -> None:
    url, mcp = open_mcp
    registry = mcp.server.session_manager._server_instances
    with httpx.Client(timeout=30) as http:
        a, b, c = (open_session(http, url) for _ in range(3))
        assert ping(http, url, a) == 200  # a used last: b is now the least recently used
        d = open_session(http, url)
        assert set(registry) == {a, c, d}
        assert ping(http, url, b) == 404  # its client must open a new session
        assert [ping(http, url, s) for s in (a, c, d)] == [200, 200, 200]
        for _ in range(20):  # a client that never closes its sessions
            open_session(http, url)
        assert len(registry) == 3
        assert ping(http, url, a) == 404
