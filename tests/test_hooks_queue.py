"""The queue (procrastinate on the real PostgreSQL), the hooks' entry points, `glossator status`."""

from __future__ import annotations

import io
import json
import threading
from pathlib import Path

import psycopg
import pytest
from click.testing import CliRunner
from psycopg import pq

from glossator import githooks
from glossator.cli import main as cli
from hooks import post_receive, pre_receive
from hooks.queue import (
    TASK_NAME,
    BranchQueued,
    Enqueued,
    defer_sync,
    ensure_schema,
    list_jobs,
    queue_push,
)
from store import jobqueue
from tests.gitserver_support import wait_for

ZERO = "0" * 40


def test_schema_once_and_pushes_coalesce(db_url: str, conn) -> None:
    assert ensure_schema(db_url) is True
    assert ensure_schema(db_url) is False
    first = defer_sync(db_url, "livre", "main")
    second = defer_sync(db_url, "livre", "main")  # the first still waits: same job
    other = defer_sync(db_url, "livre", "draft")
    assert not first.coalesced and second.coalesced and second.job_id == first.job_id
    assert other.job_id != first.job_id
    jobs = list_jobs(conn, repository="livre")
    assert [(j["branch"], j["status"]) for j in jobs] == [("draft", "queued"), ("main", "queued")]
    (lock,) = conn.execute(
        "SELECT lock FROM procrastinate_jobs WHERE id = %s", (first.job_id,)
    ).fetchone()
    assert lock == "livre/main"  # one running job per branch
    # a running job does not block queueing the next push
    conn.execute("UPDATE procrastinate_jobs SET status = 'doing' WHERE id = %s", (first.job_id,))
    conn.commit()
    third = defer_sync(db_url, "livre", "main")
    assert not third.coalesced and third.job_id > first.job_id
    assert list_jobs(conn, status="running")[0]["id"] == first.job_id


def test_a_push_is_queued_in_one_transaction_and_coalesces(db_url: str, conn) -> None:
    """queue_push (one pipeline, one transaction): HEAD, the tip, the job; a second push
    to a branch whose job waits gets that job, brought forward with a fresh count; the
    connection's own synchronous_commit is left as it was."""
    ensure_schema(db_url)
    with psycopg.connect(db_url) as pool_like:  # the pool's connections: not autocommit
        pool_like.execute("SET synchronous_commit = on")  # the tests' server has it off
        pool_like.commit()
        first = queue_push(pool_like, "livre", {"main": "a" * 40, "draft": "b" * 40}, "main")
        assert pool_like.info.transaction_status == pq.TransactionStatus.IDLE
        assert not pool_like.autocommit
        assert pool_like.execute("SHOW synchronous_commit").fetchone() == ("on",)
        pool_like.rollback()
    assert not first["main"].enqueued.coalesced and not first["draft"].enqueued.coalesced
    assert first["main"].last_job is None and first["main"].last_problems == []
    tips = conn.execute("SELECT branch, commit FROM branch_tips ORDER BY branch").fetchall()
    assert tips == [("draft", "b" * 40), ("main", "a" * 40)]
    assert conn.execute("SELECT branch FROM repository_heads").fetchall() == [("main",)]
    # the waiting job is a delayed follow-up of failures: a push brings it forward
    conn.execute(
        "UPDATE procrastinate_jobs SET scheduled_at = now() + interval '1 hour',"
        " args = args || '{\"failures\": 2}' WHERE id = %s",
        (first["main"].enqueued.job_id,),
    )
    conn.commit()
    with psycopg.connect(db_url, autocommit=True) as short:  # the hook's own connection
        second = queue_push(short, "livre", {"main": "c" * 40}, None)
    assert second["main"].enqueued == Enqueued(first["main"].enqueued.job_id, True)
    row = conn.execute(
        "SELECT scheduled_at <= now(), args ? 'failures' FROM procrastinate_jobs WHERE id = %s",
        (first["main"].enqueued.job_id,),
    ).fetchone()
    assert row == (True, False)
    assert conn.execute("SELECT count(*) FROM procrastinate_jobs").fetchone() == (2,)
    conn.rollback()


