"""Scans (PDF pages without a text layer) read by Debian's Tesseract (indexer/importers/ocr.py),
and PDFs made here as users make them (tests/fixtures/pdf/make_fixtures.py): Chromium's
print-to-PDF of five chapters, a clean 300 dpi scan of it and a poor 150 dpi one.

Word accuracy is measured against the text layer of the Chromium PDF the scans were made
from: the share of its words, chapter by chapter, that the OCR'd chapter holds in order
(difflib's matching blocks over the two word lists). Speed is measured in bench/pdf.py.
"""

from __future__ import annotations

import difflib
import io
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from glossator.cli import main
from indexer.corpus import frontmatter
from indexer.importers.pdf import read_pdf
from indexer.importers.tree import Section, Work
from tests.ocr_support import cli_engine, needs_tesseract, picture_without_text, words

PDFS = Path(__file__).parent / "fixtures" / "pdf"
BOOK = PDFS / "frankenstein-chromium.pdf"
CLEAN = PDFS / "frankenstein-scan-300.pdf"
NOISY = PDFS / "frankenstein-scan-150.pdf"
CHAPTERS = [f"Chapter {n}" for n in range(1, 6)]


def _accuracy(original: Work, scanned: Work, *, of: str = "original") -> list[float]:
    """Per chapter, the words both hold in order over the original's words (`of`
    "scanned": over the scan's, so that words OCR added, a running head read as text, count)."""
    out = []
    for a, b in zip(original.sections(), scanned.sections(), strict=True):
        wa, wb = words(a.body), words(b.body)
        m = difflib.SequenceMatcher(None, wa, wb, autojunk=False)
        out.append(
            sum(x.size for x in m.get_matching_blocks()) / len(wa if of == "original" else wb)
        )
    return out


def test_chromium_print_to_pdf_imports_its_chapters_from_the_headings() -> None:
    work = read_pdf(BOOK)
    assert work.title == "Frankenstein; or, the Modern Prometheus"  # the PDF's metadata
    assert work.author == "Mary Wollstonecraft Shelley"  # the title page
    assert work.lang == "en"
    assert [s.title for s in work.sections()] == CHAPTERS
    assert [s.number for s in work.sections()] == ["1", "2", "3", "4", "5"]
    for s in work.sections():
        assert "Prometheus" not in s.body  # the running head
        assert not re.search(r"\b\d+ / 12\b", s.body)  # the running foot
    text = "".join(s.body for s in work.sections())
    assert "’" in text and "'" not in text  # curly quotes kept
    first = work.sections()[0].body
    assert first.startswith(
        "I am by birth a Genevese, and my family is one of the most distinguished"
    )
    # one paragraph across a page break, with no line break inside it
    assert all("\n" not in p for p in first.strip().split("\n\n"))


@needs_tesseract
def test_a_clean_scan_imports_by_ocr_into_its_chapters_with_98_percent_of_words_right(
    tmp_path: Path,
) -> None:
    result = CliRunner().invoke(
        main, ["corpus", "import", str(CLEAN), str(tmp_path / "c"), "--no-git"]
    )
    assert result.exit_code == 0, result.output
    assert "5 chapters" in result.output
    assert re.search(
        r"read 12 page\(s\) by OCR \(Tesseract, eng\): mean confidence \d+ %", result.output
    )
    files = sorted((tmp_path / "c").rglob("source.md"))
    docs = [frontmatter.read(str(f), f.read_bytes()) for f in files]
    assert [d.meta["title"] for d in docs] == CHAPTERS
    scanned = Work("scan")
    for d in docs:
        scanned.add_chapter(Section(d.meta["title"], d.body))
    accuracy = _accuracy(read_pdf(BOOK), scanned)
    assert min(accuracy) >= 0.98, accuracy


@needs_tesseract
def test_a_noisy_skewed_150_dpi_scan_keeps_90_percent_of_words_right() -> None:
    scanned = read_pdf(NOISY, ocr_engine=cli_engine())
    # the title page's, not the running head read as noise on every page (`Ptannensten…`)
    assert (scanned.title, scanned.author) == ("Frankenstein", "Mary Wollstonecraft Shelley")
    assert [s.title for s in scanned.sections()] == CHAPTERS
    original = read_pdf(BOOK)
    accuracy = _accuracy(original, scanned)
    assert min(accuracy) >= 0.90, accuracy
    assert min(_accuracy(original, scanned, of="scanned")) >= 0.90


