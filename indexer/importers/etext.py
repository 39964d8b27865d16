"""E-texts as found: what a plain-text book carries besides the author's text, and where
its paragraphs are when it has no blank lines.

The shapes, from the e-texts of Project Gutenberg, Liber Liber, Wikisource's exports and
Projekt Gutenberg-DE (tests/fixtures/etexts/SOURCES.md names the ones tested):

- paragraphs: a blank line between them (the norm), or none at all: one paragraph a
  line (Liber Liber, Wikisource: lines of hundreds of characters), or hard-wrapped lines
  whose paragraphs end on a short line (`infer_paragraphs`);
- boilerplate that is not the book: licence blocks (Gutenberg's without its START/END
  markers, Liber Liber's `QUESTO E-BOOK:` card and its closing appeal, Wikisource's
  `about this edition` page), colophons and transcriber's notes (`boilerplate`);
- a contents list under its own title (`Indice`, `Inhalt`, `Table des matières`,
  `Contents`, `Índice`, `Inhoud`…): its entries are not chapters (`contents_blocks`), but
  an entry seen again in the body marks a heading there (`text.py` uses them);
- a title page whose author line is not the title: `Con gli occhi chiusi / di / Federigo
  Tozzi`, `by Mary Shelley`, `von Theodor Storm` (`title_and_author`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Generic, Protocol, TypeVar

from indexer.importers.common import fold

# A line this long is a paragraph of its own, never a wrapped line: typesetters and
# Gutenberg wrap at 60-80 columns (their guideline says under 80).
UNWRAPPED_LINE = 120
# Blocks of this many lines on average, without a blank line: a file without paragraph
# breaks (a paragraph of prose runs 3 to 8 lines at Gutenberg's 70 columns).
LONG_BLOCK_LINES = 12

_CONTENTS_TITLE = re.compile(
    # (`TABLE` alone: French printers' contents at the end of a volume)
    r"^(?:contents|table of contents|list of contents|table des mati[eè]res|sommaire|table|"
    r"table des chapitres|table analytique|"
    r"inhalt|inhaltsverzeichnis|indice|[íi]ndice|indice generale|sommario|inhoud|"
    r"inhoudsopgave|sum[áa]rio|contenido|tabla de contenido|innehall|innhold|indhold)"
    r"\s*[.:]?$",
    re.IGNORECASE,
)
# Licence blocks and colophons: a paragraph that opens with one of these starts a block
# that is not the author's (each names the publisher whose convention it is).
_BOILERPLATE = re.compile(
    r"^(?:"
    # Project Gutenberg without its START/END markers (older files, copies of copies)
    r"\**\s*end of (?:the |this )?project gutenberg|the project gutenberg e-?book of|"
    r"project gutenberg'?s? |this e-?book is for the use of anyone anywhere|"
    r"(?:\*\*\*\s*)?start: full license|updated editions will replace the previous one|"
    # Liber Liber (liberliber.it): the card before the text and the appeal after it
    r"questo e-?book [eè] stato realizzato|questo e-book:|liber liber\b|"
    r"se questo libro ti [eè] piaciuto|aiutaci a realizzarne altri|www\.liberliber\.it|"
    # Wikisource's exports (ws-export's about page), in its languages
    r"informazioni su questa edizione elettronica|about this digital edition|"
    r"[àa] propos de cette [ée]dition [ée]lectronique|ce livre num[ée]rique est issu|"
    r"this e-?book comes from the online library wikisource|"
    r"[üu]ber diese digitale ausgabe|dieses e-?book stammt aus|"
    # Projekt Gutenberg-DE
    r"projekt gutenberg-de|"
    # transcribers' notes, in the languages of indexer.corpus.lang
    r"\[?transcriber'?s'? notes?|\[?note de transcription|\[?nota del trascrittore|"
    r"\[?anmerkungen? zur transkription|\[?nota del transcriptor|\[?nota de transcri[çc][ãa]o|"
    r"\[?nota de transcripci[óo]n|"
    # the transcriber's table of the characters the file uses (Gutenberg's Divina
    # Commedia, #1012: `TAVOLA DEI CARATTERI SPECIALI / TABLE OF SPECIAL CHARACTERS`)
    r"(?:table|list) of (?:special )?characters|tavola dei caratteri|"
    r"table des caract[eè]res|tabla de caracteres"
    r")",
    re.IGNORECASE,
)
# Liber Liber's card: `TITOLO: …`, `AUTORE: …`; Gutenberg's header: `Title:`, `Author:`
_FIELD = re.compile(
    r"^(?P<key>titolo|autore|title|author|titel|autor|titre|auteur|t[íi]tulo)\s*:\s*(?P<value>.+?)\s*$",
    re.IGNORECASE,
)
_FIELD_KEYS = {
    "titolo": "title", "title": "title", "titel": "title", "titre": "title",
    "titulo": "title", "título": "title", "autore": "author", "author": "author",
    "autor": "author", "auteur": "author",
}  # fmt: skip
# The word that introduces the author on a title page
_BY = re.compile(r"^(?:by|di|von|par|de|door|af|av|por|d[ae]|of)\b\.?\s*(?P<rest>.*)$", re.I)


def infer_paragraphs(blocks: list[list[str]]) -> list[list[list[str]]]:
    """Each blank-line block as its paragraphs: itself when the file has paragraph breaks;
    one a line when its lines are that long; else split after a short line."""
    lengths = sorted(len(x.rstrip()) for b in blocks for x in b)
    if not lengths:
        return []
    p90 = lengths[int(len(lengths) * 0.9)]
    unwrapped = p90 >= UNWRAPPED_LINE
    # a file with blank lines between its paragraphs keeps them as they are (a long
    # paragraph is not split); one whose blocks run LONG_BLOCK_LINES lines and more on
    # average has none
    without_breaks = len(lengths) >= LONG_BLOCK_LINES * len(blocks)
    out: list[list[list[str]]] = []
    for block in blocks:
        if unwrapped:
            out.append([[x] for x in block])  # one paragraph a line
        elif without_breaks and len(block) >= LONG_BLOCK_LINES:
            out.append(_split_wrapped(block, max(p90, 20)))
        else:
            out.append([block])
    return out


_SENTENCE_END = re.compile(r"[.!?…:;»”\"'’)\]]\s*$")


def _split_wrapped(block: list[str], width: int) -> list[list[str]]:
    """A run of hard-wrapped lines with no blank line: a paragraph ends on a short line
    or one that ends a sentence well short of the width, before an indented line or a
    heading."""
    out: list[list[str]] = []
    current: list[str] = []
    for i, line in enumerate(block):
        current.append(line)
        nxt = block[i + 1] if i + 1 < len(block) else ""
        length = len(line.strip())
        # a wrapped line runs to near the width: a short one ends its paragraph (a title,
        # a heading, a paragraph's last line), and so does a sentence's end well short of it
        short = length < 0.6 * width or (length < 0.8 * width and bool(_SENTENCE_END.search(line)))
        indented = nxt.startswith((" ", "\t")) and not line.startswith((" ", "\t"))
        if short or indented or not nxt or _heading(nxt.strip()) or is_boilerplate(nxt):
            out.append(current)
            current = []
    if current:
        out.append(current)
    return out


# `À Marie-Antoine-Jules Senard`, `To Sir Walter Scott`, `An Goethe`: a dedication to a
# name on a line of its own, in the languages of indexer.corpus.lang (in mixed case: a title
# page's `A NOVEL` is none)
_DEDICATION = re.compile(r"^(?:À|Au|Aux|A|Al|Alla|An|To|Aan|Ao)\s+(?:[A-ZÀ-Ý][\w'’.-]*\s*){1,5}$")


def is_dedication(p: _Para) -> bool:
    text = " ".join(x.strip() for x in p.lines)
    lower = any(c.islower() for c in text)
    return len(p.lines) == 1 and lower and bool(_DEDICATION.match(text))


def is_contents_title(text: str) -> bool:
    return bool(_CONTENTS_TITLE.match(" ".join(text.split())))


def is_boilerplate(text: str) -> bool:
    return bool(_BOILERPLATE.match(text.strip()))


def fields_of(texts: Sequence[str]) -> dict[str, str]:
    """`TITOLO:` / `AUTORE:` (Liber Liber), `Title:` / `Author:`: the card's fields."""
    found: dict[str, str] = {}
    for text in texts:
        for line in text.split("\n"):
            m = _FIELD.match(line.strip())
            if m:
                key = _FIELD_KEYS.get(m.group("key").lower(), "")
                if key and key not in found:
                    found[key] = m.group("value")
    return found


