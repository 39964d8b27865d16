"""`glossator corpus import page1.png [page2.png …] DEST` and `… scans/ DEST`: page images
read by Debian's Tesseract (indexer/importers/images.py, through the PDF importer's OCR).

The images (tests/fixtures/images/, made by tests/fixtures/pdf/make_fixtures.py) are
chapters 1-3 of the Frankenstein excerpt as Chromium shows them, screenshot at 192 dpi:
two grey PNGs and a JPEG. Their words are measured against the text layer of
frankenstein-chromium.pdf, printed from the same text.
"""

from __future__ import annotations

import difflib
from pathlib import Path

import pytest
from click.testing import CliRunner

from glossator.cli import main
from indexer.importers.images import read_images
from indexer.importers.pdf import read_pdf
from tests.ocr_support import cli_engine, needs_tesseract, picture_without_text, words

FIXTURES = Path(__file__).parent / "fixtures"
IMAGES = FIXTURES / "images"
PAGE_1 = IMAGES / "frankenstein-page-1.png"
PAGE_2 = IMAGES / "frankenstein-page-2.png"
BOOK = FIXTURES / "pdf" / "frankenstein-chromium.pdf"


@needs_tesseract
def test_a_folder_of_page_images_imports_by_ocr_into_its_chapters(tmp_path: Path) -> None:
    dest = tmp_path / "book"
    result = CliRunner().invoke(main, ["corpus", "import", str(IMAGES), str(dest), "--no-git"])
    assert result.exit_code == 0, result.output
    assert "read 3 page image(s) from" in result.stderr
    assert "read 3 page(s) by OCR (Tesseract, eng)" in result.stderr
    assert "0 parts, 3 chapters, 0 pieces" in result.stdout
    chapters = sorted((dest / "corpus").glob("*/chapter-*/*.md"))
    assert [p.parent.name for p in chapters] == ["chapter-01", "chapter-02", "chapter-03"]
    # each image's words are the printed chapter's first words, in order
    original = read_pdf(BOOK).sections()
    for path, printed in zip(chapters, original, strict=False):
        body = path.read_text("utf-8").split("\n---\n", 1)[-1]
        read = words(body)
        assert len(read) >= 120, path
        want = words(printed.body)[: len(read)]
        m = difflib.SequenceMatcher(None, want, read, autojunk=False)
        assert sum(x.size for x in m.get_matching_blocks()) / len(read) >= 0.98, path


@needs_tesseract
def test_several_images_are_read_in_the_order_given() -> None:
    work = read_images([PAGE_1, PAGE_2], ocr_engine=cli_engine())
    assert [(s.number, s.title) for s in work.sections()] == [
        ("1", "Chapter 1"),
        ("2", "Chapter 2"),
    ]
    assert work.sections()[1].body.startswith("We were brought up together")
    assert work.lang == "en"
    assert all("glossator-images-" not in s.origin for s in work.sections())


@needs_tesseract
def test_a_picture_with_no_text_says_so_and_writes_nothing(tmp_path: Path) -> None:
    picture = picture_without_text(1120, 1588)
    src = tmp_path / "photo.png"
    picture.save(src, dpi=(192, 192))
    dest = tmp_path / "c"
    result = CliRunner().invoke(main, ["corpus", "import", str(src), str(dest)])
    assert result.exit_code == 1, result.output
    assert result.output.strip() == (
        f"error: {src}: has no text layer and OCR found no text on its 1 page(s) "
        "(a picture?); nothing to import"
    )
    assert not dest.exists()


@pytest.mark.parametrize(
    ("name", "data", "message"),
    [
        (
            "cut.png",
            PAGE_1.read_bytes()[:3000],
            "is not an image that can be read (damaged or cut?)",
        ),
        (
            "noise.jpg",
            b"\xff\xd8\xff\xe0" + bytes(range(256)) * 8,
            "is not an image that can be read",
        ),
        ("empty.tiff", b"", "is not an image that can be read"),
    ],
)
def test_a_damaged_image_says_so_in_one_line_and_writes_nothing(
    tmp_path: Path, name: str, data: bytes, message: str
) -> None:
    src = tmp_path / name
    src.write_bytes(data)
    dest = tmp_path / "c"
    result = CliRunner().invoke(main, ["corpus", "import", str(src), str(dest)])
    assert result.exit_code == 1, result.output
    assert result.output.strip().startswith(f"error: {src}: {message}")
    assert result.output.strip().count("\n") == 0
    assert not dest.exists()


def test_several_sources_must_all_be_page_images(tmp_path: Path) -> None:
    other = tmp_path / "notes.txt"
    other.write_text("Chapter 1\n\nText.\n", "utf-8")
    dest = tmp_path / "c"
    result = CliRunner().invoke(main, ["corpus", "import", str(PAGE_1), str(other), str(dest)])
    assert result.exit_code == 1, result.output
    assert result.output.strip() == (
        f"error: {other}: is not a PNG, JPEG or TIFF image; import other books one at a time"
    )
    assert not dest.exists()


def test_ocr_never_on_page_images_says_why_and_writes_nothing(tmp_path: Path) -> None:
    dest = tmp_path / "c"
    result = CliRunner().invoke(
        main, ["corpus", "import", str(PAGE_1), str(dest), "--ocr", "never"]
    )
    assert result.exit_code == 1, result.output
    assert "page images are read by OCR, which --ocr never turns off" in result.output
    assert result.output.strip().count("\n") == 0
    assert not dest.exists()


def test_an_image_is_a_pdf_page_of_its_size_and_a_tiff_frame_a_page(tmp_path: Path) -> None:
    import pypdfium2 as pdfium
    from PIL import Image

    from indexer.importers.images import images_to_pdf

    tiff = tmp_path / "pages.tiff"
    first = Image.open(PAGE_1)
    first.save(tiff, "TIFF", dpi=(192, 192), save_all=True, append_images=[Image.open(PAGE_2)])
    pdf = tmp_path / "pages.pdf"
    assert images_to_pdf([tiff, PAGE_2], pdf) == 3
    doc = pdfium.PdfDocument(str(pdf))
    width, height = doc[0].get_size()
    assert len(doc) == 3
    doc.close()
    # 1120 × 1588 pixels at 192 dpi: 420 × 595.5 points, an A5 page
    assert (round(width), round(height)) == (420, 596)