def test_ocr_never_on_a_scan_says_so_and_writes_nothing(tmp_path: Path) -> None:
    dest = tmp_path / "c"
    result = CliRunner().invoke(main, ["corpus", "import", str(CLEAN), str(dest), "--ocr", "never"])
    assert result.exit_code == 1
    assert result.output.strip().count("\n") == 0
    assert "has no text layer on any page; import it with --ocr auto" in result.output
    assert not dest.exists()


def test_a_scan_without_the_ocr_engine_says_how_to_install_it_and_writes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GLOSSATOR_TESSERACT", str(tmp_path / "no-tesseract-here"))
    dest = tmp_path / "c"
    result = CliRunner().invoke(main, ["corpus", "import", str(CLEAN), str(dest)])
    assert result.exit_code == 1
    assert result.output.strip().count("\n") == 0
    assert "without a text layer and the OCR engine" in result.output
    assert "apt-get install tesseract-ocr" in result.output
    assert not dest.exists()


@needs_tesseract
def test_a_picture_with_no_text_says_so_and_writes_nothing(tmp_path: Path) -> None:
    picture = picture_without_text(1240, 1754)
    buffer = io.BytesIO()
    picture.save(buffer, "PDF", resolution=150)
    src = tmp_path / "picture.pdf"
    src.write_bytes(buffer.getvalue())
    dest = tmp_path / "c"
    result = CliRunner().invoke(main, ["corpus", "import", str(src), str(dest)])
    assert result.exit_code == 1, result.output
    assert "has no text layer and OCR found no text on its 1 page(s) (a picture?)" in result.output
    assert result.output.strip().count("\n") == 0
    assert not dest.exists()


def test_footnotes_at_a_pages_foot_become_markdown_footnotes() -> None:
    work = read_pdf(PDFS / "frankenstein-notes.pdf")
    assert [(s.title, s.number) for s in work.sections()] == [
        ("Chapter VI", "VI"),
        ("Chapter VII", "VII"),
    ]
    six, seven = (s.body for s in work.sections())
    assert "It was from my own Elizabeth:[^1]\n\n“My dearest Cousin," in six
    assert "dear kind Henry[^2] are not sufficient" in six  # the call in its sentence
    assert six.rstrip().endswith(
        "[^1]: Elizabeth Lavenza, the narrator's adopted cousin.\n\n"
        "[^2]: Henry Clerval, his friend since childhood."
    )
    # numbered from 1 again on its page: a label of its own in the chapter
    assert "“My dear Victor,[^1-p2]" in seven
    assert "[^1-p2]: Victor Frankenstein, the narrator." in seven
    for body in (six, seven):
        assert not re.search(r"(?m)^\d+$", body)  # no page number left
        assert "\x01" not in body and "\x02" not in body


@needs_tesseract
def test_a_french_scan_is_read_with_the_french_pack_found_from_its_text() -> None:
    work = read_pdf(PDFS / "verne-scan-300.pdf", ocr_engine=cli_engine())
    assert work.lang == "fr"
    assert any(re.match(r"read 3 page\(s\) by OCR \(Tesseract, fra\)", n) for n in work.notes)
    text = " ".join(s.body for s in work.sections())
    # accents only the French pack reads: `tempête`, `désemparé`, `Préparatifs`
    for word in ("tempête", "désemparé", "Préparatifs", "Briant"):
        assert word in text


@needs_tesseract
def test_a_scan_in_a_language_without_its_pack_names_the_package(tmp_path: Path) -> None:
    """Portuguese: a pack .ci/run does not install (`tesseract --list-langs` says which are)."""
    import subprocess

    listed = subprocess.run(["tesseract", "--list-langs"], capture_output=True, text=True).stdout
    if "por" in listed.split():
        pytest.skip("this machine has the Portuguese pack")
    dest = tmp_path / "c"
    result = CliRunner().invoke(main, ["corpus", "import", str(CLEAN), str(dest), "--lang", "pt"])
    assert result.exit_code == 1
    assert (
        "Tesseract has no 'por' language pack: sudo apt-get install tesseract-ocr tesseract-ocr-por"
        in result.output
    )
    assert result.output.strip().count("\n") == 0
    assert not dest.exists()
