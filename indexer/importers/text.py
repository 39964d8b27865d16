"""Import a plain-text book (the form Project Gutenberg distributes): find its own headings.

    *** START OF THE PROJECT GUTENBERG EBOOK … ***      header (and its footer) cut off;
                                                        Title:, Author:, Language: kept
    PREFACE.                                            a liminary piece
    BOOK I. / PART II / VOLUME THREE                    a part (when chapters follow)
    CHAPTER IV. / Chapter 12 / Letter 3 / XIV.          a chapter; its title on the same
    CHAPTER I.                                          line (`CHAPTER 1. Loomings.`),
    Down the Rabbit-Hole                                on the next lines, or in the next
                                                        paragraph when it is in capitals

How a heading is told from the text (`headings.py` holds the patterns):

1. The file is decoded (`--encoding`, else UTF-8, else Windows-1252: Gutenberg's and
   Liber Liber's older files, else Latin-1), its BOM
   dropped, line ends made `\\n`, NFC. A Gutenberg header and footer are cut only
   when their `*** START OF` / `*** END OF` lines are there.
2. `[Illustration: …]` blocks are the transcriber's, not the author's: they go,
   but a heading inside one (`[Illustration: … Chapter I.]`) is kept.
3. A heading is a short paragraph of its own whose first line is a label and a
   number (roman, arabic or a number word), a bare numeral with a separator, or a
   liminary title. A paragraph of several such lines is a table of contents, and so
   is a run of headings with next to no text between them: neither opens a chapter.
   Bare numerals count only as a sequence (1, 2, 3… or I, II, III…), so a stray
   `V.` in the text is text. A short title line after a blank line counts only
   when most untitled chapters have one (headings.py, `_with_line_titles`).
4. Part labels (`BOOK`, `PART`, `VOLUME`…) make parts when chapters are found
   under them; alone, they are the chapters. Text before the first heading is the
   title page: left out when short (the CLI says so), kept as a piece otherwise.
5. Hard-wrapped paragraphs are unwrapped; verse and other short-lined blocks
   (every line well short of the book's line width, or indented in turn, or each
   starting in capitals, unless the wrap forced every break) keep their line breaks; a
   short-lined book keeps them all only when its breaks are not where a wrap puts them
   (`wrapping.py`), so prose wrapped at 40-55 columns is joined.
6. E-texts as found (`etext.py`): paragraphs inferred when the file has no blank
   lines; licence cards, colophons, transcriber's notes and contents lists left out
   (said in the work's notes); the contents list's entries mark the body's headings;
   the title page read for title and author. No heading at all: one chapter, a warning.
"""

from __future__ import annotations

import codecs
import itertools
import re
import unicodedata
from dataclasses import dataclass
from pathlib import Path

from indexer.corpus import lang as corpus_lang
from indexer.importers import etext as importers_etext
from indexer.importers import headings as importers_headings
from indexer.importers.common import TITLE_FROM_FILE_NAME, ImportSourceError, guess_language
from indexer.importers.selection import Selection
from indexer.importers.titles import clean_title, label_title, smart_title
from indexer.importers.tree import Part, Section, Work
from indexer.importers.wrapping import Measure, is_verse, measure

# Gutenberg's markers (www.gutenberg.org/help/: "*** START OF THE PROJECT GUTENBERG
# EBOOK …", older files "*** START OF THIS PROJECT GUTENBERG EBOOK …")
_START = re.compile(r"^\s*\*{3}\s*START OF (?:THE|THIS) PROJECT GUTENBERG", re.IGNORECASE)
_END = re.compile(r"^\s*\*{3}\s*END OF (?:THE|THIS) PROJECT GUTENBERG", re.IGNORECASE)
_END_LINE = re.compile(r"^\s*end of (?:the )?project gutenberg", re.IGNORECASE)
_HEADER_KEY = re.compile(r"^(Title|Author|Language):\s*(.+?)\s*$")
_LANGUAGES = {
    "english": "en", "french": "fr", "german": "de", "spanish": "es", "italian": "it",
    "portuguese": "pt", "dutch": "nl", "danish": "da", "swedish": "sv", "norwegian": "no",
    "finnish": "fi", "polish": "pl", "russian": "ru", "latin": "la", "greek": "el",
    "hungarian": "hu", "catalan": "ca", "romanian": "ro", "turkish": "tr",
}  # fmt: skip
# Text before the first heading up to this many characters is a title page (title,
# author, publisher, dedication); more than that is kept as a piece, never dropped.
TITLE_PAGE_CHARS = 2000
# A heading opens a chapter only when at least this many words follow it before the
# next heading; fewer, in a run of headings, is a table of contents.
MIN_CHAPTER_WORDS = 30
FRONT_MATTER_TITLE = "Front matter"


