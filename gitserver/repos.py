"""The repository store: bare repositories under one directory (GLOSSATOR_REPOS_DIR), one per corpus.

A repository named `bastiat` lives in `<repos_dir>/bastiat.git`. Names are
checked against one pattern before any path is built from them, and the
resolved path must sit directly inside the store, so no name (`..`, `/`, a
symlink planted in the store) reaches outside it (dulwich's backend habit).

`create` configures each repository for smart HTTP and for Glossator, and
installs the two hooks that call back into Glossator: git runs them as its own
child processes, with the environment the server gave `git http-backend` (database
URL, data dir, the server's callback), so they need no secret on disk. A hook's
start is part of every push, so where bash is the hooks are bash scripts
(`glossator/githooks.bash`) that ask the server to run `hooks.pre_receive` /
`hooks.post_receive` and start no Python; they, and the hooks where there is no
bash, `exec` this interpreter without `site` (`-E -P -S`) on the file of
`glossator.githooks` (the composition root's entry point) when the work must be
done in the hook (no server to ask).
"""

from __future__ import annotations

import importlib.util
import logging
import os
import re
import shlex
import shutil
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pygit2

from core import receiving
from core.vocabulary import DEFAULT_BRANCH, head_for
from gitserver.errors import (
    PushUnderWay,
    RepositoryExists,
    RepositoryNameError,
    RepositoryNotFound,
)

log = logging.getLogger(__name__)

NAME = re.compile(r"^[a-z0-9][a-z0-9._-]{0,63}$")
SUFFIX = ".git"

# Why each key (git-config(1) names):
CONFIG: dict[str, str | bool] = {
    # Pushes over HTTP are allowed by git only for authenticated users (REMOTE_USER);
    # Glossator authenticates itself before git runs, so git may accept them.
    "http.receivepack": True,
    # Partial clone (`--filter=blob:none`) and the lazy fetches of missing blobs after it.
    "uploadpack.allowFilter": True,
    "uploadpack.allowAnySHA1InWant": True,
    # Wait for a ref lock instead of failing at once: the worker's commit-back and a
    # user's push may touch the same branch within milliseconds (milliseconds here).
    "core.filesRefLockTimeout": "10000",
    "core.packedRefsTimeout": "10000",
    # Check pushed objects: a corrupt push is refused rather than stored.
    "receive.fsckObjects": True,
    # Force pushes stay allowed (git's default): the worker diffs against the tree of the
    # last indexed commit, ancestor or not, so a rewritten branch is indexed correctly.
    "receive.denyNonFastForwards": False,
    # No background gc racing the worker's object writes; `git gc` is an admin's job.
    "gc.auto": "0",
    # Nor the `git gc --auto` receive-pack starts after every push to find gc.auto off:
    # one process less on every push.
    "receive.autogc": False,
}

HOOKS = ("pre-receive", "post-receive")
PUSH_POLL_S = 0.1  # between looks at the pushes a delete waits for
# What the hook scripts run: named, not imported (the composition root is above this layer).
HOOK_PACKAGE, HOOK_FILE, HOOK_SHELL_FILE = "glossator", "githooks.py", "githooks.bash"


