"""Numbers written as words in chapter headings: `ONE`, `twenty-three`, `the First`,
`premier`, `Zweites`, `primo`, `primero`, `primeiro`, `eerste`. English cardinals and
ordinals; French, German, Italian, Spanish, Portuguese and Dutch ordinals 1-20 (the ones
headings use: `Capitolo primo`, `Capítulo segundo`, `Eerste hoofdstuk`); anything else is
roman or arabic (headings.py).
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
    # (`Livre onzième`, `Chapitre vingtième`: the ordinals past the tenth)
    "onzieme": 11, "douzieme": 12, "treizieme": 13, "quatorzieme": 14, "quinzieme": 15,
    "seizieme": 16, "dix-septieme": 17, "dix-huitieme": 18, "dix-neuvieme": 19,
    "vingtieme": 20,
}  # fmt: skip


def _ordinals(words: str) -> dict[str, int]:
    return {w: n for n, group in enumerate(words.split(), start=1) for w in group.split("/")}


# ordinals 1-20 as chapter headings write them (masculine/feminine forms joined by /),
# accents folded (`fold`): `vigésimo` is looked up as `vigesimo`
_ROMANCE_DUTCH = {
    **_ordinals(
        "primo/prima secondo/seconda terzo/terza quarto/quarta quinto/quinta sesto/sesta "
        "settimo/settima ottavo/ottava nono/nona decimo/decima undicesimo/undicesima "
        "dodicesimo/dodicesima tredicesimo/tredicesima quattordicesimo/quattordicesima "
        "quindicesimo/quindicesima sedicesimo/sedicesima diciassettesimo/diciassettesima "
        "diciottesimo/diciottesima diciannovesimo/diciannovesima ventesimo/ventesima"
    ),  # it
    **_ordinals(
        "primero/primera segundo/segunda tercero/tercera cuarto/cuarta quinto/quinta "
        "sexto/sexta septimo/septima octavo/octava noveno/novena decimo/decima "
        "undecimo/undecima duodecimo/duodecima decimotercero/decimotercera "
        "decimocuarto/decimocuarta decimoquinto/decimoquinta decimosexto/decimosexta "
        "decimoseptimo/decimoseptima decimoctavo/decimoctava decimonoveno/decimonovena "
        "vigesimo/vigesima"
    ),  # es
    **_ordinals(
        "primeiro/primeira segundo/segunda terceiro/terceira quarto/quarta quinto/quinta "
        "sexto/sexta setimo/setima oitavo/oitava nono/nona decimo/decima"
    ),  # pt
    **_ordinals(
        "eerste tweede derde vierde vijfde zesde zevende achtste negende tiende elfde "
        "twaalfde dertiende veertiende vijftiende zestiende zeventiende achttiende "
        "negentiende twintigste"
    ),  # nl
}


def word_number(text: str) -> int | None:
    """`ONE` → 1, `twenty-three` → 23, `the First` → 1, `premier` → 1, `primo` → 1; else None."""
    if text.strip().lower() in _GERMAN:
        return _GERMAN[text.strip().lower()]
    t = fold(text).lower().strip().removeprefix("the ").strip()
    if t in _FRENCH:
        return _FRENCH[t]
    if t in _ROMANCE_DUTCH:
        return _ROMANCE_DUTCH[t]
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
# German ordinals 1-99 as headings write them before the label (`Erstes Kapitel`,
# `Dreiundzwanzigstes Capitel`: Verne's 20000 Meilen unter den Meeren as found),
# each stem with the endings `-es`, `-er`, `-e`
_GERMAN_UNITS = {
    "ein": 1, "zwei": 2, "drei": 3, "vier": 4, "fünf": 5, "sechs": 6, "sieben": 7,
    "acht": 8, "neun": 9,
}  # fmt: skip
_GERMAN_STEMS = {
    "erst": 1, "zweit": 2, "dritt": 3, "viert": 4, "fünft": 5, "sechst": 6, "siebent": 7,
    "siebt": 7, "acht": 8, "neunt": 9, "zehnt": 10, "elft": 11, "zwölft": 12,
    "dreizehnt": 13, "vierzehnt": 14, "fünfzehnt": 15, "sechzehnt": 16, "siebzehnt": 17,
    "siebenzehnt": 17, "achtzehnt": 18, "neunzehnt": 19,
}  # fmt: skip
_GERMAN_TENS = {
    "zwanzigst": 20, "dreißigst": 30, "dreissigst": 30, "vierzigst": 40, "fünfzigst": 50,
    "sechzigst": 60, "siebzigst": 70, "siebenzigst": 70, "achtzigst": 80, "neunzigst": 90,
}  # fmt: skip
for _tens, _t in list(_GERMAN_TENS.items()):
    _GERMAN_STEMS[_tens] = _t
    for _unit, _u in _GERMAN_UNITS.items():
        _GERMAN_STEMS[f"{_unit}und{_tens}"] = _t + _u
_GERMAN = {stem + end: n for stem, n in _GERMAN_STEMS.items() for end in ("es", "er", "e")}
# Ordinals 1-10 as they stand before a part word in the Romance languages (`Primera parte
# del ingenioso hidalgo…`: Cervantes, Gutenberg #2000; `Prima parte`, `Première partie`,
# `Segunda parte`), accents as written
_ROMANCE_BEFORE = [
    "primera", "primer", "primero", "segunda", "segundo", "tercera", "tercero", "cuarta",
    "cuarto", "quinta", "quinto",  # es
    "prima", "primo", "seconda", "secondo", "terza", "terzo", "quarta", "quarto",  # it
    "primeira", "primeiro", "terceira", "terceiro",  # pt
    "première", "premier", "deuxième", "seconde", "second", "troisième", "quatrième",
    "cinquième",  # fr
]  # fmt: skip
# "Erstes Kapitel", "Zweiter Teil", "The First Chapter", "Primera parte": the number
# before the label
ORDINAL_FIRST = re.compile(
    r"^(?:the\s+)?(?P<num>"
    + "|".join(sorted(_GERMAN, key=len, reverse=True))
    + "|"
    + "|".join(_ORDINALS[1:])
    + "|"
    + "|".join(
        sorted(
            _ordinals("eerste tweede derde vierde vijfde zesde zevende achtste negende tiende"),
            key=len,
            reverse=True,
        )
    )
    + "|"
    + "|".join(sorted(set(_ROMANCE_BEFORE), key=len, reverse=True))
    + r")\s+(?P<label>[^\W\d_]+)(?P<rest>.*)$",
    re.IGNORECASE,
)
_ACCENTED_ROMANCE = ["vigésimo", "vigésima", "séptimo", "séptima", "décimo", "décima", "sétimo",
                     "sétima", "undécimo", "undécima", "duodécimo", "duodécima"]  # fmt: skip
WORDS_RE = "|".join(
    sorted(
        set(_ONES[1:] + _TENS[2:] + _ORDINALS[1:] + list(_FRENCH) + _ACCENTED)
        | set(_ROMANCE_DUTCH)
        | set(_ACCENTED_ROMANCE),
        key=len,
    )[::-1]
)
