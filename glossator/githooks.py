"""The entry points git runs as a repository's hooks: `python -P -m glossator.githooks HOOK`.

gitserver.repos installs the hook scripts that exec this; git runs them with the
environment the server gave `git http-backend` plus git's own (GIT_DIR, and for
pre-receive GIT_QUARANTINE_PATH). That environment is read here, in the composition
root, and `hooks.pre_receive` / `hooks.post_receive` get plain values.

This runs on every push, before git answers the client, so it imports only what
the hook needs (pydantic's settings and procrastinate cost ~1.3 s of a push on a
loaded machine; `python -X importtime -m glossator.githooks post-receive`
shows what is left). No settings object: the server hands the hooks the few
values they need as variables (glossator.supervision.lifespan.hook_environment).

post-receive asks the server that runs the push to queue its jobs
(`POST /api/hooks/post-receive`, with the per-server hook token and the address
the server gave in GLOSSATOR_HOOK_CALLBACK): the server does what
`hooks.post_receive.main` does, on its own warm imports, and sends back the lines
to print, so the hook itself needs the standard library only. Without that
address (a push by file:// or ssh) or when the server cannot be reached, the hook
does the same work itself, straight into the database.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Mapping, Sequence
from typing import TextIO

# Variables of the hook environment. glossator.settings is not imported (it loads
# pydantic); tests/test_hooks_queue.py checks DATABASE_URL is the setting's name.
DATABASE_URL = "GLOSSATOR_DATABASE_URL"
HOOK_URL = "GLOSSATOR_HOOK_URL"  # gitserver.app.HOOK_URL (importing it loads starlette)
HOOK_CALLBACK = "GLOSSATOR_HOOK_CALLBACK"  # gitserver.app.HOOK_CALLBACK
HOOK_TOKEN = "GLOSSATOR_HOOK_TOKEN"  # gitserver.app.HOOK_TOKEN
CALLBACK_PATH = "/api/hooks/post-receive"  # gitserver.app.CALLBACK_PATH
# The server answers once the jobs are queued (a few database statements); generous,
# because git holds the pusher until this hook ends.
CALLBACK_TIMEOUT_S = 60.0


def post_receive(
    stdin: TextIO = sys.stdin, out: TextIO = sys.stdout, environ: Mapping[str, str] | None = None
) -> int:
    env = os.environ if environ is None else environ
    git_dir = env.get("GIT_DIR", ".")
    updates = stdin.read()
    answer = _ask_server(env, git_dir, updates)
    if answer is not None:
        out.write(answer)
        out.flush()
        return 0
    return _post_receive_here(env, git_dir, updates, out)


def _ask_server(env: Mapping[str, str], git_dir: str, updates: str) -> str | None:
    """The lines the server printed for this push, or None when it cannot be asked."""
    callback, token = env.get(HOOK_CALLBACK, ""), env.get(HOOK_TOKEN, "")
    if not callback.startswith("http://") or not token:
        return None
    import http.client

    host, _, port = callback[len("http://") :].rstrip("/").rpartition(":")
    body = json.dumps(
        {"repository": _repository_name(git_dir), "updates": updates, "url": env.get(HOOK_URL, "")}
    )
    try:
        conn = http.client.HTTPConnection(host.strip("[]"), int(port), timeout=CALLBACK_TIMEOUT_S)
        try:
            conn.request(
                "POST",
                CALLBACK_PATH,
                body=body.encode(),
                headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
            )
            response = conn.getresponse()
            data = response.read()
        finally:
            conn.close()
    except TimeoutError:
        return (
            "glossator: the server did not confirm the indexing within "
            f"{CALLBACK_TIMEOUT_S:.0f} s; it queues any branch left behind by itself within 5 minutes\n"
        )
    except (OSError, ValueError, http.client.HTTPException):
        return None  # not reachable from here: do the work ourselves
    if response.status != 200:
        return None
    try:
        return str(json.loads(data)["output"])
    except (ValueError, KeyError, TypeError):
        return None


def _repository_name(git_dir: str) -> str:
    # hooks.post_receive.repository_name, without importing it (it loads psycopg)
    path = os.path.basename(os.path.realpath(git_dir))
    return path[: -len(".git")] if path.endswith(".git") else path


def _post_receive_here(env: Mapping[str, str], git_dir: str, updates: str, out: TextIO) -> int:
    import io

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
    from hooks import pre_receive as hook

    env = os.environ if environ is None else environ
    return hook.main(env.get("GIT_DIR", "."), env.get("GIT_QUARANTINE_PATH"), stdin, out)


HOOKS = {"pre-receive": pre_receive, "post-receive": post_receive}


def main(argv: Sequence[str] = sys.argv) -> int:
    if len(argv) != 2 or argv[1] not in HOOKS:
        print(f"usage: python -m glossator.githooks {{{','.join(HOOKS)}}}", file=sys.stderr)
        return 2
    return HOOKS[argv[1]]()


if __name__ == "__main__":
    sys.exit(main())
