"""A plain-text book's own headings: `CHAPTER IV.`, `Letter 3`, `BOOK THE FIRST`, `XII.`, `PREFACE`.

`parse` reads one line; `find` decides which paragraphs of a book are headings
(text.py's docstring gives the rules). Every pattern is the book's convention, not
one book's: labels in the languages of indexer.corpus.lang, numbers roman, arabic or in
words (`ONE`, `the First`, `premier`), the title after a separator or on the
following lines.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Protocol, TypeVar

from indexer.corpus import lang as corpus_lang
from indexer.importers import numerals as importers_numerals
from indexer.importers.common import fold, roman_to_int
from indexer.importers.titles import clean_title as _clean_title

PART_WORDS = (
    "book", "part", "volume", "vol.", "tome", "livre", "partie", "teil", "buch", "band",
    "libro", "parte", "boek", "deel", "del", "osa", "часть", "книга", "épisode",
)  # fmt: skip
CHAPTER_WORDS = (
    "chapter", "chap.", "chapitre", "letter", "lettre", "kapitel", "brief", "capítulo",
    "capitulo", "capitolo", "capitol", "hoofdstuk", "kapittel", "luku", "rozdział",
    "глава", "stave", "canto", "chant", "section", "episode", "scene", "act",
    "capitel",  # German before its 1901 spelling (`Erstes Capitel`)
)  # fmt: skip
# (number words first: `dix-septième` is not the roman `DIX` and a title `-septième`)
_NUM = rf"(?:(?:the\s+)?(?:{importers_numerals.WORDS_RE})(?:[- ](?:{importers_numerals.WORDS_RE}))?(?![\w'’])|[ivxlcdm]+|\d{{1,4}})"
_LABELS = "|".join(re.escape(w) for w in sorted(PART_WORDS + CHAPTER_WORDS, key=len, reverse=True))
_LABELLED = re.compile(rf"^(?P<label>{_LABELS})\s+(?P<num>{_NUM})(?![\w'’])(?P<rest>.*)$", re.I)
_BARE = re.compile(r"^(?P<num>[IVXLCDM]+|\d{1,3})(?:(?P<sep>[.:)])\s*(?P<rest>.*)|\s*)$")
_SEP = re.compile(r"^\s*(?:[.:)\]]|[—–-]{1,2}|\s)\s*(?:[—–-]{1,2}\s*)?")
_LIMINARY = re.compile(
    r"^(?:the\s+)?(?:(?:author|translator|editor|publisher)['’]?s?\s+)?"
    # `by way of epilogue`, `por modo de epílogo`, `en guise de préface`, `a mo' di prefazione`
    r"(?:(?:by way of(?: an?)?|as an?|por modo de|a modo de|a manera de|en guise de|"
    r"en forme de|in guisa di|a mo['’] di|als|bij wijze van)\s+)?"
    # a second preface after the first: `POST-PRÓLOGO` (Unamuno's Niebla), `Post-scriptum`
    r"(?:post-?)?"
    r"(?:preface|pr[ée]face|foreword|introduction|prologue|prolog|epilogue|[ée]pilogue|"
    r"afterword|postface|conclusion|appendix|annexe|dedication|d[ée]dicace|avant-propos|"
    r"avertissement|vorwort|einleitung|nachwort|note|notice|to the reader|au lecteur|"
    r"pr[óo]logo|prefacio|prefazione|introducci[óo]n|introduzione|ep[íi]logo|"
    r"voorrede|voorwoord|inleiding|nawoord|opdracht|pref[áa]cio|introdu[çc][ãa]o|(?<=post)scriptum|(?<=post-)scriptum)"
    r"(?:\s+(?:to|of|for|by|de|du|à|zur|van|von|del|della|di|do|da)\b.{0,60})?\s*[.:]?$",
    re.IGNORECASE,
)
_PAGE_ENTRY = re.compile(r"\S.*?(?:\s{2,}|\.{3,}\s*)(?:\d{1,4}|[ivxlcdm]{1,7})$", re.IGNORECASE)
MAX_HEADING_CHARS = 100
# A labelled heading with its title in capitals on the same line may run longer (The
# Prince: `CHAPTER IV. WHY THE KINGDOM OF DARIUS, … AT HIS DEATH`, 118 characters)
MAX_CAPS_HEADING_CHARS = 200


def _too_long(text: str) -> bool:
    if len(text) <= MAX_HEADING_CHARS:
        return False
    letters = [c for c in text if c.isalpha()]
    return len(text) > MAX_CAPS_HEADING_CHARS or any(c.islower() for c in letters)


MAX_TITLE_CHARS = 100
# A chapter's argument as its title: up to this long (as `_argument_title` takes it)
MAX_ARGUMENT_CHARS = 300


@dataclass(frozen=True)
class Heading:
    kind: str  # "part", "chapter" or "piece"
    label: str | None  # the book's word, capitalised ("Chapter", "Letter"); None: bare number
    number: str | None  # "IV", "12"; None for a piece
    value: int | None  # the number's value
    title: str  # the heading's own title, "" when the book gives none on its line
    source: str  # the line as written
    # the running head before it: `Inferno` in `Inferno • Canto I` (its part's name)
    prefix: str = ""

    def with_title(self, title: str) -> Heading:
        return Heading(
            self.kind, self.label, self.number, self.value, title, self.source, self.prefix
        )

    @property
    def display(self) -> str:
        """The section's title: its own, else `Chapter IV` (label and number)."""
        if self.title:
            return self.title
        return f"{self.label or 'Chapter'} {self.number}" if self.number else self.source


