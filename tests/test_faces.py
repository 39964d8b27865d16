"""The faces of one real server (glossator.server.build_app under uvicorn, the search test
database, the MCP SDK's client over streamable HTTP, the CLI) against each other: one
citation form that every face prints and every face accepts (search.citation), one check
of bad input answered alike by MCP and /api (search.inputs), and the HTTP face of a
service (OpenAPI, 405, JSON 404s, a favicon, /api/repos)."""

from __future__ import annotations

import logging
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import httpx2
import pytest
from click.testing import CliRunner
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from starlette.routing import Match, Route

from gitserver.app import HOOK_PATHS
from gitserver.repos import RepoStore
from glossator.cli import main
from glossator.search_wiring import search_service
from glossator.server import build_app
from search.mcp.server import build_server
from tests.gitserver_support import ServeProcess, ServerThread, commit_all, git
from tests.plugins.corpus import WORK
from tests.plugins.search import PETITION, REPOSITORY
from tests.plugins.serve import server_env

TEXT = f"{PETITION}/source.md"
MCP_TOKEN = "faces-mcp-token"
READ_TOKEN = "faces-read-token"
PUSH_TOKEN = "faces-push-token"


class Faces:
    def __init__(self, base: str, db_url: str, tmp: Path) -> None:
        self.base = base
        self.db_url = db_url
        self.tmp = tmp

    def get(self, path: str, **kw: Any) -> httpx.Response:
        return httpx.get(self.base + path, timeout=120, **kw)

    def cli(self, *args: str) -> Any:
        env = {
            "GLOSSATOR_DATABASE_URL": self.db_url,
            "GLOSSATOR_DATA_DIR": str(self.tmp / "cli-data"),
            "GLOSSATOR_LOG_LEVEL": "WARNING",
        }
        return CliRunner().invoke(main, list(args), env=env, catch_exceptions=False)

    def mcp(self, token: str = MCP_TOKEN) -> Any:
        http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=120)
        return http, Client(streamable_http_client(f"{self.base}/mcp/", http_client=http))


@pytest.fixture
def faces(search_settings, search_db_url, search_pool, tmp_path: Path) -> Iterator[Faces]:
    settings = search_settings.replace(
        repos_dir=tmp_path / "repos",
        mcp_token=MCP_TOKEN,
        read_tokens=(READ_TOKEN,),
        push_tokens=(PUSH_TOKEN,),
    )
    RepoStore(settings.repos_dir, data_dir=settings.data_dir).create("livre")
    app = build_app(settings, worker="none")
    with ServerThread(app, lifespan="on") as server:
        f = Faces(server.base, search_db_url, tmp_path)
        f.app = app  # type: ignore[attr-defined]
        f.service = search_service(search_settings, search_pool, embedder=None, reranker=None)  # type: ignore[attr-defined]
        yield f


def text_of(result: Any) -> str:
    return "\n".join(c.text for c in result.content)


# a citation as every face writes it: repository:corpus/…/x.md#chunk:first[-last]
CITATION = re.compile(rf"{REPOSITORY}:corpus/[^\s#<>]+\.md#\d+:\d+(?:-\d+)?")


def joined(text: str) -> list[str]:
    """The citations an MCP text writes split (`## …repo:folder/` then `file#chunk:lines`)."""
    out, folder = [], None
    for line in text.splitlines():
        if line.startswith("## "):
            m = re.search(rf"({REPOSITORY}:corpus/\S*/)$", line)
            folder = m[1] if m else None
        elif folder and (m := re.match(r"(?:\[\d+\] |→ )?(\S+\.md#\d+:\d+(?:-\d+)?)", line)):
            out.append(folder + m[1])
        elif folder and (m := re.match(r"#(\d+:\d+(?:-\d+)?)$", line)):
            out.append(folder + "#" + m[1])
    return out


