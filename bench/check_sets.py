"""Check the judged sets of issue 37: counts, relevant files, and paraphrases that share
no content word with their chapter.

    .venv/bin/python bench/check_sets.py [--set NAME ...] [--report-older]

For every set below: at least 30 judged questions, 10 of them paraphrases, 30 foreign
questions of which a third near the book's field, 20 on-topic ones; every relevant file
exists in the book's corpus; and every paraphrase (kind "paraphrase") shares no content
word with the text of its relevant chapter(s). Prints what it found and exits 1 naming
each failure (the question, the shared words). No model, no database: seconds.

On-topic questions are the judged ones: bench/gate.py reads a book's judged questions as
the questions its `context` gate should vouch for, so the queries file is the on-topic
set too (the check asks for at least 20 of them).

Content words: the text is lower-cased, accents folded (NFKD, combining marks dropped,
casefold: ß -> ss), cut into letter runs (an apostrophe splits: "l'habile" -> "l",
"habile"), runs under three letters dropped, and the stop words of the book's language
removed: the project's own list (indexer/corpus/words.py, the words the summarizer and
BM25 leave out) together with bm25s's Snowball-derived list for that language
(bm25s.stopwords, the dev extras' bm25s). Two words are the same when equal, or when
their light stems are (one inflectional ending stripped from SUFFIXES, the stem kept at
four letters or more): "proposes" meets "proposal"'s "propos", "Soldaten" meets
"Soldat". A paraphrase may use none of its chapter's words, names included.

`--report-older` also prints, without failing, the paraphrases of the sets written
before issue 37 (example, Inferno, Grimm) that share words with their chapter.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import bm25s.stopwords as bm25s_stop

from indexer.corpus.words import stop_words

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent

MIN_QUESTIONS = 30
MIN_PARAPHRASES = 10
MIN_FOREIGN = 30
MIN_NEAR_SHARE = 1 / 3
MIN_ON_TOPIC = 20
MIN_LETTERS = 3

BM25S_LISTS = {
    "fr": bm25s_stop.STOPWORDS_FRENCH,
    "de": bm25s_stop.STOPWORDS_GERMAN,
    "en": bm25s_stop.STOPWORDS_EN_PLUS,
    "it": bm25s_stop.STOPWORDS_ITALIAN,
}
# one inflectional ending per word, longest first; written for this check, not a stemmer
SUFFIXES = {
    "en": ("ations", "ation", "ings", "ing", "ies", "ied", "als", "al", "es", "ed", "ly", "s"),
    "fr": ("aient", "ement", "ions", "ent", "ees", "ait", "es", "ee", "er", "ez", "e", "s", "x"),
    "de": ("ungen", "ung", "ern", "em", "en", "er", "es", "e", "n", "s"),
    "it": ("zioni", "zione", "ando", "endo", "ato", "ati", "ata", "ate", "a", "e", "i", "o"),
}
_RUN = re.compile(r"[^\W\d_]+")


@dataclass(frozen=True)
class JudgedSet:
    name: str
    book: Path  # the corpus repository (its corpus/ folder holds the relevant files)
    lang: str  # the book's language: paraphrases are checked in it
    queries: str  # bench/<file>: judged questions, also the on-topic set of bench/gate.py
    foreign: tuple[str, ...]  # bench/<file>: questions the book does not answer
    work: str | None = None  # a repository of several works: this work's questions only


SETS = (
    JudgedSet(
        "medecin",
        BENCH / "books" / "medecin",
        "fr",
        "queries-medecin.jsonl",
        ("offtopic-medecin.jsonl",),
    ),
    JudgedSet(
        "minna", BENCH / "books" / "minna", "de", "queries-minna.jsonl", ("offtopic-minna.jsonl",)
    ),
    JudgedSet(
        "pride-and-prejudice",
        BENCH / "books" / "gutenberg",
        "en",
        "queries-gutenberg.jsonl",
        ("offtopic-gutenberg.jsonl",),
        work="pride-and-prejudice",
    ),
    JudgedSet(
        "frankenstein",
        BENCH / "books" / "gutenberg",
        "en",
        "queries-gutenberg.jsonl",
        ("offtopic-gutenberg.jsonl",),
        work="frankenstein-or-the-modern-prometheus",
    ),
)
# written before issue 37: their paraphrases are reported (--report-older), not enforced
OLDER = (
    JudgedSet("example", ROOT / "example", "fr", "queries.jsonl", ("offtopic.jsonl",)),
    JudgedSet(
        "inferno",
        BENCH / "books" / "inferno",
        "it",
        "queries-inferno.jsonl",
        ("offtopic-inferno.jsonl",),
    ),
    JudgedSet(
        "grimm", BENCH / "books" / "grimm", "de", "queries-grimm.jsonl", ("offtopic-grimm.jsonl",)
    ),
)


def fold(text: str) -> str:
    decomposed = unicodedata.normalize("NFKD", text.casefold())
    return "".join(c for c in decomposed if not unicodedata.combining(c))


def stops(lang: str) -> frozenset[str]:
    words = set(stop_words(lang)) | set(BM25S_LISTS.get(lang, ()))
    return frozenset(fold(w) for w in words)


def stem(word: str, lang: str) -> str:
    for suffix in SUFFIXES.get(lang, ()):
        if word.endswith(suffix) and len(word) - len(suffix) >= 4:
            return word[: -len(suffix)]
    return word


def content_words(text: str, lang: str) -> set[str]:
    stop = stops(lang)
    return {w for w in _RUN.findall(fold(text)) if len(w) >= MIN_LETTERS and w not in stop}


def shared_words(question: str, chapter: str, lang: str) -> list[str]:
    """The question's content words found in the chapter, equal or by light stem."""
    theirs = content_words(chapter, lang)
    their_stems = {stem(w, lang) for w in theirs}
    return sorted(
        w for w in content_words(question, lang) if w in theirs or stem(w, lang) in their_stems
    )


