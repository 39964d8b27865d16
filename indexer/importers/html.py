"""EPUB chapter XHTML → Markdown: paragraphs, emphasis, block quotes, lists, notes.

Only what a book's text needs survives: paragraphs (one per block), `*emphasis*`
and `**strong**`, `> ` block quotes, headings, list items, and footnotes turned
into `[^n]` references with their `[^n]: …` definitions at the end of the
chapter. Layout that is not text is dropped: Wikisource's page numbers, styles,
scripts, images, and the note lists themselves (their text moves to the
definitions). Whitespace inside a paragraph is collapsed, because HTML's
line breaks are not the author's.

Notes are recognised the ways EPUB producers mark them: a link to an element
that is an `aside`, an `epub:type`/`role` footnote or endnote, or an item of a
note list (`ol.references` on Wikisource, `section.footnotes` from pandoc).
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from lxml import etree, html

EPUB_TYPE = "{http://www.idpf.org/2007/ops}type"
BLOCKS = {
    "p", "div", "section", "article", "blockquote", "h1", "h2", "h3", "h4", "h5", "h6",
    "ul", "ol", "li", "hr", "pre", "table", "aside", "header", "footer", "main", "figure",
    "dl", "dt", "dd", "center", "body", "nav",
}  # fmt: skip
DROPPED = {"script", "style", "img", "svg", "figure", "head", "title", "link", "meta", "nav"}
_NOTE_WORDS = ("footnote", "endnote", "rearnote", "note", "reference")
_DROP_CLASSES = ("pagenum", "ws-pagenum", "ws-noexport", "mw-editsection", "mw-cite-backlink")
_BACKLINK_TEXT = {"↑", "↩", "↩︎", "^", "retour"}
_SPACES = re.compile(r"\s+")


def local(tag: object) -> str:
    return etree.QName(tag).localname.lower() if isinstance(tag, str) else ""


def _classes(el: etree._Element) -> str:
    """class, role and epub:type together (the HTML parser keeps `epub:type` as written)."""
    epub_type = el.get("epub:type") or el.get(EPUB_TYPE) or ""
    return " ".join((el.get("class") or "", el.get("role") or "", epub_type)).lower()


def is_note(el: etree._Element) -> bool:
    """Is `el` (the target of a link) a footnote or endnote, or inside a note list?"""
    for node in (el, *el.iterancestors()):
        tag = local(node.tag)
        marks = _classes(node)
        if tag == "aside" or any(w in marks for w in ("footnote", "endnote", "rearnote")):
            return True
        if tag in ("ol", "ul", "section", "div") and any(w in marks for w in _NOTE_WORDS):
            return True
        if tag == "body":
            return False
    return False


def parse(data: bytes) -> etree._Element:
    """An XHTML document, tolerant of the HTML that real EPUBs contain."""
    parser = html.HTMLParser(encoding="utf-8", remove_comments=True)
    root = html.document_fromstring(data, parser=parser)
    return root


def body_blocks(root: etree._Element, anchors: set[str]) -> list[etree._Element]:
    """The block-level elements of the body, flattened: a wrapper holding a TOC anchor
    is opened so that a chapter can start at that anchor."""
    body = root.find(".//body")
    if body is None:
        return []
    out: list[etree._Element] = []

    def walk(el: etree._Element) -> None:
        for child in el:
            if not isinstance(child.tag, str):
                continue
            holds_anchor = any(
                d.get("id") in anchors for d in child.iterdescendants() if isinstance(d.tag, str)
            )
            tag = local(child.tag)
            if holds_anchor and tag in ("div", "section", "article", "main", "header", "body"):
                out.append(_marker(child))  # its own id, if any, still starts here
                walk(child)
            else:
                out.append(child)

    walk(body)
    return out


def _marker(wrapper: etree._Element) -> etree._Element:
    """Stands for an opened wrapper in the block list: carries its id, renders to nothing."""
    marker = etree.Element("marker")
    if wrapper.get("id"):
        marker.set("id", wrapper.get("id"))
    return marker


@dataclass
class Converter:
    """Turns blocks into Markdown; `resolve(href, link)` finds a link's target element."""

    resolve: Callable[[str, etree._Element], etree._Element | None]
    notes: list[str] = field(default_factory=list)
    _seen: dict[int, int] = field(default_factory=dict)

    def convert(self, blocks: list[etree._Element]) -> str:
        paragraphs = [p for el in blocks for p in self._block(el, 0)]
        text = "\n\n".join(p for p in paragraphs if p.strip())
        if self.notes:
            defs = "\n".join(f"[^{i}]: {n}" for i, n in enumerate(self.notes, 1))
            text = f"{text}\n\n{defs}" if text else defs
        return text + "\n" if text else ""

    def _block(self, el: etree._Element, depth: int) -> Iterator[str]:
        tag = local(el.tag)
        if not tag or tag in DROPPED or tag == "marker" or self._dropped(el):
            return
        if (is_note(el) and el.get("id") is not None) or self._is_note_list(el):
            return  # its text moves to the definitions, where it is referenced
        if tag in ("h1", "h2", "h3", "h4", "h5", "h6"):
            text = self.inline(el)
            if text:
                yield f"{'#' * int(tag[1])} {text}"
            return
        if tag == "hr":
            yield "* * *"
            return
        if tag == "blockquote":
            inner = [p for child in self._children_as_blocks(el) for p in self._block(child, depth)]
            quoted = "\n>\n".join(
                "\n".join(f"> {line}" if line else ">" for line in p.split("\n")) for p in inner
            )
            if quoted:
                yield quoted
            return
        if tag in ("ul", "ol"):
            items = []
            for i, li in enumerate(c for c in el if local(c.tag) == "li"):
                mark = f"{i + 1}." if tag == "ol" else "-"
                items.append(f"{'  ' * depth}{mark} {self.inline(li)}")
            if items:
                yield "\n".join(items)
            return
        if tag in BLOCKS and any(local(c.tag) in BLOCKS for c in el if isinstance(c.tag, str)):
            for child in self._children_as_blocks(el):
                yield from self._block(child, depth)
            return
        text = self.inline(el)
        if text:
            yield text

    def _children_as_blocks(self, el: etree._Element) -> Iterator[etree._Element]:
        """Block children; loose text and inline runs between them become paragraphs."""
        run: list[etree._Element | str] = [el.text] if el.text and el.text.strip() else []
        for child in el:
            if isinstance(child.tag, str) and local(child.tag) in BLOCKS:
                if run:
                    yield _paragraph(run)
                    run = []
                yield child
            else:
                run.append(child)
            if child.tail and child.tail.strip():
                run.append(child.tail)
        if run:
            yield _paragraph(run)

    def _dropped(self, el: etree._Element) -> bool:
        marks = (el.get("class") or "").lower()
        return any(c in marks for c in _DROP_CLASSES)

    def _is_note_list(self, el: etree._Element) -> bool:
        return (
            local(el.tag) in ("ol", "ul", "section", "div", "aside")
            and (
                local(el.tag) == "aside"
                or any(w in _classes(el) for w in ("footnotes", "references", "endnotes"))
            )
            and is_note(el)
        )

    def inline(self, el: etree._Element) -> str:
        return _SPACES.sub(" ", self._inline(el, top=True)).strip()

    def _inline(self, el: etree._Element, top: bool = False) -> str:
        tag = local(el.tag)
        if not top and (not tag or tag in DROPPED or self._dropped(el)):
            return el.tail or ""
        note = self._note_ref(el)
        if note is not None:
            return note + ("" if top else el.tail or "")
        parts = [el.text or ""]
        for child in el:
            if not isinstance(child.tag, str):  # comment or processing instruction
                parts.append(child.tail or "")
                continue
            parts.append(self._inline(child))
        text = "".join(parts)
        if tag == "br":
            text = "\n"
        elif tag in ("em", "i", "cite") and text.strip():
            text = _wrap(text, "*")
        elif tag in ("strong", "b") and text.strip():
            text = _wrap(text, "**")
        return text + ("" if top else el.tail or "")

    def _note_ref(self, el: etree._Element) -> str | None:
        """`[^n]` when `el` is a note call (an `a` to a note, or a `sup` around one)."""
        tag = local(el.tag)
        link = el
        if tag == "sup":
            links = [a for a in el.iter() if local(a.tag) == "a"]
            if len(links) != 1:
                return None
            link = links[0]
        elif tag != "a":
            return None
        href = link.get("href") or ""
        if "#" not in href:
            return None
        target = self.resolve(href, link)
        if target is None or not is_note(target) or _is_backlink(link):
            return None
        key = id(target)
        if key not in self._seen:
            self.notes.append(self._note_text(target))
            self._seen[key] = len(self.notes)
        return f"[^{self._seen[key]}]"

    def _note_text(self, target: etree._Element) -> str:
        clone = _copy_without_backlinks(target)
        saved, self._seen = self._seen, dict(self._seen)
        try:
            text = self.inline(clone)
        finally:
            self._seen = saved
        return re.sub(r"^\[?\d+\]?[.)]?\s+", "", text)  # the note's own printed number