async def test_one_citation_crosses_every_face(faces: Faces) -> None:
    query = "pétition des fabricants de chandelles contre le soleil"
    printed: dict[str, str] = {}
    r = faces.cli("search", query, "--k", "3")
    assert r.exit_code == 0, r.output
    printed["cli search"] = CITATION.findall(r.output)[0]
    r = faces.cli("show", f"{TEXT}#2")
    assert r.exit_code == 0, r.output
    printed["cli show"] = re.search(r"— (\S+) \(", r.output)[1] + r.output.split("\n")[1]
    http, client = faces.mcp()
    async with http, client:
        tool = await client.call_tool("search", {"query": query, "k": 3})
        printed["mcp search"] = joined(text_of(tool))[0]
        tool = await client.call_tool("context", {"question": query})
        printed["mcp context"] = joined(text_of(tool))[0]
        tool = await client.call_tool("get_node", {"source_file": TEXT, "chunk": 3})
        head, ref = text_of(tool).split("\n")[:2]
        printed["mcp get_node"] = re.search(r"— (\S+) \(", head)[1] + ref
        r = faces.cli("context", query, "--budget", "600")
        assert r.exit_code == 0, r.output
        printed["cli context"] = joined(r.output)[0]
        data = faces.get("/api/search", params={"q": query, "k": 3}).json()
        group = data["groups"][0]
        printed["api search"] = f"{group['repository']}:{group['folder']}{group['hits'][0]['ref']}"
        page = faces.get("/search", params={"q": query, "k": 3}).text
        printed["web search"] = CITATION.findall(page)[0]
        read = faces.get(f"/read/{REPOSITORY}/{TEXT}").text
        printed["web reader"] = CITATION.findall(read)[3]
        for face, citation in printed.items():
            assert CITATION.fullmatch(citation), (face, citation)
            chunk = int(citation.split("#")[1].split(":")[0])
            file = citation.split(":", 1)[1].split("#")[0]
            # every reader of a file takes it
            r = faces.cli("show", citation)
            assert r.exit_code == 0 and f"#{chunk}:" in r.output, (face, citation, r.output)
            for tool_name in ("get_node", "get_parent", "get_children"):
                got = await client.call_tool(tool_name, {"source_file": citation})
                assert not got.is_error, (face, citation, tool_name, text_of(got))
            node = await client.call_tool("get_node", {"source_file": citation})
            assert [c["chunk"] for c in node.structured_content["chunks"]] == [chunk]
            api = faces.get(f"/api/nodes/{REPOSITORY}/{quote(file)}%23{citation.split('#')[1]}")
            assert api.status_code == 200, (face, citation, api.text)
            assert [c["chunk"] for c in api.json()["chunks"]] == [chunk]
            for web in (
                f"/read/{REPOSITORY}/{quote(file)}%23{citation.split('#')[1]}",
                "/search?q=" + quote(citation),
            ):
                went = faces.get(web, follow_redirects=False)
                assert went.status_code == 303, (face, web, went.text)
                assert went.headers["location"].endswith(f"?chunk={chunk}#chunk-{chunk}")
                landed = faces.get(went.headers["location"].split("#")[0])
                assert f'id="chunk-{chunk}" class="para cited"' in landed.text
        # a chunk range is not a citation: one line saying how to read around one
        bad = await client.call_tool("get_node", {"source_file": f"{TEXT}#3-5"})
        assert bad.is_error and "ask for #4 with context=1" in text_of(bad)
    r = faces.cli("show", f"{TEXT}#3-5")
    assert r.exit_code == 2 and "ask for #4 with context=1" in r.output