def person_name(value: str) -> str:
    """`Tozzi, Federigo` (a catalogue's order) → `Federigo Tozzi`."""
    value = " ".join(value.split())
    if value.count(",") == 1:
        last, first = (x.strip() for x in value.split(","))
        if last and first and " " not in last.strip():
            return f"{first} {last}"
    return value


_INITIALS = re.compile(r"^(?:[A-ZÀ-Ý]\.\s*)+[A-ZÀ-Ý][\w'’-]+$")  # `C. COLLODI`, `E. T. A. Hoffmann`


def title_and_author(texts: list[str], known_author: str | None = None) -> tuple[str, str | None]:
    """The title and author on a title page's paragraphs (each joined into one line).

    `Title / di / Author` and `Title / by Author`: the author follows the word; `Author /
    Title` when the first paragraph is the known author (Liber Liber's card) or a name
    with initials (`C. COLLODI`); else the first paragraph is the title."""
    texts = [" ".join(x.split()).strip("_* ") for x in texts]
    texts = [x for x in texts if x]
    if not texts:
        return "", known_author
    author = known_author
    if len(texts) > 1 and _INITIALS.match(texts[0]) and not _BY.match(texts[1]):
        author = author or texts[0]
        texts = texts[1:] if _comparable(texts[0]) != _comparable(texts[1]) else texts
    genre = next((k for k, x in enumerate(texts) if k and _GENRE.match(x)), None)
    titled = ""
    if genre is not None and not _BY.match(texts[genre - 1]):
        # `Heinrich Mann / Professor Unrat oder Das Ende eines Tyrannen / Roman`: the genre
        # is printed under the title, and a name above the title is the author's (else
        # the author is looked for as below: `Title / A Novel / by Author`)
        titled = texts[genre - 1]
        if genre >= 2 and not author and _NAME.match(texts[genre - 2]):
            return titled, texts[genre - 2]
    rest: list[str] = []
    i = 0
    while i < len(texts):
        m = _BY.match(texts[i])
        if m and i > 0:
            name = m.group("rest").strip() or (texts[i + 1] if i + 1 < len(texts) else "")
            author = author or name
            i += 1 if m.group("rest").strip() else 2
            continue
        rest.append(texts[i])
        i += 1
    if not author:
        # `Jules Verne / Deux Ans de vacances`, `I MALAVOGLIA / Giovanni Verga`: a title
        # page of two lines, no word introducing the author, one of them a person's name
        # (in mixed case: a title in capitals may read as one too); two such lines
        # (`Oliver Twist / Charles Dickens`) cannot be told apart and are left as they are,
        # and so is a longer page (a publisher's or a place's name reads as a person's)
        names = [x for x in rest if _is_name(x)]
        if len(names) == 1 and len(rest) == 2:
            author = names[0]
    if author:
        key = _comparable(author)
        rest = [x for x in rest if key not in (_comparable(x), _comparable(person_name(x)))]
    title = titled or (rest[0] if rest else texts[0])
    return title, author