@dataclass
class _Para:
    lines: list[str]  # as in the file (indentation kept)
    line: int  # 1-based line of its first line

    @property
    def text(self) -> str:
        return " ".join(x.strip() for x in self.lines)


# What Windows' Notepad calls "Unicode" is UTF-16 with a byte-order mark: its bytes are
# half NULs, which would read as a binary file. UTF-32's marks first: they begin alike.
_BOMS = (
    (codecs.BOM_UTF32_LE, "utf-32"),
    (codecs.BOM_UTF32_BE, "utf-32"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)
BINARY = (
    "is a binary file, not a plain-text book (UTF-16 without a byte-order mark? "
    "pass --encoding utf-16-le or utf-16-be)"
)


def decode(path: str, data: bytes, encoding: str | None = None) -> tuple[str, str]:
    """Bytes → (text, encoding): `encoding` when given, else UTF-16 or UTF-32 when a
    byte-order mark says so, else UTF-8 (BOM dropped), else Windows-1252 (Gutenberg's
    and Liber Liber's older files), else Latin-1; `\\n` line ends, NFC."""
    marked = None if encoding else next((n for bom, n in _BOMS if data.startswith(bom)), None)
    if encoding or marked:
        used = encoding or marked or ""
        try:
            text = data.decode(used)
        except LookupError:
            raise ImportSourceError(
                f"--encoding {encoding}", "is not an encoding Python knows (try cp1252, latin-1)"
            ) from None
        except UnicodeDecodeError as e:
            fix = (
                "leave --encoding out to detect it, or name the right one"
                if encoding
                else f"yet starts with a {used} byte-order mark: name its encoding with --encoding"
            )
            raise ImportSourceError(
                path, f"is not {used} (byte {e.start}: {e.reason}); {fix}"
            ) from None
        if "\x00" in text[:4096]:  # on the text: UTF-16's NULs are in its bytes
            raise ImportSourceError(path, BINARY)
    else:
        if b"\x00" in data[:4096]:
            raise ImportSourceError(path, BINARY)
        used = "utf-8"
        for used in ("utf-8-sig", "cp1252", "latin-1"):
            try:
                text = data.decode(used)
                break
            except UnicodeDecodeError:
                continue
    text = text.replace("\r\n", "\n").replace("\r", "\n").replace("\ufeff", "")
    return unicodedata.normalize("NFC", text), used.removesuffix("-sig")


def _indented(line: str) -> bool:
    return bool(line.strip()) and line[:1].isspace()


def strip_gutenberg(text: str) -> tuple[str, dict[str, str]]:
    """The book between Gutenberg's START and END lines, and its header's fields."""
    lines = text.split("\n")
    start = next((i for i, x in enumerate(lines) if _START.match(x)), None)
    if start is None:
        return text, {}
    fields: dict[str, str] = {}
    for n, x in enumerate(lines[:start]):
        m = _HEADER_KEY.match(x)
        if m and m.group(1).lower() not in fields:
            value = m.group(2)
            if m.group(1) == "Author":  # `Author: Alexandre Dumas` / `        Auguste Maquet`
                more = (y.strip() for y in itertools.takewhile(_indented, lines[n + 1 : start]))
                value = ", ".join([value, *more])
            fields[m.group(1).lower()] = value
    end = next((i for i in range(start + 1, len(lines)) if _END.match(lines[i])), len(lines))
    body = lines[start + 1 : end]
    while body and (not body[-1].strip() or _END_LINE.match(body[-1])):
        body.pop()
    return "\n".join(body), fields


def gutenberg_notes(decoded: str, text: str) -> list[str]:
    """What `strip_gutenberg` cut: Gutenberg's header before the START line and its
    licence after the END line, by lines of the file."""
    if not text or text == decoded:
        return []
    start = decoded.find(text)
    first = decoded[:start].count("\n") + 1  # the text's first line
    last = first + text.count("\n")
    lines = decoded.split("\n")
    total = len(lines) - (1 if decoded.endswith("\n") else 0)
    # the licence from its first line after the text (the END marker), blank lines skipped
    end = next((k for k in range(last, total) if lines[k].strip()), total) + 1
    out = [f"left out Project Gutenberg's header (lines 1-{first - 1})"] if first > 1 else []
    if end <= total:
        out.append(f"left out Project Gutenberg's licence after the text (lines {end}-{total})")
    return out


# `[Illustration: …]` and its kin in the languages of indexer.corpus.lang (Gutenberg's transcribers)
_ILLUSTRATION = re.compile(
    r"^\[(?:illustration|illustrazione|ilustraci[óo]n|ilustra[çc][ãa]o|abbildung|"
    r"illustratie|afbeelding|bild|kuva|ilustracja)",
    re.IGNORECASE,
)


def drop_illustrations(lines: list[str]) -> list[str]:
    """Lines without `[Illustration…]` blocks; a heading line inside one stays."""
    out: list[str] = []
    i = 0
    while i < len(lines):
        stripped = lines[i].strip()
        if not _ILLUSTRATION.match(stripped):
            out.append(lines[i])
            i += 1
            continue
        depth = 0
        j = i
        block: list[str] = []
        while j < len(lines):
            block.append(lines[j])
            depth += lines[j].count("[") - lines[j].count("]")
            j += 1
            if depth <= 0:
                break
        before = len(out)
        for x in block:
            inner = _ILLUSTRATION.sub("", x.strip()).lstrip(":").rstrip("]").strip()
            if inner and importers_headings.parse(inner) is not None:
                out.extend(["", inner, ""])
        out.append("")
        out.extend([""] * (len(block) - (len(out) - before)))  # the file's line numbers hold
        i = j
    return out


def paragraphs(lines: list[str], first_line: int = 1) -> list[_Para]:
    """The file's paragraphs: between blank lines, or inferred when it has none
    (`etext.infer_paragraphs`: one a line, or hard-wrapped lines split after short ones)."""
    blocks: list[tuple[int, list[str]]] = []
    current: list[str] = []
    start = 0
    for n, x in enumerate(lines):
        if x.strip():
            if not current:
                start = n
            current.append(x.rstrip())
        elif current:
            blocks.append((start, current))
            current = []
    if current:
        blocks.append((start, current))
    out: list[_Para] = []
    for (start, _), parts in zip(
        blocks, importers_etext.infer_paragraphs([b for _, b in blocks]), strict=True
    ):
        offset = 0
        for part in parts:
            out.append(_Para(part, first_line + start + offset))
            offset += len(part)
    return out


def _split_heading_lines(paras: list[_Para]) -> list[_Para]:
    """`CHAPTER IV.` on the first line of its text's paragraph (no blank line after it):
    the heading becomes a paragraph of its own. Only a labelled heading (a label and a
    number), followed by more lines than a title has, is split off; not a list of
    headings (a table of contents). A part's heading and its first chapter's on one line
    (`LIVRE PREMIER--CHAPITRE PREMIER`) become two."""
    out: list[_Para] = []
    for p in paras:
        both = importers_headings.part_and_chapter(p.lines[0])
        if both is not None:  # `LIVRE PREMIER--CHAPITRE PREMIER`: two headings, one line
            out.append(_Para([both[0]], p.line))
            p = _Para([both[1], *p.lines[1:]], p.line)
        h = importers_headings.parse(p.lines[0]) if len(p.lines) > 4 else None
        listed = h is not None and any(
            importers_headings.parse(x) is not None for x in p.lines[1:3]
        )
        # (not a part named by its whole line, `Segunda parte del ingenioso caballero…`)
        whole = h is not None and h.kind == "part" and h.title == smart_title(h.source)
        split = h is not None and h.label is not None and h.kind in ("chapter", "part")
        if split and not listed and not whole:
            out.append(_Para(p.lines[:1], p.line))
            out.append(_Para(p.lines[1:], p.line + 1))
        else:
            out.append(p)
    return out


def unwrap(para: _Para, book: Measure) -> str:
    """One paragraph as Markdown: hard-wrapped prose joined; verse keeps its lines."""
    lines = [x.strip() for x in para.lines]
    if importers_headings.is_page_list(lines):
        return ""
    lines = [x for x in lines if x.upper() != "PAGE"]
    if not lines:
        return ""
    if is_verse(para, book):
        return "\n".join(lines)  # verse, an address, a list: the breaks are the author's
    out = lines[0]
    for x in lines[1:]:
        # a dash glued to its word (`war--`) glues the next line to it; a spaced one
        # (`war --` / `Samsa`) is followed by a space; so does a hyphen glued to its word
        # (`au-` / `dessus`, `aide-` / `chirurgien-major`: Gutenberg's transcribers do
        # not hyphenate syllables, a hyphen at a line's end is the word's own)
        dash = out.endswith(("--", "—")) and not out.rstrip("-—").endswith(" ")
        hyphen = out.endswith("-") and out[-2:-1].isalpha() and x[:1].isalpha()
        out += x if dash or hyphen else " " + x
    return out


def read_text(
    src: Path,
    *,
    lang: str | None = None,
    encoding: str | None = None,
    exclude: tuple[str, ...] = (),
    skip_front_matter: bool = False,
) -> Work:
    """The work in the plain-text book at `src`."""
    path = str(src)
    try:
        data = src.read_bytes()
    except OSError as e:
        raise ImportSourceError(
            path, f"cannot be read ({e.strerror}); check its permissions"
        ) from None
    decoded, used = decode(path, data, encoding)
    return read_decoded(
        path, decoded, used, lang=lang, encoding=encoding, exclude=exclude,
        skip_front_matter=skip_front_matter,
    )  # fmt: skip


def read_decoded(
    path: str,
    decoded: str,
    used: str,
    *,
    lang: str | None = None,
    encoding: str | None = None,
    exclude: tuple[str, ...] = (),
    skip_front_matter: bool = False,
) -> Work:
    """The work in a plain-text book already decoded (`used`: the encoding it was read
    with); the PDF importer hands its rebuilt paragraphs here."""
    src = Path(path)
    text, fields = strip_gutenberg(decoded)
    header = decoded[: decoded.find(text)].count("\n") if text and fields else 0
    lines = drop_illustrations(text.split("\n"))
    page_lists: list[str] = []
    cleaned = importers_etext.clean(
        importers_headings.drop_page_lists(paragraphs(lines, header + 1), page_lists)
    )
    paras = _split_heading_lines(cleaned.paras)
    if not paras:
        raise ImportSourceError(path, "holds no text")
    language = lang or _LANGUAGES.get(fields.get("language", "").split(",")[0].strip().lower())
    language = language or guess_language(text)
    heads = importers_headings.find(paras, {k for k, p in enumerate(paras) if cleaned.listed(p)})
    if cleaned.entries and cleaned.contents_first:
        heads = _after_contents(heads, paras, cleaned.contents_line)
    heads = _entry_case(heads, cleaned.entries)
    chapters = any(h.heading.kind in ("chapter", "part") for h in heads)
    heads = _without_indented_front(heads, paras)
    first = heads[0].index if heads else _title_page_end(paras)
    # `Title: Dom Casmurro` / `Author: Machado de Assis` at the head of a copy that lost
    # Gutenberg's markers: the card's fields, not the title page's lines
    page = [p for p in paras[:first] if not importers_etext.fields_of(["\n".join(p.lines)])]
    card = {
        **importers_etext.fields_of(["\n".join(p.lines) for p in paras[:first]]),
        **cleaned.fields,
        **fields,
    }
    known = importers_etext.person_name(card["author"]) if card.get("author") else None
    page_title, author = importers_etext.title_and_author([p.text for p in page][:12], known)
    title = card.get("title") or page_title or src.stem
    author = smart_title(author) if author else None
    work = Work(smart_title(_one_line(title)), author, corpus_lang.code(language))
    heads = _without_the_books_title(heads, work.title)
    if not (card.get("title") or page_title):
        work.notes.append(TITLE_FROM_FILE_NAME)
    if used != "utf-8" and not encoding:
        work.notes.append(f"decoded as {used} (not UTF-8); pass --encoding to read it otherwise")
    work.notes.extend([*gutenberg_notes(decoded, text), *cleaned.notes, *page_lists])
    heads, paras = _without_title_above_first_chapter(
        _with_caps_lines_above(heads, paras), paras, work
    )
    book = measure(paras)
    if heads:  # (a title page has no running text under its lines in capitals)
        heads = sorted(_front_titles(paras, heads, book) + heads, key=lambda f: f.index)
        first = heads[0].index
    _title_page(work, paras[:first], heads, book, path)
    if not chapters:
        # No heading at all: the book is one chapter, said plainly (not an error: nothing
        # of the text is lost, and the user can add headings and import again).
        work.notes.append(
            "warning: found no chapter heading (lines such as `CHAPTER I.`, `Capitolo 12`, "
            "`XIV.` on a line of their own): imported as one chapter; add headings to the "
            "text to split it"
        )
        body = paras[first:]
        work.add_chapter(_section(work.title, None, {}, body, book, path))
        return work
    heads, paras = _chapter_sections(heads, paras, work)
    _assemble(work, heads, paras, book, path, Selection(exclude, skip_front_matter))
    if not work.parts and not work.pieces:
        raise ImportSourceError(path, "every chapter found was excluded or empty")
    return work


def _front_titles(
    paras: list[_Para], heads: list[importers_headings.Found], book: Measure
) -> list[importers_headings.Found]:
    """Before the first part or chapter: a line in capitals of three words or more with
    running text under it opens a piece
    (Uilenspiegel's `KORTE LEVENSBESCHRIJVING VAN CHARLES DE COSTER`; after Don
    Quichotte's `PRÉFACE`, the translator's `UN MOT SUR CETTE NOUVELLE TRADUCTION`), and
    so does a dedication to a name with running text under it (Madame Bovary's letter `À
    Marie-Antoine-Jules Senard`, the author's text, was left out with the title page).
    Inside a piece, the text under the line must be prose, not verse (Don Quijote's
    `AMADÍS DE GAULA A DON QUIJOTE DE LA MANCHA` titles a sonnet of its `Al libro…`)."""

    def caps(p: _Para) -> bool:
        letters = [c for c in p.text if c.isalpha()]
        return len(p.lines) == 1 and bool(letters) and not any(c.islower() for c in letters)

    opening = next((f.index for f in heads if f.heading.kind != "piece"), heads[0].index)
    taken = {f.index + d for f in heads for d in range(f.consumed)}
    out = []
    for k in range(max(opening, heads[0].index) - 1):
        if k in taken:
            continue
        text = paras[k].text.strip()
        dedication = importers_etext.is_dedication(paras[k])
        if not dedication and (not caps(paras[k]) or len(text.split()) < 3):
            continue
        stop = next((f.index for f in heads if f.index > k), len(paras))
        under = itertools.takewhile(lambda p: not caps(p), paras[k + 1 : stop])
        inside = k > heads[0].index
        if any(importers_etext.is_prose(p) and not (inside and is_verse(p, book)) for p in under):
            # (`Bewerkt naar…` may stand between)
            title = clean_title(importers_headings.NOTE_CALL.sub("", text))
            out.append(
                importers_headings.Found(
                    k, importers_headings.Heading("piece", None, None, None, title, text), 1
                )
            )
    return out


# a contents entry's own numeral: `II.        Il padre ed il figlio`
_ENTRY_NUMERAL = re.compile(r"^\s*(?P<num>[IVXLCDM]+|\d{1,4})\.?\s+(?P<title>\S.*)$")


def _entry_case(
    heads: list[importers_headings.Found], entries: list[str]
) -> list[importers_headings.Found]:
    """A heading in capitals that repeats a contents entry takes the entry's case: `FEE DE
    ERRATAS` is `Fee de erratas` in Don Quijote's contents, not `Fee de Erratas`; `II. — IL
    PADRE ED IL FIGLIO.` is `Il padre ed il figlio` in its `INDICE` (the entry's numeral
    the heading's)."""
    by_key = {importers_etext.comparable(x): x for x in entries}
    numbered = {}
    for x in entries:
        m = _ENTRY_NUMERAL.match(x)
        if m:
            numbered[(m.group("num").upper(), importers_etext.comparable(m.group("title")))] = (
                m.group("title")
            )
    out = []
    for f in heads:
        h = f.heading
        letters = [c for c in h.source if c.isalpha()]
        entry = by_key.get(importers_etext.comparable(h.title), "") if h.kind == "piece" else ""
        # only its case differs (`YOUTH — Æt. 1-25` is not The Prince's `YOUTH Æt. 1-25`)
        same = " ".join(entry.split()).casefold() == " ".join(h.source.split()).casefold()
        if h.kind == "chapter" and h.number and h.title:
            entry = numbered.get((h.number.upper(), importers_etext.comparable(h.title)), "")
            same = " ".join(entry.split()).casefold() == " ".join(h.title.split()).casefold()
        if entry and same and sum(c.isupper() for c in letters) >= 0.7 * len(letters):
            f = importers_headings.Found(f.index, h.with_title(clean_title(entry)), f.consumed)
        out.append(f)
    return out


def _without_indented_front(
    heads: list[importers_headings.Found], paras: list[_Para]
) -> list[importers_headings.Found]:
    """A liminary title indented like every line after it up to the next heading is the
    file's, not the book's: Gutenberg's Don Quichotte (#42524) opens with `  Au lecteur`
    over the transcriber's indented note and the indented title pages. The book's own
    preface runs in unindented prose."""
    if len(heads) < 2 or heads[0].heading.kind != "piece":
        return heads
    block = paras[heads[0].index : heads[1].index]
    if all(x[:1].isspace() for p in block for x in p.lines if x.strip()):
        return heads[1:]
    return heads


def _without_the_books_title(
    heads: list[importers_headings.Found], title: str
) -> list[importers_headings.Found]:
    """`CHAPITRE PREMIER.` / `DEUX ANS DE VACANCES` (Verne, as found): the book's title
    printed over its first chapter is not that chapter's title."""
    first = next((n for n, f in enumerate(heads) if f.heading.kind == "chapter"), None)
    if first is None or not importers_etext.same_text(heads[first].heading.title, title):
        return heads
    f = heads[first]
    return [*heads[:first], importers_headings.Found(f.index, f.heading.with_title(""), f.consumed),
            *heads[first + 1 :]]  # fmt: skip


def _with_caps_lines_above(
    heads: list[importers_headings.Found], paras: list[_Para]
) -> list[importers_headings.Found]:
    """A liminary heading whose first words are on the line above it, in a paragraph of
    their own (`ORACIÓN FÚNEBRE` / `POR MODO DE EPÍLOGO`: Unamuno's Niebla): one heading
    over two paragraphs, when that line is in capitals, short, and set apart from the text
    above by more blank lines than from the heading."""
    out = list(heads)
    taken = {f.index for f in heads}
    for n, f in enumerate(heads):
        i = f.index
        # (the first heading's line above is the title page's)
        if f.heading.kind != "piece" or n == 0 or i < 2 or (i - 1) in taken:
            continue
        above = paras[i - 1]
        text = above.text.strip()
        letters = [c for c in text if c.isalpha()]
        if len(above.lines) != 1 or not letters or any(c.islower() for c in letters):
            continue
        if len(text) > MAX_CAPS_LINE_ABOVE or importers_headings.parse(text) is not None:
            continue
        gap_above = above.line - (paras[i - 2].line + len(paras[i - 2].lines))
        gap_below = paras[i].line - (above.line + 1)
        if gap_above <= gap_below:
            continue
        title = clean_title(f"{text} {f.heading.source}")
        out[n] = importers_headings.Found(i - 1, f.heading.with_title(title), f.consumed + 1)
    return out


# `ORACIÓN FÚNEBRE` over `POR MODO DE EPÍLOGO`: a title's first line, not a paragraph
MAX_CAPS_LINE_ABOVE = 60


def _without_title_above_first_chapter(
    heads: list[importers_headings.Found], paras: list[_Para], work: Work
) -> tuple[list[importers_headings.Found], list[_Para]]:
    """The book's title printed again over its first chapter (`NIEBLA` / `I`, after the
    prefaces: Niebla) is not the text of the piece before it: left out, said in notes."""
    first = next((f for f in heads if f.heading.kind == "chapter"), None)
    if first is None or first is heads[0]:  # (before the first heading: the title page's)
        return heads, paras
    k = first.index - 1
    above = paras[k]
    if any(f.index == k for f in heads) or len(above.lines) != 1:
        return heads, paras
    text = above.text.strip()
    main = re.split(r"\s*[(:;]|\s+[—–-]\s+", work.title)[0]  # `Niebla (Nivola)` → `Niebla`
    if not (importers_etext.same_text(text, work.title) or importers_etext.same_text(text, main)):
        return heads, paras
    work.notes.append(
        f"left out the book's title {text!r} over {first.heading.source!r} (line {above.line})"
    )
    moved = [
        importers_headings.Found(f.index - (f.index > k), f.heading, f.consumed) for f in heads
    ]
    return moved, [*paras[:k], *paras[k + 1 :]]


def _after_contents(
    heads: list[importers_headings.Found], paras: list[_Para], contents_line: int
) -> list[importers_headings.Found]:
    """A part heading above a contents list that stands before the text, with no chapter
    before that list, is the title page's (`LE COMTE DE MONTE-CRISTO / Alexandre Dumas /
    Tome I (1845-1846)` / `Table des matières`, Gutenberg #17989): the volume a file holds,
    not a part of it."""
    before = [h for h in heads if paras[h.index].line < contents_line]
    after = heads[len(before) :]
    if any(h.heading.kind != "part" for h in before) or any(
        h.heading.kind == "part" for h in after
    ):
        return heads  # (a part of a book of parts stays one, its contents under it)
    return after


def _title_page_end(paras: list[_Para]) -> int:
    """Without headings, the title page is the short lines before the first running text."""
    for k, p in enumerate(paras[:12]):
        if importers_etext.is_prose(p):
            return k
    return 0


def _title_page(
    work: Work, front: list[_Para], heads: list[importers_headings.Found], book: Measure, path: str
) -> None:
    """Text before the first heading: a title page left out (said in notes) when short,
    else kept as a piece."""
    if len("\n\n".join(p.text for p in front)) > TITLE_PAGE_CHARS:
        work.add_piece(_section(FRONT_MATTER_TITLE, None, {}, front, book, path))
    elif front:
        before = repr(heads[0].heading.source) if heads else "the text"
        work.notes.append(
            f"left out the title page before {before} "
            f"({len(front)} paragraphs, lines {front[0].line}-{front[-1].line})"
        )


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _section(
    title: str,
    number: str | None,
    meta: dict[str, str],
    body: list[_Para],
    book: Measure,
    path: str,
) -> Section:
    text = "\n\n".join(t for t in (unwrap(p, book) for p in body) if t)
    origin = f"{path}:{body[0].line}" if body else path
    return Section(title, text + "\n" if text else "", number, dict(meta), origin=origin)


def _assemble(
    work: Work,
    heads: list[importers_headings.Found],
    paras: list[_Para],
    book: Measure,
    path: str,
    selection: Selection,
) -> None:
    """Parts, chapters and pieces from the headings, each with the paragraphs after it."""
    kinds = {f.heading.kind for f in heads}
    parts_wanted = "part" in kinds and "chapter" in kinds
    part: Part | None = None  # the open part, added to the work with its first section
    in_work = False
    seen_part = False
    skipping = False
    opening = False  # after a part heading, before its first chapter
    outer = ""  # a part of parts (`TOME I` / `FANTINE` over `LIVRE PREMIER`): its title
    outer_label: str | None = None  # and its label: a part so labelled is the next outer
    for n, found in enumerate(heads):
        end = heads[n + 1].index if n + 1 < len(heads) else len(paras)
        body = paras[found.index + found.consumed : end]
        h = found.heading
        title = h.display if h.number is None or h.label else _bare_title(h, work.lang)
        if h.kind == "part" and parts_wanted:
            # `Book the Second`, `Livre premier`
            title = h.title or label_title(h.source.rstrip(".]").strip(), work.lang)
            nxt = heads[n + 1].heading if n + 1 < len(heads) else None
            if outer and h.label == outer_label:
                outer = ""  # the next outer part (`LIVRE DEUXIÈME`), whether it holds parts
            holds = nxt is not None and nxt.kind == "part" and nxt.label != h.label
            if holds and not (outer and nxt is not None and nxt.label == outer_label):
                # the corpus has one level of parts (DESIGN §3): the outer one's title goes
                # before the title of each part it holds, said once; its own text, if any,
                # is a part of its own before them
                outer, outer_label = title, h.label
                work.notes.append(f"{h.source!r} holds parts: its title goes before theirs")
                if not _has_text(body):
                    continue
            elif outer:
                title = f"{outer} — {title}"
            seen_part = True
            skipping = selection.excluded(title)  # an excluded part takes its chapters along
            part, in_work = (None, False) if skipping else (Part(title), False)
            opening = True
            intro = _section(title, None, {}, body, book, path)
            if part is not None and intro.body.strip():  # text under the part before a chapter
                work.notes.append(f"the text under {h.source!r} is kept as its first section")
                part.sections.append(intro)
                work.add_part(part)
                in_work = True
            continue
        if h.kind == "piece":
            skipping = False
        if skipping or selection.excluded(title, front=not seen_part, work_title=work.title):
            continue
        section = _section(
            title, h.number, importers_headings.label_meta(h, work.lang), body, book, path
        )
        if not section.body.strip():
            work.notes.append(f"left out {h.source!r} (line {paras[found.index].line}): no text")
            continue
        if h.kind == "piece" and part is not None and opening and parts_wanted:
            # a piece between a part's heading and its first chapter is the part's own
            # (the Tasa, Aprobaciones and Prólogo of Don Quijote's Segunda parte)
            part.sections.append(section)
            if not in_work:
                work.add_part(part)
                in_work = True
            continue
        if h.kind == "piece" or part is None or not parts_wanted:
            part = None if h.kind == "piece" else part
            work.add_piece(section)
            continue
        opening = False
        part.sections.append(section)
        if not in_work:
            work.add_part(part)
            in_work = True


def _chapter_sections(
    heads: list[importers_headings.Found], paras: list[_Para], work: Work
) -> tuple[list[importers_headings.Found], list[_Para]]:
    """A part heading met inside a chapter is that chapter's section, not a new part
    (Smith's Wealth of Nations: `BOOK I.` holds `CHAPTER X.`, whose text is divided into
    `PART I.` and `PART II.`, then `CHAPTER XI.`). Its label is first met after a chapter,
    with text under it, and the chapters after it go on with the numbering (a part that
    holds chapters comes before its first one, or starts them again from one: `TOME I` /
    `LIVRE PREMIER` / `CHAPITRE I`…`LIVRE DEUXIÈME` / `CHAPITRE I`). It stays in the
    chapter's text as a `###` heading (DESIGN §3: deeper headings stay in the chapter)."""
    first_seen: dict[str | None, int] = {}  # a part label → the position of its first heading
    for n, f in enumerate(heads):
        if f.heading.kind == "part":
            first_seen.setdefault(f.heading.label, n)
    inner: set[str | None] = set()
    for label, n in first_seen.items():
        before = heads[n - 1].heading if n > 0 else None
        if before is None or before.kind != "chapter" or before.value is None:
            continue
        nxt = None  # the next chapter under this label (another part's heading: none)
        for f in heads[n + 1 :]:
            if f.heading.kind == "part" and f.heading.label != label:
                break
            if f.heading.kind == "chapter":
                nxt = f.heading
                break
        restarts = nxt is not None and nxt.label == before.label and nxt.value == 1
        end = heads[n + 1].index if n + 1 < len(heads) else len(paras)
        has_text = any(p.text.strip() for p in paras[heads[n].index + heads[n].consumed : end])
        if has_text and not restarts:
            inner.add(label)
    if not inner:
        return heads, paras
    paras = list(paras)
    kept: list[importers_headings.Found] = []
    in_chapter = False
    for f in heads:
        h = f.heading
        if h.kind == "part" and h.label in inner and in_chapter:
            title = " ".join(f"{h.label} {h.number}. {h.title}".split()).rstrip(". ")
            paras[f.index] = _Para([f"### {title}"], paras[f.index].line)
            for k in range(f.index + 1, f.index + f.consumed):
                paras[k] = _Para([], paras[k].line)
            continue
        in_chapter = h.kind == "chapter" or (in_chapter and h.kind == "part" and h.label in inner)
        kept.append(f)
    labels = ", ".join(sorted(repr(x) for x in inner if x))
    work.notes.append(f"headings labelled {labels} met inside chapters are kept as their sections")
    return kept, paras


def _has_text(body: list[_Para]) -> bool:
    return any(p.text.strip() for p in body)


def _bare_title(h: importers_headings.Heading, lang: str) -> str:
    """A bare numeral's section: its title, else `Chapter XII` in the work's language."""
    return h.title or f"{corpus_lang.labels(lang).chapter} {h.number}"
