"""Content-addressed caches: what the indexer derived from a file, by the file's git blob id.

A push job reads the whole corpus tree to plan, yet most blobs are the ones the
previous job already read. A blob id names its content, so what was derived from
it (the parsed frontmatter, the sha256, a sidecar's manifest line) can never go
stale; caching it by id makes a job's cost follow what changed instead of the size
of the corpus. Sources without ids (a working tree on disk) are simply not cached.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from cachetools import LRUCache

if TYPE_CHECKING:
    from indexer.corpus.frontmatter import Document

T = TypeVar("T")


class ContentCache(Generic[T]):
    """A thread-safe LRU map (cachetools) from content id to a derived value; a None id
    (a source without ids) is never cached."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._items: LRUCache[str, T] = LRUCache(maxsize=size)
        self._lock = threading.Lock()  # cachetools' caches are not thread-safe

    def get(self, key: str | None) -> T | None:
        if key is None:
            return None
        with self._lock:
            return self._items.get(key)  # a hit becomes the most recently used

    def put(self, key: str | None, value: T) -> None:
        if key is None:
            return
        with self._lock:
            self._items[key] = value

    def clear(self) -> None:
        with self._lock:
            self._items.clear()


# Sizes: entries are small (a parsed file ~ its text; a sha256; a manifest line), and a
# 1,000-chapter book has ~2,100 .md files and as many sidecars, so these hold many books.
DOCUMENTS_KEPT = 50_000
DIGESTS_KEPT = 100_000


@dataclass
class IndexCaches:
    """What the indexer derived from blobs, by blob id, kept as long as its owner lives.

    The owner is whoever runs jobs one after another: the worker's job runner
    (hooks.reuse.ReusingIndexer) keeps one for its process, so a push job re-reads only
    what changed since the last one; `indexer.indexing.run.index` makes one per call when
    none is given (its two corpus reads still share it).
    """

    # read_corpus: a file's decoded text and parsed frontmatter
    documents: ContentCache[tuple[str, Document]] = field(
        default_factory=lambda: ContentCache(DOCUMENTS_KEPT)
    )
    # sidecars.build: the sha256 of a .md's bytes, and a sidecar's stored manifest line
    hashes: ContentCache[str] = field(default_factory=lambda: ContentCache(DIGESTS_KEPT))
    heads: ContentCache[tuple[dict[str, Any] | None]] = field(
        default_factory=lambda: ContentCache(DIGESTS_KEPT)
    )
    # sidecars.build: a chapter's paragraph shape (chunking.paragraph_shape), by its blob id,
    # so deciding `pack_chars = "auto"` re-parses only the chapters that changed
    shapes: ContentCache[tuple[int, int]] = field(
        default_factory=lambda: ContentCache(DIGESTS_KEPT)
    )
