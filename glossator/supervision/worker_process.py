"""`glossator serve`'s indexing worker as a child process, supervised.

    supervisor = WorkerSupervisor(worker_command(parent), worker_environment(settings, url))
    await supervisor.start()     # spawns `glossator worker --supervised-by <pid>`
    ...
    await supervisor.stop()      # SIGTERM, then SIGKILL after `stop_timeout`

Why a process and not a thread of the server: embedding and summarising are CPU
work in Python and C; in the server's process they competed with searches for the
GIL and the cores (a search took 435-1,788 ms while a book embedded, 43
ms idle). A child process has its own interpreter, and its jobs are niced
(GLOSSATOR_JOB_NICE), so the kernel gives the server's searches the CPU first.

The child is restarted when it dies (1 s, doubling to 60 s; back to 1 s once it
has run a minute), told the dead one's pid (`--replaces`: it puts that process's
job back in the queue at once, hooks.maintenance), stopped with the server, and never outlives it: it asks the
kernel for SIGKILL when its parent dies (Linux) and also exits when its stdin,
a pipe only the server holds, reaches end of file (any platform), so even a
SIGKILLed server leaves no worker behind (glossator.worker.die_with_parent, the child's
side).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import sys
from collections.abc import Sequence
from typing import Any

from pydantic import SecretStr

from core.errors import GlossatorError
from glossator.settings import SETTINGS, Settings

log = logging.getLogger(__name__)

# How long `serve` waits for its first worker to be ready (schema, recovery and the
# start-up reconciliation done) before it answers: a push that arrived during that
# reconciliation got a second, redundant job. Generous: a loaded machine, a model
# to load; past it the server serves anyway and says so.
READY_TIMEOUT_S = 180.0
RESTART_MIN_S = 1.0
RESTART_MAX_S = 60.0
HEALTHY_S = 60.0  # a child that ran this long before dying restarts at once again
STOP_TIMEOUT_S = 30.0  # > the child's own grace for its running job (glossator.worker.STOP_GRACE_S)


def _render(value: Any) -> str | None:
    """A setting's value as its variable would say it (secrets revealed: the child
    needs the API keys; an environment is not a log)."""
    if value is None:
        return None
    if isinstance(value, SecretStr):
        return value.get_secret_value()
    if isinstance(value, tuple):
        return ",".join(_render(v) or "" for v in value)
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def worker_environment(
    settings: Settings, database_url: str, *, log_level: str | None = None
) -> dict[str, str]:
    """The child's environment: ours without GLOSSATOR_*, plus every setting the server
    runs with (so a setting given as an override reaches the worker too), the
    database the server started or checked, and absolute directories. `log_level`:
    the server's own (`serve -v` logs the worker's DEBUG/INFO lines too)."""
    ours = {s.variable for s in SETTINGS}
    env = {k: v for k, v in os.environ.items() if k not in ours and not k.startswith("GLOSSATOR_")}
    for s in SETTINGS:
        shown = _render(getattr(settings, s.name))
        if shown is not None:
            env[s.variable] = shown
    env["GLOSSATOR_DATABASE_URL"] = database_url
    env["GLOSSATOR_DATA_DIR"] = str(settings.data_dir.expanduser().resolve())
    env["GLOSSATOR_REPOS_DIR"] = str(settings.repos_dir.expanduser().resolve())
    if log_level:
        env["GLOSSATOR_LOG_LEVEL"] = log_level
    return env


def worker_command(parent: int, *, sole_worker: bool) -> list[str]:
    """`glossator worker` run by this interpreter (a virtualenv's, a container's)."""
    argv = [sys.executable, "-m", "glossator", "worker", "--supervised-by", str(parent)]
    return [*argv, "--sole-worker"] if sole_worker else argv


class WorkerSupervisor:
    def __init__(
        self,
        argv: Sequence[str],
        env: dict[str, str],
        *,
        stop_timeout: float = STOP_TIMEOUT_S,
    ) -> None:
        self.argv = list(argv)
        self.env = env
        self.stop_timeout = stop_timeout
        self.proc: asyncio.subprocess.Process | None = None
        self.starts = 0  # children started so far (status, tests)
        self.ready = asyncio.Event()  # set when a child said it is ready
        self._stopping = False
        self._ready_task: asyncio.Task[None] | None = None
        self._task: asyncio.Task[None] | None = None
        # the last child's pid once it died: its successor puts its jobs back at once
        # (`glossator worker --replaces`, hooks.maintenance), not after STALLED_S
        self._dead: int | None = None

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc is not None and self.proc.returncode is None else None

    async def start(self, *, ready_timeout: float = READY_TIMEOUT_S) -> None:
        """Start the first child and wait until it is ready; GlossatorError when it
        exits before (a bad setting: its own error line is above in the log)."""
        self._task = asyncio.create_task(self._supervise(), name="glossator-worker-supervisor")
        ready = asyncio.create_task(self.ready.wait())
        done, _ = await asyncio.wait(
            {ready, self._task}, timeout=ready_timeout, return_when="FIRST_COMPLETED"
        )
        if ready in done:
            return
        ready.cancel()
        if self._task in done:  # the first child exited before it was ready
            await self.stop()
            raise GlossatorError(
                "the indexing worker (`glossator worker`) could not start: its error is"
                " above; fix it, or run `glossator serve --no-worker`"
            )
        log.warning("the indexing worker is not ready after %.0f s; serving anyway", ready_timeout)

    async def _spawn(self) -> asyncio.subprocess.Process:
        # stdin: a pipe we never write; its end of file tells the child we are gone.
        # Its own session: a terminal's Ctrl-C reaches the server, which stops the
        # child itself, in order. `--ready-fd`: a pipe the child writes once ready.
        read_end, write_end = os.pipe()
        try:
            replaces = () if self._dead is None else ("--replaces", str(self._dead))
            proc = await asyncio.create_subprocess_exec(
                *self.argv,
                *replaces,
                "--ready-fd",
                str(write_end),
                env=self.env,
                stdin=asyncio.subprocess.PIPE,
                start_new_session=True,
                pass_fds=(write_end,),
            )
        except BaseException:
            os.close(read_end)
            raise
        finally:
            os.close(write_end)
        self._ready_task = asyncio.create_task(self._wait_ready(read_end))
        return proc

    async def _wait_ready(self, read_end: int) -> None:
        try:
            # b"" when the child exits first (its copy of the write end closes)
            said = await asyncio.to_thread(os.read, read_end, 64)
        finally:
            os.close(read_end)
        if said.startswith(b"ready"):
            self.ready.set()

    async def _supervise(self) -> None:
        loop = asyncio.get_running_loop()
        delay = RESTART_MIN_S
        while not self._stopping:
            started = loop.time()
            try:
                self.proc = await self._spawn()
            except OSError as e:
                log.error("cannot start the indexing worker: %s", e)
                code: int | str = f"not started ({e.strerror})"
            else:
                self.starts += 1
                log.info("indexing worker started (pid %s)", self.proc.pid)
                code = await self.proc.wait()
                self._dead = self.proc.pid
            if self._stopping:
                return
            if self._ready_task is not None:
                await self._ready_task  # done: the child's end of the pipe is closed
            if not self.ready.is_set():
                return  # the first child never got ready: start() says so
            if loop.time() - started >= HEALTHY_S:
                delay = RESTART_MIN_S
            log.warning(
                "indexing worker (pid %s) exited (%s); restarting it in %.0f s",
                self.proc.pid if self.proc else "-",
                _exit_reason(code),
                delay,
            )
            await asyncio.sleep(delay)
            delay = min(delay * 2, RESTART_MAX_S)

    async def stop(self) -> None:
        """SIGTERM (the child finishes or abandons its job, see glossator.worker.STOP_GRACE_S),
        then SIGKILL if it is still there after `stop_timeout`."""
        self._stopping = True
        proc = self.proc
        if proc is not None and proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                proc.send_signal(signal.SIGTERM)
            try:
                await asyncio.wait_for(proc.wait(), self.stop_timeout)
            except TimeoutError:
                log.warning("indexing worker (pid %s) did not stop: killed", proc.pid)
                with contextlib.suppress(ProcessLookupError):
                    proc.kill()
                await proc.wait()
        if proc is not None and proc.stdin is not None:
            proc.stdin.close()
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None


def _exit_reason(code: int | str) -> str:
    if isinstance(code, int) and code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit code {code}" if isinstance(code, int) else code
