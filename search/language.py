"""The language a query is written in, and which repositories' keyword evidence it can use.

    detector = LanguageDetector()            # one per process: SearchService owns it
    detector.detect("the inscription over the gate")      # "en"
    detector.detect("Farinata")                           # None: too little to tell

BM25 matches words, so it only means something in the corpus's language: an English
question on an Italian book matches "to", "lame" or "come" by accident, and one such
lone hit can be fused to rank 1 over strong vector evidence. The query's
language is detected offline by py3langid (langid.py's naive Bayes over byte n-grams,
its model shipped in the wheel, nothing downloaded), among the languages Glossator
writes labels for (`LANGUAGES`, indexer/corpus/lang.py's). A detection is trusted from
`MIN_CONFIDENCE` up: below, the query is taken for "unknown" and the keyword evidence
is kept at full weight (a bare name, "Farinata", "Boaz", is such a query, and it is where
keywords help most).

When the query's language is none of a repository's languages, that repository's
keyword rankings (rows, chapters, the tail's summaries) weigh
`Fusion.foreign_keyword_weight` times their usual weight in hybrid fusion
(`search.stages`); bm25 mode, asked for by name, is left alone.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping
from typing import Any

# The languages indexer/corpus/lang.py writes labels for (a test keeps the two in step): the
# detector chooses among these (fewer candidates, fewer confusions on a short query:
# among all 97 of py3langid's, "Virgilio guida" is Latin). py3langid has no "nb":
# Norwegian is "no".
LANGUAGES = (
    "fr", "en", "de", "es", "it", "pt", "ca", "nl", "da", "sv", "no", "fi", "pl", "ro",
    "hu", "tr", "ru", "el", "la",
)  # fmt: skip

# Normalised probability from which a detection is trusted. Measured on the 282
# questions of bench/queries*.jsonl and bench/offtopic*.jsonl (French, English and
# Italian questions on French, English and Italian books): every detection at 0.6 or
# more was right; the one wrong detection sat at 0.52 ("quantum computing qubits
# explained simply": Latin); bare names score 0.12-0.35 ("Farinata" 0.20, "Lancelot"
# 0.13). 5% of the questions sit below 0.83.
MIN_CONFIDENCE = 0.6


class LanguageDetector:
    """py3langid restricted to `languages`, loaded at the first call (2-5 s: its model
    is LZMA-compressed in the wheel), then ~0.2 ms a query."""

    def __init__(
        self, languages: Iterable[str] = LANGUAGES, min_confidence: float = MIN_CONFIDENCE
    ) -> None:
        self.languages = tuple(languages)
        self.min_confidence = min_confidence
        self._identifier: Any = None
        self._lock = threading.Lock()

    def _get(self) -> Any:
        if self._identifier is None:
            with self._lock:
                if self._identifier is None:
                    from py3langid.langid import MODEL_FILE, LanguageIdentifier

                    ident = LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)
                    ident.set_languages([x for x in self.languages if x in ident.nb_classes])
                    self._identifier = ident
        return self._identifier

    def classify(self, text: str) -> tuple[str, float]:
        """The most likely language and its normalised probability."""
        lang, prob = self._get().classify(text)
        return str(lang), float(prob)

    def detect(self, text: str) -> str | None:
        """The query's language (ISO 639-1), or None when the detection is not trusted."""
        if not text.strip():
            return None
        lang, prob = self.classify(text)
        return lang if prob >= self.min_confidence else None


def config_language(ts_config: str) -> str:
    """The ISO code of one of our text search configurations ("glossator_it" → "it");
    "simple" (no stemmer for the work's language) stays "simple"."""
    return ts_config.removeprefix("glossator_")


def foreign(query_lang: str | None, languages: Mapping[str, Iterable[str]]) -> set[str]:
    """The repositories none of whose languages (ISO codes) is the query's; none when
    the query's language is unknown. A repository in "simple" (a language without a
    stemmer) is foreign to every detected language but its own, which we cannot
    know: it is kept."""
    if query_lang is None:
        return set()
    out = set()
    for repository, langs in languages.items():
        codes = set(langs)
        if codes and "simple" not in codes and query_lang not in codes:
            out.add(repository)
    return out
