"""Saved web pages (issue 40): a Wikisource chapter page saved whole, a folder of a site's
chapter pages, and the same chapters as Wikisource's EPUB export through the EPUB importer.
The pages (tests/fixtures/wikisource/, SOURCES.md) follow Wikisource's real markup."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner
from ebooklib import epub
from lxml import etree, html

from glossator.cli import main
from indexer.corpus.layout import read_corpus
from indexer.corpus.source import DirectorySource
from indexer.importers.common import ImportSourceError
from indexer.importers.epub import read_epub
from indexer.importers.webpage import read_pages

PAGES = Path(__file__).parent / "fixtures" / "wikisource"
OBSTACLE = PAGES / "sophismes-02.html"
NOTE = (
    "[^1]: Voyez, sur, le même sujet, le chapitre XIV de la seconde série des *Sophismes*, et "
    "les chapitres III et XI des *Harmonies économiques*. *(Note de l’éditeur des Œuvres "
    "complètes.)*"
)
# what the saved page holds around the text, none of it the book's
FURNITURE = (
    "Se connecter", "Rechercher dans Wikisource", "Menu principal", "Textes validés",
    "domaine public", "Creative Commons", "Ce document provient", "Guillaumin, 1863",
    "Abondance, disette", "Effort, résultat", "Aller au contenu", "Politique de confidentialité",
)  # fmt: skip


def test_a_saved_wikisource_chapter_page() -> None:
    work = read_pages(OBSTACLE)
    assert (work.title, work.author, work.lang) == (
        "Sophismes économiques",
        "Frédéric Bastiat",
        "fr",
    )
    (chapter,) = work.sections()
    assert (chapter.number, chapter.title) == ("II", "Obstacle, cause")
    body = chapter.body
    assert body.startswith("L’obstacle pris pour la cause, — la disette prise pour l’abondance")
    assert "d’*obstacles* que le travail a pour but de surmonter" in body  # emphasis kept
    assert body.rstrip().endswith(NOTE)  # the reference list's note, a Markdown footnote
    assert "pour que tous nos besoins et tous nos désirs fussent satisfaits[^1]." in body
    assert not any(x in body for x in FURNITURE), body
    assert not re.search(r"\b(?:19|20|21|22|27|28)\b", body)  # page numbers: not text
    assert "OBSTACLE, CAUSE" not in body and "#" not in body  # its title heading: dropped
    assert work.notes == [
        "left out the site around the text of 1 page(s): header, menus, navigation, page "
        "numbers, licence banner, categories, footer"
    ]


def test_a_folder_of_chapter_pages_is_a_book(tmp_path: Path) -> None:
    pages = tmp_path / "pages"  # as saved: the chapter pages alone in their folder
    pages.mkdir()
    for page in PAGES.glob("*.html"):
        shutil.copy(page, pages / page.name)
    dest = tmp_path / "sophismes"
    result = CliRunner().invoke(main, ["corpus", "import", str(pages), str(dest)])
    assert result.exit_code == 0, result.output
    assert "imported 1 work(s), 0 parts, 3 chapters, 0 pieces" in result.stdout
    assert "left out the site around the text of 3 page(s)" in result.stderr
    corpus = read_corpus(DirectorySource(dest))
    assert [p for p in corpus.problems if p.severity == "error"] == []
    assert [n.heading_path for n in corpus.in_reading_order() if n.level == 0] == [
        "Sophismes économiques > Chapitre I (Abondance, disette)",
        "Sophismes économiques > Chapitre II (Obstacle, cause)",
        "Sophismes économiques > Chapitre III (Effort, résultat)",
    ]


def _ws_export_epub(path: Path) -> Path:
    """The three chapters as Wikisource's export (ws-export) packs them: a title page
    `Exporté de Wikisource`, one XHTML file per chapter holding the page's content block
    without its `ws-noexport` parts, the notes' list kept, and the about page last."""
    book = epub.EpubBook()
    book.set_identifier("ws-export-sophismes")
    book.set_title("Sophismes économiques")
    book.set_language("fr")
    book.add_author("Frédéric Bastiat")
    title = epub.EpubHtml(title="Sophismes économiques", file_name="title.xhtml", lang="fr")
    title.content = (
        "<h2>Sophismes économiques</h2><h3>Frédéric Bastiat</h3><h6>Exporté de Wikisource le "
        "6 décembre 2026</h6>"
    )
    book.add_item(title)
    spine: list[object] = ["nav", title]
    toc: list[object] = [epub.Link(title.file_name, "Sophismes économiques", "title")]
    for n, page in enumerate(sorted(PAGES.glob("*.html")), 1):
        root = html.document_fromstring(page.read_bytes())
        heading = " ".join(
            "".join(root.xpath("//*[@id='header_section_text']")[0].itertext()).split()
        )
        content = root.xpath("//*[contains(@class, 'mw-parser-output')]")[0]
        for el in content.xpath(".//*[contains(@class, 'ws-noexport')]"):
            el.getparent().remove(el)
        for el in content.xpath(".//*[contains(@class, 'licenseContainer')]"):
            el.getparent().remove(el)
        item = epub.EpubHtml(title=heading, file_name=f"c{n}.xhtml", lang="fr")
        item.content = etree.tostring(content, encoding="unicode", method="html")
        book.add_item(item)
        spine.append(item)
        toc.append(epub.Link(item.file_name, heading, f"c{n}"))
    about = epub.EpubHtml(
        title="À propos de cette édition électronique", file_name="about.xhtml", lang="fr"
    )
    about.content = (
        "<h1>À propos de cette édition électronique</h1><p>Ce livre électronique est issu de "
        "la bibliothèque numérique Wikisource.</p>"
    )
    book.add_item(about)
    spine.append(about)
    toc.append(epub.Link(about.file_name, about.title, "about"))
    book.toc = toc
    book.add_item(epub.EpubNcx())
    book.add_item(epub.EpubNav())
    book.spine = spine
    epub.write_epub(str(path), book)
    return path


