"""Helpers for the git server tests: a real uvicorn on 127.0.0.1 port 0, the real `git`.

with ServerThread(app) as server:
    git("clone", server.url("corpus", token="t"), dest)
"""

from __future__ import annotations

import os
import subprocess
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import uvicorn

# A git that reads no user or system config and never prompts for a password.
GIT_ENV = {
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_TERMINAL_PROMPT": "0",
    "GIT_ASKPASS": "/bin/false",
    "GIT_AUTHOR_NAME": "Test Author",
    "GIT_AUTHOR_EMAIL": "author@example.org",
    "GIT_COMMITTER_NAME": "Test Author",
    "GIT_COMMITTER_EMAIL": "author@example.org",
}


def wait_for(what: str, check: Callable[[], Any], timeout: float = 600) -> Any:
    """`check()`'s first true value, polled every 0.2 s; TimeoutError naming `what`
    after `timeout` s (a deadline for a condition, generous: never a timer raced).
    Each wait prints how long it took (a failed test's captured output: where the
    time went)."""
    start = time.monotonic()
    deadline = start + timeout
    while True:
        value = check()
        if value:
            print(f"{time.strftime('%H:%M:%S')} {what}: {time.monotonic() - start:.1f} s")
            return value
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what}: not within {timeout:.0f} s")
        time.sleep(0.2)


def git(
    *args: str,
    cwd: Path | str | None = None,
    check: bool = True,
    env: dict[str, str] | None = None,
    timeout: float = 600,  # a bound for a hung git, not a speed: a push runs the hooks
) -> subprocess.CompletedProcess[str]:
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    full_env.update(GIT_ENV)
    full_env.update(env or {})
    result = subprocess.run(
        ["git", *args],
        cwd=cwd,
        env=full_env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    if check and result.returncode != 0:
        raise AssertionError(
            f"git {' '.join(args)} failed ({result.returncode}):\n{result.stdout}\n{result.stderr}"
        )
    return result


def commit_all(work: Path, message: str) -> str:
    git("add", "-A", cwd=work)
    git("commit", "-q", "-m", message, cwd=work)
    return git("rev-parse", "HEAD", cwd=work).stdout.strip()


class ServerThread:
    """uvicorn serving `app` in a thread, on a socket bound to 127.0.0.1 port 0."""

    def __init__(self, app: Any, *, lifespan: str = "auto") -> None:
        from glossator.commands.serve import listening_socket  # the socket `glossator serve` makes

        self.sock = listening_socket("127.0.0.1", 0)
        self.port = self.sock.getsockname()[1]
        config = uvicorn.Config(app, log_level="warning", lifespan=lifespan, access_log=False)
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(
            target=self.server.run, kwargs={"sockets": [self.sock]}, daemon=True
        )

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def url(self, repo: str, *, token: str | None = None, user: str = "git") -> str:
        auth = f"{user}:{token}@" if token else ""
        return f"http://{auth}127.0.0.1:{self.port}/{repo}.git"

    def __enter__(self) -> ServerThread:
        self.thread.start()
        deadline = time.monotonic() + 300  # polled: the lifespan on a loaded machine
        while not self.server.started:
            if not self.thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("uvicorn did not start")
            time.sleep(0.02)
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=30)
        self.sock.close()


def write_files(root: Path, files: dict[str, str | bytes]) -> None:
    for rel, data in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(data, str):
            data = data.encode("utf-8")
        path.write_bytes(data)


def init_work(path: Path, files: dict[str, str | bytes], origin: str | None = None) -> Path:
    """A fresh working repository on branch main with `files` committed."""
    path.mkdir(parents=True, exist_ok=True)
    git("init", "-q", "-b", "main", str(path))
    write_files(path, files)
    commit_all(path, "initial")
    if origin:
        git("remote", "add", "origin", origin, cwd=path)
    return path


def lines(text: str) -> Sequence[str]:
    return [line for line in text.splitlines() if line.strip()]


