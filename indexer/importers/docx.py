"""Import a Word document (.docx): its heading styles give the structure.

    Title style                  the work's title (else the document's properties, else the
                                 file's name); its author from the properties (`dc:creator`)
    Heading 1 over Heading 2     parts and their chapters; a Heading 1 with no Heading 2
                                 under it is a chapter or a liminary piece (`Preface`)
    Heading 1 only               chapters
    Heading 3 and deeper         stay in the chapter's text (`####`)
    footnotes                    Markdown footnotes (`[^3]` and its `[^3]: …` definition)
    italic, bold                 `*…*`, `**…**`

The document is read as OOXML (a zip of XML parts, ECMA-376) with lxml, no Word library:
`word/document.xml` holds the paragraphs, `word/styles.xml` names their styles (Word and
LibreOffice give `Heading 1` the id `Heading1`, a localized Word another: the style's name
or its outline level says it), `word/footnotes.xml` the notes, `docProps/core.xml` the
title and author. The Markdown this makes goes through the Markdown importer, so a DOCX
book follows the same rules (`markdown.py`). Text before the first heading up to
TITLE_PAGE_CHARS is a title page, left out and said; more is kept as a piece.
"""

from __future__ import annotations

import re
import zipfile
from pathlib import Path

from lxml import etree

from indexer.importers.common import ImportSourceError
from indexer.importers.markdown import read_markdown_data
from indexer.importers.text import FRONT_MATTER_TITLE, TITLE_PAGE_CHARS
from indexer.importers.titles import clean_title
from indexer.importers.tree import Work

W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"
_DC = "{http://purl.org/dc/elements/1.1/}"
_HEADING_NAME = re.compile(r"^heading\s*(\d)$", re.IGNORECASE)
# Markdown's own marks in a run's text: escaped, so that `*` in the text stays a star
_MD_SPECIAL = re.compile(r"([\\`*_\[\]])")


def read_docx(
    src: Path,
    *,
    exclude: tuple[str, ...] = (),
    skip_front_matter: bool = False,
    lang: str | None = None,
) -> Work:
    """The work in the Word document at `src`."""
    path = str(src)
    parts = _open(src)
    styles = _styles(parts.get("word/styles.xml"))
    notes = _footnotes(parts.get("word/footnotes.xml"))
    title, author = _properties(parts.get("docProps/core.xml"))
    blocks = list(_paragraphs(parts["word/document.xml"], styles))
    if not any(text.strip() for _, text in blocks):
        raise ImportSourceError(path, "holds no text")
    titles = [text for level, text in blocks if level == 0 and text.strip()]
    title = clean_title(titles[0]) if titles else title or src.stem
    levels = {level for level, text in blocks if level > 0 and text.strip()}
    if not levels:
        raise ImportSourceError(
            path,
            "has no paragraph in a Heading style: give each chapter the Heading 1 style "
            "(or parts Heading 1 and their chapters Heading 2) and save it again",
        )
    markdown, dropped = _markdown(blocks, levels, list(notes.items()))
    head = ["---", f"title: {_yaml(title)}"]
    if author:
        head.append(f"author: {_yaml(author)}")
    head.append("---")
    # the language from the text (a Word's default language is its user's, not the book's)
    doc_lang = lang
    data = "\n".join([*head, f"# {title}", "", markdown]).encode("utf-8")
    works = read_markdown_data(
        path, data, exclude=exclude, skip_front_matter=skip_front_matter, lang=doc_lang
    )
    work = works[0]
    if dropped:
        work.notes.insert(0, dropped)
    return work


class _Styles:
    def __init__(self) -> None:
        self.levels: dict[str, int] = {}  # style id → 0 (Title) or the heading's level


def _open(src: Path) -> dict[str, bytes]:
    path = str(src)
    try:
        with zipfile.ZipFile(src) as z:
            names = set(z.namelist())
            if "word/document.xml" not in names:
                raise ImportSourceError(path, "is not a Word document (no word/document.xml)")
            wanted = ("word/document.xml", "word/styles.xml", "word/footnotes.xml",
                      "docProps/core.xml")  # fmt: skip
            return {n: z.read(n) for n in wanted if n in names}
    except zipfile.BadZipFile:
        raise ImportSourceError(
            path, "is not a .docx file (not a zip archive); save it again as .docx"
        ) from None
    except OSError as e:
        raise ImportSourceError(path, f"cannot be read ({e.strerror})") from None


def _xml(data: bytes | None) -> etree._Element | None:
    if not data:
        return None
    try:
        return etree.fromstring(data, parser=etree.XMLParser(resolve_entities=False))
    except etree.XMLSyntaxError:
        return None


def _styles(data: bytes | None) -> _Styles:
    out = _Styles()
    root = _xml(data)
    if root is None:
        return out
    for style in root.iter(f"{W}style"):
        sid = style.get(f"{W}styleId") or ""
        name_el = style.find(f"{W}name")
        name = (name_el.get(f"{W}val") if name_el is not None else "") or ""
        outline = style.find(f"{W}pPr/{W}outlineLvl")
        m = _HEADING_NAME.match(name.strip()) or _HEADING_NAME.match(sid)
        if name.strip().lower() == "title" or sid.lower() == "title":
            out.levels[sid] = 0
        elif m:
            out.levels[sid] = int(m.group(1))
        elif outline is not None and (outline.get(f"{W}val") or "").isdigit():
            level = int(outline.get(f"{W}val") or "9") + 1
            if level <= 6:
                out.levels[sid] = level
    return out


