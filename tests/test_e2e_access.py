"""One access policy at one boundary, on the real server (issue 38, items 1 and 2).

A real `glossator serve` on the test PostgreSQL, two small books pushed with the real git
client and indexed once for the module, the MCP SDK's client over streamable HTTP. With
reads closed, MCP is closed too (it once answered anyone, even from an address the
throttle had blocked); each token reads only its repositories, on every face.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import httpx2
import psycopg
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from psycopg import sql

from tests.gitserver_support import ServeProcess, git
from tests.plugins.serve import TOKEN, server_env

pytestmark = pytest.mark.slow

GLOSSATOR = str(Path(sys.executable).with_name("glossator"))
READ_ALL = "e2e-read-all-token"

# Two books, each with words no other text has: a response that carries one of them
# carries that book's text.
BOOKS = {
    "alpha": (
        "ALPHA BOOK\n\nby An Author\n\n\nCHAPTER I. OF ZANZIBAR\n\n"
        "The zanzibarine caravans crossed the quillwort plains at dawn, laden with cloves.\n\n"
        "CHAPTER II. OF RETURNS\n\nEvery zanzibarine merchant returned before the monsoon.\n",
        ("zanzibarine", "quillwort"),
    ),
    "beta": (
        "BETA BOOK\n\nby Another Author\n\n\nCHAPTER I. OF GLACIERS\n\n"
        "The xylophagous beetles of the moraine feed on driftwood the glacier leaves behind.\n\n"
        "CHAPTER II. OF THAWS\n\nA thaw wakes the xylophagous larvae under the vorticella moss.\n",
        ("xylophagous", "vorticella"),
    ),
}


def glossator(env: dict[str, str], *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    full = {k: v for k, v in os.environ.items() if not k.startswith(("GLOSSATOR_", "GIT_"))}
    full.update(env)
    return subprocess.run(
        [GLOSSATOR, *args], env=full, cwd=cwd, capture_output=True, text=True, timeout=600
    )


@pytest.fixture(scope="module")
def module_db(pg_server) -> Iterator[str]:
    """A database of the module's own, from the test template (tests/plugins/db.py)."""
    name = f"glossator_access_{os.getpid()}"
    with psycopg.connect(pg_server.conninfo, autocommit=True) as c:
        c.execute(
            sql.SQL("CREATE DATABASE {} TEMPLATE {} STRATEGY FILE_COPY").format(
                sql.Identifier(name), sql.Identifier(pg_server.template)
            )
        )
    try:
        yield pg_server.url(name)
    finally:
        with psycopg.connect(pg_server.conninfo, autocommit=True) as c:
            c.execute(
                sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
            )


@pytest.fixture(scope="module")
def closed(module_db: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServeProcess]:
    """`glossator serve` with reads closed, both books pushed and indexed."""
    tmp = tmp_path_factory.mktemp("access")
    env = server_env(
        tmp,
        module_db,
        GLOSSATOR_ANONYMOUS_READ="false",
        GLOSSATOR_READ_TOKENS=READ_ALL,
        GLOSSATOR_SUMMARIZER="extractive",
    )
    server = ServeProcess(tmp, env).start(timeout=300)
    try:
        for name, (text, _) in BOOKS.items():
            assert glossator(env, "repo", "create", name, cwd=tmp).returncode == 0
            (tmp / f"{name}.txt").write_text(text)
            done = glossator(env, "corpus", "import", f"{name}.txt", name, cwd=tmp)
            assert done.returncode == 0, done.stderr
            git("remote", "add", "glossator", server.url(name, token=TOKEN), cwd=tmp / name)
            git("push", "-q", "glossator", "main", cwd=tmp / name, timeout=300)
        auth = {"Authorization": f"Bearer {READ_ALL}"}
        for name in BOOKS:
            jobs = server.wait_idle(name, timeout=600, headers=auth)
            assert all(j["status"] == "done" for j in jobs), jobs
        yield server
    finally:
        server.stop()


def mcp_post(server: ServeProcess, headers: dict[str, str] | None = None) -> httpx.Response:
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "search", "arguments": {"query": "zanzibarine caravans"}},
    }
    accept = {"Accept": "application/json, text/event-stream"}
    return httpx.post(
        f"{server.base}/mcp", json=body, headers={**accept, **(headers or {})}, timeout=30
    )


async def mcp_search(server: ServeProcess, token: str | None, query: str) -> str:
    """A real MCP client's `search` over streamable HTTP: the text of its answer."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    http = httpx2.AsyncClient(headers=headers, timeout=60)
    async with http, Client(streamable_http_client(f"{server.base}/mcp", http_client=http)) as c:
        r = await c.call_tool("search", {"query": query, "mode": "bm25"})
    return " ".join(getattr(block, "text", "") for block in r.content)


async def test_closed_reads_close_mcp_even_from_a_throttled_address(closed: ServeProcess) -> None:
    """The hole of issue 38: with reads closed and no GLOSSATOR_MCP_TOKEN, an anonymous
    `POST /mcp` answered 200 and `search` returned book text."""
    anonymous = mcp_post(closed)
    assert anonymous.status_code == 401, anonymous.text
    assert "zanzibar" not in anonymous.text.lower()
    assert anonymous.headers["www-authenticate"].startswith("Bearer")
    # a read token gets the book through a real MCP client
    assert "zanzibarine" in (await mcp_search(closed, READ_ALL, "zanzibarine caravans")).lower()
    # the start-up log says who can read what
    log = closed.log()
    assert "reads: tokens only" in log and "MCP: tokens only" in log
    # wrong tokens at MCP's door count against the address, as at every other door
    for n in range(10):
        assert mcp_post(closed, {"Authorization": f"Bearer wrong-{n}"}).status_code == 401
    held = mcp_post(closed, {"Authorization": f"Bearer {READ_ALL}"})
    assert held.status_code == 429 and int(held.headers["retry-after"]) > 60
    assert "zanzibar" not in held.text.lower()
    for path in ("/api/search?q=zanzibarine", "/alpha.git/info/refs?service=git-upload-pack"):
        r = httpx.get(closed.base + path, auth=("git", READ_ALL), timeout=30)
        assert r.status_code == 429, (path, r.status_code)
    blocked = mcp_post(closed)  # anonymous, from the blocked address: still closed
    assert blocked.status_code == 401 and "zanzibar" not in blocked.text.lower()