def _is_name(text: str) -> bool:
    """`Giovanni Verga`, `E. T. A. Hoffmann`: capitalised words in mixed case, not a
    dedication (`À Marie-Antoine-Jules Senard`)."""
    return (
        bool(_NAME.match(text) or _INITIALS.match(text))
        and any(c.islower() for c in text)
        and not _DEDICATION.match(text)
        and not _GENRE.match(text)  # `A Novel`
    )


# The genre a title page prints under the title, in the languages of indexer.corpus.lang
_GENRE = re.compile(
    r"^(?:(?:ein |a |un |une |uno |una |een )?(?:roman|novelle|erzählung|novel|romanzo|"
    r"racconto|novella|novela|romance|novel·la|verhaal|conte|récit|nouvelle|märchen))"
    r"\.?$",
    re.IGNORECASE,
)
# a person's name: two to four capitalised words (`Heinrich Mann`, `E. T. A. Hoffmann`)
_NAME = re.compile(r"^(?:[A-ZÀ-Ý][\w'’.-]*\.?\s+){1,3}[A-ZÀ-Ý][\w'’-]+$")


def _comparable(text: str) -> str:
    return " ".join(re.sub(r"[^a-z0-9]+", " ", fold(text).lower()).split())


def same_text(a: str, b: str) -> bool:
    return bool(_comparable(a)) and _comparable(a) == _comparable(b)


