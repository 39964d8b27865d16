"""Books without parts (issue 13): flat Markdown, a flat EPUB, a folder of plain chapter
files; each becomes `corpus/<work>/<chapter>/source.md` whose summary's parent is the
work's, with English labels for an English book."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner
from ebooklib import epub

from glossator.cli import main
from indexer.corpus.layout import read_corpus
from indexer.corpus.source import DirectorySource
from indexer.importers.common import ImportSourceError
from indexer.importers.epub import read_epub
from indexer.importers.folder import read_folder
from indexer.importers.markdown import read_markdown

PARA = (
    "The ship left the harbour in the morning, and the men on the quay watched it until "
    "the sails were lost in the haze over the water."
)


def _flat_markdown(tmp_path: Path) -> Path:
    src = tmp_path / "voyage.md"
    src.write_text(
        "# The Voyage\n\n## Preface\n\nWhy this book was written, and for whom it was.\n\n"
        f"## Chapter 1. The Harbour\n\n{PARA}\n\n### A storm\n\nDeeper headings stay text.\n\n"
        f"## Chapter 2. The Open Sea\n\n{PARA}\n\n## Letter 3\n\n{PARA}\n",
        encoding="utf-8",
    )
    return src


def test_flat_markdown_is_a_work_of_chapters(tmp_path: Path) -> None:
    (work,) = read_markdown(_flat_markdown(tmp_path))
    assert work.lang == "en" and not work.parts
    assert [(s.number, s.title, s.meta) for _, s in work.pieces] == [
        (None, "Preface", {}),
        ("1", "The Harbour", {}),
        ("2", "The Open Sea", {}),
        ("3", "Letter 3", {"label": "Letter"}),
    ]
    dest = tmp_path / "repo"
    result = CliRunner().invoke(main, ["corpus", "import", str(tmp_path / "voyage.md"), str(dest)])
    assert result.exit_code == 0, result.output
    assert "imported 1 work(s), 0 parts, 3 chapters, 1 pieces" in result.output
    corpus = read_corpus(DirectorySource(dest))
    assert corpus.problems == [] and len(corpus.changes) == 0
    folders = sorted(p.parent.name for p in dest.glob("corpus/the-voyage/*/source.md"))
    assert folders == [
        "00-preface",
        "chapter-01-the-harbour",
        "chapter-02-the-open-sea",
        "letter-03",
    ]
    by_folder = {n.folder.rsplit("/", 1)[-1]: n for n in corpus.nodes.values() if n.level == 0}
    harbour = by_folder["chapter-01-the-harbour"]
    assert harbour.heading_path == "The Voyage > Chapter 1 (The Harbour)"
    assert harbour.kind == "chapter" and "### A storm" in harbour.body
    assert by_folder["letter-03"].heading_path == "The Voyage > Letter 3"
    assert by_folder["00-preface"].kind == "piece"
    summary = corpus.parent(harbour)
    assert (
        summary is not None
        and summary.heading_path == "The Voyage > Chapter 1 (The Harbour) (summary)"
    )
    assert summary.parent_source_file == "corpus/the-voyage/summary.md"
    assert not [n for n in corpus.nodes.values() if n.level == 2]


def _flat_epub(path: Path) -> Path:
    book = epub.EpubBook()
    book.set_identifier("glossator-test-flat")
    book.set_title("The Voyage")
    book.set_language("en")
    items = []
    for i, title in enumerate(["Preface", "Chapter 1. The Harbour", "Chapter 2. The Open Sea"]):
        item = epub.EpubHtml(title=title, file_name=f"c{i}.xhtml", lang="en")
        item.content = f"<html><body><h2>{title}</h2><p>{PARA}</p></body></html>"
        book.add_item(item)
        items.append(item)
    book.toc = [epub.Link(i.file_name, i.title, f"id{n}") for n, i in enumerate(items)]
    book.add_item(epub.EpubNcx())
    book.add_item(epub.EpubNav())
    book.spine = ["nav", *items]
    epub.write_epub(str(path), book)
    return path


def test_flat_epub_is_a_work_of_chapters(tmp_path: Path) -> None:
    work = read_epub(_flat_epub(tmp_path / "flat.epub"))
    assert not work.parts
    assert [(s.number, s.title) for _, s in work.pieces] == [
        (None, "Preface"),
        ("1", "The Harbour"),
        ("2", "The Open Sea"),
    ]
    assert work.pieces[1][1].body.strip() == PARA


def test_folder_of_plain_chapter_files(tmp_path: Path) -> None:
    src = tmp_path / "my-novel"
    src.mkdir()
    (src / "chapter-10.md").write_text(f"# The End of It\n\n{PARA}\n", encoding="utf-8")
    (src / "chapter-2.md").write_text(f"{PARA}\n", encoding="utf-8")  # no heading: file name
    (src / "chapter-1.md").write_text(f"# Chapter 1: Beginnings\n\n{PARA}\n", encoding="utf-8")
    (src / "README.md").write_text("How to build this book.\n", encoding="utf-8")
    work = read_folder(src)
    assert work.title == "My novel" and work.lang == "en"
    assert [(s.number, s.title) for _, s in work.pieces] == [
        ("1", "Beginnings"),
        ("2", "Chapter 2"),
        (None, "The End of It"),
    ]
    assert all(not s.body.startswith("#") for _, s in work.pieces)
    dest = tmp_path / "repo"
    result = CliRunner().invoke(
        main, ["corpus", "import", str(src), str(dest), "--work-title", "My Novel"]
    )
    assert result.exit_code == 0, result.output
    # `The End of It` has no number: the corpus reads it as a piece, and so does the count
    assert "0 parts, 2 chapters, 1 pieces" in result.output
    corpus = read_corpus(DirectorySource(dest))
    assert corpus.problems == []
    paths = [n.heading_path for n in corpus.in_reading_order() if n.level == 0]
    assert paths == [
        "My Novel > Chapter 1 (Beginnings)",
        "My Novel > Chapter 2",
        "My Novel > The End of It",
    ]


def test_folder_mixing_parts_and_no_parts_names_both(tmp_path: Path) -> None:
    src = tmp_path / "mixed"
    src.mkdir()
    (src / "01.md").write_text(f"---\ntitle: A\nseries: 1\n---\n{PARA}\n", encoding="utf-8")
    (src / "02.md").write_text(f"# B\n\n{PARA}\n", encoding="utf-8")
    with pytest.raises(ImportSourceError, match=r"names no part but .*01\.md does") as e:
        read_folder(src)
    assert e.value.path.endswith("02.md")


def test_folder_with_no_text_is_an_error(tmp_path: Path) -> None:
    src = tmp_path / "empty"
    src.mkdir()
    (src / "01.md").write_text("# Only a title\n", encoding="utf-8")
    result = CliRunner().invoke(main, ["corpus", "import", str(src), str(tmp_path / "out")])
    assert result.exit_code == 1 and "has no text" in " ".join(result.output.split())
    assert not (tmp_path / "out").exists()


def test_lang_option_chooses_the_labels(tmp_path: Path) -> None:
    dest = tmp_path / "repo"
    result = CliRunner().invoke(
        main, ["corpus", "import", str(_flat_markdown(tmp_path)), str(dest), "--lang", "de"]
    )
    assert result.exit_code == 0, result.output
    corpus = read_corpus(DirectorySource(dest))
    paths = sorted(n.heading_path for n in corpus.nodes.values() if n.level == 1)
    # the book's own word for its chapters stays (`label: Chapter`); the rest is German
    assert "The Voyage > Chapter 1 (The Harbour) (Zusammenfassung)" in paths
    assert "The Voyage (Zusammenfassung)" in {n.heading_path for n in corpus.works()}
    assert corpus.works()[0].lang == "de"