async def test_bad_input_is_one_line_alike_on_mcp_and_the_api(faces: Faces, caplog) -> None:
    caplog.set_level(logging.INFO)
    node = f"/api/nodes/{REPOSITORY}/{TEXT}"
    # (tool, arguments, API path, its parameters, status, words both answers hold)
    cases: list[tuple[str, dict[str, Any], str, dict[str, Any], int, str]] = [
        ("outline", {"work": "\x00"}, "/api/outline", {"work": "\x00"}, 400, "NUL character"),
        (
            "search",
            {"query": "x", "repository": "a\x00"},
            "/api/search",
            {"q": "x", "repository": "a\x00"},
            400,
            "the repository contains a NUL character",
        ),
        (
            "context",
            {"question": "soleil", "branch": "\x00"},
            "/api/context",
            {"q": "soleil", "branch": "\x00"},
            400,
            "the branch contains a NUL character",
        ),
        (
            "get_node",
            {"source_file": TEXT, "chunk": 10**12},
            node,
            {"chunk": 10**12},
            404,
            f"chunk {10**12} does not exist",
        ),
        (
            "search",
            {"query": "x", "repostory": "bastiat"},
            "/api/search",
            {"q": "x", "repostory": "bastiat"},
            400,
            "repostory is not ",
        ),
        ("get_node", {"source_file": TEXT, "chunk_index": 2}, node, {"chunk_index": 2}, 400, ""),
    ]
    http, client = faces.mcp()
    async with http, client:
        for tool, args, path, params, status, words in cases:
            caplog.clear()
            got = await client.call_tool(tool, args)
            mcp_says = text_of(got)
            api = faces.get(path, params=params)
            api_says = api.json()["error"]
            assert got.is_error and api.status_code == status, (tool, args, mcp_says, api.text)
            for said in (mcp_says, api_says):
                assert words in said and "\n" not in said, (tool, args, said)
                assert "Traceback" not in said and "Error executing" not in said
            if "is not " in mcp_says and "mean" in api_says:  # the closest name, on both
                guess = api_says.split("did you mean ")[1].split("?")[0]
                assert f"did you mean {guess}?" in mcp_says, mcp_says
            # bad input is the caller's: nothing logged as an error, no traceback
            assert not [r for r in caplog.records if r.exc_info or r.levelno >= logging.ERROR]
    # a lone surrogate: JSON can carry one (the SDK's HTTP client cannot encode it, so the
    # SDK's in-process client sends it), a URL only as bytes that are not UTF-8
    async with Client(build_server(faces.service)) as local:  # type: ignore[attr-defined]
        got = await local.call_tool("search", {"query": "sol\ud800eil"})
    api = faces.get("/api/search?q=sol%ED%A0%80eil")
    assert got.is_error and api.status_code == 400
    for said in (text_of(got), api.json()["error"]):
        assert "lone surrogate" in said and "send valid UTF-8 text" in said, said
    assert not [r for r in caplog.records if r.exc_info or r.levelno >= logging.ERROR]
    assert "did you mean repository?" in faces.get("/api/search?q=x&repostory=b").json()["error"]
    assert "did you mean chunk?" in faces.get(node + "?chunk_index=2").json()["error"]
    jobs = faces.get("/api/jobs?repository=%00")
    assert jobs.status_code == 400 and "NUL character" in jobs.json()["error"]
    typo = faces.get("/api/jobs?repostory=x")
    assert typo.status_code == 400 and "did you mean repository?" in typo.json()["error"]
    page = faces.get("/search?q=soleil&repostory=bastiat")
    assert page.status_code == 400 and "did you mean repository?" in page.text


def test_the_http_face_of_a_service(faces: Faces) -> None:
    spec = faces.get("/openapi.json").json()
    assert spec["openapi"].startswith("3.") and spec["info"]["title"] == "Glossator"
    documented = set(spec["paths"])
    app = faces.app  # type: ignore[attr-defined]
    served = [
        r
        for r in app.routes  # the hooks' callbacks are the server's own (their token the hooks')
        if isinstance(r, Route) and r.path.startswith("/api") and r.path not in HOOK_PATHS
    ]
    samples = {"{repository}": REPOSITORY, "{path}": TEXT}

    def concrete(path: str) -> str:
        for k, v in samples.items():
            path = path.replace(k, v)
        return path

    # every documented route exists (a router match, and not the API's 404)...
    for path in documented:
        scope = {"type": "http", "path": concrete(path), "method": "GET"}
        assert any(r.matches(scope)[0] is Match.FULL for r in app.routes), path
        if path.startswith("/api"):
            params = {"q": "soleil"} if path in ("/api/search", "/api/context") else {}
            answer = faces.get(concrete(path), params=params)
            assert answer.status_code == 200, (path, answer.text)
            # ...and every parameter it documents is one it takes
            for p in spec["paths"][path]["get"]["parameters"]:
                if p["in"] == "query" and p["name"] not in params:
                    value = {"integer": "1", "boolean": "true"}.get(p["schema"]["type"], "x")
                    r = faces.get(concrete(path), params={**params, p["name"]: value})
                    assert "is not a parameter" not in r.text, (path, p["name"], r.text)
    # every /api route is documented
    for route in served:
        probe = concrete(route.path.replace("{path:path}", "{path}"))
        assert any(concrete(d) == probe for d in documented), route.path
    assert "/healthz" in documented and "post" in spec["paths"]["/api/repos"]
    docs = faces.get("/docs", follow_redirects=False)
    assert docs.status_code in (302, 307) and docs.headers["location"] == "/openapi.json"
    # a wrong method: 405 naming the right one
    for path in ("/api/search?q=x", "/api/jobs", "/healthz", "/openapi.json"):
        r = httpx.post(faces.base + path, timeout=60)
        assert r.status_code == 405 and "GET" in r.headers["allow"], (path, r.text)
    said = httpx.post(faces.base + "/api/search", timeout=60).json()["error"]
    assert said.startswith("method not allowed: this route takes") and "GET" in said
    # JSON 404s under /api, no redirect
    for path in ("/api/nope", "/api/search/x", "/api"):
        r = faces.get(path, follow_redirects=False)
        assert r.status_code == 404 and r.headers["content-type"] == "application/json", path
        assert "/openapi.json" in r.json()["error"]
    assert faces.get("/nope.txt", follow_redirects=False).status_code == 404
    icon = faces.get("/favicon.ico", follow_redirects=False)
    assert icon.status_code == 200 and icon.headers["content-type"] == "image/x-icon"
    assert icon.content[:4] == b"\x00\x00\x01\x00"  # an ICO file's header
    # /api/repos as the root page lists it: a read (clone's policy), not an admin route
    listed = faces.get("/api/repos")
    assert listed.status_code == 200 and listed.json() == [{"name": "livre", "branches": {}}]
    root = faces.get("/").json()["endpoints"]
    assert "/api/repos" in root["repositories"] and "/openapi.json" in root["openapi"]
    assert WORK  # the corpus fixture this file reads


