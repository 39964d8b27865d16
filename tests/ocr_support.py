"""What the OCR tests share (tests/test_import_images.py, tests/test_import_pdf_ocr.py): the
skip without Debian's Tesseract, the words texts are compared by, and a page that is a
picture with no text."""

from __future__ import annotations

import os
import re
import shutil
from typing import Any

import pytest

needs_tesseract = pytest.mark.skipif(
    shutil.which("tesseract") is None, reason="Debian's tesseract-ocr (.ci/run installs it)"
)


def cli_engine() -> Any:
    """Tesseract as `glossator corpus import` runs it (glossator/commands/corpus.py
    `_ocr_engine`): pages side by side, each process on one OpenMP thread. Without that
    limit two pages spin four threads on two cores: the noisy scan's test took 63 s of
    CPU instead of 20 (bench/RESULTS.md, "The suite's waste")."""
    from indexer.importers.ocr import Tesseract, thread_limited_env

    return Tesseract(env=thread_limited_env(dict(os.environ)))


def words(text: str) -> list[str]:
    """The words of `text` (letters and digits, inner apostrophes and hyphens kept)."""
    return re.findall(r"[^\W_]+(?:[’'-][^\W_]+)*", text)


def picture_without_text(width: int, height: int) -> Any:
    """A grey page (PIL image, mode L) with vertical stripes and a dark disc: a picture,
    no letter for OCR to find."""
    from PIL import Image, ImageDraw

    picture = Image.new("L", (width, height), 255)
    draw = ImageDraw.Draw(picture)
    for k in range(0, width, 4):
        draw.line([(k, 0), (k, height)], fill=200 + (k % 50))  # a grey wash
    draw.ellipse([300, 500, 800, 1000], fill=60)
    return picture