def _properties(data: bytes | None) -> tuple[str | None, str | None]:
    root = _xml(data)
    if root is None:
        return None, None
    title = root.findtext(f"{_DC}title")
    author = root.findtext(f"{_DC}creator")
    return (title or "").strip() or None, (author or "").strip() or None


def _footnotes(data: bytes | None) -> dict[str, str]:
    """Each footnote's text by its id (Word's separators, types other than normal, left out)."""
    root = _xml(data)
    if root is None:
        return {}
    out: dict[str, str] = {}
    for note in root.iter(f"{W}footnote"):
        if note.get(f"{W}type") not in (None, "normal"):
            continue
        paras = [_runs(p) for p in note.iter(f"{W}p")]
        text = " ".join(" ".join(paras).split())
        if text:
            out[note.get(f"{W}id") or ""] = text
    return out


def _paragraphs(data: bytes, styles: _Styles) -> list[tuple[int, str]]:
    """(level, Markdown text) of each paragraph: level -1 for body text, 0 for the Title
    style, 1-6 for headings; tables' cells read as paragraphs."""
    root = _xml(data)
    if root is None:
        raise ImportSourceError("word/document.xml", "is not well-formed XML")
    out: list[tuple[int, str]] = []
    body = root.find(f"{W}body")
    if body is None:
        return out
    for p in body.iter(f"{W}p"):
        style = p.find(f"{W}pPr/{W}pStyle")
        sid = style.get(f"{W}val") if style is not None else None
        level = styles.levels.get(sid or "", -1)
        out.append((level, _runs(p, plain=level >= 0)))
    return out


def _runs(p: etree._Element, *, plain: bool = False) -> str:
    """A paragraph's runs as Markdown: emphasis kept, footnote references as `[^n]`."""
    segments: list[tuple[str | None, str]] = []  # (emphasis mark, text); None: a note's call
    for r in p.iter(f"{W}r"):
        if any(a.tag == f"{W}del" for a in r.iterancestors()):
            continue  # tracked deletions are not the text
        props = r.find(f"{W}rPr")
        mark = "" if plain else _mark(_on(props, "i"), _on(props, "b"))
        for child in r:
            if child.tag == f"{W}t":
                segments.append((mark, child.text or ""))
            elif child.tag in (f"{W}tab", f"{W}br", f"{W}cr"):
                segments.append((mark, " "))
            elif child.tag == f"{W}footnoteReference":
                segments.append((None, f"[^{child.get(f'{W}id')}]"))
    out: list[str] = []
    k = 0
    while k < len(segments):  # runs of one emphasis joined first (Word splits runs freely)
        emphasis, text = segments[k]
        k += 1
        if emphasis is None:
            out.append(text)
            continue
        while k < len(segments) and segments[k][0] == emphasis:
            text += segments[k][1]
            k += 1
        out.append(_chunk(text, emphasis, plain))
    return " ".join("".join(out).split())


def _mark(italic: bool, bold: bool) -> str:
    return "***" if italic and bold else "**" if bold else "*" if italic else ""


def _chunk(chunk: str, mark: str, plain: bool) -> str:
    """A run's text, Markdown's own marks escaped, in its emphasis (spaces kept outside)."""
    if not chunk or plain:
        return chunk
    chunk = _MD_SPECIAL.sub(r"\\\1", chunk)
    core = chunk.strip()
    if not core or not mark:
        return chunk
    lead = chunk[: len(chunk) - len(chunk.lstrip())]
    trail = chunk[len(chunk.rstrip()) :]
    return f"{lead}{mark}{core}{mark}{trail}"


def _on(props: etree._Element | None, name: str) -> bool:
    """Is the run property `w:i` or `w:b` set (present, and not `w:val="0"`/`false`)?"""
    if props is None:
        return False
    el = props.find(f"{W}{name}")
    return el is not None and (el.get(f"{W}val") or "true").lower() not in ("0", "false", "off")


def _markdown(
    blocks: list[tuple[int, str]], levels: set[int], notes: list[tuple[str, str]]
) -> tuple[str, str]:
    """The body as Markdown under the work's `#`, and the note on a title page left out."""
    top = sorted(levels)[:2]
    # the two highest heading levels used: parts and chapters; one level: chapters
    marks = {top[0]: "##"} if len(top) == 1 else {top[0]: "##", top[1]: "###"} if top else {}
    lines: list[str] = []
    front: list[str] = []
    seen_heading = False
    for level, text in blocks:
        if not text.strip() or level == 0:
            continue
        if level > 0:
            seen_heading = True
            mark = marks.get(level) or "####"
            lines += [f"{mark} {clean_title(text)}", ""]  # (`OF THE DIVISION OF LABOUR.`)
        elif not seen_heading:
            front.append(text)
        else:
            lines += [text, ""]
    dropped = ""
    front_text = "\n\n".join(front)
    if len(front_text) > TITLE_PAGE_CHARS:
        lines = [f"## {FRONT_MATTER_TITLE}", "", *(x for f in front for x in (f, "")), *lines]
    elif front:
        dropped = f"left out the title page before the first heading ({len(front)} paragraphs)"
    lines += [f"[^{n}]: {text}" for n, text in notes]
    return "\n".join(lines), dropped


def _plain(text: str) -> str:
    return " ".join(text.split())


def _yaml(value: str) -> str:
    """A YAML scalar in double quotes (titles hold colons and quotes)."""
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