def _number(raw: str) -> tuple[str, int] | None:
    raw = " ".join(raw.split())
    if raw.isdigit():
        return raw, int(raw)
    value = importers_numerals.word_number(raw)  # (first: `DIX` is ten, not the roman 509)
    if value is not None:
        return str(value), value
    value = roman_to_int(raw)
    return (raw.upper(), value) if value is not None else None


def parse(line: str, *, mixed: bool = False) -> Heading | None:
    """One line read as a heading, or None. `CHAPTER IV.`, `Letter 3`, `XII. TITLE`, `PREFACE`.

    `mixed`: a bare numeral may have a title in mixed case (`I. Mia moglie e il mio
    naso.`); only for a paragraph of one line (find's candidates), since inside running
    text `M. Dupont` or `V. Hugo` opens a line as often."""
    text = NOTE_CALL.sub("", " ".join(line.split())).rstrip("]").strip()
    if not text or _too_long(text):
        return None
    m = _LABELLED.match(text)
    if m:
        num = _number(m.group("num"))
        rest = m.group("rest")
        sep = _SEP.match(rest)
        title = rest[sep.end() :] if sep else rest
        if num is not None and (sep or not rest) and not title[:1].islower():
            word = m.group("label").rstrip(".")
            kind = (
                "part"
                if word.casefold() in PART_WORDS or word.casefold() + "." in PART_WORDS
                else "chapter"
            )
            label = word[:1].upper() + word[1:].lower()
            return Heading(kind, label, num[0], num[1], _clean_title(title), line.strip())
    m = importers_numerals.ORDINAL_FIRST.match(text)
    if m and m.group("label").casefold() in PART_WORDS + CHAPTER_WORDS:
        value = importers_numerals.word_number(m.group("num"))
        rest = m.group("rest")
        sep = _SEP.match(rest)
        title = rest[sep.end() :] if sep else rest
        word = m.group("label")
        kind = "part" if word.casefold() in PART_WORDS else "chapter"
        if value is not None and kind == "part" and _OF.match(rest) and not _SENTENCE.search(rest):
            # `Segunda parte del ingenioso caballero don Quijote de la Mancha`: the whole
            # line names the part
            label = word[:1].upper() + word[1:].lower()
            return Heading(kind, label, str(value), value, _clean_title(text), line.strip())
        if value is not None and (sep or not rest) and not title[:1].islower():
            label = word[:1].upper() + word[1:].lower()
            return Heading(kind, label, str(value), value, _clean_title(title), line.strip())
    m = _BARE.match(text)
    if m:
        num = _number(m.group("num"))
        # (`I. — MARSIGLIA — L’ARRIVO.`: a dash after the numeral's period is no title's)
        rest = _LEAD_DASH.sub("", (m.group("rest") or "").strip())
        # a bare numeral: alone, or followed by a separator and a title in capitals or
        # one in mixed case (`I. Mia moglie e il mio naso.`: Pirandello); find() keeps
        # bare numerals only in sequence, with text under each
        titled = bool(m.group("sep")) and (rest.upper() == rest or (mixed and _bare_title(rest)))
        if num is not None and (not rest or titled):
            if rest and not any(c.isalpha() for c in rest):
                return None
            return Heading("chapter", None, num[0], num[1], _clean_title(rest), line.strip())
    if _LIMINARY.match(fold(text)):
        return Heading("piece", None, None, None, _clean_title(text), line.strip())
    m = _RUNNING_HEAD.match(text)
    if m:  # `Inferno • Canto I` (Gutenberg #1012): the part's name, a bullet, the heading
        h = parse(m.group("rest"))
        if h is not None and h.label is not None and h.kind in ("chapter", "part"):
            return Heading(h.kind, h.label, h.number, h.value, h.title, line.strip(),
                           m.group("prefix").strip())  # fmt: skip
    return None


