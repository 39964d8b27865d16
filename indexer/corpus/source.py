"""Where the indexer reads files from and writes them to.

The indexer never touches the file system directly: it reads a `FileSource`
(a working tree on disk, or a commit's tree read from a bare repository by the
worker) and returns a `Changes` mapping that the caller applies (atomic renames
on disk, or a new commit). That keeps it testable without a work tree.
"""

from __future__ import annotations

import os
import stat
import tempfile
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path, PurePosixPath
from typing import Protocol


class FileSource(Protocol):
    """Read-only view of a corpus repository, paths repo-relative with '/'."""

    def paths(self) -> Iterable[str]:
        """Every regular file (symlinks included, see `is_symlink`)."""
        ...

    def read(self, path: str) -> bytes: ...

    def exists(self, path: str) -> bool: ...

    def is_symlink(self, path: str) -> bool: ...


class Changes(Mapping[str, bytes | None]):
    """Files to write (bytes) or delete (None), in insertion order."""

    def __init__(self) -> None:
        self._files: dict[str, bytes | None] = {}

    def __getitem__(self, path: str) -> bytes | None:
        return self._files[path]

    def __iter__(self) -> Iterator[str]:
        return iter(self._files)

    def __len__(self) -> int:
        return len(self._files)

    def write(self, path: str, data: bytes) -> None:
        self._files[path] = data

    def delete(self, path: str) -> None:
        self._files[path] = None


def content_id(source: FileSource, path: str) -> str | None:
    """An id of `path`'s content known without reading it (a git blob id), or None."""
    get = getattr(source, "blob_id", None)
    return get(path) if get is not None else None


def check_relative(path: str) -> str:
    """A repo-relative POSIX path that stays inside the repository, or ValueError."""
    p = PurePosixPath(path)
    if p.is_absolute() or ".." in p.parts or not p.parts or "\\" in path:
        raise ValueError(f"path escapes the corpus: {path!r}")
    return p.as_posix()


class DirectorySource:
    """A corpus working tree on disk."""

    def __init__(self, root: Path) -> None:
        self.root = root.resolve()

    def _full(self, path: str) -> Path:
        return self.root / check_relative(path)

    def paths(self) -> Iterator[str]:
        for dirpath, dirnames, filenames in os.walk(self.root):
            dirnames[:] = sorted(
                d
                for d in dirnames
                if not d.startswith(".") and not os.path.islink(os.path.join(dirpath, d))
            )
            for name in sorted(filenames):
                full = Path(dirpath) / name
                yield full.relative_to(self.root).as_posix()

    def read(self, path: str) -> bytes:
        return self._full(path).read_bytes()

    def exists(self, path: str) -> bool:
        return self._full(path).exists()

    def is_symlink(self, path: str) -> bool:
        return self._full(path).is_symlink()

    def apply(self, changes: Changes) -> None:
        """Write every change atomically: temp file in the same folder, then rename."""
        for path, data in changes.items():
            full = self._full(path)
            if data is None:
                full.unlink(missing_ok=True)
                continue
            full.parent.mkdir(parents=True, exist_ok=True)
            try:  # a rewritten file keeps its mode
                mode = stat.S_IMODE(full.stat().st_mode)
            except OSError:
                mode = new_file_mode()
            fd, tmp = tempfile.mkstemp(dir=full.parent, prefix=f".{full.name}.", suffix=".tmp")
            try:
                with os.fdopen(fd, "wb") as f:
                    f.write(data)
                    # mkstemp makes it 0600: the file gets the mode open() would give it
                    os.fchmod(f.fileno(), mode)
                os.replace(tmp, full)
            except BaseException:
                Path(tmp).unlink(missing_ok=True)
                raise


def new_file_mode() -> int:
    """0666 less the process's umask: the mode `open()` gives a new file (0644 under the
    usual 022). Read from /proc (Linux), else by setting the umask back at once."""
    try:
        with open("/proc/self/status", encoding="ascii", errors="replace") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return 0o666 & ~int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return 0o666 & ~mask


class MemorySource:
    """A corpus held in a dict (tests, and the worker's overlay of pending changes)."""

    def __init__(self, files: Mapping[str, bytes], symlinks: Iterable[str] = ()) -> None:
        self.files = dict(files)
        self.symlinks = set(symlinks)

    def paths(self) -> list[str]:
        return sorted(self.files)

    def read(self, path: str) -> bytes:
        return self.files[path]

    def exists(self, path: str) -> bool:
        return path in self.files

    def is_symlink(self, path: str) -> bool:
        return path in self.symlinks

    def apply(self, changes: Changes) -> None:
        for path, data in changes.items():
            if data is None:
                self.files.pop(path, None)
            else:
                self.files[path] = data


class OverlaySource:
    """`base` with `changes` applied on top, without copying base."""

    def __init__(self, base: FileSource, changes: Changes) -> None:
        self.base = base
        self.changes = changes

    def paths(self) -> list[str]:
        out = {p for p in self.base.paths() if self.changes.get(p, b"") is not None}
        out.update(p for p, d in self.changes.items() if d is not None)
        return sorted(out)

    def read(self, path: str) -> bytes:
        if path in self.changes:
            data = self.changes[path]
            if data is None:
                raise FileNotFoundError(path)
            return data
        return self.base.read(path)

    def exists(self, path: str) -> bool:
        if path in self.changes:
            return self.changes[path] is not None
        return self.base.exists(path)

    def is_symlink(self, path: str) -> bool:
        return path not in self.changes and self.base.is_symlink(path)

    def blob_id(self, path: str) -> str | None:
        return None if path in self.changes else content_id(self.base, path)
