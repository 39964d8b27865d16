"""Content-addressed caches: what the indexer derived from a file, by the file's git blob id.

A push job reads the whole corpus tree to plan, yet most blobs are the ones the
previous job already read. A blob id names its content, so what was derived from
it (the parsed frontmatter, the sha256, a sidecar's manifest line) can never go
stale; caching it by id makes a job's cost follow what changed instead of the size
of the corpus. Sources without ids (a working tree on disk) are simply not cached.
"""

from __future__ import annotations

import threading
from typing import Generic, TypeVar

from cachetools import LRUCache

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