def test_a_push_racing_another_for_its_job_is_queued_once(db_url: str, conn) -> None:
    """Another push's job inserted after this push looked (not committed yet): this
    push's insert waits on the queueing lock, its transaction is refused whole when the
    other commits, and it runs again: it gets that job, and its tip is recorded."""
    ensure_schema(db_url)
    other = defer_sync(db_url, "livre", "other")  # a job that is not in the way
    conn.execute("BEGIN")
    racing = jobqueue.defer(
        conn,
        TASK_NAME,
        queue="indexing",
        lock="livre/main",
        queueing_lock="livre/main",
        args={"repository": "livre", "branch": "main"},
    )
    assert racing is not None and racing != other.job_id
    result: dict[str, BranchQueued] = {}

    def push() -> None:
        with psycopg.connect(db_url, autocommit=True) as c:
            result.update(queue_push(c, "livre", {"main": "d" * 40}, "main"))

    thread = threading.Thread(target=push)
    thread.start()
    # the push waits on the unique index of waiting jobs' locks, held by this transaction
    with psycopg.connect(db_url, autocommit=True) as look:
        wait_for(
            "the push to wait on the queueing lock",
            lambda: look.execute(
                "SELECT 1 FROM pg_stat_activity WHERE wait_event_type = 'Lock'"
                " AND datname = current_database()"
            ).fetchone(),
            timeout=120,
        )
    conn.commit()
    thread.join(timeout=120)
    assert not thread.is_alive()
    assert result["main"].enqueued == Enqueued(racing, True)
    assert conn.execute("SELECT commit FROM branch_tips WHERE branch = 'main'").fetchone() == (
        "d" * 40,
    )
    waiting = conn.execute(
        "SELECT count(*) FROM procrastinate_jobs WHERE queueing_lock = 'livre/main'"
    ).fetchone()
    assert waiting == (1,)
    conn.rollback()


def test_a_scoped_caller_gets_its_own_jobs_up_to_the_limit(db_url: str, conn) -> None:
    """The readable repositories are filtered before the limit: a caller who reads one
    book gets that book's jobs even when other books have newer ones."""
    ensure_schema(db_url)
    mine = defer_sync(db_url, "mine", "main")
    for n in range(3):
        defer_sync(db_url, "other", f"b{n}")
    jobs = list_jobs(conn, limit=2, readable=frozenset({"mine"}))
    assert [(j["id"], j["repository"]) for j in jobs] == [(mine.job_id, "mine")]
    assert list_jobs(conn, limit=2, readable=frozenset()) == []
    assert {j["repository"] for j in list_jobs(conn, limit=2)} == {"other"}


def test_post_receive_prints_the_job(db_url: str, monkeypatch, tmp_path: Path) -> None:
    ensure_schema(db_url)
    git_dir = tmp_path / "livre.git"
    git_dir.mkdir()
    # the hook's environment as git gives it (the composition root's entry point reads it;
    # git's own variables and the hook URL are not settings and must not be refused)
    monkeypatch.setenv("GIT_DIR", str(git_dir))
    monkeypatch.setenv("GLOSSATOR_DATABASE_URL", db_url)
    monkeypatch.setenv("GLOSSATOR_HOOK_URL", "http://127.0.0.1:9/")
    out = io.StringIO()
    stdin = io.StringIO(f"{ZERO} {'a' * 40} refs/heads/main\n{ZERO} {'b' * 40} refs/tags/v1\n")
    assert githooks.post_receive(stdin, out) == 0
    text = out.getvalue()
    assert "glossator: indexing queued (job " in text and "for main" in text
    assert "GET http://127.0.0.1:9/api/jobs?repository=livre" in text
    assert db_url not in text

    monkeypatch.delenv("GLOSSATOR_DATABASE_URL")
    out = io.StringIO()
    assert githooks.post_receive(io.StringIO(f"{ZERO} {'a' * 40} refs/heads/main\n"), out) == 0
    assert "indexing not queued" in out.getvalue()

    # the library takes plain values: no environment needed
    config = post_receive.PostReceive(repository="livre", database_url=db_url)
    out = io.StringIO()
    assert post_receive.main(config, io.StringIO(f"{ZERO} {'c' * 40} refs/heads/draft\n"), out) == 0
    assert "for draft" in out.getvalue() and "GET /api/jobs" in out.getvalue()