def messages(error: BaseException) -> str:
    """Every message of an exception and the ones it groups or wraps."""
    out = [str(error)]
    for inner in getattr(error, "exceptions", ()):
        out.append(messages(inner))
    if error.__cause__ is not None:
        out.append(messages(error.__cause__))
    return " | ".join(out)


async def test_a_wrong_mcp_token_reads_as_one(faces: Faces) -> None:
    """The SDK's client shows the JSON-RPC error of a 401's body; without one, a bare
    -32603 "Server returned an error response"."""
    http, client = faces.mcp("not-the-token")
    with pytest.raises(BaseException) as refused:
        async with http, client:
            await client.list_tools()
    said = messages(refused.value)
    assert "wrong bearer token for /mcp" in said and "GLOSSATOR_MCP_TOKEN" in said, said
    plain = httpx.post(faces.base + "/mcp", json={}, timeout=60)
    assert plain.status_code == 401 and "Bearer <GLOSSATOR_MCP_TOKEN>" in plain.json()["message"]


def test_git_says_how_to_fix_a_push(faces: Faces, tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    git("init", "-q", "-b", "main", str(work))
    (work / "note.md").write_text("x\n")
    commit_all(work, "one")
    port = faces.base.rsplit(":", 1)[1]
    nowhere = git(
        "push", f"http://git:{PUSH_TOKEN}@127.0.0.1:{port}/nope.git", "main", cwd=work, check=False
    )
    assert nowhere.returncode != 0
    assert "glossator repo create nope" in nowhere.stderr, nowhere.stderr
    wrong = git(
        "push",
        f"http://git:bad-token@127.0.0.1:{port}/livre.git",
        "main",
        cwd=work,
        check=False,
        env={"GIT_TERMINAL_PROMPT": "0"},
    )
    assert wrong.returncode != 0 and "wrong token for pushing" in wrong.stderr, wrong.stderr
    anonymous = git(
        "push",
        f"http://127.0.0.1:{port}/livre.git",
        "main",
        cwd=work,
        check=False,
        env={"GIT_TERMINAL_PROMPT": "0"},
    )
    assert "wrong token" not in anonymous.stderr


def test_a_second_server_on_one_data_directory_says_so_once(tmp_path: Path, db_url: str) -> None:
    import subprocess
    import sys

    env = server_env(tmp_path, db_url)
    first = ServeProcess(tmp_path, env, args=("--worker", "none")).start(timeout=240)
    try:
        child = {
            k: v for k, v in __import__("os").environ.items() if not k.startswith("GLOSSATOR_")
        }
        second = subprocess.run(
            [
                sys.executable,
                "-c",
                "from glossator.cli import main; main()",
                "serve",
                "--port",
                "0",
            ],
            env=child | env,
            capture_output=True,
            text=True,
            timeout=240,
        )
    finally:
        first.stop()
    assert second.returncode == 3, second.stderr
    lines = second.stderr.strip().splitlines()
    assert len(lines) == 1 and "listening on" not in second.stderr, second.stderr
    assert "a server already runs on the data directory" in lines[0], lines
    assert str(first.proc.pid if first.proc else "") in lines[0]
