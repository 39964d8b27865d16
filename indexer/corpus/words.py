"""Word lists per language, as package data: `indexer/corpus/wordlists/<lang>.toml`.

    markers         the most frequent function words: the importers guess a book's
                    language from them (`indexer.importers.common.guess_language`)
    stop_words      what the extractive summarizer leaves out of its TF-IDF vectors
    abbreviations   words whose period does not end a sentence (its sentence splitter)

These files are the one source of these words in the Python code. The database has
its own: the text-search configurations of migrations 003 and 021 stop words with
PostgreSQL's Snowball files (`tsearch_data/<language>.stop`, `STOPWORDS = french`),
which SQL has to name and which stay canonical for BM25 and `store.keyword`.
tests/test_words.py checks that the two agree where they must: every marker is a
stop word on both sides.
"""

from __future__ import annotations

import functools
import tomllib
from importlib import resources

LISTS = ("markers", "stop_words", "abbreviations")


@functools.cache
def _languages() -> dict[str, dict[str, frozenset[str]]]:
    folder = resources.files("indexer.corpus").joinpath("wordlists")
    found: dict[str, dict[str, frozenset[str]]] = {}
    for entry in sorted(folder.iterdir(), key=lambda e: e.name):
        if entry.name.endswith(".toml"):
            data = tomllib.loads(entry.read_text(encoding="utf-8"))
            found[entry.name.removesuffix(".toml")] = {
                name: frozenset(str(data[name]).split()) for name in LISTS if name in data
            }
    return found


def _lang(lang: str) -> str:
    return lang.strip().lower().replace("_", "-").split("-")[0]


def _list(name: str, lang: str) -> frozenset[str]:
    """`lang`'s list; for a language without one, every language's (a stop word of one
    language is rarely a content word of another; an abbreviation is an abbreviation)."""
    languages = _languages()
    own = languages.get(_lang(lang), {}).get(name)
    if own is not None:
        return own
    return frozenset().union(*(lists[name] for lists in languages.values() if name in lists))


def stop_words(lang: str) -> frozenset[str]:
    """The stop words of `lang` (ISO 639-1), or all of them for a language without a list."""
    return _list("stop_words", lang)


def abbreviations(lang: str) -> frozenset[str]:
    """The abbreviations of `lang`, or all of them for a language without a list."""
    return _list("abbreviations", lang)


def markers(lang: str) -> frozenset[str]:
    """The frequent function words of `lang`: empty when it has none (it is never guessed)."""
    return _languages().get(_lang(lang), {}).get("markers", frozenset())


def languages() -> tuple[str, ...]:
    """The languages that have a word list file."""
    return tuple(_languages())
