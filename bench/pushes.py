"""Concurrent pushes: N clones × M rounds against the same edits pushed one at a time.

    .venv/bin/python bench/pushes.py [--clones 5] [--rounds 6] [--chapters 6] [--runs 3] [--write bench/RESULTS.md]

Starts `glossator serve` (subprocess, 127.0.0.1 port 0, embedded PostgreSQL in a
temporary directory, the fake embedder and summarizer by default: tests/fakes.py, the
test suite's provider plugin, which this bench names for its server) and runs, side
by side in one run, on two repositories seeded with the same `--chapters`
chapters of the example:

- **sequential**: one clone makes the N × M edits, pushing each and waiting until
  the server is idle before the next (no push lands during a job);
- **concurrent**: N clones, each editing its own chapter, push M rounds at once,
  each refused push followed by `git pull --rebase` and a new push (the load of
  issue 14 that wedged the queue).

Figures: seconds from the last accepted push to every edit being in the rows
(searchable), pushes refused, the worst push's tries (issue 23: a writer starved
by the server's own commit-backs), commit-backs (and how many were deferred
because a push was under way), jobs (and how they ended), lost races, and texts
embedded; the concurrent run's texts embedded beyond the sequential run's are the
work races waste (the reuse of hooks/reuse.py should keep it near zero). The
concurrent part runs `--runs` times on fresh repositories; each figure is the
median of the runs (the worst push's tries also as each run's).
Bounded: fixed sizes, each push retried at most 60 times, every wait has a
timeout. Not run in CI.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import psycopg

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.exiting import exit_on_signals  # noqa: E402
from tests.fakes import plugin_env  # noqa: E402
from tests.gitserver_support import ServeProcess, commit_all, git  # noqa: E402
from tests.plugins.corpus import make_small_corpus  # noqa: E402

SECTION = "## Concurrent pushes (bench/pushes.py)"
TOKEN = "bench-push-token"
ADMIN = "bench-admin-token"


def edit(work: Path, chapter: str, marker: str) -> None:
    source = work / chapter / "source.md"
    source.write_text(source.read_text().rstrip("\n") + f"\n\nParagraphe ajouté {marker}.\n")
    commit_all(work, f"add {marker}")


def push_rebasing(work: Path, url: str, causes: dict[str, int] | None = None) -> int:
    """Push until accepted; the number of tries (1: accepted at once). `causes` counts
    the refusals by who made the tip the pull then fetched: a commit-back (author
    Glossator) or another writer."""
    for tries in range(1, 61):
        if git("push", "-q", url, "main", cwd=work, check=False).returncode == 0:
            return tries
        git("pull", "-q", "--rebase", url, "main", cwd=work)
        if causes is not None:
            author = git("log", "-1", "--format=%an", "FETCH_HEAD", cwd=work).stdout.strip()
            key = "commit-back" if author == "Glossator" else "writer"
            causes[key] = causes.get(key, 0) + 1
    raise RuntimeError("a push was still refused after 60 tries")


def missing(db: str, repository: str, markers: list[str]) -> int:
    """How many markers no row holds yet."""
    with psycopg.connect(db) as conn:
        found = 0
        for m in markers:
            row = conn.execute(
                "SELECT 1 FROM hierarchical_content_nodes"
                " WHERE repository = %s AND content LIKE %s LIMIT 1",
                (repository, f"%{m}%"),
            ).fetchone()
            found += row is not None
    return len(markers) - found


def wait_searchable(db: str, repository: str, markers: list[str], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while missing(db, repository, markers):
        if time.monotonic() > deadline:
            raise TimeoutError(f"{missing(db, repository, markers)} edits not searchable")
        time.sleep(0.05)


def job_figures(server: ServeProcess, repository: str, after: int) -> dict[str, Any]:
    jobs = [j for j in server.jobs(repository) if j["id"] > after]
    stats = [j.get("stats") or {} for j in jobs]
    ended: dict[str, int] = {}
    for j in jobs:
        ended[j["status"]] = ended.get(j["status"], 0) + 1
    return {
        "jobs": len(jobs),
        "ended": ended,
        "races": sum(int(s.get("races", 0)) for s in stats),
        "committed": sum(
            1 for s in stats if s.get("committed") and not s.get("races") and not s.get("deferred")
        ),
        "deferred": sum(1 for s in stats if s.get("deferred")),
        "embedded": sum(int(s.get("embedded", 0)) for s in stats),
    }


def seed(server: ServeProcess, tmp: Path, name: str, chapters: int) -> tuple[Path, list[str], int]:
    server.create_repo(name, admin=ADMIN).raise_for_status()
    work = make_small_corpus(tmp / f"{name}-seed", chapters)
    git("init", "-q", "-b", "main", str(work))
    commit_all(work, "seed")
    git("push", "-q", server.url(name, token=TOKEN), "main", cwd=work)
    jobs = server.wait_idle(name, timeout=600)
    names = sorted(
        p.parent.relative_to(work).as_posix() for p in work.glob("corpus/*/*/*/source.md")
    )
    return work, names, max(j["id"] for j in jobs)


def sequential(
    server: ServeProcess, tmp: Path, db: str, args: argparse.Namespace
) -> dict[str, Any]:
    work, chapters, last = seed(server, tmp, "seq", args.chapters)
    git("pull", "-q", server.url("seq"), "main", cwd=work)
    url = server.url("seq", token=TOKEN)
    markers = []
    for r in range(args.rounds):
        for i in range(args.clones):
            marker = f"SEQ{i}R{r}Z"
            edit(work, chapters[i], marker)
            markers.append(marker)
            push_rebasing(work, url)
            server.wait_idle("seq", after=last, timeout=600)
    started = time.monotonic()
    wait_searchable(db, "seq", markers, 600)
    out = job_figures(server, "seq", last)
    out.update(searchable_s=time.monotonic() - started, refused=0)
    return out


def concurrent(
    server: ServeProcess, tmp: Path, db: str, args: argparse.Namespace, name: str = "conc"
) -> dict[str, Any]:
    _, chapters, last = seed(server, tmp, name, args.chapters)
    url = server.url(name, token=TOKEN)
    clones = [tmp / f"{name}-clone{i}" for i in range(args.clones)]
    for clone in clones:
        git("clone", "-q", server.url(name), str(clone))
    markers = [f"CONC{i}R{r}Z" for i in range(args.clones) for r in range(args.rounds)]
    tries: list[int] = []
    causes: dict[str, int] = {}
    last_push = [0.0]
    errors: list[BaseException] = []

    def run(i: int) -> None:
        try:
            for r in range(args.rounds):
                edit(clones[i], chapters[i], f"CONC{i}R{r}Z")
                tries.append(push_rebasing(clones[i], url, causes))
                last_push[0] = max(last_push[0], time.monotonic())
        except BaseException as e:
            errors.append(e)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(args.clones)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=1800)
    if errors:
        raise errors[0]
    wait_searchable(db, name, markers, 600)
    searchable = time.monotonic() - last_push[0]
    server.wait_idle(name, after=last, timeout=600)
    out = job_figures(server, name, last)
    stuck = [j for j in server.jobs(name) if j["status"] in ("queued", "running")]
    out.update(
        searchable_s=searchable,
        refused=sum(tries) - len(tries),
        worst_tries=max(tries),
        by_commit_back=causes.get("commit-back", 0),
        by_writer=causes.get("writer", 0),
        stuck=len(stuck),
    )
    return out


def median_run(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Each figure's median over the runs (`ended` and `stuck`: the last run's, summed)."""
    out: dict[str, Any] = {}
    for key in runs[0]:
        values = [r[key] for r in runs]
        if key == "ended":
            total: dict[str, int] = {}
            for v in values:
                for k, n in v.items():
                    total[k] = total.get(k, 0) + n
            out[key] = total
        elif key == "stuck":
            out[key] = sum(values)
        else:
            out[key] = statistics.median(values)
    out["worst_each"] = [r["worst_tries"] for r in runs]
    return out


