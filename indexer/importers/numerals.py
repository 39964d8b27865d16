"""Numbers written as words in chapter headings: `ONE`, `twenty-three`, `the First`,
`premier`, `Zweites`. English cardinals and ordinals, French and German ordinals (the
ones headings use); anything else is roman or arabic (headings.py).
"""

from __future__ import annotations

import re

from indexer.importers.common import fold

_ONES = [
    "zero",
    "one",
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
    "ten",
    "eleven",
    "twelve",
    "thirteen",
    "fourteen",
    "fifteen",
    "sixteen",
    "seventeen",
    "eighteen",
    "nineteen",
]
_TENS = ["_", "_", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"]
_ORDINALS = [
    "_",
    "first",
    "second",
    "third",
    "fourth",
    "fifth",
    "sixth",
    "seventh",
    "eighth",
    "ninth",
    "tenth",
    "eleventh",
    "twelfth",
    "thirteenth",
    "fourteenth",
    "fifteenth",
    "sixteenth",
    "seventeenth",
    "eighteenth",
    "nineteenth",
    "twentieth",
]
_FRENCH = {
    "premier": 1, "premiere": 1, "un": 1, "une": 1, "deuxieme": 2, "second": 2,
    "seconde": 2, "deux": 2, "troisieme": 3, "trois": 3, "quatrieme": 4, "quatre": 4,
    "cinquieme": 5, "cinq": 5, "sixieme": 6, "six": 6, "septieme": 7, "sept": 7,
    "huitieme": 8, "huit": 8, "neuvieme": 9, "neuf": 9, "dixieme": 10, "dix": 10,
}  # fmt: skip


def word_number(text: str) -> int | None:
    """`ONE` → 1, `twenty-three` → 23, `the First` → 1, `premier` → 1; else None."""
    if text.strip().lower() in _GERMAN:
        return _GERMAN[text.strip().lower()]
    t = fold(text).lower().strip().removeprefix("the ").strip()
    if t in _FRENCH:
        return _FRENCH[t]
    if t in _ORDINALS[1:]:
        return _ORDINALS.index(t)
    if t in _ONES[1:]:
        return _ONES.index(t)
    m = re.fullmatch(r"([a-z]+)(?:[- ]([a-z]+))?", t)
    if m and m.group(1) in _TENS[2:]:
        tens = _TENS.index(m.group(1)) * 10
        unit = m.group(2)
        if unit is None:
            return tens
        if unit in _ONES[1:10]:
            return tens + _ONES.index(unit)
        if unit in _ORDINALS[1:10]:
            return tens + _ORDINALS.index(unit)
    return None


_ACCENTED = [w.replace("ieme", "ième").replace("premiere", "première") for w in _FRENCH]
_GERMAN = {
    "erstes": 1, "erster": 1, "erste": 1, "zweites": 2, "zweiter": 2, "zweite": 2,
    "drittes": 3, "dritter": 3, "dritte": 3, "viertes": 4, "vierter": 4, "vierte": 4,
    "fünftes": 5, "fünfter": 5, "fünfte": 5, "sechstes": 6, "sechster": 6, "sechste": 6,
    "siebentes": 7, "siebtes": 7, "siebenter": 7, "siebter": 7, "achtes": 8, "achter": 8,
    "neuntes": 9, "neunter": 9, "zehntes": 10, "zehnter": 10,
}  # fmt: skip
# "Erstes Kapitel", "Zweiter Teil", "The First Chapter": the number before the label
ORDINAL_FIRST = re.compile(
    r"^(?:the\s+)?(?P<num>"
    + "|".join(sorted(_GERMAN, key=len, reverse=True))
    + "|"
    + "|".join(_ORDINALS[1:])
    + r")\s+(?P<label>[^\W\d_]+)(?P<rest>.*)$",
    re.IGNORECASE,
)
WORDS_RE = "|".join(
    sorted(set(_ONES[1:] + _TENS[2:] + _ORDINALS[1:] + list(_FRENCH) + _ACCENTED), key=len)[::-1]
)