def comparable(text: str) -> str:
    """A heading or entry as compared with the contents list (case, accents, punctuation)."""
    return _comparable(text)


class _Para(Protocol):
    lines: list[str]
    line: int


_P = TypeVar("_P", bound=_Para)

# Looser than _BOILERPLATE: what the rest of a licence card or colophon says
_CARD_WORDS = re.compile(
    r"https?://|www\.|liber ?liber|manuzio|gutenberg|wikisource|licen[sz]|e-text",
    re.IGNORECASE,
)
_CARD_KEY = re.compile(r"^[A-ZÀ-Ý0-9' ]{3,}:")  # `DIRITTI D'AUTORE: no`, in capitals


# a header's `Release date: …`, `Language: English`, `Credits: …`; Liber Liber's
# `1a EDIZIONE ELETTRONICA DEL: …` and the scale under `INDICE DI AFFIDABILITA': 1`
# (`0: affidabilità bassa`)
_KEY_VALUE = re.compile(r"^(?:[A-ZÀ-Ý]|\d+\w?\b)[\w' ]{0,30}:\s+\S")


def _card_like(text: str) -> bool:
    return bool(_CARD_WORDS.search(text) or _CARD_KEY.match(text) or _KEY_VALUE.match(text))


@dataclass
class Cleaned(Generic[_P]):
    paras: list[_P]
    notes: list[str] = field(default_factory=list)
    fields: dict[str, str] = field(default_factory=dict)  # the licence card's title, author
    entries: list[str] = field(default_factory=list)  # the contents list's entries
    # where the contents list stood (a file line) and whether before the text: its
    # entries mark headings on the other side of it only (not the title page's title)
    contents_line: int = 0
    contents_first: bool = True

    def listed(self, p: _Para) -> bool:
        """Does this paragraph repeat an entry of the contents list, where the text is?"""
        if not self.entries or len(p.lines) > 3:
            return False
        side = p.line > self.contents_line if self.contents_first else p.line < self.contents_line
        return side and comparable(_text(p)) in {comparable(x) for x in self.entries}


def _text(p: _Para) -> str:
    return " ".join(x.strip() for x in p.lines)


# A contents entry: a numeral and wide spacing before its title (`XII     Il
# burattinaio…`), or a page number at the end of its last line (`… bambino   Pag. 5`)
_ENTRY_START = re.compile(r"^\s*(?:[IVXLCDM]+|\d{1,3})\.?\s{2,}\S")
_ENTRY_PAGE = re.compile(r"\S(?:\s{2,}|\s*\.{3,}\s*)(?:pag\.?\s*|p\.\s*|s\.\s*)?\d{1,4}\s*$", re.I)


# A paragraph whose every line is indented this far is centred, not running text: prose
# indents its first line by 2-5 spaces if at all (the Heinrich Mann fixture centres its
# title page by 17 to 29)
CENTRED_INDENT = 8


def is_prose(p: _Para) -> bool:
    """Running text, not a list of entries or a heading: one long line, or wrapped lines
    of which one goes on in lower case (a list's entries each start a line anew), unless
    it reads as one contents entry (a leading numeral, a trailing page number)."""
    if _ENTRY_START.match(p.lines[0]) or _ENTRY_PAGE.search(p.lines[-1]):
        return False
    if all(len(x) - len(x.lstrip()) >= CENTRED_INDENT for x in p.lines):
        return False  # centred lines: a title page's (`Professor Unrat / oder / Das Ende…`)
    if len(p.lines) == 1:
        text = p.lines[0].strip()
        return len(text) > 200 or len(text.split()) > 40
    return any(x.strip()[:1].islower() or x.rstrip().endswith("-") for x in p.lines[1:])


