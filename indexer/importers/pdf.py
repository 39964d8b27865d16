"""Import a PDF: its outline (bookmarks) gives parts and chapters, else its headings do.

    outline                                   the book
    ├─ The War of the Worlds                  a single top entry titled as the book: skipped
    │  ├─ BOOK ONE  THE COMING OF …           an entry with entries under it: a part
    │  │  ├─ CHAPTER ONE  THE EVE OF THE WAR  its entries: chapters (deeper ones stay text)
    └─ A Scandal In Bohemia                   no entry under any: every entry a chapter

The text layer is read with PDFium (pypdfium2: the fastest of the extractors measured in
bench/pdf.py, with wheels for every platform, and it marks the hyphens it finds at line
ends); pages without one go through OCR (`ocr.py`). `pdflayout.py` turns the lines into
paragraphs and headings. A chapter's text runs from its outline entry's place (page and
height) to the next entry's; the heading lines at its top go, being its title. Without an
outline the paragraphs and headings go through the plain-text importer's rules (`text.py`:
headings by label and numeral), each heading a paragraph of its own. Title, author and
language: the PDF's metadata, else as for text.
"""

from __future__ import annotations

import ctypes
import itertools
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from indexer.corpus import lang as languages
from indexer.importers import etext
from indexer.importers import headings as importers_headings
from indexer.importers import pdflayout as importers_pdflayout
from indexer.importers.common import TITLE_FROM_FILE_NAME, ImportSourceError, guess_language
from indexer.importers.selection import Selection
from indexer.importers.titles import smart_title
from indexer.importers.tree import Part, Section, Work

# Text before the first outline entry up to this many characters is a title page (text.py's
# rule); more is kept as a piece.
TITLE_PAGE_CHARS = 2000
FRONT_MATTER_TITLE = "Front matter"
# A chapter is `##` in the written book (writer.py), so its sections start one deeper, as
# the text importer's sections inside chapters do.
SECTION_DEPTH = 3
# Metadata titles that name the file's maker, not the book (Word's, Chromium's untitled page)
_JUNK_TITLE = re.compile(
    r"^(?:microsoft word - |untitled|about:blank|document\d*$)|\.\w{2,4}$", re.I
)


@dataclass
class Entry:
    level: int
    title: str
    page: int
    y: float  # from the page's top; 0: the page's top


@dataclass
class Pages:
    """What a PDF holds, read: each page's lines, its outline, its metadata."""

    lines: list[list[importers_pdflayout.Line]]
    outline: list[Entry]
    meta: dict[str, str]
    notes: list[str]


_CORRUPT = (
    "is not a readable PDF (damaged, cut short or not a PDF); open it in a PDF viewer to check"
)
_ZERO_PAGES = "is a PDF of zero pages: nothing to import"


def _bytes_of(path: str) -> bytes:
    try:
        data = Path(path).read_bytes()
    except OSError:
        return b""
    return data


def _no_pages(data: bytes) -> bool:
    """Does the file's page tree say it has no page (`/Count 0`, no other count)?"""
    return set(re.findall(rb"/Count\s+(\d+)", data)) == {b"0"}


def _open(path: str, password: str | None = None):
    import pypdfium2 as pdfium

    try:
        doc = pdfium.PdfDocument(path, password=password)
    except pdfium.PdfiumError as e:
        # (PDFium's last error may be an earlier document's: the file says which it is)
        data = _bytes_of(path)
        if e.err_code == pdfium.raw.FPDF_ERR_PASSWORD and b"/Encrypt" in data:
            raise ImportSourceError(
                path,
                "is encrypted (a password protects it); save an unprotected copy and import that",
            ) from None
        if _no_pages(data):
            raise ImportSourceError(path, _ZERO_PAGES) from None  # (PDFium loads none such)
        raise ImportSourceError(path, _CORRUPT) from None
    except OSError:  # (PDFium's "file not found or could not be opened": no PDF it can parse)
        if not Path(path).is_file():
            raise ImportSourceError(path, "does not exist; check the path") from None
        raise ImportSourceError(path, _CORRUPT) from None
    if len(doc) == 0:
        doc.close()
        raise ImportSourceError(path, _ZERO_PAGES)
    return doc


