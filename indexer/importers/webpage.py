"""Import saved web pages: one chapter page (a Wikisource chapter saved whole from the
browser), or a folder of a site's chapter pages, one chapter each, in the order of their
file names (`chapitre-2.html` before `chapitre-10.html`).

A saved page carries the site around the text: its `<head>`, header, menus, search,
breadcrumb, navigation between chapters, licence banner, categories and footer. The text
is the page's content block: MediaWiki's `.mw-parser-output` (Wikisource, Wikipedia), else
`<main>`, `<article>` or `[role=main]`, else the body; inside it Wikisource's
`.ws-noexport` furniture (`#headertemplate`, its previous/next links), page-number spans
(`.ws-pagenum`), edit links and the licence banner go, and the notes of its reference list
(`ol.references`) become Markdown footnotes: the conversion is EPUB's (`html.py`).

The chapter's title: Wikisource's `#header_section_text`, else the page title's part after
the book's (`Sophismes économiques/Abondance, disette`), else the first heading; the book's
title: Wikisource's `#header_title_text`, else the breadcrumb's last link (`.subpages`),
else the part of the page title before `/`, else the folder's or file's name; the author:
`#header_author_text` or `<meta name="author">`. The heading repeating the chapter's title
is dropped from its text; other headings stay in the text below the chapter's level.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from lxml import etree

from indexer.importers.common import (
    ImportSourceError,
    guess_language,
    own_label,
    split_heading,
)
from indexer.importers.html import Converter, local, parse
from indexer.importers.titles import clean_title
from indexer.importers.tree import Section, Work

PAGE_SUFFIXES = (".html", ".htm", ".xhtml")
# Site furniture inside the content block, by class or id (Wikisource, MediaWiki)
_FURNITURE_CLASSES = (
    "ws-noexport", "licensecontainer", "printfooter", "catlinks", "mw-editsection", "noprint",
    "navbox", "mw-jump-link", "ws-header", "wst-header",
)  # fmt: skip
_FURNITURE_IDS = ("headertemplate", "catlinks", "toc", "contentsub", "sitesub", "footer")
_CONTENT_XPATHS = (
    "//*[contains(concat(' ', normalize-space(@class), ' '), ' mw-parser-output ')]",
    "//main",
    "//article",
    "//*[@role='main']",
    "//body",
)
_HEADING = re.compile(r"^(#{1,6}) ", re.MULTILINE)


@dataclass
class _Page:
    path: Path
    title: str  # the chapter's
    book: str | None
    author: str | None
    lang: str | None
    markdown: str


def read_pages(
    src: Path,
    *,
    work_title: str | None = None,
    lang: str | None = None,
) -> Work:
    """The work in one saved page (`src` a file) or a folder of chapter pages."""
    files = _files(src)
    pages = [_read_page(f) for f in files]
    first = pages[0]
    book = work_title or first.book or (src.name if src.is_dir() else src.stem)
    text = "\n\n".join(p.markdown for p in pages)
    language = (lang or first.lang or guess_language(text)).split("-")[0].lower()
    work = Work(book, first.author, language)
    for page in pages:
        number, title = split_heading(page.title)
        body = _body(page.markdown, page.title, title)
        if not body.strip():
            work.notes.append(f"left out {page.path.name}: no text in its content block")
            continue
        meta = own_label(page.title, language) if number is not None else {}
        work.add_piece(Section(title, body, number, meta, origin=str(page.path)))
    if not work.pieces:
        raise ImportSourceError(str(src), "holds no text in its pages")
    work.notes.append(
        f"left out the site around the text of {len(pages)} page(s): header, menus, "
        "navigation, page numbers, licence banner, categories, footer"
    )
    return work


def _files(src: Path) -> list[Path]:
    if src.is_file():
        if src.suffix.lower() not in PAGE_SUFFIXES:
            raise ImportSourceError(str(src), "is not an HTML page (.html, .htm)")
        return [src]
    files = [p for p in src.iterdir() if p.is_file() and p.suffix.lower() in PAGE_SUFFIXES]
    if not files:
        raise ImportSourceError(str(src), "holds no HTML page (.html, .htm)")
    return sorted(files, key=_natural)


def _natural(path: Path) -> list[object]:
    """`chapitre-2` before `chapitre-10`: numbers in names compared as numbers."""
    return [int(t) if t.isdigit() else t.lower() for t in re.split(r"(\d+)", path.name)]


def _read_page(path: Path) -> _Page:
    try:
        data = path.read_bytes()
    except OSError as e:
        raise ImportSourceError(str(path), f"cannot be read ({e.strerror})") from None
    if not data.strip():
        raise ImportSourceError(str(path), "is empty")
    try:
        root = parse(data)
    except (etree.ParserError, ValueError):
        raise ImportSourceError(str(path), "is not an HTML page that can be read") from None
    # (Wikisource's header names the book, the author and the chapter: read before it goes)
    section = _by_id(root, "header_section_text")
    book = _by_id(root, "header_title_text") or _breadcrumb(root)
    author = _by_id(root, "header_author_text") or _meta(root, "author")
    content = _content(root)
    for el in list(content.iter()):
        if isinstance(el.tag, str) and _furniture(el) and el.getparent() is not None:
            el.getparent().remove(el)
    ids = {el.get("id"): el for el in content.iter() if isinstance(el.tag, str) and el.get("id")}

    def resolve(href: str, link: etree._Element) -> etree._Element | None:
        return ids.get(href.partition("#")[2]) if "#" in href else None

    blocks = [c for c in content if isinstance(c.tag, str)]
    markdown = Converter(resolve).convert(blocks) if blocks else ""
    if not blocks and (content.text or "").strip():
        markdown = " ".join((content.text or "").split()) + "\n"
    page_title = _text(root.find(".//h1")) or _text(root.find(".//title"))
    page_title = re.sub(r"\s+[—–-]\s+Wikisource$", "", page_title)
    if not section and "/" in page_title:
        book = book or page_title.rsplit("/", 1)[0]
        section = page_title.rsplit("/", 1)[1]
    if not section:
        m = _HEADING.search(markdown)
        section = markdown[m.end() :].split("\n", 1)[0] if m else page_title or path.stem
    lang = root.get("lang") or None
    return _Page(path, clean_title(section), book or None, author or None, lang, markdown)


def _content(root: etree._Element) -> etree._Element:
    for xpath in _CONTENT_XPATHS:
        found = root.xpath(xpath)
        if found:
            return found[0]
    return root


def _furniture(el: etree._Element) -> bool:
    classes = f" {(el.get('class') or '').lower()} "
    if any(f" {c} " in classes for c in _FURNITURE_CLASSES):
        return True
    return (el.get("id") or "").lower() in _FURNITURE_IDS or local(el.tag) in (
        "nav",
        "footer",
        "header",
        "form",
    )


def _text(el: etree._Element | None) -> str:
    return " ".join("".join(el.itertext()).split()) if el is not None else ""


def _by_id(root: etree._Element, id_: str) -> str:
    found = root.xpath(f"//*[@id='{id_}']")
    return _text(found[0]) if found else ""


def _breadcrumb(root: etree._Element) -> str:
    links = root.xpath("//*[contains(@class, 'subpages')]//a")
    return _text(links[-1]) if links else ""


def _meta(root: etree._Element, name: str) -> str:
    found = root.xpath(f"//meta[@name='{name}']/@content")
    return str(found[0]).strip() if found else ""


def _body(markdown: str, full_title: str, title: str) -> str:
    """The page's text without the heading repeating its title; other headings demoted
    below the chapter's level (`####`), where they stay text (DESIGN §3)."""
    lines = markdown.split("\n")
    for k, line in enumerate(lines):
        if not line.strip():
            continue
        m = _HEADING.match(line)
        if m:
            heading = clean_title(line[m.end() :])
            _number, rest = split_heading(heading)
            if _same(heading, full_title) or _same(rest, title) or _same(heading, title):
                lines = lines[k + 1 :]
        break
    text = "\n".join(lines).strip("\n")
    text = _HEADING.sub(lambda m: "#" * max(4, len(m.group(1))) + " ", text)
    return text + "\n" if text else ""


def _same(a: str, b: str) -> bool:
    def key(s: str) -> str:
        return re.sub(r"\W+", "", s.casefold())

    return bool(a) and key(a) == key(b)
