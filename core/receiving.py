"""Pushes under way, as marker files in the bare repository: the commit-back waits for them.

    ad = advertise(repo_path, client)           # gitserver: `info/refs?service=git-receive-pack`
    marker = begin(repo_path)                   # gitserver: a `git-receive-pack` POST
    marker.name_refs([("refs/heads/main", new)])  # once the request's commands are read
    consume_advertisement(repo_path, client)    # a push, not git's probe: `marker` holds now
    ...                                         # git receives, runs the hooks, answers
    marker.finish()                             # then: ended, kept QUIET_S
    pushes_under_way(repo_path, "main", tip)    # the worker, before its commit-back

Why: a job's commit-back moves the branch, which refuses every push under way on
it and the next push of a writer pulling after a refusal; so the commit-back
yields while a push is under way or was refused less than QUIET_S ago. Markers
are files in `<repo>.git/glossator-receiving/`, not database rows: every worker
sees the repositories' directory, so a push pays no round trip. The server
(gitserver/) writes them and the push pipeline (hooks/) reads them, so they live
here, in the layer both may import. The marker format, the advertisement, git's
probe and the bounds (ADVERTISED_S, STALE_S): docs/push-pipeline.md, "Writers
are not starved".
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import time
import uuid
from collections.abc import Callable, Iterable
from pathlib import Path

DIR = "glossator-receiving"
ANY = "*"
ENDED = ".ended"
ADVERTISED = ".advertised"
# How long after a refused push its writer may still be pulling and rebasing to push
# again: a round figure, several times what `git pull --rebase` of a small change
# takes on a loaded 2-core machine (0.3-1 s measured by bench/pushes.py's runs).
QUIET_S = 5.0
# A marker this old is a crashed server's leftover, not a push: one round figure,
# far above any push a server answers (a 200 MB push takes seconds) and short
# enough that a forgotten marker delays commit-backs for minutes, not for ever.
STALE_S = 600.0
# How long a ref listing for a push holds the commit-backs when no POST follows it: a
# round figure above what a client takes to build its pack between the two requests
# (under a second for the example corpus, bench/git.py; seconds for tens of MB on a
# loaded machine). A push with nothing to send, or refused by its own client ("fetch
# first": it pulls to push again), holds them that long at most; a client slower than
# that is back to the compare-and-swap ("cannot lock ref", push again).
ADVERTISED_S = 10.0


class Marker:
    """One push under way; `name_refs` narrows it to the refs the push updates."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def name_refs(self, updates: Iterable[tuple[str, str]]) -> None:
        """(ref, the commit the push asks for) of each ref the push updates."""
        lines = sorted({f"{ref} {new}\n" for ref, new in updates})
        self._write(self.path, "".join(lines) or f"{ANY}\n")

    def finish(self) -> None:
        """git has answered: the push is no longer under way, and now ended."""
        ended = self.path.with_name(self.path.name + ENDED)
        with contextlib.suppress(FileNotFoundError):
            os.replace(self.path, ended)
            os.utime(ended)

    def remove(self) -> None:
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()

    @staticmethod
    def _write(path: Path, text: str) -> None:
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(text)
        os.replace(tmp, path)  # a reader sees the old content or the new, never half


def begin(repo_path: Path) -> Marker:
    """Write the marker of a push that starts (every branch until `name_refs`), and
    drop the ended markers and advertisements no reader needs any more."""
    folder = repo_path / DIR
    folder.mkdir(exist_ok=True)
    now = time.time()
    for entry in os.scandir(folder):
        with contextlib.suppress(FileNotFoundError):
            age = now - entry.stat().st_mtime
            if (entry.name.endswith(ENDED) and age > 2 * QUIET_S) or (
                entry.name.endswith(ADVERTISED) and age > 2 * ADVERTISED_S
            ):
                os.unlink(entry.path)
    marker = Marker(folder / f"{os.getpid()}-{uuid.uuid4().hex}")
    marker.path.write_text(f"{ANY}\n")
    return marker


def client_key(*identity: str) -> str:
    """A short name for who asks (the client's address and credentials, hashed: no
    secret in a file name), pairing a ref listing with the same client's push."""
    return hashlib.sha256("\0".join(identity).encode()).hexdigest()[:16]


def advertise(repo_path: Path, client: str) -> Path:
    """A client read the refs to push (`info/refs?service=git-receive-pack`): every
    branch's commit-back waits until its push POST arrives, or ADVERTISED_S."""
    folder = repo_path / DIR
    folder.mkdir(exist_ok=True)
    path = folder / f"{client}-{uuid.uuid4().hex}{ADVERTISED}"
    path.write_text(f"{ANY}\n")
    return path