def _page_lines(page, number: int) -> list[importers_pdflayout.Line]:
    """A page's text lines in reading order (top to bottom, then left to right)."""
    import pypdfium2.raw as pypdfium2_raw

    height = page.get_height()
    tp = page.get_textpage()
    try:
        text = tp.get_text_range()
        out: list[importers_pdflayout.Line] = []
        ox, oy = ctypes.c_double(), ctypes.c_double()
        box = pypdfium2_raw.FS_RECTF()
        pos = 0
        for raw in text.split("\r\n"):
            start, pos = pos, pos + len(raw) + 2
            stripped = raw.rstrip()
            if not stripped.strip():
                continue
            first = start + (len(raw) - len(raw.lstrip()))
            last = start + len(stripped) - 1
            pypdfium2_raw.FPDFText_GetCharOrigin(tp.raw, first, ctypes.byref(ox), ctypes.byref(oy))
            pypdfium2_raw.FPDFText_GetLooseCharBox(tp.raw, first, ctypes.byref(box))
            size = box.top - box.bottom
            x0 = ox.value
            if (
                importers_pdflayout.SOFT_HYPHEN in stripped
            ):  # two lines PDFium joined: the second's baseline
                pypdfium2_raw.FPDFText_GetCharOrigin(
                    tp.raw, last, ctypes.byref(ox), ctypes.byref(oy)
                )
            pypdfium2_raw.FPDFText_GetLooseCharBox(tp.raw, last, ctypes.byref(box))
            bold = pypdfium2_raw.FPDFText_GetFontWeight(tp.raw, first) >= 600
            text = _mark_superscripts(tp, stripped, start, size, box)
            out.append(
                importers_pdflayout.Line(number, x0, box.right, height - oy.value, size, bold, text)
            )
    finally:
        tp.close()
    out.sort(key=lambda x: (round(x.y), x.x0))
    return importers_pdflayout.merge_pieces(out)


def _has_image(page) -> bool:
    import pypdfium2.raw as pypdfium2_raw

    return any(
        True for _ in page.get_objects(filter=[pypdfium2_raw.FPDF_PAGEOBJ_IMAGE], max_depth=3)
    )


def _mark_superscripts(tp, text: str, start: int, size: float, box) -> str:
    """Digits set smaller than the line's first letter (a note's call) between
    `pdflayout.SUP` marks; `pdflayout.blocks` makes them `[^n]` or plain digits again."""
    import pypdfium2.raw as pypdfium2_raw

    out, at = [], 0
    for m in re.finditer(r"\d{1,3}", text):
        pypdfium2_raw.FPDFText_GetLooseCharBox(tp.raw, start + m.start(), ctypes.byref(box))
        if 0 < box.top - box.bottom < 0.8 * size:
            out.append(
                text[at : m.start()]
                + importers_pdflayout.SUP[0]
                + m.group()
                + importers_pdflayout.SUP[1]
            )
            at = m.end()
    return "".join(out) + text[at:] if out else text


def _outline(doc) -> list[Entry]:
    out = []
    for item in doc.get_toc(max_depth=4):
        dest = item.get_dest()
        page = dest.get_index() if dest is not None else None
        if page is None:
            continue  # (a link to a web page: Planet PDF's own)
        y = 0.0
        mode, view = dest.get_view()
        if mode == 1 and len(view) >= 2 and view[1]:  # XYZ: left, top, zoom
            y = max(0.0, doc[page].get_height() - view[1])
        title = importers_pdflayout.clean_text(item.get_title() or "")
        if title:
            out.append(Entry(item.level, title, page, y))
    return out


def read_pages(
    path: str,
    *,
    ocr: str = "auto",
    lang: str | None = None,
    ocr_engine: Callable[..., list[list[importers_pdflayout.Line]]] | None = None,
) -> Pages:
    """The PDF's lines, page by page (OCR for pages without text, as `ocr` says)."""
    doc = _open(path)
    try:
        meta = {
            k: importers_pdflayout.clean_text(v) for k, v in doc.get_metadata_dict().items() if v
        }
        lines = [_page_lines(doc[i], i) for i in range(len(doc))] if ocr != "force" else []
        outline = _outline(doc)
        notes: list[str] = []
        # (a blank page, or one of rules only, has nothing to read: only pictures go to OCR)
        blank = [
            i for i in range(len(doc)) if ocr == "force" or (not lines[i] and _has_image(doc[i]))
        ]
        if blank and ocr != "never":
            if ocr_engine is None:
                from indexer.importers.ocr import Tesseract

                ocr_engine = Tesseract()
            scanned = ocr_engine(doc, blank, lang=lang, notes=notes, path=path)
            lines = lines or [[] for _ in range(len(doc))]
            for i, page_lines in zip(blank, scanned, strict=True):
                lines[i] = page_lines
    finally:
        doc.close()
    if not any(lines):
        if blank and ocr != "never":
            raise ImportSourceError(
                path, f"has no text layer and OCR found no text on its {len(blank)} page(s) "
                "(a picture?); nothing to import",
            )  # fmt: skip
        raise ImportSourceError(
            path,
            "has no text layer on any page"
            + ("; import it with --ocr auto to read it by OCR" if ocr == "never" else ""),
        )
    return Pages(lines, outline, meta, notes)


