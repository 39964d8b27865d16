"""Text helpers shared by the importers: slugs, roman numerals, chapter headings.

Slugs are ASCII (accents folded) because folder names travel through git, URLs
and shells on every platform; titles keep their accents in the frontmatter.
"""

from __future__ import annotations

import re
import unicodedata
from pathlib import Path

from indexer.corpus import frontmatter, words
from indexer.corpus.errors import CorpusError


class ImportSourceError(CorpusError):
    """The book being imported cannot be read as it is; names the file and the fix."""


# A work titled after its file name is a guess (`pg1232`, `libro`): said, never silent.
# `corpus import --work-title` drops the note with the guess (glossator.commands.corpus).
TITLE_FROM_FILE_NAME = (
    "warning: found no title in the book: titled after its file name; give --work-title"
)


# Letters NFKD does not decompose into a base letter + accent.
_LIGATURES = str.maketrans(
    {"œ": "oe", "Œ": "OE", "æ": "ae", "Æ": "AE", "ß": "ss", "ø": "o", "Ø": "O", "ł": "l"}
)
_NON_ALNUM = re.compile(r"[^a-z0-9]+")
MAX_SLUG = 60


def fold(text: str) -> str:
    """Accents and ligatures folded to ASCII, case kept: `Égaliser` → `Egaliser`."""
    text = unicodedata.normalize("NFKD", text.translate(_LIGATURES))
    # any other non-ASCII sign (’, «, —) becomes a space: `L’utopiste` → `L utopiste`
    return "".join(c if c.isascii() else " " for c in text if not unicodedata.combining(c))


def slugify(text: str, max_length: int = MAX_SLUG) -> str:
    """`Abondance, disette` → `abondance-disette`; cut at a word boundary when long."""
    slug = _NON_ALNUM.sub("-", fold(text).lower()).strip("-")
    if len(slug) > max_length:
        cut = slug[: max_length + 1].rsplit("-", 1)[0]
        slug = (cut if cut else slug[:max_length]).strip("-")
    return slug or "sans-titre"


_ROMAN = re.compile(r"^M{0,4}(CM|CD|D?C{0,3})(XC|XL|L?X{0,3})(IX|IV|V?I{0,3})$")
_ROMAN_VALUES = {"I": 1, "V": 5, "X": 10, "L": 50, "C": 100, "D": 500, "M": 1000}


def roman_to_int(text: str) -> int | None:
    """`XXII` → 22; None when `text` is not a well-formed roman numeral."""
    text = text.strip().upper()
    if not text or not _ROMAN.match(text):
        return None
    total = 0
    for i, c in enumerate(text):
        value = _ROMAN_VALUES[c]
        if i + 1 < len(text) and _ROMAN_VALUES[text[i + 1]] > value:
            total -= value
        else:
            total += value
    return total


def number_value(number: str | None) -> int | None:
    """The integer a chapter number stands for (`IX` → 9, `12` → 12), else None."""
    if number is None:
        return None
    text = str(number).strip()
    if text.isdigit():
        return int(text)
    return roman_to_int(text)


# words that label a numbered chapter, in the languages of indexer.corpus.lang (and "letter")
CHAPTER_WORDS = (
    "chapitre", "chap.", "chapter", "section", "letter", "lettre", "kapitel", "brief",
    "capítulo", "capitulo", "capitolo", "capitol", "hoofdstuk", "kapittel", "luku",
    "rozdział", "rozdzial", "глава", "canto", "stave", "chant",
)  # fmt: skip
_LABEL = "(?:" + "|".join(re.escape(w) for w in CHAPTER_WORDS) + ")"
_SEP = r"\s*(?:[.:)]\s*(?:[—–-]\s*)?|[—–]\s*|-\s+)"
_NUMBERED = re.compile(
    rf"^(?:(?P<label>{_LABEL})\s+)?(?P<num>[IVXLCDM]+|\d+)(?:{_SEP})(?P<title>\S.*)$",
    re.IGNORECASE,
)
_LABELLED_ONLY = re.compile(
    rf"^(?P<label>{_LABEL})\s+(?P<num>[IVXLCDM]+|\d+)\s*\.?\s*(?P<title>.*)$", re.IGNORECASE
)


def split_heading(heading: str) -> tuple[str | None, str]:
    """`Chapitre IX. — Titre` or `IX. Titre` → (`IX`, `Titre`); (None, heading) otherwise.

    A bare roman numeral needs a separator after it, so `Immense découverte` or
    `L'utopiste` are never read as numbered.
    """
    text = " ".join(heading.split())
    for pattern in (_NUMBERED, _LABELLED_ONLY):
        m = pattern.match(text)
        if not m:
            continue
        num = m.group("num")
        if not num.isdigit():
            if roman_to_int(num) is None:
                continue
            num = num.upper()
        title = m.group("title").strip()
        if not title and not m.group("label"):
            continue
        if not title:  # `CHAPTER IV.`: untitled in the book, named by label and number
            label = m.group("label").rstrip(".")
            title = f"{label[:1].upper()}{label[1:].lower()} {num}"
        return num, title
    return None, text


