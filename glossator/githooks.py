"""The entry points git runs as a repository's hooks: `python -P -m glossator.githooks HOOK`.

gitserver.repos installs the hook scripts that exec this; git runs them with the
environment the server gave `git http-backend` plus git's own (GIT_DIR, and for
pre-receive GIT_QUARANTINE_PATH). That environment is read here, in the composition
root, and `hooks.pre_receive` / `hooks.post_receive` get plain values.

Imports stay light (no pygit2 for post-receive, no starlette): this runs on every push.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence
from typing import TextIO

from glossator.settings import SETTINGS, Settings, reveal

HOOK_URL = "GLOSSATOR_HOOK_URL"  # gitserver.app.HOOK_URL, not imported: it loads starlette


def hook_settings(environ: Mapping[str, str]) -> Settings:
    """Settings from the hook's environment, keeping only real settings' variables
    (git and the server add others, which the settings would refuse as unknown)."""
    known = {s.variable for s in SETTINGS}
    return Settings.from_env({k: v for k, v in environ.items() if k in known})


def post_receive(
    stdin: TextIO = sys.stdin, out: TextIO = sys.stdout, environ: Mapping[str, str] | None = None
) -> int:
    from hooks import post_receive as hook

    env = os.environ if environ is None else environ
    repository = hook.repository_name(env.get("GIT_DIR", "."))
    try:
        url = reveal(hook_settings(env).database_url)
    except Exception as e:  # a bad environment must not look like a failed push
        print(f"glossator: indexing not queued: {e}", file=out)
        return 0
    config = hook.PostReceive(
        repository=repository, database_url=url, server_url=env.get(HOOK_URL, "")
    )
    return hook.main(config, stdin, out)


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
