"""End to end: the hooks ask the server that runs the push to do their work.

A hook that started Python and imported pydantic's settings, procrastinate and
psycopg cost a push ~1.3 s on a loaded machine, and even Python's bare start was most
of a pushed edit's time. The hooks git runs are bash (glossator/githooks.bash): they
send git's update lines to the server (`POST /api/hooks/pre-receive` and
`/api/hooks/post-receive`, GLOSSATOR_HOOK_CALLBACK, a per-server token) and print its
answer; only when the server cannot answer do they hand the lines to the Python entry
point (glossator.githooks), which does the work itself, or asks the server the same way
where there is no bash.
"""

from __future__ import annotations

import io
import os
import re
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from gitserver.repos import hook_entry
from glossator import githooks
from tests.gitserver_support import ServeProcess, commit_all, git
from tests.plugins.corpus import make_small_corpus
from tests.plugins.serve import TOKEN, create_repo

pytestmark = pytest.mark.slow

ZERO = "0" * 40


def keep_env(hook: Path, seen: Path) -> None:
    """The installed hook, writing the environment git gives it to `seen` first."""
    shebang, rest = hook.read_text().split("\n", 1)
    hook.write_text(f"{shebang}\nenv > {seen}\n{rest}")


def hook_body(name: str, line: str, updates: str) -> bytes:
    """A hook's request to the server (glossator.githooks, module doc)."""
    return f"{name}\n{line}\n{updates}".encode()


def test_post_receive_is_done_by_the_server(server: ServeProcess, tmp_path: Path) -> None:
    create_repo(server, "appel")
    bare = tmp_path / "repos" / "appel.git"
    seen = tmp_path / "hook-env.txt"
    # what git gives the post-receive hook: kept, then the real hook runs as installed
    keep_env(bare / "hooks" / "post-receive", seen)
    work = make_small_corpus(tmp_path / "work", 2)
    git("init", "-q", "-b", "main", str(work))
    commit_all(work, "two chapters")
    out = git("push", server.url("appel", token=TOKEN), "main", cwd=work).stderr
    assert "remote: glossator: indexing queued (job" in out, out
    [job] = server.wait_idle("appel")
    assert job["status"] == "done"
    env = dict(line.split("=", 1) for line in seen.read_text().splitlines() if "=" in line)
    callback, token = env[githooks.HOOK_CALLBACK], env[githooks.HOOK_TOKEN]
    assert callback.startswith("http://127.0.0.1:") and len(token) >= 32
    assert TOKEN not in seen.read_text()  # the push token never reaches the hooks

    # the hook without a database in its environment: only the server can have queued
    tip = git("rev-parse", "HEAD", cwd=work).stdout.strip()
    hook_env = {
        "GIT_DIR": str(bare),
        githooks.HOOK_CALLBACK: callback,
        githooks.HOOK_TOKEN: token,
        githooks.HOOK_URL: server.base + "/",
    }
    stdin = io.StringIO(f"{ZERO} {tip} refs/heads/main\n")
    answer = io.StringIO()
    assert githooks.post_receive(stdin, answer, hook_env) == 0
    assert "glossator: indexing queued (job" in answer.getvalue(), answer.getvalue()
    assert f"GET {server.base}/api/jobs?repository=appel" in answer.getvalue()

    # a wrong token is not this server's hook: 404, and the hook does the work itself
    # (here it cannot: no database in its environment, and it says so)
    wrong = {**hook_env, githooks.HOOK_TOKEN: "not-the-token"}
    answer = io.StringIO()
    assert githooks.post_receive(io.StringIO(f"{ZERO} {tip} refs/heads/main\n"), answer, wrong) == 0
    assert "indexing not queued (no database in this environment)" in answer.getvalue()
    refused = httpx.post(
        server.base + githooks.CALLBACK_PATH,
        content=hook_body("appel", "", ""),
        headers={"Authorization": "Bearer not-the-token"},
        timeout=30,
    )
    assert refused.status_code == 404
    malformed = httpx.post(
        server.base + githooks.CALLBACK_PATH,
        content=b"appel",
        headers={"Authorization": f"Bearer {token}"},
        timeout=30,
    )
    assert malformed.status_code == 400 and "update lines" in malformed.text
    # and a server that is not there: the same
    gone = {**hook_env, githooks.HOOK_CALLBACK: "http://127.0.0.1:9"}
    answer = io.StringIO()
    assert githooks.post_receive(io.StringIO(f"{ZERO} {tip} refs/heads/main\n"), answer, gone) == 0
    assert "indexing not queued (no database in this environment)" in answer.getvalue()