def main() -> None:
    exit_on_signals()  # a SIGTERM or Ctrl-C still stops what it started
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clones", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--runs", type=int, default=3, help="concurrent runs (median)")
    parser.add_argument("--chapters", type=int, default=6)
    parser.add_argument("--embedder", default="fake")
    parser.add_argument("--summarizer", default="fake")
    parser.add_argument("--write", type=Path, help="update this bench's RESULTS.md section")
    parser.add_argument(
        "--concurrent-only", action="store_true", help="skip the sequential reference"
    )
    args = parser.parse_args()
    if not 1 <= args.clones <= args.chapters or not 1 <= args.rounds <= 20 or args.runs < 1:
        parser.error("1 ≤ --clones ≤ --chapters, 1 ≤ --rounds ≤ 20 and --runs ≥ 1")

    tmp = Path(tempfile.mkdtemp(prefix="glossator-bench-pushes-"))
    os.chmod(tmp, 0o755)  # the embedded PostgreSQL runs as its own user
    env = {
        "GLOSSATOR_DATA_DIR": str(tmp / "data"),
        "GLOSSATOR_REPOS_DIR": str(tmp / "repos"),
        "GLOSSATOR_PUSH_TOKENS": TOKEN,
        "GLOSSATOR_ADMIN_TOKEN": ADMIN,
        "GLOSSATOR_EMBEDDER": args.embedder,
        "GLOSSATOR_SUMMARIZER": args.summarizer,
        "GLOSSATOR_LOG_LEVEL": "WARNING",
        # `fake` (the default) is the test suite's provider plugin, named here: this bench
        # measures git and the pipeline, not the models (docs/architecture.md, "Fakes")
        **plugin_env(),
    }
    server = ServeProcess(tmp, env).start(timeout=180)
    try:
        db = (tmp / "data" / "postgres.lock").read_text().splitlines()[1]
        seq: dict[str, Any] = {}
        if not args.concurrent_only:
            print("sequential …", flush=True)
            seq = sequential(server, tmp, db, args)
        runs = []
        for n in range(args.runs):
            print(f"concurrent, run {n + 1}/{args.runs} …", flush=True)
            runs.append(concurrent(server, tmp, db, args, name=f"conc{n}"))
            print(f"  worst push: {runs[-1]['worst_tries']} tries", flush=True)
        conc = median_run(runs)
    finally:
        server.stop()
        shutil.rmtree(tmp, ignore_errors=True)

    edits = args.clones * args.rounds
    each = ", ".join(str(w) for w in conc["worst_each"])
    if not seq:  # --concurrent-only
        seq = {k: "-" for k in ("refused", "jobs", "committed", "deferred", "races")}
        seq.update(ended={}, embedded=conc["embedded"], searchable_s=float("nan"))
    lines = [
        "| | sequential (1 clone, wait after each push) | concurrent "
        f"({args.clones} clones × {args.rounds} rounds, median of {args.runs} runs) |",
        "|---|---:|---:|",
        f"| edits | {edits} | {edits} |",
        f"| pushes refused (then `pull --rebase`) | {seq['refused']} | {conc['refused']:g} |",
        f"| **worst push's tries** | 1 | **{conc['worst_tries']:g}** (runs: {each}) |",
        f"| refusals after which the pull fetched a commit-back / another writer's push | | "
        f"{conc['by_commit_back']:g} / {conc['by_writer']:g} |",
        f"| jobs | {seq['jobs']} | {conc['jobs']:g} |",
        f"| jobs ended (all runs) | {fmt(seq['ended'])} | {fmt(conc['ended'])} |",
        f"| jobs still queued/running at the end (all runs) | 0 | {conc['stuck']} |",
        f"| commit-backs that moved the branch | {seq['committed']} | {conc['committed']:g} |",
        f"| commit-backs deferred (a push under way) | {seq['deferred']} | {conc['deferred']:g} |",
        f"| lost races (commit-back CAS) | {seq['races']} | {conc['races']:g} |",
        f"| texts embedded | {seq['embedded']} | {conc['embedded']:g} |",
        f"| **texts embedded beyond the sequential run** (work races waste) | | "
        f"**{conc['embedded'] - seq['embedded']:+g}** |",
        f"| last push → every edit searchable | (after the last wait) "
        f"{seq['searchable_s']:.2f} s | **{conc['searchable_s']:.2f} s** |",
    ]
    print("\n".join(lines))
    if args.write:
        write_section(args.write, lines, args)