def heading_label(heading: str) -> str | None:
    """The label word a numbered heading starts with, as the book writes it, capitalised:
    `LETTER 3` → `Letter`; None for a bare number or an unnumbered heading."""
    m = _LABELLED_ONLY.match(" ".join(heading.split()))
    if not m:
        return None
    word = m.group("label").rstrip(".")
    return word[:1].upper() + word[1:].lower()


# titles of pieces before (or after) the chapters: not chapters of their own
_LIMINARY = re.compile(
    r"^\W*(?:(?:the\s+)?(?:author|translator|editor|publisher)[’']?s?\s+)?"
    r"(?:preface|pr[ée]face|foreword|introduction|einleitung|vorwort|nachwort|avant-propos|"
    r"avertissement|prologue|prolog|pr[óo]logo|prologo|epilogue|[ée]pilogue|epilog|ep[íi]logo|"
    r"afterword|postface|conclusion|appendix|appendice|annexe|anhang|dedication|d[ée]dicace|"
    r"note|notes|notice|to the reader|au lecteur|introducci[óo]n|introduzione|prefacio|prefazione)"
    r"\b",
    re.IGNORECASE,
)


def own_label(heading: str, lang: str) -> dict[str, str]:
    """`{"label": "Letter"}` when a heading's label word is not the language's word for a
    chapter (the corpus reader's default), so the heading path keeps the book's word."""
    from indexer.corpus.lang import labels

    label = heading_label(heading)
    if label is None or label.casefold().rstrip(".") in ("chap", labels(lang).chapter.casefold()):
        return {}
    return {"label": label}


def is_liminary(title: str) -> bool:
    """Is this the title of a preface, introduction, epilogue…, not of a chapter?"""
    return bool(_LIMINARY.match(fold(title)))


# a few frequent function words per language (indexer.corpus.words), in this order: a
# tie goes to the first
_STOP_SETS = {lang: words.markers(lang) for lang in ("en", "fr", "de", "es", "it", "pt", "nl")}


def guess_language(text: str, default: str = "fr") -> str:
    """The language whose function words take the most of `text`'s first 20,000 words."""
    words = re.findall(r"[^\W\d_]+", text[:200_000].lower())[:20_000]
    if len(words) < 20:
        return default
    scores = {lang: sum(w in stop for w in words) for lang, stop in _STOP_SETS.items()}
    best = max(scores, key=lambda k: scores[k])
    return best if scores[best] >= 0.1 * len(words) else default


def _comparable(text: str) -> str:
    return " ".join(_NON_ALNUM.sub(" ", fold(text.replace("’", "'")).lower()).split())


def same_title(heading: str, title: str, number: str | None = None) -> bool:
    """Does a heading line only repeat the chapter's title (with or without its number)?"""
    text = heading.strip().lstrip("#").strip()
    candidates = {_comparable(text)}
    num, rest = split_heading(text)
    if num is not None and (number is None or num.upper() == str(number).strip().upper()):
        candidates.add(_comparable(rest))
    return _comparable(title) in candidates


def drop_title_heading(body: str, title: str, number: str | None = None) -> str:
    """The body without its first line when that line is a heading repeating the title.

    Only the heading line and the blank lines after it go; every other byte stays.
    """
    # Any line starting with `#` (`#Titre` too, which is no CommonMark heading) is
    # compared with the title, so this stays a line test rather than indexer.corpus.markdown's
    # headings: a sloppy `#Titre` repeating the title has always been dropped.
    lines = body.split("\n")
    i = 0
    while i < len(lines) and not lines[i].strip():
        i += 1
    if i >= len(lines) or not lines[i].lstrip().startswith("#"):
        return body
    if not same_title(lines[i], title, number):
        return body
    j = i + 1
    while j < len(lines) and not lines[j].strip():
        j += 1
    return "\n".join(lines[j:])


def read_document(src: Path) -> frontmatter.Document:
    """A source file's frontmatter and body; ImportSourceError says why it cannot be read."""
    try:
        return frontmatter.read(str(src), src.read_bytes())
    except OSError as e:
        raise ImportSourceError(
            str(src), f"cannot be read ({e.strerror}); check its permissions"
        ) from None
    except CorpusError as e:
        raise ImportSourceError(str(src), e.message) from None
