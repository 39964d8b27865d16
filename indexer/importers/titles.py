"""Titles as the book writes them, normalised for labels: capitals (`A SCANDAL IN
BOHEMIA` → `A Scandal in Bohemia`), a closing period, Gutenberg's `_italics_`. The text
itself is never changed: these are for titles, heading paths and folder names.
"""

from __future__ import annotations


def smart_title(text: str) -> str:
    """`A SCANDAL IN BOHEMIA` → `A Scandal in Bohemia`, `YOUTH — Æt. 1-25` → `Youth — Æt.
    1-25`: a title mostly in capitals gets its words in capitals capitalised (small words
    in lower case); a title in mixed case is kept as written."""
    text = " ".join(text.split()).strip()
    letters = [c for c in text if c.isalpha()]
    if not letters or sum(c.isupper() for c in letters) < 0.7 * len(letters):
        return text
    out = []
    for i, w in enumerate(text.split(" ")):
        if any(c.islower() for c in w):
            out.append(w)  # a word the book wrote in mixed case (`Æt.`, `McDonald`)
            continue
        w = w.lower()
        core = w.strip("\"'“”‘’(«»")
        if i and core in _SMALL_WORDS:
            out.append(w)
            continue
        j = next((k for k, c in enumerate(w) if c.isalpha()), None)
        out.append(w if j is None else w[:j] + w[j].upper() + w[j + 1 :])
    return " ".join(out)


# Words a title in capitals keeps in lower case, in the languages of indexer.lang
_SMALL_WORDS = frozenset(
    " ".join(
        (
            "a an and as at but by for in of on or the to",  # en
            "de la le les du des et à au aux en",  # fr
            "von und der die das den dem zu im am",  # de
            "di da del della dei degli delle e il lo gli al dal nel con per",  # it
            "y el los las por",  # es
            "do dos das em no na",  # pt
            "van het een op",  # nl
        )
    ).split()
)


def clean_title(text: str) -> str:
    text = text.strip().rstrip("]").strip()
    if text.endswith(".") and not text.endswith(".."):
        text = text[:-1].rstrip()
    if len(text) >= 2 and text[0] == text[-1] == "_":  # Gutenberg's italics
        text = text[1:-1].strip()
    return smart_title(text)