def fmt(ended: dict[str, int]) -> str:
    return ", ".join(f"{v} {k}" for k, v in sorted(ended.items()))


def write_section(path: Path, lines: list[str], args: argparse.Namespace) -> None:
    """Put this bench's section first in RESULTS.md (latest first), replacing its old one."""
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else 0.0
    body = "\n".join(
        [
            SECTION,
            "",
            f"Command: `.venv/bin/python bench/pushes.py --clones {args.clones} --rounds "
            f"{args.rounds} --chapters {args.chapters} --runs {args.runs} "
            f"--embedder {args.embedder} --write "
            f"bench/RESULTS.md`, run {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} on "
            f"{os.cpu_count()} cores (load average {load:.1f} at the end: other engineers' "
            "tests ran alongside). Real git client and `glossator serve`, embedded PostgreSQL.",
            "",
            *lines,
            "",
        ]
    )
    text = path.read_text() if path.exists() else "# Benchmark results\n"
    start = text.find(SECTION)
    if start >= 0:
        end = text.find("\n## ", start + len(SECTION))
        text = text[:start] + (text[end + 1 :] if end >= 0 else "")
    first = text.find("\n## ")
    if first < 0:
        text = text.rstrip("\n") + "\n\n" + body
    else:
        text = text[: first + 1] + body + "\n" + text[first + 1 :]
    path.write_text(text)


if __name__ == "__main__":
    main()