_LEAD_DASH = re.compile(r"^[—–-]{1,2}\s*")
# A mixed-case title after a bare numeral (`II. E il vostro naso?`): a short line opening
# with a capital, not a sentence that goes on (a comma, semicolon or colon at its end),
# of a heading's length in words (Pirandello's run to 9; a numbered sentence of the text
# runs longer)
MAX_BARE_TITLE_WORDS = 12


def _bare_title(rest: str) -> bool:
    return (
        rest[:1].isupper()
        and len(rest.split()) <= MAX_BARE_TITLE_WORDS
        and not rest.rstrip().endswith((",", ";", ":"))
    )


# A part's name before a labelled heading, set off by a bullet or a bar (not a dash: `Title
# — Chapter` is rare, `Chapter 3 — Title` common): short, starting with a letter
_RUNNING_HEAD = re.compile(r"^(?P<prefix>[^\W\d_][^•·|]{0,39}?)\s+[•·|]\s+(?P<rest>\S.*)$")
# a note's call at the end of a heading: `VOORREDE VAN DEN UIL [1]` (Uilenspiegel)
NOTE_CALL = re.compile(r"\s*\[\d{1,3}\]$")
_SENTENCE = re.compile(r"[.!?;:,]\s*$")  # a heading ends without a sentence's full stop
# `del`, `de la`, `of`…: a part heading whose number is followed by what it is part of
# (not English `of`: `The first part of this deposition…` opens a sentence in Frankenstein)
_OF = re.compile(r"^\s+(?:del|de|della|dello|di|du|des|van|von|do|da|dos|das)\s", re.I)


def part_and_chapter(line: str) -> tuple[str, str] | None:
    """`LIVRE PREMIER--CHAPITRE PREMIER` (a book's first chapter under its part's heading,
    on one line: Gutenberg's Don Quichotte, #42524): the part's words and the chapter's,
    else None."""
    text = " ".join(line.split())
    m = _LABELLED.match(text)
    if m is None or m.group("label").casefold().rstrip(".") not in {
        w.rstrip(".") for w in PART_WORDS
    }:
        return None
    rest = m.group("rest")
    sep = _SEP.match(rest)
    if sep is None or not sep.group().strip():
        return None  # (a separator that is a space only: `Book I Chapter 1` is too loose)
    h = parse(rest[sep.end() :])
    if h is None or h.kind != "chapter" or h.label is None:
        return None
    return text[: m.start("rest")].strip(), rest[sep.end() :].strip()


def is_page_list(lines: list[str]) -> bool:
    """A list of entries with page numbers (a table of contents, a list of illustrations)."""
    return len(lines) >= 2 and all(_PAGE_ENTRY.fullmatch(x.strip()) for x in lines)


class Para(Protocol):
    lines: list[str]
    line: int


_P = TypeVar("_P", bound=Para)


def drop_page_lists(paras: list[_P], notes: list[str] | None = None) -> list[_P]:
    """Paragraphs without lists of page-numbered entries (contents, illustrations): a
    paragraph of such lines, or a run of 3 or more one-line paragraphs of them, and the
    lone `PAGE` / `CONTENTS` line heading such a list; each list left out said in `notes`."""
    entry = [all(_PAGE_ENTRY.fullmatch(x.strip()) for x in p.lines) for p in paras]
    drop = [e and len(p.lines) >= 2 for e, p in zip(entry, paras, strict=True)]
    i = 0
    while i < len(paras):
        j = i
        while j < len(paras) and entry[j]:
            j += 1
        if j - i >= 3:
            for k in range(i, j):
                drop[k] = True
        i = max(j, i + 1)
    for k, _p in enumerate(paras):
        if drop[k] and k > 0 and _LIST_TITLE.match(" ".join(paras[k - 1].lines).strip()):
            drop[k - 1] = True
    if notes is not None:
        notes.extend(_page_list_notes(paras, drop))
    return [p for p, d in zip(paras, drop, strict=True) if not d]


