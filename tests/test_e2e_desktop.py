"""The README's desktop MCP setup, as a user has it: `glossator serve` running on its
embedded PostgreSQL, and a desktop client starting `glossator mcp` from another
directory with nothing but the data directory in its environment. The stdio server
attaches to the running database (no second PostgreSQL) and finds the server's
repositories for the freshness of its answers (glossator.paths)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from tests.fakes import plugin_env
from tests.gitserver_support import ServeProcess, commit_all, git
from tests.plugins.corpus import make_small_corpus
from tests.plugins.serve import TOKEN, create_repo, server_env

pytestmark = pytest.mark.slow


async def test_desktop_mcp_from_any_directory_sees_the_server_and_its_freshness(
    private_dir: Path,
) -> None:
    tmp_path = private_dir  # its embedded PostgreSQL: outside pytest's tmp root (private_dir)
    # the server keeps its repositories outside its data directory: only server.json says where
    env = server_env(tmp_path, None, GLOSSATOR_REPOS_DIR=str(tmp_path / "elsewhere" / "repos"))
    server = ServeProcess(tmp_path, env).start(timeout=180)
    try:
        create_repo(server, "livre")
        work = make_small_corpus(tmp_path / "work", 2)
        git("init", "-q", "-b", "main", str(work))
        commit_all(work, "two chapters")
        git("push", "-q", server.url("livre", token=TOKEN), "main", cwd=work, timeout=300)
        [job] = server.wait_idle("livre", timeout=300)
        assert job["status"] == "done", job

        desktop = tmp_path / "desktop-client-cwd"
        desktop.mkdir()
        params = StdioServerParameters(
            command=str(Path(sys.executable).with_name("glossator")),
            args=["mcp"],
            env={
                "GLOSSATOR_DATA_DIR": env["GLOSSATOR_DATA_DIR"],
                "GLOSSATOR_EMBEDDER": "fake",
                **plugin_env(),
            },
            cwd=desktop,
        )
        async with Client(params, read_timeout_seconds=120) as client:
            r = await client.call_tool("search", {"query": "abondance", "mode": "bm25", "k": 2})
            assert not r.is_error, r.content
            [index] = r.structured_content["index"]
            assert index["repository"] == "livre" and index["status"] == "current", index
            assert r.structured_content["groups"]
        assert list(desktop.iterdir()) == []  # nothing created in the client's directory
    finally:
        server.stop()