def consume_advertisement(repo_path: Path, client: str) -> bool:
    """The push POST of `client` arrived (its own marker holds from now on): drop the
    newest of its advertisements, the listing this push most likely began with (a
    listing no POST followed, older, runs out on its own). Every one holds every
    branch, so which one goes matters only for when the others run out."""
    try:
        entries = [
            e
            for e in os.scandir(repo_path / DIR)
            if e.name.startswith(f"{client}-") and e.name.endswith(ADVERTISED)
        ]
    except FileNotFoundError:
        return False
    for entry in sorted(entries, key=_mtime, reverse=True):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(entry.path)
            return True
    return False


def _mtime(entry: os.DirEntry[str]) -> float:
    try:
        return entry.stat().st_mtime
    except FileNotFoundError:
        return 0.0


def pushes_under_way(
    repo_path: Path,
    branch: str,
    tip: str,
    *,
    landed: Callable[[str], bool] | None = None,
    advertised: bool = True,
    quiet_s: float = QUIET_S,
    stale_s: float = STALE_S,
    now: float | None = None,
) -> int:
    """How many pushes to refs/heads/<branch> are being received, or ended less than
    `quiet_s` ago without landing (their commit is not `tip`, the branch's tip), or,
    with `advertised`, had their refs listed less than ADVERTISED_S ago and not sent
    yet. `landed(commit)`: also leave out the pushes whose commit is in the branch (a
    push being answered after it landed)."""
    try:
        entries = list(os.scandir(repo_path / DIR))
    except FileNotFoundError:
        return 0
    ref = f"refs/heads/{branch}"
    now = time.time() if now is None else now
    count = 0
    for entry in entries:
        if entry.name.endswith(".tmp"):
            continue
        if entry.name.endswith(ADVERTISED):
            with contextlib.suppress(FileNotFoundError):  # consumed, or pruned
                if advertised and now - entry.stat().st_mtime <= ADVERTISED_S:
                    count += 1
            continue
        ended = entry.name.endswith(ENDED)
        try:
            age = now - entry.stat().st_mtime
            lines = [line.split() for line in Path(entry.path).read_text().splitlines()]
        except FileNotFoundError:  # that push just ended, or was pruned
            continue
        if age > (quiet_s if ended else stale_s):
            continue
        asks = {parts[0]: parts[1] if len(parts) > 1 else "" for parts in lines if parts}
        if not asks or ANY in asks:
            count += 1
            continue
        if ref not in asks:
            continue
        commit = asks[ref]
        if (ended and commit == tip) or (landed is not None and landed(commit)):
            continue
        count += 1
    return count


def clear(repo_path: Path) -> int:
    """Remove every marker (at server start: no push of an earlier run is under way)."""
    folder = repo_path / DIR
    removed = 0
    with contextlib.suppress(FileNotFoundError):
        for entry in os.scandir(folder):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(entry.path)
                removed += 1
    return removed


# A repository being deleted (`glossator repo delete`, gitserver.repos.RepoStore.retire)
# carries this file in its git dir, outside DIR (which `clear` empties at start). The
# delete writes it, then waits until no push is being received; a push writes its marker,
# then looks for it (the server, then the pre-receive hook): each of the two sees the
# other, so a push is either received before the repository goes, or refused.
DELETING = "glossator-deleting"
DELETING_LINE = (
    "glossator: repository {name} is being deleted (`glossator repo delete`): push refused, "
    "nothing was stored"
)


def mark_deleting(repo_path: Path) -> None:
    """Refuse every push from now on: the repository is being deleted."""
    (repo_path / DELETING).write_text("glossator repo delete\n")


def being_deleted(repo_path: Path) -> bool:
    return (repo_path / DELETING).exists()


def receiving_now(repo_path: Path, *, stale_s: float = STALE_S, now: float | None = None) -> int:
    """How many pushes are being received (their markers not ended, nor stale; a ref
    listing is not a push being received)."""
    try:
        entries = list(os.scandir(repo_path / DIR))
    except FileNotFoundError:
        return 0
    now = time.time() if now is None else now
    count = 0
    for entry in entries:
        if entry.name.endswith((ENDED, ADVERTISED, ".tmp")):
            continue
        with contextlib.suppress(FileNotFoundError):
            if now - entry.stat().st_mtime <= stale_s:
                count += 1
    return count