def _span(paras: Sequence[_Para], a: int, b: int) -> str:
    return f"lines {paras[a].line}-{paras[b - 1].line + len(paras[b - 1].lines) - 1}"


def clean(paras: list[_P]) -> Cleaned[_P]:
    """The paragraphs without licence blocks, colophons, transcriber's notes and contents
    lists; what was left out is said in `notes`, the card's fields and the contents
    list's entries are kept for the title and the headings."""
    out = Cleaned(paras)
    n = len(paras)
    drop = [False] * n
    texts = [_text(p) for p in paras]
    i = 0
    while i < n:
        if drop[i] or not is_boilerplate(texts[i]):
            i += 1
            continue
        if _NOTE.match(texts[i]):
            j = i + 1
            if texts[i].startswith("[") and "]" not in texts[i]:
                while j < n and "]" not in texts[j - 1]:
                    j += 1
            elif len(paras[i].lines) <= 2 and all(len(x.strip()) < 60 for x in paras[i].lines):
                # a note's title (`Nota del Trascrittore`): its text follows, up to the next
                # boilerplate or heading, three paragraphs of prose at most and any number
                # of list lines (a table of characters: `à = a grave`)
                prose = 0
                gaps: list[int] = []  # blank lines before each of its paragraphs
                while j < n and not is_boilerplate(texts[j]) and not _heading(texts[j]):
                    gap = paras[j].line - (paras[j - 1].line + len(paras[j - 1].lines))
                    if gaps and gap > max(gaps) + 1:
                        break  # set apart from the note by more blank lines than its own
                    gaps.append(gap)
                    # (a bulleted item, `  * Se ha modernizado la ortografía…`, is a list's)
                    listed = all(len(x.strip()) < LIST_LINE for x in paras[j].lines) or bool(
                        _BULLET.match(paras[j].lines[0])
                    )
                    prose += 0 if listed else 1
                    if prose > 3:
                        break
                    j += 1
            if i > 0 and not drop[i - 1] and _RULE.match(texts[i - 1]):
                i -= 1  # the rule that sets the note off the text (`- - - - -`)
            why = "a transcriber's note"
        elif i < n / 2:  # a licence card before the text: through its last card-like line
            j = _card_end(paras, texts, i)
            why = "the licence card before the text"
            out.fields.update(
                {k: v for k, v in fields_of(texts[i:j]).items() if k not in out.fields}
            )
        else:  # after the text: the publisher's, to the end or to a chapter heading
            # (a licence's own `Section 1.` is no chapter): a text that goes on after a
            # boilerplate line is not dropped with it
            j = next((k for k in range(i + 1, n) if _chapter_heading(texts[k])), n)
            why = "the licence block after the text"
            m = _END_OF.match(texts[i])
            if m:  # `End of Project Gutenberg's Le avventure di Pinocchio, by Carlo Collodi`
                out.fields.setdefault("title", m.group("title"))
                out.fields.setdefault("author", m.group("author"))
        for k in range(i, j):
            drop[k] = True
        out.notes.append(f"left out {why} ({_span(paras, i, j)})")
        i = j
    _drop_contents(paras, texts, drop, out)
    if not out.entries:
        _drop_untitled_contents(paras, texts, drop, out)
    out.paras = [p for p, d in zip(paras, drop, strict=True) if not d]
    return out


# A contents list without a title (Gutenberg's Don Quijote, #2000: the titles of the
# preliminaries and of the 126 chapters, each on its own, before the text): short
# paragraphs before the first chapter heading, at least this many of them (of three words
# or more) repeated after the list as a heading or a heading's title, and at least half of
# the list's paragraphs so repeated
MIN_UNTITLED_ENTRIES = 3
ENTRY_MAX_LINES = 4
ENTRY_MAX_CHARS = 300


