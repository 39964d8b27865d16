"""The README's "keep a server running" block, run as a newcomer pastes it (issue 39).

The block is read from README.md and its lines are run one by one in one `bash`, in a
folder standing for a fresh clone (its `.venv` is this checkout's), with a data
directory, a home and a port of the test's own. Two things are replaced, and nothing
else: the book (the full *Frankenstein* takes minutes to embed; its first five
chapters, tests/fixtures/readme/, are the same shape) and the port 8080 (a free one,
also given as GLOSSATOR_PORT, so that the same `glossator serve` line listens there).
Every line must exit 0, and print what its comment shows after `→` (`…` stands for
what varies).
"""

from __future__ import annotations

import os
import queue
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
EXCERPT = ROOT / "tests" / "fixtures" / "readme" / "frankenstein-excerpt.txt"
BOOK = "tests/fixtures/gutenberg/pg84.txt"
ADDRESS = "127.0.0.1:8080"
DONE = "__README_LINE_DONE__"
# a line's command, then its comment: two spaces or more, `#`, a space
COMMENT = re.compile(r"\s{2,}#\s")


def server_block(readme: str) -> list[str]:
    """The lines of the fenced block after "To keep a server running"."""
    section = readme.split("To keep a server running", 1)[1]
    block = section.split("```sh\n", 1)[1].split("\n```", 1)[0]
    return block.splitlines()


def steps(lines: list[str]) -> list[tuple[str, list[str]]]:
    """(command, the fragments its comment promises after `→`) for each line that runs."""
    out = []
    for line in lines:
        if not line.strip() or line.lstrip().startswith("#"):
            continue  # a comment going on from the line above
        command, *comment_part = COMMENT.split(line, 1)
        comment = comment_part[0] if comment_part else ""
        expected = comment.split("→", 1)[1].strip() if "→" in comment else ""
        fragments = [f.strip() for f in expected.split("…") if f.strip()]
        out.append((command.strip(), fragments))
    return out


def promised(output: str, fragments: list[str]) -> bool:
    """Whether `output` holds the fragments in their order."""
    at = 0
    for fragment in fragments:
        at = output.find(fragment, at)
        if at < 0:
            return False
        at += len(fragment)
    return True


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Shell:
    """One `bash` fed line by line; each line's output (stdout and stderr) and exit code."""

    def __init__(self, cwd: Path, env: dict[str, str]) -> None:
        self.proc = subprocess.Popen(
            ["bash", "--noprofile", "--norc"],
            cwd=cwd,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )
        self.lines: queue.Queue[str] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line)

    def run(self, command: str, timeout: float) -> tuple[int, str]:
        assert self.proc.stdin is not None
        # stdin of the line is not the script: a command that asks gets no answer
        self.proc.stdin.write(f"{command} </dev/null\n__rc=$?; echo; echo {DONE} $__rc\n")
        self.proc.stdin.flush()
        out: list[str] = []
        deadline = time.monotonic() + timeout
        while True:
            try:
                line = self.lines.get(timeout=max(0.1, deadline - time.monotonic()))
            except queue.Empty:
                raise AssertionError(
                    f"{command!r} did not end in {timeout:.0f} s:\n{''.join(out)}"
                ) from None
            if line.startswith(DONE):
                return int(line.split()[1]), "".join(out)
            out.append(line)

    def close(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            self.proc.wait(timeout=60)
        for pipe in (self.proc.stdin, self.proc.stdout):
            if pipe is not None:
                pipe.close()


def test_the_readme_block_is_a_list_of_steps_with_their_outputs() -> None:
    lines = server_block(README.read_text("utf-8"))
    commands = [c for c, _ in steps(lines)]
    assert any(c.startswith("glossator serve") for c in commands)
    assert not any(".venv/bin/glossator" in c for c in commands[1:])  # on PATH after line 1
    assert sum(bool(f) for _, f in steps(lines)) >= 8  # most steps show what they print
    assert BOOK in "\n".join(lines) and ADDRESS in "\n".join(lines)


@pytest.mark.slow
def test_the_readme_server_block_runs_as_written(tmp_path: Path, private_dir: Path) -> None:
    clone = tmp_path / "clone"
    clone.mkdir()
    (clone / ".venv").symlink_to(Path(sys.prefix), target_is_directory=True)
    home = tmp_path / "home"
    home.mkdir()
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GLOSSATOR_", "GIT_"))}
    env.update(
        HOME=str(home),
        XDG_CONFIG_HOME=str(home / ".config"),
        # its embedded PostgreSQL outside pytest's tmp root, which a concurrent session may
        # reset to 0700 (the server runs as its own user when the tests run as root)
        GLOSSATOR_DATA_DIR=str(private_dir / "data"),
        GLOSSATOR_PORT=str(port),
        GIT_TERMINAL_PROMPT="0",
    )
    text = "\n".join(server_block(README.read_text("utf-8")))
    text = text.replace(BOOK, str(EXCERPT)).replace(ADDRESS, f"127.0.0.1:{port}")
    shell = Shell(clone, env)
    transcript: list[str] = []
    try:
        for command, fragments in steps(text.splitlines()):
            timeout = 900 if "status --follow" in command else 300
            code, output = shell.run(command, timeout)
            transcript.append(f"$ {command}\n{output}")
            said = "\n".join(transcript)[-6000:]
            assert code == 0, f"exit {code}\n{said}"
            assert promised(output, fragments), f"expected {fragments}\n{said}"
        assert (tmp_path / "mybook" / ".git").is_dir()  # the book's own repository, beside
        assert not (clone / "mybook").exists()
        server = _server_pid(private_dir / "data")
        deadline = time.monotonic() + 60
        while server is not None and _alive(server) and time.monotonic() < deadline:
            time.sleep(0.2)  # `kill %1` stopped it: it shuts down
        assert server is None or not _alive(server)
    finally:
        pid = _server_pid(private_dir / "data")
        if pid is not None and _alive(pid):
            os.kill(pid, signal.SIGTERM)
        shell.close()


def _server_pid(data: Path) -> int | None:
    import json

    try:
        return int(json.loads((data / "server.json").read_text("utf-8"))["pid"])
    except (OSError, ValueError, KeyError):
        return None


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_an_import_inside_another_repository_is_a_repository_of_its_own(tmp_path: Path) -> None:
    outer = tmp_path / "outer"
    subprocess.run(["git", "init", "-q", str(outer)], check=True)
    glossator = Path(sys.executable).with_name("glossator")
    done = subprocess.run(
        [str(glossator), "corpus", "import", str(EXCERPT), "mybook"],
        cwd=outer,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert f"(inside the git repository {outer.resolve()}, which does not track it)" in done.stdout
    top = subprocess.run(
        ["git", "rev-parse", "--show-toplevel"],
        cwd=outer / "mybook",
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    assert Path(top) == (outer / "mybook").resolve()
    log = subprocess.run(
        ["git", "log", "--format=%s"], cwd=outer / "mybook", capture_output=True, text=True
    )
    assert log.stdout.startswith("Import Frankenstein")
    # imported again into the same folder: the book's repository already, the user commits
    again = subprocess.run(
        [str(glossator), "corpus", "import", str(EXCERPT), ".", "--force"],
        cwd=outer / "mybook",
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert again.returncode == 0, again.stderr
    assert "is a git repository already: commit the import there yourself" in again.stdout
