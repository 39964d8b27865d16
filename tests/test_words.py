"""indexer.corpus.words: the word lists are package data, and agree with PostgreSQL's.

The Python lists (indexer/corpus/wordlists/<lang>.toml) are the one source in the
Python code; the database stops words with PostgreSQL's Snowball files, which the
migrations name (`STOPWORDS = french`) and which stay canonical for BM25. Where the two
must agree, they do: a word the importers take as a sign of a language (a marker) is a
stop word of that language on both sides.
"""

from __future__ import annotations

import tomllib
from importlib import resources
from pathlib import Path

import pytest

from indexer.corpus import words
from indexer.importers.common import guess_language
from indexer.providers.summarizers import extractive
from store import pginstall

# the text-search configurations of migration 021 for the languages with a word list
PG_NAMES = {
    "de": "german",
    "en": "english",
    "es": "spanish",
    "fr": "french",
    "it": "italian",
    "nl": "dutch",
    "pt": "portuguese",
}
# PostgreSQL's (Snowball's) French stop file has "le" and "la" but not "les": the one
# marker it lacks, left to its French stemmer
PG_LACKS = {"fr": {"les"}}


def test_every_file_is_package_data_with_known_lists() -> None:
    folder = resources.files("indexer.corpus").joinpath("wordlists")
    files = sorted(e.name for e in folder.iterdir() if e.name.endswith(".toml"))
    assert files == [f"{lang}.toml" for lang in sorted(PG_NAMES)]
    for name in files:
        data = tomllib.loads(folder.joinpath(name).read_text(encoding="utf-8"))
        assert set(data) <= set(words.LISTS), name
        assert "markers" in data, name
    assert set(words.languages()) == set(PG_NAMES)


def test_markers_are_stop_words_of_their_language() -> None:
    for lang in words.languages():
        own = words._languages()[lang]
        if "stop_words" in own:
            assert words.markers(lang) <= own["stop_words"], lang


def test_markers_are_stop_words_in_postgresql_too() -> None:
    try:
        share = pginstall.binaries() / "share" / "postgresql" / "tsearch_data"
    except pginstall.PgNotInstalled:
        pytest.skip("the embedded PostgreSQL is not installed (make setup)")
    for lang, pg_name in PG_NAMES.items():
        stop = set(Path(share / f"{pg_name}.stop").read_text(encoding="utf-8").split())
        assert words.markers(lang) - stop == PG_LACKS.get(lang, set()), lang


def test_a_language_without_a_list_gets_every_list() -> None:
    every = words.stop_words("fr") | words.stop_words("en") | words.stop_words("de")
    assert words.stop_words("es") == every == words.stop_words("")
    assert extractive.stopwords("fr-CA") == words.stop_words("fr")
    assert "mr" in extractive.abbreviations("xx") and "mme" in extractive.abbreviations("xx")
    assert words.markers("xx") == frozenset()


def test_the_markers_still_tell_languages_apart() -> None:
    assert guess_language("Le chat est dans la maison et il ne sort pas. " * 5) == "fr"
    assert guess_language("The cat is in the house and it was not out. " * 5) == "en"
    assert guess_language("Die Katze ist in dem Haus und sie ist nicht da. " * 5) == "de"