def test_wikisource_export_epub_reads_the_same_chapters(tmp_path: Path) -> None:
    """The EPUB importer keeps the export's title and about pages as pieces (its rule:
    `--skip-front-matter`, `--exclude` leave them out); its chapters are the pages'."""
    from_epub = read_epub(_ws_export_epub(tmp_path / "sophismes.epub"))
    from_pages = read_pages(PAGES)
    assert (from_epub.title, from_epub.author, from_epub.lang) == (
        "Sophismes économiques",
        "Frédéric Bastiat",
        "fr",
    )
    assert [(s.number, s.title) for s in from_epub.sections()] == [
        (None, "Sophismes économiques"),
        *((s.number, s.title) for s in from_pages.sections()),
        (None, "À propos de cette édition électronique"),
    ]
    for a, b in zip(from_epub.sections()[1:4], from_pages.sections(), strict=True):
        assert a.body == b.body  # the same text, notes and emphasis either way


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("empty.html", b"", "is empty"),
        (
            "nav.html",
            b"<html><body><nav><a href='/'>Accueil</a></nav></body></html>",
            "holds no text in its pages",
        ),
    ],
)
def test_bad_pages_one_line_exit_1_nothing_written(
    tmp_path: Path, name: str, content: bytes, message: str
) -> None:
    src = tmp_path / name
    src.write_bytes(content)
    with pytest.raises(ImportSourceError, match=re.escape(message)):
        read_pages(src)
    dest = tmp_path / "out"
    result = CliRunner().invoke(main, ["corpus", "import", str(src), str(dest)])
    assert result.exit_code == 1
    assert message in result.output and len(result.output.strip().splitlines()) == 1
    assert not dest.exists()


def test_a_folder_without_pages_is_refused(tmp_path: Path) -> None:
    (tmp_path / "pages").mkdir()
    (tmp_path / "pages" / "notes.txt").write_text("x", encoding="utf-8")
    with pytest.raises(ImportSourceError, match="holds no HTML page"):
        read_pages(tmp_path / "pages")
