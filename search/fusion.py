"""Weighted reciprocal rank fusion, and the per-file cap that diversifies a page.

RRF (Cormack et al., 2009) scores a row by Σ wᵢ / (k + rankᵢ) over the rankings
that contain it. It ignores the raw scores, which is the point: a BM25 score and
a cosine similarity live on scales that no fixed normalisation makes comparable
across queries, while ranks always are. A larger k flattens the curve (the 30th
row counts almost as much as the first); a weight of 0 switches a ranking off.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Collection, Hashable, Iterable, Mapping, Sequence
from dataclasses import replace
from typing import TypeVar

from search.errors import BadQuery
from search.tuning import Fusion

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

    It stops one chapter from filling a whole page of results; the rows dropped are
    the group's weakest.
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


# Keyword trust: how much of the question the keyword side's best rows say.
#
# A question that restates a scene in other words shares no content word with it,
# yet BM25 still returns rows, each holding one of its words somewhere else (a two-word
# reply, a chapter that names the same person): fused at full weight, that noise undoes
# the vector side (hybrid fell below vector alone on every paraphrase set:
# docs/search.md, "Retrieval units, keyword trust"; bench/RESULTS.md). A
# question whose words the book uses finds rows that hold most of them. So the keyword
# rankings (rows, chapters, the page's tail) can weigh by the trust they earn: the
# largest share of the question's content words that one chapter's rows among the
# top keyword rows hold together (search.engine.keyword_trusted; how much it counts,
# and why it is off by default: search.tuning.Fusion.keyword_trust_power).

TRUST_ROWS = 5  # the keyword rows read: a page's head (search.tuning.Fusion.tail_from)
_TOKEN = re.compile(r"\w+")


def _folded(text: str) -> list[str]:
    """Lower-case words without diacritics (BM25's tokenizers fold case and accents)."""
    plain = unicodedata.normalize("NFKD", text.casefold())
    return _TOKEN.findall("".join(c for c in plain if not unicodedata.combining(c)))


def _stem(word: str) -> str:
    """A crude, language-blind stem: the word's first two thirds, at least four letters
    ("proposes" and "proposal" share "propos"; "refuses" and "refusing" "refus")."""
    return word[: max(4, -(-2 * len(word) // 3))]


def content_words(query: str, stop_words: Collection[str]) -> list[str]:
    """The question's content words, folded and stemmed, each once (stop words of its
    language out, one-letter words and numbers out)."""
    stops = {w for s in stop_words for w in _folded(s)}
    out: dict[str, None] = {}
    for w in _folded(query):
        if len(w) > 1 and not w.isdigit() and w not in stops:
            out[_stem(w)] = None
    return list(out)


def keyword_trust(words: Sequence[str], texts: Iterable[str]) -> float:
    """The largest share of `words` (content_words) one of `texts` (a chapter's top
    keyword rows, joined) holds, a word held
    when one of the text's words starts with its stem; 1.0 for a question of no content
    word (the keyword side is all it has to say), 0.0 when no text is given."""
    if not words:
        return 1.0
    best = 0.0
    for text in texts:
        tokens = set(_folded(text))
        held = sum(1 for w in words if w in tokens or any(t.startswith(w) for t in tokens))
        best = max(best, held / len(words))
    return best


def trusted(fusion: Fusion, factor: float) -> Fusion:
    """`fusion` with its keyword rankings of chapters and of the page's tail weighing
    `factor` times their weight (the row keyword ranking's is SearchOptions.bm25_weight)."""
    if factor == 1.0:
        return fusion
    return replace(
        fusion,
        chapter_weights={
            n: w * factor if "keyword" in n else w for n, w in fusion.chapter_weights.items()
        },
        tail_weights={
            n: w * factor if "keyword" in n else w for n, w in fusion.tail_weights.items()
        },
    )


def holds_enough(words: Sequence[str], text: str, least: int) -> bool:
    """Whether `text` holds at least `least` of `words` (content_words), or all of them
    when there are fewer, a word held as in `keyword_trust`; True for no words."""
    if not words:
        return True
    tokens = set(_folded(text))
    held = sum(1 for w in words if w in tokens or any(t.startswith(w) for t in tokens))
    return held >= min(least, len(words))