def _drop_untitled_contents(
    paras: list[_P], texts: list[str], drop: list[bool], out: Cleaned[_P]
) -> None:
    from indexer.importers.headings import parse

    n = len(paras)
    keys = [comparable(t) for t in texts]
    later: dict[str, list[int]] = {}  # a key → the paragraphs that say it, as text or title
    limit = headed = n // 2
    for k, p in enumerate(paras):
        if drop[k] or len(p.lines) > ENTRY_MAX_LINES:
            continue
        later.setdefault(keys[k], []).append(k)
        h = parse(p.lines[0])
        if h is not None and h.label is not None and h.kind in ("chapter", "part"):
            limit = headed = min(limit, k)
            title = " ".join([h.title, *(x.strip() for x in p.lines[1:])]).strip()
            later.setdefault(comparable(title), []).append(k)

    def entry(k: int) -> bool:
        return not drop[k] and len(paras[k].lines) <= ENTRY_MAX_LINES \
            and len(texts[k]) <= ENTRY_MAX_CHARS  # fmt: skip

    k = 0
    while k < limit:
        if not entry(k):
            k += 1
            continue
        run_end = k
        while run_end < n and entry(run_end):
            run_end += 1
        start = next(
            (i for i in range(k, min(run_end, limit)) if any(j >= run_end for j in later[keys[i]])),
            None,
        )
        if start is None:
            k = run_end
            continue
        # the run ends where the text resumes; the short lines just before that which
        # repeat an entry are the text's own first headings (`TASA`)
        end = run_end
        while end - 1 > start and keys[end - 1] in set(keys[start : end - 1]):
            end -= 1
        repeated = [
            i for i in range(start, end)
            if any(j >= end for j in later[keys[i]]) and len(texts[i].split()) >= 3
        ]  # fmt: skip
        # before the first labelled heading, the repeated entries are evidence enough;
        # elsewhere (a book of bare numerals) half the list must be repeated
        share = start < headed or 2 * len(repeated) >= end - start
        if len(repeated) >= MIN_UNTITLED_ENTRIES and share:
            entries = [x for i in range(start, end) for x in _entries(paras[i])]
            for i in range(start, end):
                drop[i] = True
            out.entries.extend(entries)
            out.contents_line = paras[start].line
            out.contents_first = True
            out.notes.append(
                f"left out a contents list without a title ({len(entries)} entries, "
                f"{_span(paras, start, end)}): its entries are the headings of the text"
            )
            return
        k = run_end


# Lines inside a card that are none of its keys (`0: affidabilità bassa`): this many in a
# row at most before the card is over
CARD_GAP = 3


_NOTE = re.compile(
    r"^\[?(?:transcriber|note de transcription|nota del tras|anmerkung|nota de|"
    r"(?:table|list) of (?:special )?characters|tavola dei caratteri|table des caract|"
    r"tabla de caracteres)",
    re.IGNORECASE,
)
# A line of a list or table, not of prose: shorter than any wrapped line (Gutenberg wraps
# at 70-75 columns); a transcriber's note runs on over such lines
LIST_LINE = 40
_BULLET = re.compile(r"^\s*[*•·–-]\s+\S")
_RULE = re.compile(r"^[-–—*_=.·•~ ]{3,}$")  # a typographic rule: `- - - - -`, `* * *`


def _card_end(paras: list[_P], texts: list[str], i: int) -> int:
    """One past the last paragraph of the card that starts at i: card-like paragraphs
    with at most CARD_GAP others between them, up to a heading or a contents title."""
    last = i
    k = i + 1
    while k < len(paras) and k - last <= CARD_GAP:
        if _card_field(texts[k]):
            last = k
        elif _heading(texts[k]) or is_contents_title(texts[k]):
            break
        elif _card_like(texts[k]) or is_boilerplate(texts[k]):
            last = k
        k += 1
    return last + 1


def _card_field(text: str) -> bool:
    """A card's field, though its key reads like a liminary title: `NOTE:` with no
    value (Liber Liber's card: `NOTE:`, `SOGGETTO:`, `REVISIONE:`, their values, if any,
    on the lines under them). A heading's own colon is followed by its title."""
    first = text.split("\n", 1)[0].strip()
    return bool(_CARD_KEY.match(first)) and first.endswith(":")