def body(path: Path) -> str:
    """A chapter file's text without its YAML front matter."""
    text = path.read_text("utf-8")
    if text.startswith("---\n"):
        end = text.find("\n---\n", 4)
        if end != -1:
            return text[end + 5 :]
    return text


def load(name: str) -> list[dict[str, Any]]:
    """bench/<name>'s rows; a missing file has none (check() says it is missing)."""
    path = BENCH / name
    if not path.is_file():
        return []
    return [json.loads(line) for line in path.read_text("utf-8").splitlines() if line.strip()]


def in_work(files: Iterable[str], work: str | None) -> bool:
    return work is None or all(f.split("#")[0].startswith(f"corpus/{work}/") for f in files)


def judged_of(s: JudgedSet) -> list[dict[str, Any]]:
    return [q for q in load(s.queries) if in_work(q.get("relevant", []), s.work)]


def foreign_of(s: JudgedSet) -> list[dict[str, Any]]:
    rows = [q for name in s.foreign for q in load(name)]
    return [q for q in rows if s.work is None or q.get("book") == s.work]


def check_paraphrases(s: JudgedSet, judged: list[dict[str, Any]]) -> list[str]:
    problems = []
    for q in judged:
        if q.get("kind") != "paraphrase":
            continue
        if q.get("lang", s.lang) != s.lang:
            problems.append(f"paraphrase not in the book's language ({s.lang}): {q['query']!r}")
            continue
        files = [s.book / f.split("#")[0] for f in q.get("relevant", [])]
        chapter = "\n".join(body(f) for f in files if f.is_file())
        shared = shared_words(q["query"], chapter, s.lang)
        if shared:
            problems.append(
                f"paraphrase shares {', '.join(shared)} with its chapter: {q['query']!r}"
            )
    return problems


def check(s: JudgedSet) -> tuple[list[str], str]:
    """(failures, one summary line) of one set."""
    problems = [
        f"bench/{n} is missing" for n in (s.queries, *s.foreign) if not (BENCH / n).is_file()
    ]
    judged = judged_of(s)
    foreign = foreign_of(s)
    paraphrases = sum(q.get("kind") == "paraphrase" for q in judged)
    near = sum(q.get("kind") == "near" for q in foreign)
    if len(judged) < MIN_QUESTIONS:
        problems.append(f"{len(judged)} judged questions, fewer than {MIN_QUESTIONS}")
    if paraphrases < MIN_PARAPHRASES:
        problems.append(f"{paraphrases} paraphrases, fewer than {MIN_PARAPHRASES}")
    if len(judged) < MIN_ON_TOPIC:
        problems.append(f"{len(judged)} on-topic questions, fewer than {MIN_ON_TOPIC}")
    if len(foreign) < MIN_FOREIGN:
        problems.append(f"{len(foreign)} foreign questions, fewer than {MIN_FOREIGN}")
    if near < MIN_NEAR_SHARE * len(foreign):
        problems.append(f"{near} of {len(foreign)} foreign questions near the field, under a third")
    for q in judged:
        if not q.get("relevant"):
            problems.append(f"no relevant file: {q['query']!r}")
        for f in q.get("relevant", []):
            if not (s.book / f.split("#")[0]).is_file():
                problems.append(f"relevant file missing from {s.book.name}: {f}")
    for q in foreign:
        if q.get("relevant"):
            problems.append(f"a foreign question names relevant files: {q['query']!r}")
    problems += check_paraphrases(s, judged)
    kinds: dict[str, int] = {}
    for q in judged:
        kinds[q.get("kind", "?")] = kinds.get(q.get("kind", "?"), 0) + 1
    line = (
        f"{s.name}: {len(judged)} judged {dict(sorted(kinds.items()))}, "
        f"{len(foreign)} foreign ({near} near), on-topic {len(judged)}"
    )
    return problems, line


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--set", action="append", choices=[s.name for s in SETS])
    parser.add_argument("--report-older", action="store_true")
    args = parser.parse_args(argv)
    failed = 0
    for s in SETS:
        if args.set and s.name not in args.set:
            continue
        problems, line = check(s)
        print(line + ("" if problems else ": ok"))
        for p in problems:
            print(f"  FAIL {s.name}: {p}")
        failed += len(problems)
    if args.report_older:
        for s in OLDER:
            found = check_paraphrases(s, load(s.queries))
            n = sum(q.get("kind") == "paraphrase" for q in load(s.queries))
            print(f"{s.name} (older, not enforced): {len(found)} of {n} paraphrases share words")
            for p in found:
                print(f"  note {s.name}: {p}")
    if failed:
        print(f"{failed} failure(s)")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