def _page_list_notes(paras: Sequence[Para], drop: list[bool]) -> list[str]:
    out = []
    k = 0
    while k < len(paras):
        if not drop[k]:
            k += 1
            continue
        j = k
        while j < len(paras) and drop[j]:
            j += 1
        entries = [x for p in paras[k:j] for x in p.lines if _PAGE_ENTRY.fullmatch(x.strip())]
        first = " ".join(paras[k].lines).strip()
        title = f" {first!r}" if _LIST_TITLE.match(first) else ""
        last = paras[j - 1].line + len(paras[j - 1].lines) - 1
        out.append(
            f"left out the list with page numbers{title} ({len(entries)} entries, "
            f"lines {paras[k].line}-{last})"
        )
        k = j
    return out


_LIST_TITLE = re.compile(
    r"^(?:page|pages|contents|table of contents|list of illustrations|illustrations|"
    r"table des mati[eè]res|sommaire|inhalt|inhaltsverzeichnis|[íi]ndice)\.?$",
    re.IGNORECASE,
)


@dataclass
class Found:
    index: int  # paragraph of the heading
    heading: Heading
    consumed: int  # paragraphs it takes (2: its title is the next paragraph)


def _caps_title(para: Para) -> str | None:
    """The paragraph as a chapter title: short, in capitals, not a heading itself."""
    text = " ".join(x.strip() for x in para.lines)
    letters = [c for c in text if c.isalpha()]
    if len(para.lines) > 2 or len(text) > MAX_TITLE_CHARS or len(letters) < 2:
        return None
    if any(c.islower() for c in letters) or parse(para.lines[0]) is not None:
        return None
    return text


def _candidate(paras: Sequence[Para], i: int) -> Found | None:
    para = paras[i]
    if len(para.lines) > 4 or _too_long(para.lines[0].strip()):
        return None
    h = parse(para.lines[0], mixed=len(para.lines) == 1)
    if h is None:
        return None
    lines = para.lines
    again = 0  # `CHAPITRE II.` / `II`: the numeral again under its labelled heading
    if len(lines) > 1 and _repeats(lines[1], h):
        lines = [lines[0], *lines[2:]]
    elif len(lines) == 1 and i + 1 < len(paras) and len(paras[i + 1].lines) == 1:
        again = int(_repeats(paras[i + 1].lines[0], h))
    rest = [x.strip() for x in lines[1:]]
    if sum(parse(x) is not None for x in lines) >= 2:
        return None  # several headings in one paragraph: a table of contents
    if h.kind == "piece":
        return Found(i, h, 1) if not rest else None
    if rest:  # the title continues (or is) on the next lines of the same paragraph
        # a numeral alone over one long line: that line is the chapter's argument, its
        # title (Pinocchio's run to 187 characters, unwrapped as Liber Liber's files are)
        argument = not h.title and len(rest) == 1 and len(rest[0]) <= MAX_ARGUMENT_CHARS
        if len(rest) > 3 or (any(len(x) > MAX_TITLE_CHARS for x in rest) and not argument):
            return None
        if any(x[:1].islower() for x in rest) and not h.title:
            return None
        if h.title and not any(c.islower() for x in [lines[0], *rest] for c in x):
            # a title in capitals over several lines (`BOOK I. OF THE CAUSES … LABOUR,` /
            # `AND OF THE ORDER …`): one title, its case normalised as a whole
            title = " ".join([h.title.upper(), *rest])
        else:
            title = " ".join([h.title, *rest]).strip() if h.title else " ".join(rest)
        return Found(i, h.with_title(_clean_title(title)), 1)
    k = i + 1 + again
    if not h.title and k < len(paras):
        caps = _caps_title(paras[k])
        if caps is not None and not (k + 1 < len(paras) and _caps_title(paras[k + 1])):
            return Found(i, h.with_title(_clean_title(caps)), 2 + again)
    return Found(i, h, 1 + again)


def _repeats(line: str, h: Heading) -> bool:
    """Is this line the labelled heading's numeral alone again (`CHAPITRE II.` / `II`:
    Verne's Deux ans de vacances as found)?"""
    r = parse(line)
    return (
        h.label is not None
        and h.kind == "chapter"
        and not h.title  # (`Tome I (1845-1846)` / `I`: a volume's title page, then chapter I)
        and r is not None
        and r.label is None
        and r.kind == "chapter"
        and not r.title
        and r.value == h.value
    )