def read_pdf(
    src: Path,
    *,
    lang: str | None = None,
    exclude: tuple[str, ...] = (),
    skip_front_matter: bool = False,
    ocr: str = "auto",
    ocr_engine: Callable[..., list[list[importers_pdflayout.Line]]] | None = None,
) -> Work:
    """The work in the PDF at `src`."""
    path = str(src)
    pages = read_pages(path, ocr=ocr, lang=lang, ocr_engine=ocr_engine)
    clean = importers_pdflayout.drop_running(pages.lines)
    found = importers_pdflayout.blocks(clean)
    if not any(b.text.strip() for b in found):
        raise ImportSourceError(path, "holds no text")
    entries = _chapter_entries(pages.outline, pages.meta.get("Title", ""))
    if not entries:
        return _by_headings(src, found, pages, lang, exclude, skip_front_matter)
    text = "\n".join(b.text for b in found)
    language = lang or guess_language(text)
    title, author = _title_author(pages.meta, found, src)
    work = Work(title, author, languages.code(language))
    if title == src.stem:
        work.notes.append(TITLE_FROM_FILE_NAME)
    work.notes.extend(pages.notes)
    _assemble(work, entries, found, path, Selection(exclude, skip_front_matter))
    if not work.parts and not work.pieces:
        raise ImportSourceError(path, "every chapter found was excluded or empty")
    return work


def _chapter_entries(outline: list[Entry], title: str) -> list[Entry]:
    """The outline's entries for parts (level 0 with entries under them) and chapters
    (level 1 under a part, else level 0); a single top entry over all is skipped."""
    entries = list(outline)
    while (
        entries
        and sum(e.level == min(x.level for x in entries) for e in entries) == 1
        and len(entries) > 1
    ):
        top = min(e.level for e in entries)
        entries = [e for e in entries if e.level != top]
    if len(entries) < 2:
        return []  # an outline of one entry says nothing of the chapters
    top = min(e.level for e in entries)
    return [e for e in entries if e.level <= top + 1]


def _title_author(
    meta: dict[str, str], found: list[importers_pdflayout.Block], src: Path
) -> tuple[str, str | None]:
    title = meta.get("Title", "")
    if _JUNK_TITLE.search(title):
        title = ""
    author = meta.get("Author") or None
    if not title or not author:
        page_title, page_author = etext.title_and_author([b.text for b in found[:12]], author)
        title = title or page_title
        author = author or page_author
    return smart_title(title) if title else src.stem, author


def _section_blocks(
    found: list[importers_pdflayout.Block], start: Entry, end: Entry | None
) -> list[importers_pdflayout.Block]:
    def after(b: importers_pdflayout.Block, e: Entry) -> bool:
        return (b.page, b.y) >= (e.page, e.y - 2)

    return [b for b in found if after(b, start) and (end is None or not after(b, end))]


def _render(blocks: list[importers_pdflayout.Block]) -> str:
    """Markdown: the paragraphs, then the footnotes' definitions. A heading inside a
    chapter (set larger or bolder than the text, as `pdflayout` tells headings) is its
    section: `###` for the largest size met in the chapter, `####` for the next, and so on."""
    while blocks and blocks[0].kind == "heading":
        blocks = blocks[1:]  # the chapter's own title, as printed
    sizes = sorted({round(b.size, 1) for b in blocks if b.kind == "heading"}, reverse=True)

    def markdown(b: importers_pdflayout.Block) -> str:
        if b.kind != "heading":
            return b.text
        depth = SECTION_DEPTH + min(sizes.index(round(b.size, 1)), 6 - SECTION_DEPTH)
        return "#" * depth + " " + " ".join(b.text.split())

    paras = [markdown(b) for b in blocks if b.text.strip()]
    notes = [n for b in blocks for n in b.notes]
    text = "\n\n".join(paras + notes)
    return text + "\n" if text else ""


