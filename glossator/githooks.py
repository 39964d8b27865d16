"""The hooks' entry point in Python: `python -E -P -S …/githooks.py HOOK`.

gitserver.repos installs the hook scripts. Where bash is, they are bash
(glossator/githooks.bash) and ask the server themselves, handing the work to this
file only when the server cannot answer; elsewhere they exec this file. git runs
them with the environment the server gave `git http-backend` plus git's own
(GIT_DIR, and for pre-receive GIT_QUARANTINE_PATH). That environment is read here,
in the composition root, and `hooks.pre_receive` / `hooks.post_receive` get plain
values.

A hook runs twice on every push, before git answers the client, so this
interpreter starts without `site` and isolated from the environment and the
current directory (`-E -P -S`; `-I` would also refuse the user's site-packages to a
hook that does the work itself, below): no site-packages, no `.pth` file (the
editable install's finder alone loaded pathlib, re and importlib.util, ~60 ms of
each hook's start on a loaded machine), and only the standard library's os, sys
and socket are imported (`python -X importtime -E -P -S glossator/githooks.py`
shows them; bench/git.py times it). No settings object: the server hands the hooks
the few values they need as variables (glossator.supervision.lifespan.hook_environment).

Both hooks ask the server that runs the push to do their work (`POST
/api/hooks/pre-receive`: the checks of hooks.pre_receive, on the push's quarantined
objects; `POST /api/hooks/post-receive`: queue its jobs, hooks.post_receive), with
the per-server hook token and the address the server gave in
GLOSSATOR_HOOK_CALLBACK: the server does it on its own warm imports and sends back
the lines to print and the hook's exit status. Without that address (a push by
file:// or ssh) or when the server cannot be reached, the hook does the same work
itself, once `site` has put the installed packages on its path (pre-receive also
when the server does not answer in time: a push is never accepted unchecked).

The request and its answer are plain text, so that the hook git runs can be bash
(glossator/githooks.bash, installed where bash is; this file is its fallback and
the hook where there is none): the request's body is the repository's name, a line
(pre-receive: the quarantine's path; post-receive: the server's URL), then git's
update lines as git gave them; the answer's is the hook's exit status on a line,
then the lines to print, each ending with a newline.
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False  # typing is not imported at run time: a hook imports what it uses
if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
    from typing import TextIO

# Variables of the hook environment. glossator.settings is not imported (it loads
# pydantic); tests/test_hooks_queue.py checks DATABASE_URL is the setting's name.
DATABASE_URL = "GLOSSATOR_DATABASE_URL"
HOOK_URL = "GLOSSATOR_HOOK_URL"  # gitserver.app.HOOK_URL (importing it loads starlette)
HOOK_CALLBACK = "GLOSSATOR_HOOK_CALLBACK"  # gitserver.app.HOOK_CALLBACK
HOOK_TOKEN = "GLOSSATOR_HOOK_TOKEN"  # gitserver.app.HOOK_TOKEN
CALLBACK_PATH = "/api/hooks/post-receive"  # gitserver.app.CALLBACK_PATH
PRE_RECEIVE_PATH = "/api/hooks/pre-receive"  # gitserver.app.PRE_RECEIVE_PATH
# The server answers once the jobs are queued (a few database statements); generous,
# because git holds the pusher until this hook ends.
CALLBACK_TIMEOUT_S = 60.0


def post_receive(
    stdin: TextIO = sys.stdin, out: TextIO = sys.stdout, environ: Mapping[str, str] | None = None
) -> int:
    env = os.environ if environ is None else environ
    git_dir = env.get("GIT_DIR", ".")
    updates = stdin.read()
    try:
        answer = _ask_server(env, CALLBACK_PATH, git_dir, env.get(HOOK_URL, ""), updates)
    except TimeoutError:
        answer = (
            0,
            (
                "glossator: the server did not confirm the indexing within "
                f"{CALLBACK_TIMEOUT_S:.0f} s; it queues any branch left behind by itself within 5 minutes\n"
            ),
        )
    if answer is not None:
        out.write(answer[1])
        out.flush()
        return 0
    return _post_receive_here(env, git_dir, updates, out)


def _ask_server(
    env: Mapping[str, str], path: str, git_dir: str, line: str, updates: str
) -> tuple[int, str] | None:
    """The server's answer for this push's hook (the exit status, the lines to print),
    or None when it cannot be asked (no callback in the environment, not reachable, an
    error): the hook then works here. TimeoutError when the server took over
    CALLBACK_TIMEOUT_S. `line`: the request's second line (module doc)."""
    callback, token = env.get(HOOK_CALLBACK, ""), env.get(HOOK_TOKEN, "")
    if not callback.startswith("http://") or not token or "\n" in line:
        return None
    host, _, port = callback[len("http://") :].rstrip("/").rpartition(":")
    body = f"{_repository_name(git_dir)}\n{line}\n{updates}"
    try:
        status, data = _post(host.strip("[]"), int(port), path, body, token)
    except TimeoutError:
        raise
    except (OSError, ValueError, IndexError):
        return None  # not reachable from here: do the work ourselves
    if status != 200:
        return None
    code, newline, output = data.decode("utf-8", "replace").partition("\n")
    if not newline or not code.isdigit():
        return None
    return int(code), output


