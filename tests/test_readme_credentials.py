"""The README's way to push without the token in `.git/config` (issue 38): its lines,
as written, against a real server; the token is in neither `.git/config` nor a helper's
store, even with `credential.helper store` in the user's global configuration."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pygit2
import pytest

from core.access import AccessPolicy
from gitserver.app import create_app
from gitserver.repos import RepoStore
from tests.gitserver_support import ServerThread, commit_all, write_files

README = Path(__file__).resolve().parent.parent / "README.md"
TOKEN = "change-me"  # the README's
SERVER = "127.0.0.1:8080"  # the README's address, replaced by the test server's
LINES = (
    "git remote add glossator http://127.0.0.1:8080/mybook.git",
    "git config credential.http://127.0.0.1:8080.helper ''",
    "git config --add credential.http://127.0.0.1:8080.helper "
    """'!f() { test "$1" = get && echo username=me && echo "password=$PUSH_TOKEN"; }; f'""",
)
ONE_COMMAND = (
    "git -c credential.helper= -c credential.helper="
    """'!f() { test "$1" = get && echo username=me && echo "password=$PUSH_TOKEN"; }; f' """
    "push http://127.0.0.1:8080/mybook.git main"
)


def _sh(line: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["sh", "-c", line], cwd=cwd, env=env, capture_output=True, text=True, timeout=120
    )


@pytest.fixture
def home(tmp_path: Path) -> dict[str, str]:
    """A user whose ~/.gitconfig stores every credential in plain text."""
    home = tmp_path / "home"
    home.mkdir()
    (home / ".gitconfig").write_text(
        "[credential]\n\thelper = store\n[user]\n\tname = T\n\temail = t@example.org\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GIT_", "GLOSSATOR_"))}
    env.update(HOME=str(home), GIT_CONFIG_NOSYSTEM="1", GIT_TERMINAL_PROMPT="0")
    return env


def test_the_readme_lines_push_with_the_token_from_the_environment(
    tmp_path: Path, home: dict[str, str]
) -> None:
    readme = README.read_text("utf-8")
    for line in (*LINES, ONE_COMMAND):
        assert line in readme, f"README no longer says: {line}"
    assert "export PUSH_TOKEN=change-me" in readme
    store = RepoStore(tmp_path / "repos", data_dir=tmp_path / "data")
    store.create("mybook")
    app = create_app(store, AccessPolicy.from_tokens(anonymous_read=True, push=(TOKEN,)))
    work = tmp_path / "mybook"
    work.mkdir()
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=work, env=home, check=True)
    write_files(work, {"corpus/o/c/source.md": "---\ntitle: Un\n---\n\nTexte.\n"})
    commit_all(work, "one")
    with ServerThread(app) as server:
        for line in LINES:
            done = _sh(line.replace(SERVER, f"127.0.0.1:{server.port}"), work, home)
            assert done.returncode == 0, done.stderr
        # without the variable: refused, nothing asked on a terminal
        refused = _sh("git push glossator main", work, home)
        assert refused.returncode != 0 and "Authentication failed" in refused.stderr
        pushed = _sh("git push glossator main", work, {**home, "PUSH_TOKEN": TOKEN})
        assert pushed.returncode == 0, pushed.stderr
        # the one-command form, from a clone with no helper of its own
        other = tmp_path / "other"
        subprocess.run(["git", "clone", "-q", str(work), str(other)], env=home, check=True)
        write_files(other, {"corpus/o/d/source.md": "---\ntitle: Deux\n---\n\nTexte.\n"})
        commit_all(other, "two")
        line = ONE_COMMAND.replace(SERVER, f"127.0.0.1:{server.port}")
        once = _sh(line, other, {**home, "PUSH_TOKEN": TOKEN})
        assert once.returncode == 0, once.stderr
        assert TOKEN not in (other / ".git" / "config").read_text()
    assert "main" in {
        r.split("/")[-1] for r in pygit2.Repository(str(store.path("mybook"))).references
    }
    assert TOKEN not in (work / ".git" / "config").read_text()
    assert not (Path(home["HOME"]) / ".git-credentials").exists()