def _parse_entry(entry: Entry, lang: str) -> tuple[str, str | None, dict[str, str]]:
    """`CHAPTER ONE  THE EVE OF THE WAR` → (`The Eve of the War`, `1`, label)."""
    h = importers_headings.parse(entry.title)
    if h is None or h.number is None:
        return entry.title, None, {}
    title = smart_title(h.title) if h.title else entry.title
    number = (
        str(h.value)
        if h.value is not None and not h.number.isdigit() and not _roman(h.number)
        else h.number
    )
    return title, number, importers_headings.label_meta(h, lang)


def _as_printed(entry: Entry, body: list[importers_pdflayout.Block]) -> Entry:
    """The entry titled as the heading printed at its place when they are the same words but
    for spaces: Chromium's outline joins a heading's wrapped lines without one
    (`OF THE DIVISION OFLABOUR.`)."""
    printed = " ".join(b.text for b in itertools.takewhile(lambda b: b.kind == "heading", body))
    squeeze = re.compile(r"\s+")
    if printed and squeeze.sub("", printed).lower() == squeeze.sub("", entry.title).lower():
        return Entry(entry.level, " ".join(printed.split()), entry.page, entry.y)
    return entry


def _roman(text: str) -> bool:
    return bool(re.fullmatch(r"[IVXLCDM]+", text.upper()))


def _assemble(
    work: Work,
    entries: list[Entry],
    found: list[importers_pdflayout.Block],
    path: str,
    selection: Selection,
) -> None:
    top = min(e.level for e in entries)
    has_parts = any(e.level > top for e in entries)
    front = _section_blocks(found, Entry(0, "", 0, 0.0), entries[0])
    front = [b for b in front if (b.page, b.y) < (entries[0].page, entries[0].y - 2)]
    front_text = "\n\n".join(b.text for b in front)
    if len(front_text) > TITLE_PAGE_CHARS:
        work.add_piece(Section(FRONT_MATTER_TITLE, _render(front), origin=f"{path}#page=1"))
    elif front:
        work.notes.append(
            f"left out the title page before {entries[0].title!r} ({len(front)} paragraphs, "
            f"pages 1-{entries[0].page + 1})"
        )
    part: Part | None = None
    for n, e in enumerate(entries):
        nxt = entries[n + 1] if n + 1 < len(entries) else None
        body = _section_blocks(found, e, nxt)
        title, number, meta = _parse_entry(_as_printed(e, body), work.lang)
        origin = f"{path}#page={e.page + 1}"
        if has_parts and e.level == top:
            part = None if selection.excluded(title) else Part(title)
            text = _render(body)
            if part is not None:
                work.add_part(part)
                if text.strip():
                    part.sections.append(Section(title, text, None, origin=origin))
            continue
        if selection.excluded(title, front=part is None, work_title=work.title):
            continue
        text = _render(body)
        if not text.strip():
            work.notes.append(f"left out {e.title!r} (page {e.page + 1}): no text")
            continue
        section = Section(title, text, number, meta, origin=origin)
        if part is not None:
            part.sections.append(section)
        elif not has_parts:
            work.add_piece(section)
    work.parts = [p for p in work.parts if p.sections]


def _by_headings(
    src: Path,
    found: list[importers_pdflayout.Block],
    pages: Pages,
    lang: str | None,
    exclude: tuple[str, ...],
    skip_front_matter: bool,
) -> Work:
    """No outline: the text importer's rules on the rebuilt paragraphs."""
    from indexer.importers.text import read_decoded

    # (a page's footnotes after the paragraph they end with: Markdown takes their
    # definitions anywhere in the chapter)
    text = "\n\n".join("\n\n".join([b.text, *b.notes]) for b in found) + "\n"
    work = read_decoded(
        str(src), text, "utf-8", lang=lang, exclude=exclude, skip_front_matter=skip_front_matter
    )
    title, author = pages.meta.get("Title", ""), pages.meta.get("Author")
    if title and not _JUNK_TITLE.search(title):
        work.title = smart_title(title)
        work.notes = [n for n in work.notes if n != TITLE_FROM_FILE_NAME]
    if author:
        work.author = author
    work.notes.extend(pages.notes)
    return work