def _drop_contents(paras: list[_P], texts: list[str], drop: list[bool], out: Cleaned[_P]) -> None:
    """A contents title and the list under it, up to running text or the list's first
    entry seen again (the body's own first heading)."""
    n = len(paras)
    for i in range(n):
        if drop[i] or not is_contents_title(texts[i]):
            continue
        entries: list[str] = []
        seen: set[str] = set()
        j = i + 1
        while j < n and not drop[j] and not is_prose(paras[j]):
            if is_dedication(paras[j]):
                break  # Madame Bovary's `À Marie-Antoine-Jules Senard` after its contents
            if entries and j + 1 < n and is_prose(paras[j + 1]) and _heading(texts[j]):
                # a heading with running text under it is the text's, not an entry: the
                # `NOTE:` over the endnotes after Il Conte di Monte-Cristo's `INDICE`
                break
            here = comparable(texts[j])
            joined = comparable(f"{texts[j]} {texts[j + 1]}") if j + 1 < n else ""
            first = comparable(paras[j].lines[0])
            if entries and (here in seen or joined in seen or first in seen):
                break  # the body starts: its heading repeats an entry
            if entries and _numeral_only(texts[j]) and _numeral_only(texts[j]) == _lead(entries[0]):
                break  # `I.` alone after `I. La partenza`: the body's first heading
            for x in _entries(paras[j]):
                entries.append(x)
                seen.add(comparable(x))
            j += 1
        if not entries:
            continue
        for k in range(i, j):
            drop[k] = True
        if not out.entries:
            out.contents_line = paras[i].line
            out.contents_first = i < n / 2
        out.entries.extend(entries)
        out.notes.append(
            f"left out the contents list {texts[i]!r} ({len(entries)} entries, {_span(paras, i, j)})"
        )


_END_OF = re.compile(
    r"^\**\s*end of (?:the )?project gutenberg(?:'s| e-?book of)\s+(?P<title>.+?),\s+by\s+"
    r"(?P<author>[^*]+?)\s*\**$",
    re.IGNORECASE,
)


def _heading(text: str) -> bool:
    from indexer.importers.headings import parse  # headings.py needs no etext: no cycle

    return parse(text) is not None


def _entries(p: _Para) -> list[str]:
    """A contents paragraph's entries: one wrapped entry (its lines go on in lower case),
    else one a line; without the page number."""
    lines = [x.strip() for x in p.lines if x.strip()]
    if _ENTRY_START.match(p.lines[0]):  # `XII     Il burattinaio…`: an entry per numeral
        grouped: list[str] = []
        for x in p.lines:
            if _ENTRY_START.match(x) or not grouped:
                grouped.append(x.strip())
            else:
                grouped[-1] += " " + x.strip()
        lines = grouped
    elif len(lines) > 1 and all(x[:1].islower() or not x[:1].isalpha() for x in lines[1:]):
        lines = [" ".join(lines)]
    return [_PAGE.sub("", x).strip() for x in lines]


_PAGE = re.compile(r"(?:\s{2,}|\s*\.{3,}\s*)(?:pag\.?\s*|p\.\s*|s\.\s*)?\d{1,4}\s*$", re.I)


def _chapter_heading(text: str) -> bool:
    from indexer.importers.headings import parse

    h = parse(text)
    if h is None or h.kind == "piece":
        return False
    if h.label is None:  # `III.`; not the licence's own `1.F.`
        return not (h.number or "").isdigit() and not h.title
    return h.label.casefold() != "section"


_NUMERAL = re.compile(r"^(?:[IVXLCDM]+|\d{1,3})\.?$")


def _numeral_only(text: str) -> str:
    t = text.strip()
    return t.rstrip(".").upper() if _NUMERAL.match(t) else ""


def _lead(entry: str) -> str:
    m = re.match(r"^\s*([IVXLCDM]+|\d{1,3})\b", entry)
    return m.group(1).upper() if m else ""
