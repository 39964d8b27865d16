"""Import an EPUB (Wikisource exports its books as EPUB) through its table of contents.

    TOC entry with children        → a part; its children → chapters
    TOC entry without children     → a liminary piece attached to the work (préface,
                                     introduction, or a conclusion after the parts);
                                     in a TOC without parts, the book's chapters
    flat TOC (no nesting)          → entries titled like parts (« Livre », « Partie »,
                                     « Série », « Tome », « Book », « Part ») open parts

A chapter's text runs from its TOC anchor to the next TOC anchor in reading
(spine) order, across files if need be, so both one-file-per-chapter books and
books whose chapters share a file are read right. HTML becomes Markdown in
`html.py`. Read with ebooklib (`ignore_ncx` set explicitly: the EPUB 3 nav
first, the EPUB 2 NCX when there is no nav).
"""

from __future__ import annotations

import logging
import posixpath
import re
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from lxml import etree

from indexer.importers.common import (
    TITLE_FROM_FILE_NAME,
    ImportSourceError,
    drop_title_heading,
    own_label,
    split_heading,
)
from indexer.importers.html import Converter, body_blocks, parse
from indexer.importers.selection import Selection
from indexer.importers.tree import Part, Section, Work

log = logging.getLogger(__name__)

_PART_TITLE = re.compile(r"^\s*(livre|partie|s[ée]rie|tome|book|part)\b", re.IGNORECASE)


@dataclass
class Entry:
    title: str
    href: str  # "file.xhtml#anchor", resolved against the OPF folder; "" for a bare section
    children: list[Entry] = field(default_factory=list)


def _entries(toc: list[Any]) -> list[Entry]:
    from ebooklib import epub

    out = []
    for item in toc:
        if isinstance(item, tuple):
            head, children = item
            out.append(Entry(" ".join(head.title.split()), head.href or "", _entries(children)))
        elif isinstance(item, epub.Link):
            out.append(Entry(" ".join(item.title.split()), item.href or ""))
    return out


def _nest_flat(entries: list[Entry]) -> list[Entry]:
    """A flat TOC: part-like titles open parts that collect the entries after them."""
    if any(e.children for e in entries) or not any(_PART_TITLE.match(e.title) for e in entries):
        return entries
    out: list[Entry] = []
    current: Entry | None = None
    for e in entries:
        if _PART_TITLE.match(e.title):
            current = Entry(e.title, e.href)
            out.append(current)
        elif current is not None:
            current.children.append(e)
        else:
            out.append(e)
    return out


class _Book:
    """The EPUB's documents in spine order, parsed once, with a link resolver."""

    def __init__(self, src: Path, book: Any) -> None:
        from ebooklib import ITEM_DOCUMENT

        self.src = src
        self.docs: dict[str, etree._Element] = {}
        self.order: list[str] = []
        items = {i.get_name(): i for i in book.get_items_of_type(ITEM_DOCUMENT)}
        by_id = {i.get_id(): i for i in items.values()}
        for idref, _linear in book.spine:
            item = by_id.get(idref)
            if item is None or item.get_name() in self.docs:
                continue
            name = item.get_name()
            try:
                self.docs[name] = parse(item.get_content())
            except (etree.ParserError, ValueError) as e:
                raise ImportSourceError(f"{src}!{name}", f"unreadable XHTML ({e})") from None
            self.order.append(name)
        self.ids: dict[tuple[str, str], etree._Element] = {}
        for name, root in self.docs.items():
            for el in root.iter():
                if isinstance(el.tag, str) and el.get("id"):
                    self.ids.setdefault((name, el.get("id")), el)

    def split(self, href: str, base: str = "") -> tuple[str, str]:
        path, _, frag = href.partition("#")
        path = unquote(path)
        if base and path:
            path = posixpath.normpath(posixpath.join(posixpath.dirname(base), path))
        elif not path:
            path = base
        if path not in self.docs:  # the NCX's hrefs may be relative to another folder
            match = [n for n in self.docs if n.endswith("/" + path) or path.endswith("/" + n)]
            path = match[0] if len(match) == 1 else path
        return path, unquote(frag)

    def resolver(self, default: str) -> Any:
        """Find a link's target; relative links resolve against the link's own file."""

        def resolve(href: str, link: etree._Element) -> etree._Element | None:
            root = link.getroottree().getroot()
            base = next((n for n, r in self.docs.items() if r is root), default)
            name, frag = self.split(href, base)
            return self.ids.get((name, frag)) if frag else None

        return resolve


def _open(src: Path) -> Any:
    try:
        from ebooklib import epub

        return epub.read_epub(str(src), options={"ignore_ncx": True})
    except (zipfile.BadZipFile, KeyError, IndexError, etree.LxmlError) as e:
        raise ImportSourceError(
            str(src), f"not a readable EPUB ({type(e).__name__}); export it again"
        ) from None
    except Exception as e:  # ebooklib raises its own EpubException (and others) freely
        if type(e).__name__ == "EpubException":
            raise ImportSourceError(
                str(src), f"not a readable EPUB ({e}); export it again"
            ) from None
        raise


