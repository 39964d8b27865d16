"""DOCX import (issue 40): Word documents made as users make them (LibreOffice Writer's
built-in styles saved as .docx, tests/fixtures/docx/recipe.py), read into parts, chapters,
footnotes and emphasis; bad files refused in one line with nothing written."""

from __future__ import annotations

import re
import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner

from glossator.cli import main
from indexer.corpus.layout import read_corpus
from indexer.corpus.source import DirectorySource
from indexer.importers.common import ImportSourceError
from indexer.importers.docx import read_docx

DOCX = Path(__file__).parent / "fixtures" / "docx"
SMITH = DOCX / "smith-wealth-of-nations.docx"
NIEBLA = DOCX / "unamuno-niebla.docx"


def test_heading_1_and_2_are_parts_and_chapters_footnotes_move_with_their_chapter() -> None:
    work = read_docx(SMITH)
    assert (work.title, work.author, work.lang) == (
        "An Inquiry into the Nature and Causes of the Wealth of Nations",
        "Adam Smith",
        "en",
    )
    assert [s.title for _, s in work.pieces] == ["Introduction and Plan of the Work"]
    assert [(p.title, [(s.number, s.title) for s in p.sections]) for p in work.parts] == [
        (
            "Book I. Of the Causes of Improvement in the Productive Powers of Labour, and of the "
            "Order According to Which Its Produce Is Naturally Distributed Among the Different "
            "Ranks of the People",
            [
                ("I", "Of the Division of Labour"),
                ("X", "Of Wages and Profit in the Different Employments of Labour and Stock"),
            ],
        ),
        (
            "Book II. Of the Nature, Accumulation, and Employment of Stock",
            [(None, "Introduction"), ("I", "Of the Division of Stock")],
        ),
    ]
    chapter_x = work.parts[0].sections[1].body
    # Heading 3 stays in the chapter's text; the footnote's call and its definition with it
    assert (
        "\n\n#### PART I. Inequalities arising from the nature of the employments themselves\n\n"
        in chapter_x
    )
    assert "since the time of Theocritus.[^2]. A poacher" in chapter_x
    assert chapter_x.rstrip().endswith("[^2]: See Idyllium xxi.")


def test_heading_1_only_chapters_and_pieces_italics_kept(tmp_path: Path) -> None:
    work = read_docx(NIEBLA)
    assert (work.title, work.author, work.lang) == ("Niebla (nivola)", "Miguel de Unamuno", "es")
    assert [s.title for s in work.sections()] == [
        "Prólogo",
        "Post-prólogo",
        "I",
        "II",
        "III",
        "Oración Fúnebre por Modo de Epílogo",
    ]
    assert not work.parts
    post = work.sections()[1].body
    assert "comprometiéndome de antemano—o sea *a priori*—a aceptarlo" in post
    assert work.notes == ["left out the title page before the first heading (1 paragraphs)"]

    dest = tmp_path / "niebla"
    result = CliRunner().invoke(main, ["corpus", "import", str(NIEBLA), str(dest)])
    assert result.exit_code == 0, result.output
    assert "left out the title page before the first heading" in result.stderr
    assert "imported 1 work(s), 0 parts, 5 chapters, 1 pieces" in result.stdout
    corpus = read_corpus(DirectorySource(dest))
    assert [p for p in corpus.problems if p.severity == "error"] == []


def _docx_without_headings(path: Path) -> None:
    """SMITH with every paragraph style taken off: a document typed in Normal only."""
    with zipfile.ZipFile(SMITH) as src, zipfile.ZipFile(path, "w") as out:
        for item in src.infolist():
            data = src.read(item.filename)
            if item.filename == "word/document.xml":
                data = data.replace(b'w:val="Heading', b'w:val="TextBody" w:x="')
            out.writestr(item, data)


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (
            lambda p: p.write_bytes(b"PK\x03\x04 not really a zip"),
            "is not a .docx file (not a zip archive)",
        ),
        (lambda p: zipfile.ZipFile(p, "w").writestr("hello.txt", "hi"), "is not a Word document"),
        (_docx_without_headings, "has no paragraph in a Heading style"),
    ],
)
def test_bad_docx_one_line_exit_1_nothing_written(
    tmp_path: Path, make: Callable[[Path], object], message: str
) -> None:
    src = tmp_path / "book.docx"
    make(src)
    with pytest.raises(ImportSourceError, match=re.escape(message)):
        read_docx(src)
    dest = tmp_path / "out"
    result = CliRunner().invoke(main, ["corpus", "import", str(src), str(dest)])
    assert result.exit_code == 1
    assert message in result.output and len(result.output.strip().splitlines()) == 1
    assert not dest.exists()
