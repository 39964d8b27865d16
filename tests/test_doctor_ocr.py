"""`glossator doctor`'s OCR check (glossator/checks.py `check_ocr`): the real Tesseract that
.ci/run installs, and a GLOSSATOR_TESSERACT that points at nothing."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from glossator.checks import check_ocr
from glossator.settings import Settings


@pytest.mark.skipif(shutil.which("tesseract") is None, reason=".ci/run installs tesseract-ocr")
def test_the_engine_and_its_language_packs_are_found() -> None:
    (finding,) = check_ocr(Settings.from_env({}))
    assert finding.status == "ok", finding
    assert "Tesseract at" in finding.detail
    for pack in ("eng", "fra", "deu", "ita", "spa"):
        assert pack in finding.detail


def test_a_missing_engine_is_a_warning_with_the_apt_get_line(tmp_path: Path) -> None:
    settings = Settings.from_env({"GLOSSATOR_TESSERACT": str(tmp_path / "no-tesseract")})
    (finding,) = check_ocr(settings)
    assert finding.status == "warn"
    assert "scanned PDFs cannot be imported" in finding.detail
    assert finding.fix.startswith(
        "sudo apt-get install tesseract-ocr tesseract-ocr-fra tesseract-ocr-deu "
        "tesseract-ocr-ita tesseract-ocr-spa"
    )