def _post(host: str, port: int, path: str, body: str, token: str) -> tuple[int, bytes]:
    """One HTTP/1.1 POST on a socket of its own, answered with `Connection: close`:
    (status, body). Not http.client, which loads the email package and ssl (~20 ms of
    every hook's start, for a request to our own server on this machine)."""
    import socket

    data = body.encode()
    authority = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"  # an IPv6 address
    head = (
        f"POST {path} HTTP/1.1\r\nHost: {authority}\r\nAuthorization: Bearer {token}\r\n"
        f"Content-Type: text/plain; charset=utf-8\r\nContent-Length: {len(data)}\r\n"
        "Connection: close\r\n\r\n"
    )
    chunks = []
    with socket.create_connection((host, port), timeout=CALLBACK_TIMEOUT_S) as sock:
        sock.sendall(head.encode() + data)
        while chunk := sock.recv(65536):
            chunks.append(chunk)
    answer = b"".join(chunks)
    header, sep, content = answer.partition(b"\r\n\r\n")
    lines = header.split(b"\r\n")
    if not sep or not lines[0].startswith(b"HTTP/1."):
        raise ValueError("not an HTTP answer")
    fields = dict(line.split(b":", 1) for line in lines[1:] if b":" in line)
    fields = {k.strip().lower(): v.strip() for k, v in fields.items()}
    if fields.get(b"transfer-encoding", b"").lower() == b"chunked":
        content = _unchunk(content)
    return int(lines[0].split()[1]), content


def _unchunk(data: bytes) -> bytes:
    out: list[bytes] = []
    at = 0
    while True:
        end = data.index(b"\r\n", at)
        size = int(data[at:end].split(b";")[0], 16)
        if size == 0:
            return b"".join(out)
        out.append(data[end + 2 : end + 2 + size])
        at = end + 2 + size + 2


def _repository_name(git_dir: str) -> str:
    # hooks.post_receive.repository_name, without importing it (it loads psycopg)
    path = os.path.basename(os.path.realpath(git_dir))
    return path[: -len(".git")] if path.endswith(".git") else path


def _installed_packages() -> None:
    """Put the installed packages on the path: the hook's interpreter started without
    `site` (-S, module docstring) and now does the work itself. Glossator's own
    packages sit beside this one (a checkout run without an install too)."""
    if "site" not in sys.modules:
        import site

        site.main()  # site-packages, the user's too, and their .pth files
    root = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))
    if root not in sys.path:
        sys.path.append(root)


def _post_receive_here(env: Mapping[str, str], git_dir: str, updates: str, out: TextIO) -> int:
    import io

    _installed_packages()
    from hooks import post_receive as hook

    config = hook.PostReceive(
        repository=hook.repository_name(git_dir),
        database_url=env.get(DATABASE_URL) or None,
        server_url=env.get(HOOK_URL, ""),
        git_dir=git_dir,
    )
    return hook.main(config, io.StringIO(updates), out)


def pre_receive(
    stdin: TextIO = sys.stdin, out: TextIO = sys.stderr, environ: Mapping[str, str] | None = None
) -> int:
    env = os.environ if environ is None else environ
    git_dir, quarantine = env.get("GIT_DIR", "."), env.get("GIT_QUARANTINE_PATH")
    updates = stdin.read()
    where = os.path.realpath(quarantine) if quarantine else ""
    try:
        answer = _ask_server(env, PRE_RECEIVE_PATH, git_dir, where, updates)
    except TimeoutError:
        answer = None  # the check is then made here: a push is never accepted unchecked
    if answer is not None:
        out.write(answer[1])
        out.flush()
        return answer[0]
    import io

    _installed_packages()
    from hooks import pre_receive as hook

    return hook.main(git_dir, quarantine, io.StringIO(updates), out)


HOOKS = {"pre-receive": pre_receive, "post-receive": post_receive}


def main(argv: Sequence[str] = sys.argv) -> int:
    if len(argv) != 2 or argv[1] not in HOOKS:
        print(f"usage: python -E -P -S githooks.py {{{','.join(HOOKS)}}}", file=sys.stderr)
        return 2
    return HOOKS[argv[1]]()


if __name__ == "__main__":
    sys.exit(main())