def _wrap(text: str, mark: str) -> str:
    lead = text[: len(text) - len(text.lstrip())]
    trail = text[len(text.rstrip()) :]
    return f"{lead}{mark}{text.strip()}{mark}{trail}"


def _paragraph(run: list[etree._Element | str]) -> etree._Element:
    p = etree.Element("p")
    last: etree._Element | None = None
    for item in run:
        if isinstance(item, str):
            if last is None:
                p.text = (p.text or "") + item
            else:
                last.tail = (last.tail or "") + item
        else:
            clone = copy.deepcopy(item)
            clone.tail = None
            p.append(clone)
            last = clone
    return p


def _is_backlink(a: etree._Element) -> bool:
    marks = _classes(a)
    text = "".join(a.itertext()).strip()
    return "backlink" in marks or "footnote-back" in marks or text in _BACKLINK_TEXT


def _copy_without_backlinks(el: etree._Element) -> etree._Element:
    clone = copy.deepcopy(el)
    clone.tail = None
    for node in list(clone.iter()):
        if not isinstance(node.tag, str) or node is clone:
            continue
        marks = _classes(node)
        if (local(node.tag) == "a" and _is_backlink(node)) or "mw-cite-backlink" in marks:
            parent = node.getparent()
            if parent is not None:
                tail = node.tail or ""
                prev = node.getprevious()
                if prev is not None:
                    prev.tail = (prev.tail or "") + tail
                else:
                    parent.text = (parent.text or "") + tail
                parent.remove(node)
    return clone