def test_the_hook_reads_only_its_own_variables(tmp_path: Path) -> None:
    """The hook builds no settings object (issue 23: pydantic cost a push ~1 s): a
    setting it does not use is not its business (the server validated its own at
    start), and the database's variable is the setting's."""
    from glossator.settings import SETTINGS

    assert githooks.DATABASE_URL in {s.variable for s in SETTINGS}
    env = {"GIT_DIR": str(tmp_path / "livre.git"), "GLOSSATOR_PORT": "eighty"}
    out = io.StringIO()
    assert githooks.post_receive(io.StringIO(f"{ZERO} {'a' * 40} refs/heads/main\n"), out, env) == 0
    assert "indexing not queued (no database in this environment)" in out.getvalue()


def test_githooks_main_names_the_hooks(capsys: pytest.CaptureFixture[str]) -> None:
    assert githooks.main(["githooks", "update"]) == 2
    assert "pre-receive,post-receive" in capsys.readouterr().err


def test_pre_receive_file_check() -> None:
    assert pre_receive.check_file("corpus/w/p/c/source.md", b"---\ntitle: T\n---\nx\n") is None
    unclosed = pre_receive.check_file("corpus/w/p/c/source.md", b"---\ntitle: T\nx\n")
    assert unclosed is not None and "never closed" in unclosed.message
    bad_key = pre_receive.check_file("corpus/w/summary.md", b"---\norder: first\n---\n")
    assert bad_key is not None and "`order` must be a whole number" in bad_key.message
    binary = pre_receive.check_file("corpus/w/summary.md", b"\x00\x01")
    assert binary is not None and binary.path == "corpus/w/summary.md"
    empty = pre_receive.check_file("corpus/w/p/c/source.md", b"---\ntitle: T\n---\n\n")
    assert empty is not None and "empty source" in empty.message and empty.user
    prompt = pre_receive.check_file("prompts/1.md", b"---\nnote: x\n---\n")
    assert prompt is not None and "empty prompt" in prompt.message
    assert pre_receive.check_file("prompts/1.md", b"Summarise faithfully.\n") is None


def test_pre_receive_refuses_an_unreadable_policy(tmp_path: Path) -> None:
    from tests.gitserver_support import git, init_work

    work = init_work(
        tmp_path / "w",
        {
            "glossator.toml": "[summaries]\nalgorithm = 3\n",
            "corpus/w/c/source.md": "---\ntitle: C\n---\n\nTexte.\n",
        },
    )
    import pygit2

    tip = git("rev-parse", "HEAD", cwd=work).stdout.strip()
    repo = pygit2.Repository(str(work))
    # a first push: HEAD names a branch that does not exist yet (nothing to compare with)
    repo.set_head("refs/heads/premier")
    found = pre_receive.check_updates(repo, [("0" * 40, tip, "refs/heads/premier")])
    assert [p.path for p in found] == ["glossator.toml"], found