def test_the_hook_entry_point_imports_no_settings_and_no_database_driver() -> None:
    """What post-receive loads before it asks the server (issue 23: pydantic and
    procrastinate were most of a push's time on a loaded machine)."""
    code = (
        "import sys, glossator.githooks\n"
        "heavy = [m for m in ('pydantic', 'pydantic_settings', 'procrastinate', 'psycopg',"
        " 'pygit2', 'starlette', 'glossator.settings') if m in sys.modules]\n"
        "print(','.join(heavy))\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("GLOSSATOR_")}
    result = subprocess.run(
        [sys.executable, "-P", "-c", code], capture_output=True, text=True, env=env, timeout=120
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "", result.stdout


def broken_commit(
    server: ServeProcess, tmp_path: Path, name: str
) -> tuple[Path, dict[str, str], str, str, str]:
    """Repository `name` pushed twice, then a commit whose chapter has broken frontmatter,
    in the repository but on no branch: (its git dir, the environment git gave its
    pre-receive hook, the tip of main, the broken commit, the broken file's path)."""
    import pygit2

    create_repo(server, name)
    bare = tmp_path / "repos" / f"{name}.git"
    work = make_small_corpus(tmp_path / "work", 1)
    git("init", "-q", "-b", "main", str(work))
    commit_all(work, "one chapter")
    git("push", "-q", server.url(name, token=TOKEN), "main", cwd=work)
    server.wait_idle(name)
    seen = tmp_path / "hook-env.txt"
    keep_env(bare / "hooks" / "pre-receive", seen)
    git("commit", "-q", "--allow-empty", "-m", "again", cwd=work)
    git("pull", "-q", "--rebase", server.url(name), "main", cwd=work)
    git("push", "-q", server.url(name, token=TOKEN), "main", cwd=work)
    env = dict(line.split("=", 1) for line in seen.read_text().splitlines() if "=" in line)
    repo = pygit2.Repository(str(bare))
    tip = repo.references["refs/heads/main"].peel(pygit2.Commit)
    path = next(p for p in git("ls-files", cwd=work).stdout.split() if p.endswith("source.md"))
    builder = pygit2.IndexEntry(path, repo.create_blob(b"---\ntitle: [\n---\n\nTexte.\n"), 0o100644)
    index = pygit2.Index()
    index.read_tree(tip.tree)
    index.add(builder)
    sig = pygit2.Signature("t", "t@example.org")
    bad = repo.create_commit(None, sig, sig, "bad", index.write_tree(repo), [tip.id])
    return bare, env, str(tip.id), str(bad), path


def test_pre_receive_is_checked_by_the_server(server: ServeProcess, tmp_path: Path) -> None:
    """pre-receive sends git's update lines and the quarantine to the server, which runs
    hooks.pre_receive on its warm imports (issue 41): the hook's own interpreter loads
    neither pygit2 nor the corpus rules, and the server's verdict is the hook's."""
    bare, env, tip, bad, path = broken_commit(server, tmp_path, "verdict")
    hook_env = {
        "GIT_DIR": str(bare),
        githooks.HOOK_CALLBACK: env[githooks.HOOK_CALLBACK],
        githooks.HOOK_TOKEN: env[githooks.HOOK_TOKEN],
    }
    code = (
        "import io, json, sys\n"
        "from glossator import githooks\n"
        "out = io.StringIO()\n"
        "status = githooks.pre_receive(io.StringIO(sys.argv[1]), out, json.loads(sys.argv[2]))\n"
        "heavy = [m for m in ('pygit2', 'yaml', 'psycopg', 'hooks.pre_receive') if m in sys.modules]\n"
        "print(json.dumps({'status': status, 'out': out.getvalue(), 'heavy': heavy}))\n"
    )
    import json

    def run(updates: str, environ: dict[str, str]) -> dict[str, object]:
        result = subprocess.run(
            [sys.executable, "-P", "-c", code, updates, json.dumps(environ)],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert result.returncode == 0, result.stderr
        return dict(json.loads(result.stdout))

    update = f"{tip} {bad} refs/heads/main\n"
    refused = run(update, hook_env)
    assert refused["status"] == 1 and refused["heavy"] == [], refused
    assert f"glossator: {path}:" in str(refused["out"]) and "push refused" in str(refused["out"])
    good = run(f"{ZERO} {tip} refs/heads/copy\n", hook_env)
    assert good == {"status": 0, "out": "", "heavy": []}
    # without the server (a push by file:// or ssh): the same verdict, checked here
    alone = run(update, {"GIT_DIR": str(bare)})
    assert alone["status"] == 1 and alone["out"] == refused["out"]
    assert "pygit2" in alone["heavy"]  # type: ignore[operator]
    # a quarantine outside the repository is not this push's: refused by the server
    outside = httpx.post(
        server.base + githooks.PRE_RECEIVE_PATH,
        content=hook_body("verdict", str(tmp_path), update),
        headers={"Authorization": f"Bearer {env[githooks.HOOK_TOKEN]}"},
        timeout=30,
    )
    assert outside.status_code == 400


@contextmanager
def answering(answer: bytes) -> Iterator[str]:
    """A server on 127.0.0.1 that reads one request and sends `answer`: its callback URL."""
    listener = socket.create_server(("127.0.0.1", 0))

    def serve() -> None:
        with listener, listener.accept()[0] as conn:
            conn.recv(65536)
            conn.sendall(answer)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    finally:
        thread.join(timeout=30)


def test_the_installed_hooks_ask_the_server_without_python(
    server: ServeProcess, tmp_path: Path
) -> None:
    """The hooks as git runs them are bash: the server's verdict and lines are theirs and
    no Python starts; whenever the server cannot answer, the Python entry point gets git's
    lines, told not to ask again, and does the work itself (its verdict: the same)."""
    bare, env, tip, bad, path = broken_commit(server, tmp_path, "bash")
    marker = tmp_path / "python-ran.txt"
    stub = tmp_path / "python-stub"
    stub.write_text(
        f'#!/bin/sh\n{{ echo "$@"; echo "callback=$GLOSSATOR_HOOK_CALLBACK"; cat; }} > {marker}\n'
        "exit 7\n"
    )
    stub.chmod(0o755)
    hook_env = {
        "PATH": os.environ["PATH"],
        "GIT_DIR": ".",  # as receive-pack runs its hooks: inside the repository
        githooks.HOOK_CALLBACK: env[githooks.HOOK_CALLBACK],
        githooks.HOOK_TOKEN: env[githooks.HOOK_TOKEN],
        githooks.HOOK_URL: server.base + "/",
    }

    def run(hook: str, updates: str, python: str | None = str(stub), **extra: str):
        script = (bare / "hooks" / hook).read_text()
        if python is not None:
            script = re.sub(r"(?m)^python=.*$", f"python={python}", script, count=1)
        copy = tmp_path / f"{hook}-copy"
        copy.write_text(script)
        copy.chmod(0o755)
        marker.unlink(missing_ok=True)
        return subprocess.run(
            [str(copy)],
            input=updates,
            capture_output=True,
            text=True,
            cwd=bare,
            env={**hook_env, **extra},
            timeout=120,
        )

    update = f"{tip} {bad} refs/heads/main\n"
    refused = run("pre-receive", update)
    assert refused.returncode == 1, refused
    assert f"glossator: {path}:" in refused.stderr and "push refused" in refused.stderr
    assert refused.stdout == "" and not marker.exists()
    # a branch name in UTF-8: the request's length is counted in bytes
    accepted = run("pre-receive", f"{ZERO} {tip} refs/heads/élan\n")
    assert (accepted.returncode, accepted.stdout, accepted.stderr) == (0, "", "")
    assert not marker.exists()
    queued = run("post-receive", f"{ZERO} {tip} refs/heads/élan\n")
    assert queued.returncode == 0 and not marker.exists(), queued
    assert "glossator: indexing queued (job" in queued.stdout and "élan" in queued.stdout
    assert f"GET {server.base}/api/jobs?repository=bash" in queued.stdout
    server.wait_idle("bash")

    # the server cannot answer: not there, a wrong token (404), an answer cut short or
    # not this protocol's: the Python entry point gets git's lines, as git wrote them
    cut = b"HTTP/1.1 200 OK\r\nContent-Length: 90\r\nConnection: close\r\n\r\n0\n"
    foreign = b'HTTP/1.1 200 OK\r\nContent-Length: 12\r\nConnection: close\r\n\r\n{"status":0}'
    for hook in ("pre-receive", "post-receive"):
        for case in ("gone", "token", "cut", "foreign"):
            if case == "gone":
                ran = run(hook, update, **{githooks.HOOK_CALLBACK: "http://127.0.0.1:9"})
            elif case == "token":
                ran = run(hook, update, **{githooks.HOOK_TOKEN: "not-the-token"})
            else:
                with answering(cut if case == "cut" else foreign) as url:
                    ran = run(hook, update, **{githooks.HOOK_CALLBACK: url})
            assert ran.returncode == 7, (hook, case, ran)
            args, callback, lines = marker.read_text().split("\n", 2)
            assert args == f"-E -P -S {hook_entry()} {hook}", (hook, case)
            assert callback == "callback=" and lines == update, (hook, case)
    # and the Python entry point as installed, without a server: the server's verdict
    alone = run("pre-receive", update, python=None, **{githooks.HOOK_CALLBACK: ""})
    assert alone.returncode == 1 and alone.stderr == refused.stderr, alone