def _words(paras: Sequence[Para]) -> int:
    return sum(len(x.split()) for p in paras for x in p.lines)


def _bare_sequence(found: list[Found], listed: Collection[int] = ()) -> list[Found]:
    """Bare numerals count only in sequence: 1, 2, 3… (again from 1 in a new part), of
    three at least, or fewer when the contents list names each of them (an excerpt of
    Madame Bovary: `I`, `II` under `PREMIÈRE PARTIE`, listed in its `Table des
    matières`)."""
    bare = [f for f in found if f.heading.label is None and f.heading.kind == "chapter"]
    kept: set[int] = set()
    previous = 0
    for f in bare:
        value = f.heading.value or 0
        if value == previous + 1 or (value == 1 and previous > 0):
            kept.add(f.index)
            previous = value
    if len(kept) < 3 and not kept <= set(listed):
        kept = set()
    return [f for f in found if f not in bare or f.index in kept]


def find(paras: Sequence[Para], listed: Collection[int] = ()) -> list[Found]:
    """The headings of a book's paragraphs, in order (text.py's rules 3 and 4).

    `listed`: paragraphs that repeat an entry of the book's contents list: headings
    too (an unnumbered one is a piece), or the title of the heading just before them."""
    found: list[Found] = []
    i = 0
    while i < len(paras):
        f = _candidate(paras, i)
        if f is not None:
            found.append(f)
            i += f.consumed
        else:
            i += 1
    found = _with_unnamed_parts(found, paras)
    labelled = any(f.heading.label and f.heading.kind == "chapter" for f in found)
    if labelled:  # labelled chapters: a bare numeral is a sub-division or a list, text
        found = [f for f in found if f.heading.label is not None or f.heading.kind != "chapter"]
    else:
        found = _bare_sequence(found, listed)
    found = _in_the_books_numerals(_with_running_parts(found, paras))
    found = _with_listed(found, paras, listed)
    return _with_line_titles(_without_contents(found, paras), paras)


def _with_unnamed_parts(found: list[Found], paras: Sequence[Para]) -> list[Found]:
    """`Erstes Welttheater: Süd-Amerika.` / `Erstes Kapitel: Der Hammerhai.` (Verne's Die
    Kinder des Kapitäns Grant as found): an ordinal before a word that is no label we know,
    a separator and a title, on a line of its own just above a labelled first chapter,
    opens a part (its word is the book's own for one)."""
    covered = {f.index + k for f in found for k in range(f.consumed)}
    out = list(found)
    for f in found:
        h, k = f.heading, f.index - 1
        if h.kind != "chapter" or h.label is None or h.value != 1 or k < 0 or k in covered:
            continue
        if len(paras[k].lines) != 1:
            continue
        line = " ".join(paras[k].lines[0].split())
        m = importers_numerals.ORDINAL_FIRST.match(line)
        value = importers_numerals.word_number(m.group("num")) if m else None
        if m is None or value is None:
            continue
        rest = m.group("rest")
        if rest.lstrip()[:1] not in (":", ".", "—", "–"):
            continue  # (`Erstes Mal sah er…`: a sentence)
        sep = _SEP.match(rest)
        title = _clean_title(rest[sep.end() :] if sep else rest)
        if not title[:1].isalpha() or title[:1].islower():
            continue  # a part of this kind is named (not `First Edition.`, `Second: 1851`)
        word = m.group("label")
        label = word[:1].upper() + word[1:].lower()
        out.append(Found(k, Heading("part", label, str(value), value, title, line), 1))
    return sorted(out, key=lambda f: f.index)


def _in_the_books_numerals(found: list[Found]) -> list[Found]:
    """`Capítulo primero` among `Capítulo II`, `Capítulo III`… (Don Quijote): a number in
    words takes the book's numerals, roman when it writes roman ones and no digits."""
    numbered = [f for f in found if f.heading.kind == "chapter" and f.heading.number]
    roman = [f for f in numbered if roman_to_int(f.heading.number or "") is not None]
    if not roman or any(_digits(f.heading.source) for f in numbered):
        return found
    out = []
    for f in found:
        h = f.heading
        if h.kind == "chapter" and h.number and h.number.isdigit() and not _digits(h.source):
            h = Heading(h.kind, h.label, _roman(int(h.number)), h.value, h.title, h.source,
                        h.prefix)  # fmt: skip
        out.append(Found(f.index, h, f.consumed))
    return out


