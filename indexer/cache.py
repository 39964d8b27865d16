"""Content-addressed caches: what the indexer derived from a file, by the file's git blob id.

A push job reads the whole corpus tree to plan, yet most blobs are the ones the
previous job already read. A blob id names its content, so what was derived from
it (the parsed frontmatter, the sha256, a sidecar's manifest line) can never go
stale; caching it by id makes a job's cost follow what changed instead of the size
of the corpus. Sources without ids (a working tree on disk) are simply not cached.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Generic, TypeVar

T = TypeVar("T")


class ContentCache(Generic[T]):
    """A thread-safe LRU map from content id to a derived value."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._items: OrderedDict[str, T] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: str | None) -> T | None:
        if key is None:
            return None
        with self._lock:
            value = self._items.get(key)
            if value is not None:
                self._items.move_to_end(key)
            return value

    def put(self, key: str | None, value: T) -> None:
        if key is None:
            return
        with self._lock:
            self._items[key] = value
            self._items.move_to_end(key)
            while len(self._items) > self.size:
                self._items.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