def _metadata(book: Any, name: str) -> str | None:
    values = book.get_metadata("DC", name)
    return " ".join(str(values[0][0]).split()) if values and values[0][0] else None


def read_epub(
    src: Path,
    *,
    exclude: tuple[str, ...] = (),
    skip_front_matter: bool = False,
    lang: str | None = None,
) -> Work:
    """The work in the EPUB at `src`."""
    if not src.is_file():
        raise ImportSourceError(str(src), "is not an EPUB file")
    book = _open(src)
    doc = _Book(src, book)
    toc = _nest_flat(_entries(book.toc))
    if not toc:
        raise ImportSourceError(
            str(src), "has no table of contents (nav or NCX) to give its chapters"
        )
    selection = Selection(exclude, skip_front_matter)
    lang = (lang or _metadata(book, "language") or "fr").split("-")[0].lower()
    work = Work(_metadata(book, "title") or src.stem, _metadata(book, "creator"), lang)
    if not _metadata(book, "title"):
        work.notes.append(TITLE_FROM_FILE_NAME)

    # every TOC anchor, in reading order: a chapter ends where the next one starts
    flat: list[tuple[Entry, str]] = []  # (entry, role)
    seen_part = False
    plan: list[tuple[str, Entry, Part | None]] = []
    for entry in toc:
        if entry.children:
            seen_part = True
            flat.append((entry, "part"))
            if selection.excluded(entry.title):
                flat.extend((c, "excluded") for c in entry.children)
                continue
            part = Part(entry.title)
            for child in entry.children:
                wanted = not selection.excluded(child.title)
                flat.append((child, "chapter" if wanted else "excluded"))
                if wanted:
                    plan.append(("chapter", child, part))
            plan.append(("part", entry, part))
            continue
        if selection.excluded(entry.title, front=not seen_part, work_title=work.title):
            flat.append((entry, "excluded"))
            continue
        flat.append((entry, "piece"))
        plan.append(("piece", entry, None))

    texts = _texts(doc, flat)
    for role, entry, owner in plan:
        if role == "part" and owner is not None:
            if owner.sections:
                work.add_part(owner)
            continue
        section = _section(entry, texts.get(id(entry), ""), src, work.lang)
        if role == "chapter" and owner is not None:
            owner.sections.append(section)
        else:  # a piece (before or after the parts), or a chapter of a book without parts
            work.add_piece(section)
    if not work.parts and not work.pieces:
        raise ImportSourceError(
            str(src),
            "its table of contents lists no chapter (every entry was excluded or empty); "
            "check --exclude, or import the book as Markdown",
        )
    return work


def _section(entry: Entry, markdown: str, src: Path, lang: str) -> Section:
    number, title = split_heading(entry.title)
    body = drop_title_heading(markdown, title, number)
    if body == markdown:  # the page may repeat the TOC's wording instead
        body = drop_title_heading(markdown, entry.title)
    meta = own_label(entry.title, lang) if number is not None else {}
    return Section(title, body, number, meta, origin=f"{src}!{entry.href}")


def _texts(doc: _Book, flat: list[tuple[Entry, str]]) -> dict[int, str]:
    """Markdown of every chapter and piece: from its anchor to the next TOC anchor."""
    starts: dict[tuple[str, str], list[tuple[Entry, str]]] = {}
    for entry, role in flat:
        if entry.href:
            starts.setdefault(doc.split(entry.href), []).append((entry, role))
    anchors_by_doc: dict[str, set[str]] = {}
    for name, frag in starts:
        if frag:
            anchors_by_doc.setdefault(name, set()).add(frag)
    current: tuple[Entry, str] | None = None
    collected: dict[int, list[etree._Element]] = {}
    owners: dict[int, tuple[Entry, str, str]] = {}
    for name in doc.order:
        blocks = body_blocks(doc.docs[name], anchors_by_doc.get(name, set()))
        here = starts.get((name, ""))
        if here:
            current = here[-1]
        for block in blocks:
            ids = {block.get("id")} | {
                d.get("id") for d in block.iter() if isinstance(d.tag, str) and d.get("id")
            }
            hit = next((starts[(name, i)] for i in ids if i and (name, i) in starts), None)
            if hit:
                current = hit[-1]
            if current is None:
                continue
            entry, role = current
            if role in ("chapter", "piece"):
                collected.setdefault(id(entry), []).append(block)
                owners[id(entry)] = (entry, role, name)
            elif role == "part" and block.tag not in ("marker",) and _has_text(block):
                log.warning(
                    "%s: text on the page of part %r is not imported (it belongs to no chapter)",
                    doc.src,
                    entry.title,
                )
    out: dict[int, str] = {}
    for key, blocks in collected.items():
        _entry, _role, name = owners[key]
        out[key] = Converter(doc.resolver(name)).convert(blocks)
    return out


def _has_text(block: etree._Element) -> bool:
    tag = etree.QName(block.tag).localname.lower() if isinstance(block.tag, str) else ""
    return tag not in ("h1", "h2", "h3", "h4", "h5", "h6") and bool(
        "".join(block.itertext()).strip()
    )
