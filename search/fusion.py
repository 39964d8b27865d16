"""Weighted reciprocal rank fusion, and the per-file cap that diversifies a page.

RRF (Cormack et al., 2009) scores a row by Σ wᵢ / (k + rankᵢ) over the rankings
that contain it. It ignores the raw scores, which is the point: a BM25 score and
a cosine similarity live on scales that no fixed normalisation makes comparable
across queries, while ranks always are. A larger k flattens the curve (the 30th
row counts almost as much as the first); a weight of 0 switches a ranking off.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping, Sequence
from typing import TypeVar

from search.errors import BadQuery

K = TypeVar("K", bound=Hashable)


def rrf(
    rankings: Mapping[str, Sequence[K]],
    *,
    k: int = 60,
    weights: Mapping[str, float] | None = None,
) -> list[tuple[K, float]]:
    """Fuse named rankings (best first) into one list of (item, score), best first.

    Ties keep the order in which items were first met, rankings taken in the
    order given, so the result is deterministic.
    """
    if k <= 0:
        raise BadQuery(f"rrf_k must be a positive whole number, got {k}")
    weights = weights or {}
    scores: dict[K, float] = {}
    for name, ranking in rankings.items():
        w = float(weights.get(name, 1.0))
        if w < 0:
            raise BadQuery(f"the weight of {name} must be 0 or more, got {w}")
        for rank, item in enumerate(ranking, start=1):
            scores[item] = scores.get(item, 0.0) + w / (k + rank)
    # sorted() is stable: equal scores keep insertion order
    return sorted(scores.items(), key=lambda kv: -kv[1])


def cap_per_group(
    items: Iterable[K],
    group_of: Mapping[K, Hashable],
    limit: int | None,
    option: str = "max_per_file",
) -> list[K]:
    """Keep at most `limit` items per group, in order (None: keep everything).

    Used to stop one chapter from filling a whole page of results (issue 7's
    diversity lever); the rows dropped are the group's weakest.
    """
    if limit is None:
        return list(items)
    if limit <= 0:
        raise BadQuery(f"{option} must be 1 or more, got {limit}")
    seen: dict[Hashable, int] = {}
    kept = []
    for item in items:
        g = group_of[item]
        if seen.get(g, 0) < limit:
            seen[g] = seen.get(g, 0) + 1
            kept.append(item)
    return kept