def _digits(text: str) -> bool:
    return any(c.isdigit() for c in text)


def _roman(value: int) -> str:
    out = ""
    for n, letters in ((1000, "M"), (900, "CM"), (500, "D"), (400, "CD"), (100, "C"),
                       (90, "XC"), (50, "L"), (40, "XL"), (10, "X"), (9, "IX"), (5, "V"),
                       (4, "IV"), (1, "I")):  # fmt: skip
        while value >= n:
            out += letters
            value -= n
    return out


def _with_running_parts(found: list[Found], paras: Sequence[Para]) -> list[Found]:
    """`INFERNO` / `Inferno • Canto I` … `PURGATORIO` / `Purgatorio • Canto I`: the line
    alone before the first heading that carries it as its running head opens a part
    (Gutenberg's Divina Commedia, #1012: its cantiche have no label of their own)."""
    out = list(found)
    seen: set[str] = set()
    for n, f in enumerate(found):
        key = _key(f.heading.prefix)
        if not key or key in seen:
            continue
        seen.add(key)
        floor = found[n - 1].index + found[n - 1].consumed if n else 0
        for k in range(f.index - 1, floor - 1, -1):
            lines = paras[k].lines
            if len(lines) == 1 and _key(lines[0]) == key:
                text = lines[0].strip()
                out.append(Found(k, Heading("part", None, None, None, _clean_title(text), text), 1))
                break
    return sorted(out, key=lambda f: f.index)


def _key(text: str) -> str:
    return " ".join(re.sub(r"[^a-z0-9]+", " ", fold(text).lower()).split())


def _with_listed(found: list[Found], paras: Sequence[Para], listed: Collection[int]) -> list[Found]:
    covered = {f.index + k for f in found for k in range(f.consumed)}
    out = list(found)
    for i in sorted(set(listed) - covered):
        text = " ".join(x.strip() for x in paras[i].lines)
        before = next((n for n, f in enumerate(out) if f.index + f.consumed == i), None)
        if before is not None and not out[before].heading.title:
            f = out[before]  # `I.` / `La partenza`: the entry names the chapter
            out[before] = Found(f.index, f.heading.with_title(_clean_title(text)), f.consumed + 1)
            continue
        out.append(Found(i, Heading("piece", None, None, None, _clean_title(text), text), 1))
    return sorted(out, key=lambda f: f.index)


# A title line after a blank line is the book's convention only if most untitled
# chapters have one: then `CHAPTER I` / `The Period` / text. One chapter whose text
# opens with a short line is not enough to take that line from the text.
_TITLE_END = re.compile(r"[.,;:!?…—\-\"”’»)]$")


def _line_title(para: Para) -> str | None:
    if len(para.lines) != 1:
        return None
    text = para.lines[0].strip().strip("_").strip()
    if not text or len(text) > 70 or _TITLE_END.search(text) or not text[:1].isupper():
        return None
    return None if parse(text) is not None else text


CLOSED_TITLES_SHARE = 0.8
MAX_CLOSED_TITLE_CHARS = 60


def _closed_title(para: Para) -> str | None:
    """`Do titulo.`, `Um dever amarissimo!`: one short line, capitalised, ending a sentence."""
    if len(para.lines) != 1:
        return None
    text = para.lines[0].strip().strip("_").strip()
    if not text[:1].isupper() or len(text) > MAX_CLOSED_TITLE_CHARS or text[-1:] not in ".!?":
        return None
    return None if parse(text) is not None else text


def _gap(paras: Sequence[Para], k: int) -> int:
    """Blank lines between paragraph k and the next."""
    return paras[k + 1].line - (paras[k].line + len(paras[k].lines))


def _argument_title(paras: Sequence[Para], k: int, usual_gap: int) -> str | None:
    """A chapter's argument as its title (`I.` / `Come andò che Maestro Ciliegia… come un
    bambino.` / text): a short paragraph set apart by more blank lines than the book puts
    between its paragraphs; in a file without blank lines, one short line."""
    p = paras[k]
    text = " ".join(x.strip() for x in p.lines).strip("_ ")
    if (
        len(text) > MAX_ARGUMENT_CHARS
        or len(p.lines) > 4
        or not text[:1].isupper()
        or k + 1 >= len(paras)
    ):
        return None
    if parse(p.lines[0]) is not None:
        return None
    if usual_gap >= 1 and _gap(paras, k) > usual_gap:
        return text
    if usual_gap >= 1 and k > 0 and _gap(paras, k - 1) == 0 and _gap(paras, k) >= usual_gap:
        # glued to its numeral (no blank line between them) in a book whose paragraphs
        # are set apart by blank lines: one heading (`I` / its argument, one paragraph a
        # line as in Liber Liber's unwrapped files)
        return text
    if usual_gap == 0 and len(p.lines) == 1 and len(text) <= 200:
        return text
    return None


