"""`glossator corpus import BOOK.pdf DEST`: PDFs with a text layer (indexer/importers/pdf.py).

The two books in tests/fixtures/pdf/ are born-digital PDFs made by others (SOURCES.md):
their stories and chapters were counted from their outlines and contents pages.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from glossator.cli import main
from indexer.importers.pdf import read_pdf
from indexer.importers.tree import Work

PDFS = Path(__file__).parent / "fixtures" / "pdf"
SHERLOCK = PDFS / "Adventures-Of-Sherlock-Holmes.pdf"
WAR = PDFS / "The-War-of-the-Worlds.pdf"


def _bodies(work: Work) -> list[str]:
    return [s.body for s in work.sections()]


def _clean_of_page_furniture(work: Work, heads: list[str]) -> None:
    for body in _bodies(work):
        assert "\ufffe" not in body
        for para in body.split("\n\n"):
            assert not re.fullmatch(r"\s*\d+( of \d+)?\s*", para), para
            assert para.strip() not in heads
        assert not re.search(r"\b\d+ of 293\b", body)
        # no word split by a hyphen at a line's end: `pre- dominates`, `pre-dominates`
        assert not re.search(r"[a-z]- [a-z]", body)


def test_sherlock_imports_its_twelve_stories_from_its_outline() -> None:
    work = read_pdf(SHERLOCK)
    assert work.title == "Adventures of Sherlock Holmes"
    assert work.author == "Arthur Conan Doyle"
    assert work.lang == "en"
    assert not work.parts
    titles = [s.title for s in work.sections()]
    assert titles[:2] == ["A Scandal In Bohemia", "The Red-Headed League"]
    assert titles[-1] == "The Adventure Of The Copper Beeches"
    assert len(titles) == 12 and work.chapter_count == 12
    _clean_of_page_furniture(work, [])
    bodies = _bodies(work)
    assert all("ADVENTURE " not in b for b in bodies)  # the running head `ADVENTURE I. …`
    # every story's drop capital (and the quotation mark before it) joined to its line
    assert bodies[2].startswith("“MY dear fellow,” said Sherlock Holmes")
    assert bodies[10].startswith("“HOLMES,” said I as I stood one morning")
    assert bodies[11].startswith("“TO the man who loves art for its own sake,”")
    first = bodies[0]
    # the drop capital joined to its line; PDFium's line-end hyphen joined
    assert first.startswith("TO Sherlock Holmes she is always the woman.")
    assert "eclipses and predominates the whole of her sex" in first
    assert "“Wedlock suits you,” he remarked." in first  # curly quotes kept
    assert '"' not in "".join(bodies)
    # a paragraph runs on across a page break: page 5 ends inside one
    assert "from men’s motives and actions. But for the trained reasoner" in first
    assert first.rstrip().endswith("under the honourable title of the woman.")


def test_war_of_the_worlds_imports_two_books_of_17_and_10_chapters(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        main, ["corpus", "import", str(WAR), str(tmp_path / "book"), "--no-git"]
    )
    assert result.exit_code == 0, result.output
    assert "2 parts, 27 chapters, 0 pieces" in result.output
    folders = sorted(p.parent.name for p in (tmp_path / "book").rglob("source.md"))
    assert folders[0] == "chapter-01-the-eve-of-the-war"
    work = read_pdf(WAR)
    assert [p.title for p in work.parts] == [
        "The Coming of the Martians",
        "The Earth Under the Martians",
    ]
    assert [len(p.sections) for p in work.parts] == [17, 10]
    assert [s.number for s in work.parts[0].sections] == [str(n) for n in range(1, 18)]
    assert work.parts[1].sections[-1].title == "The Epilogue"
    _clean_of_page_furniture(work, ["The War of the Worlds"])
    first = work.parts[0].sections[0].body
    assert first.startswith(
        "No one would have believed in the last years of the nineteenth century"
    )
    assert "intelligences greater than man’s and yet as mortal as his own" in first
    assert "no writer, up to the very end of the nineteenth century, expressed any idea" in first
    # tabs and vertical tabs of the outline's titles made spaces
    assert all("\t" not in s.title and "\v" not in s.title for s in work.sections())


def _pdf(objects: list[bytes], trailer: bytes = b"") -> bytes:
    """A PDF file written out by hand: its objects, a cross-reference table, a trailer."""
    out = b"%PDF-1.4\n"
    offsets = []
    for n, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n%s\nendobj\n" % (n, body)
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % o for o in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R %s>>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1,
        trailer,
        xref,
    )
    return out


CATALOG = b"<< /Type /Catalog /Pages 2 0 R >>"
# the standard security handler (PDF 1.7, 7.6.3) with a user password: its /U entry is not
# what an empty password gives, so no reader opens it without the password
ENCRYPTED = _pdf(
    [
        CATALOG,
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 200 200] >>",
        b"<< /Filter /Standard /V 1 /R 2 /O <%s> /U <%s> /P -44 >>" % (b"11" * 32, b"22" * 32),
    ],
    b"/Encrypt 4 0 R /ID [<0123456789abcdef0123456789abcdef> <0123456789abcdef0123456789abcdef>] ",
)
ZERO_PAGES = _pdf([CATALOG, b"<< /Type /Pages /Kids [] /Count 0 >>"])


@pytest.mark.parametrize(
    ("name", "data", "message"),
    [
        (
            "encrypted.pdf",
            ENCRYPTED,
            "is encrypted (a password protects it); save an unprotected copy",
        ),
        ("empty.pdf", ZERO_PAGES, "is a PDF of zero pages: nothing to import"),
        (
            "cut.pdf",
            WAR.read_bytes()[:200_000],
            "is not a readable PDF (damaged, cut short or not a PDF)",
        ),
        ("fake.pdf", b"%PDF-1.4\nnot a PDF at all\n", "is not a readable PDF"),
    ],
)
def test_a_pdf_that_cannot_be_read_says_why_in_one_line_and_writes_nothing(
    tmp_path: Path, name: str, data: bytes, message: str
) -> None:
    src = tmp_path / name
    src.write_bytes(data)
    dest = tmp_path / "corpus"
    result = CliRunner().invoke(main, ["corpus", "import", str(src), str(dest)])
    assert result.exit_code == 1
    assert result.output.strip() == f"error: {src}: {message}" or (
        message in result.output and result.output.strip().count("\n") == 0
    )
    assert not dest.exists()


def test_a_short_line_repeated_at_the_top_of_pages_is_text_not_a_running_head() -> None:
    from indexer.importers.pdflayout import Line, drop_running

    def page(n: int, first: str) -> list[Line]:
        head = Line(n, 50, 200, 40, 10, False, "A BOOK OF STORIES")
        body = [Line(n, 50, 350, 80 + 14 * k, 10, False, first if k == 0 else f"text {k} of the page")
                for k in range(20)]  # fmt: skip
        foot = Line(n, 190, 200, 400, 10, False, str(n + 1))
        return [head, *body, foot]

    pages = [page(n, "“Yes.”" if n < 4 else "and so it went on") for n in range(6)]
    kept = drop_running(pages)
    for n, lines in enumerate(kept):
        texts = [x.text for x in lines]
        assert "A BOOK OF STORIES" not in texts and str(n + 1) not in texts
        assert texts[0] == ("“Yes.”" if n < 4 else "and so it went on")
        assert len(texts) == 20


def test_section_headings_inside_outline_chapters_become_markdown_headings() -> None:
    """smith-sections-chromium.pdf (make_fixtures.py): Chromium's outline names the two
    chapters of Book I; chapter X's `PART I.` / `PART II.--…` are bold lines set larger than
    the text and in no outline entry. They are the chapter's `###` sections, not paragraphs;
    the chapters keep their titles as printed though the outline joins wrapped lines
    (`OF THE DIVISION OFLABOUR.`)."""
    work = read_pdf(PDFS / "smith-sections-chromium.pdf")
    assert work.parts == []
    chapters = [s for _, s in work.pieces]
    assert [(s.number, s.title) for s in chapters] == [
        ("I", "Of the Division of Labour"),
        ("X", "Of Wages and Profit in the Different Employments of Labour and Stock"),
    ]
    assert [line for line in chapters[0].body.split("\n") if line.startswith("#")] == []
    assert [line for line in chapters[1].body.split("\n") if line.startswith("#")] == [
        "### PART I. Inequalities arising from the nature of the employments themselves.",
        "### PART II.--Inequalities occasioned by the Policy of Europe.",
    ]
    # each heading a block of its own, between paragraphs
    body = chapters[1].body
    assert "\n\n### PART I. Inequalities" in body
    assert "themselves.\n\nThe five following are the principal circumstances" in body
