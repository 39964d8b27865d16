"""EPUB XHTML → Markdown: the note markups of Wikisource, EPUB 3 and pandoc."""

from __future__ import annotations

from lxml import etree

from indexer.importers.html import Converter, body_blocks, parse


def _convert(xhtml: str) -> str:
    root = parse(f"<html><body>{xhtml}</body></html>".encode())
    ids = {el.get("id"): el for el in root.iter() if isinstance(el.tag, str) and el.get("id")}

    def resolve(href: str, link: etree._Element) -> etree._Element | None:
        return ids.get(href.partition("#")[2])

    return Converter(resolve).convert(body_blocks(root, set()))


def test_paragraphs_emphasis_quotes_and_breaks() -> None:
    md = _convert(
        "<h2>Titre</h2><p>Un  <i>mot</i>\n et <b>deux</b>.</p>"
        "<blockquote><p>Cité.</p><p>Encore.</p></blockquote>"
        "<div>Texte libre <em>ici</em><p>puis un bloc</p></div><hr/>"
        "<ul><li>un</li><li>deux</li></ul>"
    )
    assert md == (
        "## Titre\n\nUn *mot* et **deux**.\n\n> Cité.\n>\n> Encore.\n\n"
        "Texte libre *ici*\n\npuis un bloc\n\n* * *\n\n- un\n- deux\n"
    )


def test_epub3_aside_notes() -> None:
    md = _convert(
        '<p>Texte<a epub:type="noteref" href="#n1">1</a> et suite.</p>'
        '<aside epub:type="footnote" id="n1"><p>La note <i>une</i>.</p></aside>'
    )
    assert md == "Texte[^1] et suite.\n\n[^1]: La note *une*.\n"


def test_pandoc_notes_and_backlinks() -> None:
    md = _convert(
        '<p>A<a href="#fn1" class="footnote-ref" id="fnref1" role="doc-noteref"><sup>1</sup></a>.</p>'
        '<section id="footnotes" class="footnotes" role="doc-endnotes"><ol>'
        '<li id="fn1"><p>Note.<a href="#fnref1" class="footnote-back" role="doc-backlink">↩︎</a></p></li>'
        "</ol></section>"
    )
    assert md == "A[^1].\n\n[^1]: Note.\n"


def test_page_numbers_and_scripts_are_not_text() -> None:
    md = _convert(
        '<p>Avant <span class="pagenum">[p. 12]</span>après.</p><script>x()</script>'
        '<p><a href="http://example.org">lien</a> gardé</p>'
    )
    assert md == "Avant après.\n\nlien gardé\n"
