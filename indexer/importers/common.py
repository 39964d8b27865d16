"""Text helpers shared by the importers: slugs, roman numerals, chapter headings.

Slugs are ASCII (accents folded) because folder names travel through git, URLs
and shells on every platform; titles keep their accents in the frontmatter.
"""

from __future__ import annotations

import re
import unicodedata

from indexer.errors import CorpusError


class ImportSourceError(CorpusError):
    """The book being imported cannot be read as it is; names the file and the fix."""


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


_LABEL = r"(?:chapitre|chap\.|chapter|section)"
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
        return num, title or text
    return None, text


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
