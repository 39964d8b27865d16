"""End to end: the post-receive hook asks the server that runs the push to queue its job.

Issue 23: the hook started Python and imported pydantic's settings, procrastinate
and psycopg on every push (~1.3 s on a loaded machine). It now sends git's update
lines to the server (`POST /api/hooks/post-receive`, GLOSSATOR_HOOK_CALLBACK, a
per-server token) and prints its answer; only when the server cannot be asked
does it do the work itself.
"""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from glossator import githooks
from tests.gitserver_support import ServeProcess, commit_all, git
from tests.plugins.corpus import make_small_corpus
from tests.plugins.serve import TOKEN, create_repo

pytestmark = pytest.mark.slow

ZERO = "0" * 40


def test_post_receive_is_done_by_the_server(server: ServeProcess, tmp_path: Path) -> None:
    create_repo(server, "appel")
    bare = tmp_path / "repos" / "appel.git"
    seen = tmp_path / "hook-env.txt"
    # what git gives the post-receive hook: kept, then the real hook runs as installed
    hook = bare / "hooks" / "post-receive"
    installed = hook.read_text()
    hook.write_text(installed.replace("exec ", f"env > {seen}\nexec ", 1))
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
        json={"repository": "appel", "updates": ""},
        headers={"Authorization": "Bearer not-the-token"},
        timeout=30,
    )
    assert refused.status_code == 404
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


def test_pre_receive_is_checked_by_the_server(server: ServeProcess, tmp_path: Path) -> None:
    """pre-receive sends git's update lines and the quarantine to the server, which runs
    hooks.pre_receive on its warm imports (issue 41): the hook's own interpreter loads
    neither pygit2 nor the corpus rules, and the server's verdict is the hook's."""
    import pygit2

    create_repo(server, "verdict")
    bare = tmp_path / "repos" / "verdict.git"
    work = make_small_corpus(tmp_path / "work", 1)
    git("init", "-q", "-b", "main", str(work))
    commit_all(work, "one chapter")
    git("push", "-q", server.url("verdict", token=TOKEN), "main", cwd=work)
    server.wait_idle("verdict")
    seen = tmp_path / "hook-env.txt"
    hook = bare / "hooks" / "pre-receive"
    hook.write_text(hook.read_text().replace("exec ", f"env > {seen}\nexec ", 1))
    git("commit", "-q", "--allow-empty", "-m", "again", cwd=work)
    git("pull", "-q", "--rebase", server.url("verdict"), "main", cwd=work)
    git("push", "-q", server.url("verdict", token=TOKEN), "main", cwd=work)
    env = dict(line.split("=", 1) for line in seen.read_text().splitlines() if "=" in line)
    # a commit whose chapter has broken frontmatter, in the repository but on no branch
    repo = pygit2.Repository(str(bare))
    tip = repo.references["refs/heads/main"].peel(pygit2.Commit)
    path = next(p for p in git("ls-files", cwd=work).stdout.split() if p.endswith("source.md"))
    builder = pygit2.IndexEntry(path, repo.create_blob(b"---\ntitle: [\n---\n\nTexte.\n"), 0o100644)
    index = pygit2.Index()
    index.read_tree(tip.tree)
    index.add(builder)
    sig = pygit2.Signature("t", "t@example.org")
    bad = repo.create_commit(None, sig, sig, "bad", index.write_tree(repo), [tip.id])
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

    update = f"{tip.id} {bad} refs/heads/main\n"
    refused = run(update, hook_env)
    assert refused["status"] == 1 and refused["heavy"] == [], refused
    assert f"glossator: {path}:" in str(refused["out"]) and "push refused" in str(refused["out"])
    good = run(f"{ZERO} {tip.id} refs/heads/copy\n", hook_env)
    assert good == {"status": 0, "out": "", "heavy": []}
    # without the server (a push by file:// or ssh): the same verdict, checked here
    alone = run(update, {"GIT_DIR": str(bare)})
    assert alone["status"] == 1 and alone["out"] == refused["out"]
    assert "pygit2" in alone["heavy"]  # type: ignore[operator]
    # a quarantine outside the repository is not this push's: refused by the server
    outside = httpx.post(
        server.base + githooks.PRE_RECEIVE_PATH,
        json={"repository": "verdict", "updates": update, "quarantine": str(tmp_path)},
        headers={"Authorization": f"Bearer {env[githooks.HOOK_TOKEN]}"},
        timeout=30,
    )
    assert outside.status_code == 400
