"""indexer.corpus.cache.ContentCache: a bounded LRU by content id (cachetools underneath)."""

from __future__ import annotations

from indexer.corpus.cache import ContentCache


def test_the_least_recently_used_goes_first_and_a_missing_id_is_never_cached() -> None:
    cache: ContentCache[str] = ContentCache(2)
    cache.put("a", "A")
    cache.put("b", "B")
    assert cache.get("a") == "A"  # a hit makes "a" the most recent
    cache.put("c", "C")  # over the size: "b", the least recently used, goes
    assert (cache.get("a"), cache.get("b"), cache.get("c")) == ("A", None, "C")
    cache.put(None, "X")  # a source without ids (a working tree): nothing kept
    assert cache.get(None) is None
    cache.clear()
    assert cache.get("a") is None
