"""`glossator corpus import` of an EPUB. The EPUB is built in the test with ebooklib
(EpubBook, EpubHtml, toc, spine) from the List-shaped fixture, with notes marked up
the way Wikisource's exports mark them."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from click.testing import CliRunner
from ebooklib import epub
from markdown_it import MarkdownIt

from glossator.cli import main
from indexer.corpus.layout import read_corpus
from indexer.corpus.source import DirectorySource
from indexer.importers.common import ImportSourceError
from indexer.importers.epub import read_epub
from indexer.importers.markdown import read_markdown
from indexer.importers.tree import Section

LIST_MD = Path(__file__).parent / "fixtures/list/list.md"
_MD = MarkdownIt("commonmark")


def _html(section: Section, heading: str, anchor: str | None = None) -> str:
    """Wikisource-like XHTML for one section: title heading, text, note list."""
    notes = dict(re.findall(r"^\[\^(\w+)\]: (.*)$", section.body, re.MULTILINE))
    text = re.sub(r"^\[\^\w+\]: .*$", "", section.body, flags=re.MULTILINE)
    body = _MD.render(text)
    for label in notes:
        body = body.replace(
            f"[^{label}]",
            f'<sup id="cite_ref-{label}" class="reference"><a href="#cite_note-{label}">[{label}]</a></sup>',
        )
    attr = f' id="{anchor}"' if anchor else ""
    out = f'<h2{attr}><span class="pagenum">12</span>{heading}</h2>\n{body}'
    if notes:
        items = "".join(
            f'<li id="cite_note-{label}"><span class="mw-cite-backlink">'
            f'<a href="#cite_ref-{label}">↑</a></span> <span class="reference-text">{note}</span></li>'
            for label, note in notes.items()
        )
        out += f'\n<ol class="references">{items}</ol>'
    return out


def _heading(section: Section) -> str:
    return f"Chapitre {section.number}. — {section.title}" if section.number else section.title


def build_list_epub(path: Path, *, nested: bool = True) -> Path:
    """An EPUB of the fixture: front matter, préface, introduction, four livres; the
    fourth livre's chapters share one file (anchors); Wikisource's about page last."""
    (work,) = read_markdown(LIST_MD)
    book = epub.EpubBook()
    book.set_identifier("glossator-test-list")
    book.set_title(work.title)
    book.set_language("fr")
    book.add_author(work.author)
    spine: list[object] = ["nav"]
    # what wikimedia/ws-export puts first: a title page and the book's main page
    title_page = epub.EpubHtml(title="Page de titre", file_name="Text/title.xhtml", lang="fr")
    title_page.content = (
        f"<h2>{work.title}</h2><h3>{work.author}</h3><h6>Exporté de Wikisource</h6>"
    )
    main_page = epub.EpubHtml(title=work.title, file_name="Text/main.xhtml", lang="fr")
    main_page.content = (
        "<p>Traduit par Henri Richelot.</p><ul><li>Préface</li><li>Livre premier</li></ul>"
    )
    book.add_item(title_page)
    book.add_item(main_page)
    spine += [title_page, main_page]
    toc: list[object] = [
        epub.Link(title_page.file_name, "Page de titre", "title"),
        epub.Link(main_page.file_name, work.title, "main"),
    ]
    for _, piece in work.pieces:
        name = re.sub(r"\W+", "_", piece.title.lower())
        item = epub.EpubHtml(title=piece.title, file_name=f"Text/{name}.xhtml", lang="fr")
        item.content = _html(piece, piece.title)
        book.add_item(item)
        spine.append(item)
        toc.append(epub.Link(item.file_name, piece.title, name))
    for p, part in enumerate(work.parts, 1):
        part_page = epub.EpubHtml(title=part.title, file_name=f"Text/livre{p}.xhtml", lang="fr")
        part_page.content = f"<h1>{part.title}</h1>"
        book.add_item(part_page)
        spine.append(part_page)
        links = []
        if p == 4:  # two chapters in one file, told apart by anchors
            shared = epub.EpubHtml(title=part.title, file_name="Text/livre4_ch.xhtml", lang="fr")
            shared.content = "\n".join(
                f"<div>{_html(s, _heading(s), anchor=f'ch{c}')}</div>"
                for c, s in enumerate(part.sections, 1)
            )
            book.add_item(shared)
            spine.append(shared)
            links = [
                epub.Link(f"Text/livre4_ch.xhtml#ch{c}", _heading(s), f"l4c{c}")
                for c, s in enumerate(part.sections, 1)
            ]
        else:
            for c, s in enumerate(part.sections, 1):
                item = epub.EpubHtml(title=s.title, file_name=f"Text/l{p}c{c}.xhtml", lang="fr")
                item.content = _html(s, _heading(s))
                book.add_item(item)
                spine.append(item)
                links.append(epub.Link(item.file_name, _heading(s), f"l{p}c{c}"))
        head = epub.Section(part.title, part_page.file_name)
        if nested:
            toc.append((head, links))
        else:
            toc.append(epub.Link(part_page.file_name, part.title, f"livre{p}"))
            toc.extend(links)
    about = epub.EpubHtml(
        title="À propos de cette édition électronique", file_name="Text/about.xhtml", lang="fr"
    )
    about.content = "<h1>À propos de cette édition électronique</h1><p>Wikisource.</p>"
    book.add_item(about)
    spine.append(about)
    toc.append(epub.Link(about.file_name, about.title, "about"))
    book.toc = toc
    book.add_item(epub.EpubNcx())
    book.add_item(epub.EpubNav())
    book.spine = spine
    epub.write_epub(str(path), book)
    return path


@pytest.fixture(scope="module")
def list_epub(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_list_epub(tmp_path_factory.mktemp("epub") / "list.epub")


def test_epub_gives_the_list_tree(list_epub: Path) -> None:
    work = read_epub(list_epub, skip_front_matter=True)
    assert work.title == "Système national d'économie politique"
    assert work.author == "Frédéric List" and work.lang == "fr"
    assert [s.title for _, s in work.pieces] == ["Préface", "Introduction"]
    assert [p.title for p in work.parts] == [
        "Livre premier — L'histoire",
        "Livre deuxième — La théorie",
        "Livre troisième — Les systèmes",
        "Livre quatrième — La politique",
    ]
    assert [[s.number for s in p.sections] for p in work.parts] == [
        ["I", "II", "III"],
        ["I", "II"],
        ["I", "II", "III"],
        ["I", "II"],
    ]
    assert work.parts[0].sections[1].title == "Les villes hanséatiques"


def test_epub_text_becomes_markdown(list_epub: Path) -> None:
    work = read_epub(list_epub, skip_front_matter=True)
    preface = work.pieces[0][1].body
    assert preface == (
        "L'auteur expose pourquoi il a écrit ce livre et ce qu'il doit à ses voyages[^1].\n\n"
        "Il annonce la méthode : *l'histoire d'abord*, la théorie ensuite.\n\n"
        "[^1]: Note inventée : l'auteur vécut plusieurs années en Amérique.\n"
    )
    intro = work.pieces[1][1].body
    assert "**forces productives**" in intro
    assert "\n\n> Celui qui élève des porcs" in intro
    italians = work.parts[0].sections[0].body
    assert italians.endswith(
        "[^1]: Note inventée : le déclin est ici expliqué par les guerres entre cités.\n"
    )
    assert "12" not in italians  # Wikisource's page number is not text
    objection = work.parts[1].sections[0].body
    assert "#### Une objection" in objection
    # chapters sharing one file are cut at their anchors
    insular, continental = work.parts[3].sections
    assert (
        insular.body.strip()
        == "L'Angleterre protégea ses manufactures avant de prêcher la liberté du commerce."
    )
    assert continental.body.strip().startswith("Les nations du continent")


def test_front_matter_is_kept_unless_skipped(list_epub: Path) -> None:
    work = read_epub(list_epub)
    assert [s.title for _, s in work.pieces] == [
        "Page de titre",
        "Système national d'économie politique",
        "Avertissement du traducteur",
        "Préface",
        "Introduction",
        "À propos de cette édition électronique",
    ]
    assert work.pieces[1][1].body == "Traduit par Henri Richelot.\n\n- Préface\n- Livre premier\n"
    assert work.pieces[-1][0] == 9  # the work's 10th child: after the four parts
    work = read_epub(list_epub, exclude=("traducteur", "^à propos", "titre", "^système"))
    assert [s.title for _, s in work.pieces] == ["Préface", "Introduction"]


def test_flat_toc_opens_parts_at_livre_titles(tmp_path: Path) -> None:
    work = read_epub(build_list_epub(tmp_path / "flat.epub", nested=False), skip_front_matter=True)
    assert [len(p.sections) for p in work.parts] == [3, 2, 3, 2]
    assert [s.title for _, s in work.pieces] == ["Préface", "Introduction"]


def test_cli_import_of_epub_reads_as_a_corpus(list_epub: Path, tmp_path: Path) -> None:
    dest = tmp_path / "list"
    result = CliRunner().invoke(
        main, ["corpus", "import", str(list_epub), str(dest), "--skip-front-matter"]
    )
    assert result.exit_code == 0, result.output
    assert "imported 1 work(s), 4 parts, 10 chapters, 2 pieces" in result.output
    corpus = read_corpus(DirectorySource(dest))
    assert corpus.problems == [] and len(corpus.changes) == 0
    chapter = next(n for n in corpus.nodes.values() if n.title == "Les Italiens" and n.level == 0)
    assert chapter.heading_path == (
        "Système national d'économie politique > Livre premier — L'histoire > Chapitre I (Les Italiens)"
    )


def test_not_an_epub_is_one_clear_error(tmp_path: Path) -> None:
    bad = tmp_path / "book.epub"
    bad.write_bytes(b"not a zip")
    with pytest.raises(ImportSourceError, match="not a readable EPUB") as e:
        read_epub(bad)
    assert e.value.path == str(bad)