def _with_line_titles(found: list[Found], paras: Sequence[Para]) -> list[Found]:
    untitled = [
        (n, f) for n, f in enumerate(found) if f.heading.kind == "chapter" and not f.heading.title
    ]
    # the book's usual gap between two paragraphs of text (not around a heading or title)
    near = {f.index + d for f in found for d in (-1, 0, 1)}
    gaps = sorted(
        _gap(paras, k) for k in range(len(paras) - 1) if k not in near and k + 1 not in near
    )
    usual_gap = gaps[len(gaps) // 2] if gaps else 1
    titles = {}
    for n, f in untitled:
        nxt = f.index + f.consumed  # (after `CHAPITRE II.` / `II`, both the heading's)
        end = found[n + 1].index if n + 1 < len(found) else len(paras)
        if nxt + 1 < end:  # a title needs text after it
            title = _line_title(paras[nxt]) or _argument_title(paras, nxt, usual_gap)
            if title is not None:
                titles[n] = title
    if len(titles) < 2 or len(titles) < 0.6 * len(untitled):
        titles = {}
    # A short line closed by a full stop (`II.` / `Do livro.` / text: Dom Casmurro) reads
    # like a chapter's first sentence: a title only when nearly every untitled chapter
    # opens with one (CLOSED_TITLES_SHARE), the book's convention beyond doubt
    closed = {
        n: t
        for n, f in untitled
        if f.index + f.consumed + 1 < (found[n + 1].index if n + 1 < len(found) else len(paras))
        and (t := _closed_title(paras[f.index + f.consumed])) is not None
    }
    if not titles and len(closed) >= 3 and len(closed) >= CLOSED_TITLES_SHARE * len(untitled):
        titles = closed
    # A part heading whose only paragraph before the next heading is a title-like
    # line (`PART ONE` / `The Departure` / `CHAPTER I.`): that line is the part's
    # title, whatever the rest of the book does: no text is taken from a chapter.
    for n, f in enumerate(found):
        if f.heading.kind != "part" or f.heading.title or f.consumed != 1:
            continue
        end = found[n + 1].index if n + 1 < len(found) else len(paras)
        if end == f.index + 2:
            title = _line_title(paras[f.index + 1])
            if title is not None:
                titles[n] = title
    out = list(found)
    for n, title in titles.items():
        f = found[n]
        out[n] = Found(f.index, f.heading.with_title(_clean_title(title)), f.consumed + 1)
    return out


def _without_contents(found: list[Found], paras: Sequence[Para]) -> list[Found]:
    """Drop runs of 3 or more headings with next to no text between them (a contents list)."""
    short = []
    for n, f in enumerate(found):
        end = found[n + 1].index if n + 1 < len(found) else len(paras)
        short.append(_words(paras[f.index + f.consumed : end]) < 30)
    out: list[Found] = []
    n = 0
    while n < len(found):
        m = n
        while m < len(found) and short[m]:
            m += 1
        run = found[n:m]
        if len([f for f in run if f.heading.kind != "part"]) >= 3 and m - n >= 3:
            # a contents list: none of these opens a chapter, but the part headings that
            # end the run open the book's first part (its chapter follows with text)
            tail = len(run)
            while m < len(found) and tail > 0 and run[tail - 1].heading.kind == "part":
                tail -= 1
            out.extend(run[tail:])
            n = m
            continue
        if m > n:
            out.extend(run)
            n = m
            continue
        out.append(found[n])
        n += 1
    return out


def label_meta(h: Heading, lang: str) -> dict[str, str]:
    """`{"label": "Letter"}` when the book's word is not the language's word for a chapter."""
    if h.kind != "chapter" or h.label is None:
        return {}
    if h.label.casefold() in ("chap", corpus_lang.labels(lang).chapter.casefold()):
        return {}
    return {"label": h.label}