def hook_entry() -> Path:
    """The file of the hooks' entry point (glossator.githooks), found by name: its
    package is looked up, not imported."""
    spec = importlib.util.find_spec(HOOK_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError(f"the {HOOK_PACKAGE} package is not installed: no hook to install")
    return Path(next(iter(spec.submodule_search_locations))) / HOOK_FILE


def check_name(name: str) -> str:
    """Return `name` if it is a valid repository name, else raise RepositoryNameError."""
    if not isinstance(name, str) or not NAME.match(name) or ".." in name:
        raise RepositoryNameError(
            f"invalid repository name {name!r}: use 1 to 64 lowercase letters, digits, "
            "'.', '_' or '-', starting with a letter or digit (no '..')"
        )
    if name.endswith(SUFFIX):
        raise RepositoryNameError(
            f"invalid repository name {name!r}: drop the {SUFFIX} suffix, it is added for you"
        )
    return name


def hook_script(hook: str, *, data_dir: Path, repos_dir: Path, bash: str | None) -> str:
    """The script installed as `hook`: defaults for the non-secret settings, then the
    bash hook (githooks.bash) given bash's path, else (None) an exec of the Python
    entry point."""
    entry = hook_entry()
    shell = entry.with_name(HOOK_SHELL_FILE)
    head = (
        f"# Installed by Glossator (gitserver.repos): runs its {hook} hook for this repository.\n"
        "# The server passes the database URL in the environment; defaults below let a\n"
        "# push made by other means (ssh, file://) still find the data directory.\n"
        f': "${{GLOSSATOR_DATA_DIR:={shlex.quote(str(data_dir))}}}"\n'
        f': "${{GLOSSATOR_REPOS_DIR:={shlex.quote(str(repos_dir))}}}"\n'
        "export GLOSSATOR_DATA_DIR GLOSSATOR_REPOS_DIR\n"
    )
    # -E: no PYTHON* variable; -P: nothing imported from the current directory (git
    # runs hooks inside the repository); -S: no site-packages, no .pth file (the entry
    # point needs the standard library only, until it works without the server)
    python = f"{shlex.quote(sys.executable)} -E -P -S {shlex.quote(str(entry))} {hook}"
    if not bash or not shell.is_file() or any(c.isspace() for c in bash):
        return f"#!/bin/sh\n{head}exec {python}\n"
    return (
        f"#!{bash}\n{head}"
        f"hook={hook}\npython={shlex.quote(sys.executable)}\nentry={shlex.quote(str(entry))}\n"
        # the line the Python hook would run (tests and readers look for it)
        f"# without a server: {python}\n\n{shell.read_text()}"
    )


class RepoStore:
    """Bare repositories under one directory."""

    def __init__(self, root: Path, *, data_dir: Path) -> None:
        self.root = root.expanduser().resolve()
        self.data_dir = data_dir.expanduser().resolve()

    def path(self, name: str) -> Path:
        """Where repository `name` lives (whether it exists or not); never outside root."""
        full = self.root / (check_name(name) + SUFFIX)
        if full.parent != self.root:  # belt and braces: the pattern already forbids '/'
            raise RepositoryNameError(f"invalid repository name {name!r}")
        return full

    def exists(self, name: str) -> bool:
        try:
            full = self.path(name)
        except RepositoryNameError:
            return False
        # A symlink planted in the store could point anywhere: not one of ours.
        return full.is_dir() and not full.is_symlink() and (full / "HEAD").is_file()

    def open(self, name: str) -> pygit2.Repository:
        if not self.exists(name):
            raise RepositoryNotFound(
                f"no repository named {name!r}; create it with `glossator repo create {name}`"
            )
        return pygit2.Repository(str(self.path(name)))

    def names(self) -> list[str]:
        """Every repository of the store, sorted."""
        if not self.root.is_dir():
            return []
        out = []
        for entry in self.root.iterdir():
            if entry.name.endswith(SUFFIX):
                name = entry.name[: -len(SUFFIX)]
                if NAME.match(name) and self.exists(name):
                    out.append(name)
        return sorted(out)

    def create(self, name: str) -> Path:
        """Create, configure and hook a bare repository; RepositoryExists if taken."""
        full = self.path(name)
        if full.exists() or full.is_symlink():
            raise RepositoryExists(f"repository {name!r} already exists")
        self.root.mkdir(parents=True, exist_ok=True)
        # Build in a temp name and rename: a crash never leaves a half-configured repo.
        tmp = self.root / f".{name}.creating-{os.getpid()}"
        repo = pygit2.init_repository(str(tmp), bare=True, initial_head=DEFAULT_BRANCH)
        self._configure(repo)
        self._install_hooks(tmp)
        try:
            os.rename(tmp, full)
        except OSError:
            raise RepositoryExists(f"repository {name!r} already exists") from None
        log.info("created repository %s", name)
        return full

    def retire(self, name: str, *, wait_s: float = 600.0) -> Path:
        """Take repository `name` out of service before it is deleted: marked as being
        deleted (every push from then on is refused, core.receiving.DELETING), the pushes
        being received waited for (up to `wait_s`, else PushUnderWay: run it again), then
        renamed to a hidden name in the store, so pushes and clones answer "no repository"
        and a job that opens it fails. Never renamed under a push: git would go on in the
        renamed directory and its hooks would queue jobs for a name that is not served.
        Returns where it now is (also when an earlier delete left it there);
        RepositoryNotFound when neither exists. Remove it with `shutil.rmtree`."""
        full, aside = self.path(name), self.root / f".{name}.deleting"
        if self.exists(name):
            receiving.mark_deleting(full)
            deadline = time.monotonic() + wait_s
            while pushes := receiving.receiving_now(full):
                if time.monotonic() >= deadline:
                    raise PushUnderWay(
                        f"{pushes} push(es) to {name!r} still being received after "
                        f"{wait_s:.0f} s; {name} refuses pushes from now on: run "
                        f"`glossator repo delete {name} --yes` again to finish"
                    )
                time.sleep(PUSH_POLL_S)
            if aside.exists():
                shutil.rmtree(aside)
            os.rename(full, aside)
            log.info("repository %s taken out of service for deletion", name)
            return aside
        if aside.is_dir() and not aside.is_symlink():
            return aside
        raise RepositoryNotFound(f"no repository named {name!r} (`glossator repo list` names them)")

    def refresh(self, name: str) -> None:
        """Re-apply configuration and hooks (at server start: the interpreter may have moved),
        and drop the markers of pushes under way a previous run left (core.receiving)."""
        full = self.path(name)
        self._configure(pygit2.Repository(str(full)))
        self._install_hooks(full)
        receiving.clear(full)

    def branches(self, name: str) -> dict[str, str]:
        """branch name -> tip commit id (hex) of repository `name`."""
        repo = self.open(name)
        out = {}
        for ref in repo.references.iterator():
            if ref.name.startswith("refs/heads/"):
                target = ref.resolve().target
                out[ref.name[len("refs/heads/") :]] = str(target)
        return out

    def head(self, name: str) -> str | None:
        """The branch HEAD names: the repository's default (search reads it when no branch
        is asked). A HEAD naming no existing branch (created on `main`, `master` pushed by
        an older hook) is pointed at one that exists first (core.vocabulary.head_for);
        None for a detached HEAD."""
        repo = self.open(name)
        ref = repo.references.get("HEAD")
        target = ref.target if ref is not None else None
        if not isinstance(target, str) or not target.startswith("refs/heads/"):
            return None
        if repo.references.get(target) is None:
            existing = [
                r[len("refs/heads/") :] for r in repo.references if r.startswith("refs/heads/")
            ]
            if branch := head_for(existing):
                repo.set_head("refs/heads/" + branch)
                log.info(
                    "repository %s: HEAD named %s, which does not exist; now %s",
                    name,
                    target,
                    branch,
                )
                return branch
        return target[len("refs/heads/") :]

    def iter_branches(self) -> Iterator[tuple[str, str, str]]:
        """(repository, branch, tip) for every branch of every repository."""
        for name in self.names():
            for branch, tip in sorted(self.branches(name).items()):
                yield name, branch, tip

    def _configure(self, repo: pygit2.Repository) -> None:
        config = repo.config
        for key, value in CONFIG.items():
            config[key] = value

    def _install_hooks(self, repo_dir: Path) -> None:
        hooks_dir = repo_dir / "hooks"
        hooks_dir.mkdir(exist_ok=True)
        for sample in hooks_dir.glob("*.sample"):
            sample.unlink()
        bash = shutil.which("bash")
        for hook in HOOKS:
            target = hooks_dir / hook
            tmp = hooks_dir / f".{hook}.tmp"
            tmp.write_text(
                hook_script(hook, data_dir=self.data_dir, repos_dir=self.root, bash=bash)
            )
            tmp.chmod(0o755)
            os.replace(tmp, target)