def test_status_command(db_url: str) -> None:
    ensure_schema(db_url)
    job = defer_sync(db_url, "livre", "main")
    runner = CliRunner()
    env = {"GLOSSATOR_DATABASE_URL": db_url}
    result = runner.invoke(cli, ["status", "--json"], env=env)
    assert result.exit_code == 0, result.output
    jobs = json.loads(result.output)["jobs"]
    assert jobs[0]["id"] == job.job_id and jobs[0]["status"] == "queued"
    table = runner.invoke(cli, ["status"], env=env)
    assert table.exit_code == 0 and "livre/main" in table.output
    # piped (CliRunner's stdout is no terminal): one job, one line, whatever its width
    long_name = "une-bibliotheque-au-nom-bien-plus-long-que-quatre-vingts-colonnes"
    defer_sync(db_url, long_name, "main")
    piped = runner.invoke(cli, ["status"], env=env)
    assert piped.exit_code == 0, piped.output
    row = next(line for line in piped.output.splitlines() if f"{long_name}/main" in line)
    assert "queued" in row, piped.output


def test_a_database_that_does_not_answer_is_one_clear_line(
    monkeypatch, tmp_path: Path, unused_url: str
) -> None:
    """Disk full, connection lost, PANIC: one line saying what and what to do, never
    the driver's multi-line message (it may quote the URL), never a traceback."""
    import psycopg

    from store.errors import describe_failure

    assert "disk is full" in describe_failure(psycopg.errors.DiskFull("no space left"))
    assert "restarting" in describe_failure(psycopg.errors.AdminShutdown("terminating"))
    lost = psycopg.OperationalError('connection to server at "127.0.0.1", port 9 failed')
    assert "does not answer" in describe_failure(lost) and "127.0.0.1" not in describe_failure(lost)
    # the server's state, which fails a load's job (store.loader), not a file's own fault
    from store.errors import is_outage

    assert is_outage(psycopg.errors.DiskFull("could not extend file")) and is_outage(lost)
    assert is_outage(psycopg.errors.AdminShutdown("terminating"))
    assert not is_outage(psycopg.errors.UniqueViolation("duplicate key"))

    result = CliRunner().invoke(cli, ["status"], env={"GLOSSATOR_DATABASE_URL": unused_url})
    assert result.exit_code == 1 and "does not answer" in result.output
    assert "Traceback" not in result.output and unused_url not in result.output

    git_dir = tmp_path / "livre.git"
    git_dir.mkdir()
    monkeypatch.setenv("GIT_DIR", str(git_dir))
    monkeypatch.setenv("GLOSSATOR_DATABASE_URL", unused_url)
    out = io.StringIO()
    assert githooks.post_receive(io.StringIO(f"{ZERO} {'a' * 40} refs/heads/main\n"), out) == 0
    said = out.getvalue()
    assert "not queued: the database does not answer" in said and unused_url not in said
    assert len([line for line in said.splitlines() if "not queued" in line]) == 1


@pytest.fixture
def unused_url() -> str:
    """A PostgreSQL URL nothing listens on (a port just closed), failing at once."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"postgresql://glossator:secret@127.0.0.1:{port}/glossator?connect_timeout=5"


def test_pre_receive_refuses_a_push_to_a_repository_being_deleted_or_when_it_crashes(
    tmp_path: Path,
) -> None:
    """Issue 38: a repository marked as being deleted refuses every push from its
    pre-receive hook; a check that crashes refuses too, saying so (never "accepted")."""
    import pygit2

    from core import receiving

    bare = tmp_path / "livre.git"
    pygit2.init_repository(str(bare), bare=True)
    receiving.mark_deleting(bare)
    out = io.StringIO()
    assert pre_receive.main(str(bare), None, io.StringIO(""), out) == 1
    assert out.getvalue().startswith("glossator: repository livre is being deleted")
    out = io.StringIO()
    missing = tmp_path / "gone.git"  # what the push meets when the repository went away
    assert pre_receive.main(str(missing), None, io.StringIO(""), out) == 1
    said = out.getvalue()
    assert said.startswith("glossator: the push check failed (") and "push refused" in said
    assert said.count("\n") == 1
