"""The extractive summary's sentence selection (maximal marginal relevance) vectorised:
the same picks as the Python loop it replaced, on real text (issue 26, bench/book.py)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from indexer.summaries.extractive import (
    _WORD,
    MIN_WORDS,
    RELEVANCE,
    Sentence,
    _tfidf,
    clean_paragraphs,
    select,
    split_sentences,
)
from indexer.tokens import count_tokens

ROOT = Path(__file__).resolve().parents[1]


def loop_select(sentences: list[Sentence], budget_tokens: int, lang: str) -> list[Sentence]:
    """The selection as written before (one Python max over the remaining sentences a pick)."""
    vectors = _tfidf(sentences, lang)
    centroid = vectors.mean(axis=0)
    norm = float(np.linalg.norm(centroid))
    relevance = vectors @ (centroid / norm) if norm else np.zeros(len(sentences))
    sizes = [count_tokens(s.text) + 1 for s in sentences]
    eligible = [i for i, s in enumerate(sentences) if len(_WORD.findall(s.text)) >= MIN_WORDS]
    if not eligible:
        eligible = list(range(len(sentences)))
    chosen: list[int] = []
    redundancy = np.zeros(len(sentences))
    used = 0
    remaining = set(eligible)
    while remaining:
        best = max(
            sorted(remaining),
            key=lambda i: RELEVANCE * relevance[i] - (1 - RELEVANCE) * redundancy[i],
        )
        remaining.discard(best)
        if used + sizes[best] > budget_tokens:
            continue
        chosen.append(best)
        used += sizes[best]
        redundancy = np.maximum(redundancy, vectors @ vectors[best])
    return [sentences[i] for i in sorted(chosen)]


def book_sentences(path: Path, lang: str, limit: int) -> list[Sentence]:
    out: list[Sentence] = []
    # the Gutenberg fixtures are Windows-1252, as distributed; the example is UTF-8
    encoding = "cp1252" if path.suffix == ".txt" else "utf-8"
    for paragraph in clean_paragraphs(path.read_text(encoding=encoding)):
        for text in split_sentences(paragraph, lang):
            out.append(Sentence(0, len(out), text))
    return out[:limit]


@pytest.mark.parametrize(
    ("path", "lang"),
    [
        (ROOT / "tests/fixtures/gutenberg/pg1342.txt", "en"),  # Pride and Prejudice
        (sorted((ROOT / "example/corpus").rglob("source.md"))[0], "fr"),
    ],
)
@pytest.mark.parametrize("budget", [1, 60, 400, 2000, 100_000])
def test_selection_is_the_loops(path: Path, lang: str, budget: int) -> None:
    sentences = book_sentences(path, lang, limit=600)
    assert len(sentences) > 50
    assert select(sentences, budget, lang) == loop_select(sentences, budget, lang)


def test_selection_of_nothing_and_of_short_sentences() -> None:
    assert select([], 100) == []
    short = [Sentence(0, i, text) for i, text in enumerate(["Oui.", "Non.", "Peut-être."])]
    assert select(short, 100) == loop_select(short, 100, "fr")