class ServeProcess:
    """`glossator serve` in a subprocess (so a test can SIGKILL it), port 0, log to a file.

    Its waits are deadlines for a condition, polled, and generous: at load 25 on two
    cores tests ran ten times slower (test_hooks_races took 858 s); a deadline costs
    time only when something is broken."""

    def __init__(
        self, tmp: Path, env: dict[str, str], *, name: str = "serve", args: Sequence[str] = ()
    ) -> None:
        self.tmp = tmp
        self.env = env
        self.args = tuple(args)  # more options of `glossator serve` (--no-worker)
        self.log_path = tmp / f"{name}.log"
        self.proc: subprocess.Popen[bytes] | None = None
        self.port = 0

    def start(self, timeout: float = 300) -> ServeProcess:
        import sys

        env = {k: v for k, v in os.environ.items() if not k.startswith(("GLOSSATOR_", "GIT_"))}
        env.update(self.env)
        log = open(self.log_path, "ab")  # noqa: SIM115 - the child writes it until it ends
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-c",
                "from glossator.cli import main; main()",
                "serve",
                "--port",
                "0",
                *self.args,
            ],
            env=env,
            stdout=log,
            stderr=log,
            cwd=self.tmp,
            start_new_session=True,
        )
        log.close()
        try:
            return self._wait_started(timeout)
        except BaseException:
            # not started in time, or the caller interrupted (a signal, Ctrl-C): its own
            # session keeps it from the terminal's signals, so it would outlive the caller
            self.stop()
            raise

    def _wait_started(self, timeout: float) -> ServeProcess:
        import httpx

        assert self.proc is not None
        deadline = time.monotonic() + timeout
        while True:
            text = self.log_path.read_text(errors="replace")
            if "glossator: listening on http://" in text and not self.port:
                tail = text.split("glossator: listening on http://", 1)[1].split()[0]
                self.port = int(tail.rsplit(":", 1)[1])
            if self.port:
                # uvicorn accepts connections once the lifespan (database, worker) is up
                try:
                    if httpx.get(f"{self.base}/healthz", timeout=60).status_code == 200:
                        return self
                except httpx.TransportError:
                    pass
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"glossator serve did not start:\n{text[-4000:]}")
            time.sleep(0.1)

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def url(self, repo: str, *, token: str | None = None) -> str:
        auth = f"git:{token}@" if token else ""
        return f"http://{auth}127.0.0.1:{self.port}/{repo}.git"

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def kill(self) -> None:
        """SIGKILL, no cleanup: what a crash or an OOM kill does."""
        import signal

        assert self.proc is not None
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(timeout=120)  # reaped at once, unless the host is far past load 30

    def stop(self) -> None:
        import signal

        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=30)

    def create_repo(self, name: str, *, admin: str) -> Any:
        """POST /api/repos with the admin token; the response, for the caller to check."""
        import httpx

        return httpx.post(
            f"{self.base}/api/repos",
            json={"name": name},
            headers={"Authorization": f"Bearer {admin}"},
            timeout=120,
        )

    def jobs(
        self, repository: str | None = None, headers: dict[str, str] | None = None
    ) -> list[dict[str, Any]]:
        import httpx

        params = {"repository": repository} if repository else {}
        r = httpx.get(f"{self.base}/api/jobs", params=params, headers=headers, timeout=120)
        r.raise_for_status()
        return r.json()["jobs"]

    def wait_idle(
        self,
        repository: str,
        *,
        after: int = 0,
        timeout: float = 600,
        headers: dict[str, str] | None = None,
    ) -> list[dict]:
        """Wait until every job of `repository` newer than id `after` is finished; return them."""
        deadline = time.monotonic() + timeout
        while True:
            jobs = [j for j in self.jobs(repository, headers) if j["id"] > after]
            if jobs and all(j["status"] in ("done", "failed", "cancelled") for j in jobs):
                return jobs
            if time.monotonic() > deadline:
                raise TimeoutError(f"jobs still pending: {jobs}\n{self.log()[-3000:]}")
            time.sleep(0.2)


class WorkerProcess:
    """`glossator worker` in a subprocess (so a test can SIGKILL it), log to a file."""

    def __init__(self, tmp: Path, env: dict[str, str], *, name: str = "worker") -> None:
        self.tmp = tmp
        self.env = env
        self.log_path = tmp / f"{name}.log"
        self.proc: subprocess.Popen[bytes] | None = None
        self.name = ""  # `<host>:<pid>`, as glossator_job_runs.worker records it

    def start(self, timeout: float = 300) -> WorkerProcess:
        import sys

        env = {k: v for k, v in os.environ.items() if not k.startswith(("GLOSSATOR_", "GIT_"))}
        env.update(self.env)
        log = open(self.log_path, "ab")  # noqa: SIM115 - the child writes it until it ends
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "glossator", "worker"],
            env=env,
            stdout=log,
            stderr=log,
            cwd=self.tmp,
            start_new_session=True,
        )
        log.close()
        deadline = time.monotonic() + timeout
        while True:
            text = self.log()
            if "glossator: worker " in text:
                line = text.split("glossator: worker ", 1)[1].split("\n", 1)[0]
                if " ready" in line:
                    self.name = line.split()[0]
                    return self
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"glossator worker did not start:\n{text[-4000:]}")
            time.sleep(0.1)

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def kill(self) -> None:
        """SIGKILL, no cleanup: what a crash or an OOM kill does."""
        import signal

        assert self.proc is not None
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(timeout=120)  # reaped at once, unless the host is far past load 30

    def stop(self) -> int | None:
        """SIGTERM and wait; the exit code."""
        import signal

        if self.proc is None:
            return None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=30)
        return self.proc.returncode
