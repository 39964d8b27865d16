"""Smart HTTP through `git http-backend`, a CGI program run as a child of the event loop.

Git itself does the protocol (v0 and v2, pack negotiation, partial clone filters),
the ref updates with their locks and compare-and-swap, and the hooks; this
module only adapts HTTP to CGI and back, streaming both bodies:

- The request body is spooled to an unnamed temporary file, at most the server's
  limit (GLOSSATOR_MAX_PUSH_BYTES): a Content-Length over it is refused before a
  byte is read, a chunked body once it crosses it, nothing of it kept (413) (memory for the first
  MiB, then disk) and given to git as its stdin file descriptor. Git reads the
  whole request before it answers, and Starlette must not start the response
  while the request is still being received (its disconnect listener would eat
  request messages), so spooling first is both required and deadlock-free: git
  never waits on a pipe we are not reading. A 200 MB push costs disk, not RAM,
  and the limit bounds the disk.
- The response is git's stdout: CGI headers (`Status:`, `Content-Type:` …),
  a blank line, then the body, streamed in 64 KiB chunks.
- `Content-Encoding: gzip` request bodies are inflated by git itself
  (HTTP_CONTENT_ENCODING); the `Git-Protocol` header becomes GIT_PROTOCOL.
- `pushed_refs` reads the refs a `git-receive-pack` request updates from its
  first pkt-lines (the server's marker of a push under way, core.receiving), and
  `run(..., on_finish=…)` is called once git's answer is sent (or abandoned).
- The child is started by `subprocess.Popen` (vfork and exec, as asyncio's own
  subprocesses are), its pipes are read on the event loop and its end is awaited on
  a pidfd (`Child`): no thread. asyncio's subprocesses on Python 3.11 start a thread
  per child to wait for it, and the request waited for that thread to start: 0-35 ms
  at load on each of a push's two requests (bench/git.py, git's trace2 beside stamps
  in the route).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import os
import subprocess
import tempfile
import zlib
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from starlette.requests import Request
from starlette.responses import Response, StreamingResponse

from gitserver.errors import BackendError, BadRequest, BodyTooLarge

log = logging.getLogger(__name__)

CHUNK = 64 * 1024
SPOOL_IN_MEMORY = 1024 * 1024
MAX_HEADER_BYTES = 64 * 1024
# What a client may ask of a repository: the smart protocol only. Dumb-HTTP paths
# (HEAD, objects/…, info/packs) are 404: a smart client never asks for them.
SMART_PATHS = frozenset({"info/refs", "git-upload-pack", "git-receive-pack"})
SERVICES = frozenset({"git-upload-pack", "git-receive-pack"})  # info/refs?service=
# `git http-backend` by the `git` program: a process that only starts the next one
GIT_HTTP_BACKEND = ("git", "http-backend")
# Environment the CGI keeps from ours; everything else (tokens, keys) stays out.
_KEEP_ENV = ("PATH", "HOME", "LANG", "LC_ALL", "TMPDIR", "TZ", "SYSTEMROOT", "VIRTUAL_ENV")


@dataclass
class CgiRequest:
    """What `git http-backend` needs to know about one request."""

    project_root: Path
    path_info: str  # "/<name>.git/info/refs"
    method: str
    query: str = ""
    content_type: str | None = None
    content_encoding: str | None = None
    git_protocol: str | None = None
    remote_user: str | None = None
    remote_addr: str | None = None
    extra_env: Mapping[str, str] = field(default_factory=dict)

    def environ(self, content_length: int | None) -> dict[str, str]:
        env = {k: os.environ[k] for k in _KEEP_ENV if k in os.environ}
        env.update(self.extra_env)
        env.update(
            GIT_PROJECT_ROOT=str(self.project_root),
            GIT_HTTP_EXPORT_ALL="1",
            GATEWAY_INTERFACE="CGI/1.1",
            PATH_INFO=self.path_info,
            REQUEST_METHOD=self.method,
            QUERY_STRING=self.query,
            REMOTE_ADDR=self.remote_addr or "127.0.0.1",
        )
        if content_length is not None:
            env["CONTENT_LENGTH"] = str(content_length)
        if self.content_type:
            env["CONTENT_TYPE"] = self.content_type
        if self.content_encoding:
            env["HTTP_CONTENT_ENCODING"] = self.content_encoding
        if self.git_protocol:
            env["GIT_PROTOCOL"] = self.git_protocol
        if self.remote_user:
            env["REMOTE_USER"] = self.remote_user
        return env


def http_backend_command() -> tuple[str, ...]:
    """`git-http-backend` from git's exec path, run as itself: `git http-backend` starts
    the `git` program, which starts this one as its child and waits for it, a process
    more on every request (and two on a push, whose hooks' start it delays). Asked once,
    when the server is built; `git http-backend` where it cannot be found."""
    try:
        found = subprocess.run(
            ["git", "--exec-path"], capture_output=True, text=True, timeout=30, check=True
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return GIT_HTTP_BACKEND
    program = os.path.join(found, "git-http-backend")
    return (program,) if found and os.access(program, os.X_OK) else GIT_HTTP_BACKEND


def too_large(limit: int) -> str:
    """The refusal of a body over `limit` bytes (git shows the 413 as "RPC failed")."""
    return (
        f"glossator: the request body is over this server's limit of {limit:,} bytes "
        "(GLOSSATOR_MAX_PUSH_BYTES): push less at once (a few commits or branches at a time) "
        "or ask its operator to raise it"
    )


async def spool_body(request: Request, limit: int) -> tempfile.SpooledTemporaryFile[bytes]:
    """The whole request body in a spooled temp file, rewound; BodyTooLarge (nothing kept)
    when it is over `limit` bytes: said by Content-Length before anything is read, or
    met while a chunked body streams in, before the chunk that crosses it is written."""
    declared = request.headers.get("content-length")
    if declared is not None:
        try:
            size = int(declared)
        except ValueError:
            raise BadRequest(f"bad Content-Length {declared[:40]!r}") from None
        if size > limit:
            raise BodyTooLarge(too_large(limit))
    spool: tempfile.SpooledTemporaryFile[bytes] = tempfile.SpooledTemporaryFile(  # noqa: SIM115 - returned open, closed by run()
        max_size=SPOOL_IN_MEMORY
    )
    written = 0
    try:
        async for chunk in request.stream():
            if chunk:
                written += len(chunk)
                if written > limit:
                    raise BodyTooLarge(too_large(limit))
                spool.write(chunk)
        spool.flush()
        spool.seek(0)
    except BaseException:
        spool.close()
        raise
    return spool


COMMANDS_HEAD = 64 * 1024  # a push's commands come first: ~100 bytes a ref


def pushed_refs(
    body: tempfile.SpooledTemporaryFile[bytes], encoding: str | None
) -> list[tuple[str, str]] | None:
    """(ref, new commit) of each ref a receive-pack request body updates (its command
    pkt-lines, before the pack), the body left rewound; None when they cannot be read
    (a push certificate, an encoding this does not read, a truncated head): every ref.
    No command at all (an empty list) updates no ref: git's probe before a pack over
    http.postBuffer (1 MiB) is a lone flush-pkt, `0000`, sent to learn whether the
    credentials pass before the pack streams (remote-curl.c, probe_rpc)."""
    head = body.read(COMMANDS_HEAD)
    body.seek(0)
    if encoding:
        if encoding.strip().lower() not in ("gzip", "x-gzip"):
            return None
        try:
            head = zlib.decompressobj(wbits=31).decompress(head, COMMANDS_HEAD)
        except zlib.error:
            return None
    refs: list[tuple[str, str]] = []
    at = 0
    while True:
        try:
            size = int(head[at : at + 4], 16)
        except ValueError:
            return None
        if size == 0:  # flush: the commands end here
            return refs
        if size < 4 or at + size > len(head):
            return None
        line = head[at + 4 : at + size].split(b"\0", 1)[0].rstrip(b"\n").split(b" ")
        if len(line) != 3 or not line[2].startswith(b"refs/"):
            return None  # not a command (`shallow`, `push-cert`): say every ref
        refs.append((line[2].decode("utf-8", "replace"), line[1].decode("ascii", "replace")))
        at += size


class Child:
    """A process whose stdout and stderr are read on the event loop and whose end is
    awaited on a pidfd (module doc): what `asyncio.create_subprocess_exec` gives, with no
    thread to start per process. Where there is no pidfd (not Linux, a kernel before
    5.3), its end is awaited in a thread, as asyncio does."""

    def __init__(
        self,
        popen: subprocess.Popen[bytes],
        stdout: asyncio.StreamReader,
        stderr: asyncio.StreamReader,
        pipes: Sequence[asyncio.BaseTransport],
    ) -> None:
        self.popen = popen
        self.stdout = stdout
        self.stderr = stderr
        self._pipes = pipes

    @property
    def pid(self) -> int:
        return self.popen.pid

    @property
    def returncode(self) -> int | None:
        return self.popen.poll()

    def kill(self) -> None:
        self.popen.kill()

    async def wait(self) -> int:
        """Its exit status, once it has exited (reaped here)."""
        if self.popen.poll() is None:
            await _exited(self.popen)
        return self.popen.wait()

    def close(self) -> None:
        """Let go of its pipes (what is left unread in them is dropped)."""
        for pipe in self._pipes:
            pipe.close()


async def _exited(popen: subprocess.Popen[bytes]) -> None:
    """Return once `popen` has exited (not reaped: Popen.wait does it)."""
    try:
        fd = os.pidfd_open(popen.pid)
    except (AttributeError, OSError):  # no pidfd here, or the process already reaped
        await asyncio.to_thread(popen.wait)
        return
    loop = asyncio.get_running_loop()
    try:
        ended: asyncio.Future[None] = loop.create_future()

        def readable() -> None:
            if not ended.done():
                ended.set_result(None)

        loop.add_reader(fd, readable)
        try:
            if popen.poll() is None:
                await ended
        finally:
            loop.remove_reader(fd)
    finally:
        os.close(fd)


async def spawn(
    program: Sequence[str], stdin: IO[bytes] | int, env: Mapping[str, str], cwd: Path
) -> Child:
    """Start `program` with its stdout and stderr piped to the event loop (Child)."""
    popen = subprocess.Popen(
        list(program),
        stdin=stdin,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=dict(env),
        cwd=str(cwd),
    )
    loop = asyncio.get_running_loop()
    readers: list[asyncio.StreamReader] = []
    pipes: list[asyncio.BaseTransport] = []
    try:
        for pipe in (popen.stdout, popen.stderr):
            reader = asyncio.StreamReader(limit=CHUNK)
            protocol = functools.partial(asyncio.StreamReaderProtocol, reader)
            pipes.append((await loop.connect_read_pipe(protocol, pipe))[0])
            readers.append(reader)
    except BaseException:
        popen.kill()
        for opened in pipes:
            opened.close()
        popen.wait()
        raise
    return Child(popen, readers[0], readers[1], pipes)


async def _read_headers(stdout: asyncio.StreamReader) -> tuple[int, list[tuple[str, str]]]:
    status = 200
    headers: list[tuple[str, str]] = []
    seen = 0
    while True:
        line = await stdout.readline()
        seen += len(line)
        if seen > MAX_HEADER_BYTES:
            raise BackendError("git http-backend sent over 64 KiB of headers")
        if not line:
            raise BackendError("git http-backend ended before its headers were complete")
        text = line.decode("latin-1").rstrip("\r\n")
        if not text:
            return status, headers
        name, sep, value = text.partition(":")
        if not sep:
            raise BackendError(f"git http-backend sent a malformed header line {text[:80]!r}")
        value = value.strip()
        if name.lower() == "status":
            try:
                status = int(value.split()[0])
            except (ValueError, IndexError):
                raise BackendError(f"git http-backend sent a bad status {value!r}") from None
        else:
            headers.append((name, value))


async def _drain_stderr(stream: asyncio.StreamReader, path_info: str) -> None:
    # git's messages name paths and refs, never credentials (it never sees them).
    while line := await stream.readline():
        log.warning("git http-backend %s: %s", path_info, line.decode("utf-8", "replace").rstrip())


async def run(
    cgi: CgiRequest,
    body: tempfile.SpooledTemporaryFile[bytes] | None,
    *,
    on_finish: Callable[[], None] | None = None,
    program: Sequence[str] = GIT_HTTP_BACKEND,
) -> Response:
    """Run `git http-backend` (`program`: http_backend_command) for one request and stream
    its answer; `on_finish` once git has exited (its answer sent, or the client gone),
    also when it fails to start."""
    try:
        return await _run(cgi, body, on_finish, program)
    except BaseException:
        if on_finish is not None:
            on_finish()
        raise


async def _run(
    cgi: CgiRequest,
    body: tempfile.SpooledTemporaryFile[bytes] | None,
    on_finish: Callable[[], None] | None,
    program: Sequence[str],
) -> Response:
    stdin: IO[bytes] | int = subprocess.DEVNULL
    length: int | None = None
    if body is not None:
        body.seek(0, os.SEEK_END)
        length = body.tell()
        body.seek(0)
        # A subprocess needs a real descriptor: move an in-memory spool to disk.
        stdin = body.fileno()
    env = cgi.environ(length)
    try:
        proc = await spawn(program, stdin, env, cgi.project_root)
    except BaseException:
        if body is not None:
            body.close()
        raise
    if body is not None:
        body.close()  # the child holds its own descriptor
    assert proc.stdout is not None and proc.stderr is not None
    stderr_task = asyncio.create_task(_drain_stderr(proc.stderr, cgi.path_info))
    try:
        status, headers = await _read_headers(proc.stdout)
    except BaseException:
        await _finish(proc, stderr_task, kill=True)
        raise
    return StreamingResponse(
        _stream(proc, stderr_task, on_finish), status_code=status, headers=dict(_merge(headers))
    )


def _merge(headers: list[tuple[str, str]]) -> Mapping[str, str]:
    out: dict[str, str] = {}
    for name, value in headers:
        out[name] = f"{out[name]}, {value}" if name in out else value
    return out


async def _stream(
    proc: Child,
    stderr_task: asyncio.Task[None],
    on_finish: Callable[[], None] | None = None,
) -> AsyncIterator[bytes]:
    assert proc.stdout is not None
    complete = False
    try:
        while chunk := await proc.stdout.read(CHUNK):
            yield chunk
        complete = True
    finally:
        try:
            await _finish(proc, stderr_task, kill=not complete)
        finally:
            if on_finish is not None:
                on_finish()


async def _finish(proc: Child, stderr_task: asyncio.Task[None], *, kill: bool = True) -> None:
    """Reap the child; kill it if the client went away before it was done."""
    if kill and proc.returncode is None:
        log.warning("stopping git http-backend (pid %s) before it finished", proc.pid)
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
    try:
        await proc.wait()
        with contextlib.suppress(asyncio.CancelledError):
            await stderr_task
    finally:
        proc.close()
    if proc.returncode:
        log.warning("git http-backend exited with status %s", proc.returncode)
