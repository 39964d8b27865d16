"""Titles as the book writes them, normalised for labels: capitals (`A SCANDAL IN
BOHEMIA` → `A Scandal in Bohemia`), a closing period, Gutenberg's `_italics_`. The text
itself is never changed: these are for titles, heading paths and folder names.

What a title in capitals cannot tell (a name from a common word, `USA` from `Usa`, a
German noun from an adjective) is left to the word-by-word rule: each word capitalised,
the languages' small words in lower case. What it can tell is kept: roman numerals
(`LOUIS XIV`, `PART II`), elisions (`L'ÉTRANGER` → `L'Étranger`, `D'ARTAGNAN`,
`O'BRIEN`; `DON'T` stays `Don't`), a new start after a dash or a colon (`PART II.—THE
RETURN` → `Part II.—The Return`), `Mc` names. A hyphenated word keeps one capital
(`AVANT-PROPOS` → `Avant-propos`, as French writes it; `Monte-cristo` is the price).
"""

from __future__ import annotations

import re


def smart_title(text: str) -> str:
    """`A SCANDAL IN BOHEMIA` → `A Scandal in Bohemia`, `YOUTH — Æt. 1-25` → `Youth — Æt.
    1-25`: a title mostly in capitals gets its words in capitals capitalised (small words
    in lower case); a title in mixed case is kept as written."""
    text = " ".join(text.split()).strip()
    letters = [c for c in text if c.isalpha()]
    if not letters or sum(c.isupper() for c in letters) < 0.7 * len(letters):
        return text
    out: list[str] = []
    start = True  # the title's first word, or the first after a dash or a colon
    for w in text.split(" "):
        pieces = _DASHES.split(w)  # `II.—THE`: two words joined by a dash
        for k, piece in enumerate(pieces):
            if k % 2:
                out.append(piece)  # the dash itself
                start = True
                continue
            if piece:
                out.append(_word(piece, start))
                # a new start after a colon, or a numeral's period (`II. THE RETURN`), not
                # after an abbreviation's (`MR. AND MRS. SMITH`)
                numeral = _NUMERAL_DOT.match(piece) is not None
                start = piece.endswith((":", "!", "?")) or numeral
        out.append(" ")
    return "".join(out).strip()


_DASHES = re.compile(r"(—|–|--)")
_NUMERAL_DOT = re.compile(r"^(?:[IVXLC]+|\d+)\.$")


def _word(w: str, start: bool) -> str:
    """One word of a title in capitals, in title case."""
    if any(c.islower() for c in w):
        return w  # a word the book wrote in mixed case (`Æt.`, `McDonald`)
    core = w.strip("\"'“”‘’(«».,;:!?[]")
    if _is_roman(core):
        return w  # `XIV`, `II.`: a numeral, not a word
    m = _ELISION.match(w)
    if m and m.group("rest").strip("\"'“”‘’.,;:!?»)").lower() not in _CONTRACTIONS:
        # `L'ÉTRANGER`, `D'ARTAGNAN`, `DELL'AMORE`: the elided article is a small word
        # (capitalised first), what follows it a word of its own; `O'` is a name's
        head = m.group("head").lower()
        head = head.capitalize() if start or head == "o" else head
        return head + m.group("apos") + _word(m.group("rest"), False)
    lower = w.lower()
    if not start and core.lower() in _SMALL_WORDS:
        return lower
    if _MC.match(core):
        i = lower.index("mc")
        return lower[:i] + "Mc" + lower[i + 2].upper() + lower[i + 3 :]
    j = next((k for k, c in enumerate(lower) if c.isalpha()), None)
    return lower if j is None else lower[:j] + lower[j].upper() + lower[j + 1 :]


# A roman numeral as titles use them (chapters, kings, volumes): up to 399, so that a
# word in capitals that happens to be written with these letters (`MIX`, `DI`, `MI`,
# `CIVIL`, `LIVID`) stays a word
_ROMAN = re.compile(r"^C{0,3}(?:XC|XL|L?X{0,3})(?:IX|IV|V?I{0,3})$")


def _is_roman(word: str) -> bool:
    return len(word) > 1 and bool(_ROMAN.match(word))


# `L'`, `D'`, `DELL'`, `QU'`, `O'`, before the word they are elided into
_ELISION = re.compile(
    r"^(?P<head>[A-ZÀ-Ý]|DELL|DALL|NELL|SULL|ALL|COLL|QUELL|BELL|QU|UN|C)(?P<apos>['’])"
    r"(?P<rest>[A-ZÀ-Ý].*)$"
)
# English endings after an apostrophe: `DON'T`, `I'M`, `DUKE'S` stay one word
_CONTRACTIONS = frozenset(["s", "t", "ll", "re", "ve", "d", "m"])
_MC = re.compile(r"^MC[A-Z]{2,}$")

# Words a title in capitals keeps in lower case, in the languages of indexer.corpus.lang (`i`
# is left out: it is the English `I`)
_SMALL_WORDS = frozenset(
    " ".join(
        (
            "a an and as at but by for in of on or the to",  # en
            "de la le les du des et à au aux en un une sur par pour dans avec sans ou",  # fr
            "von und der die das den dem des zu im vom zum zur beim ein eine einer "
            "eines einem einen mit ohne aus bei nach über unter für gegen oder auf als wie",  # de
            "di da del della dei degli delle e il lo gli al dal nel con per uno una "
            "su tra fra sul sulla nella alla dalla dello",  # it
            "y el los las por o sin sobre",  # es
            "do dos das em no na um uma ao aos pelo pela com",  # pt
            "van het een op met voor aan uit te",  # nl
        )
    ).split()
)


def clean_title(text: str) -> str:
    text = text.strip().rstrip("]").strip()
    if text.endswith((".", ":")) and not text.endswith(".."):
        text = text[:-1].rstrip()  # (`NOTE:` over a book's endnotes is `Note`)
    if len(text) >= 2 and text[0] == text[-1] == "_":  # Gutenberg's italics
        text = text[1:-1].strip()
    return smart_title(text)


# Languages whose titles capitalise their first word only (and names): a heading that is
# a label and its number in words reads `Première partie`, `Libro primo`, `Primera
# parte`, `Eerste boek`; English and German keep title case (`Book the Second`, `Erstes
# Buch`)
SENTENCE_CASE = frozenset({"fr", "it", "es", "pt", "nl", "ca", "ro"})


def label_title(text: str, lang: str) -> str:
    """A heading that is only a label and its number (`LIVRE PREMIER`), as a title."""
    title = smart_title(text)
    if title == " ".join(text.split()) or lang not in SENTENCE_CASE:
        return title  # written in mixed case by the book, or a title-case language
    first, *rest = title.split(" ")
    return " ".join([first, *(w if _is_roman(w.strip(".")) else w.lower() for w in rest)])
