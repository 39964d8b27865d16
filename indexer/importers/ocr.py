"""OCR of PDF pages without a text layer: Debian's Tesseract, pages side by side.

Each page is rasterized by PDFium at 300 dpi in grey (Tesseract's documentation asks for
300 dpi or more), written as a PGM, and read by `tesseract … tsv`, one process a page and
`ocr_workers` processes at a time (the CLI sets OMP_THREAD_LIMIT=1 in their environment,
`thread_limited_env`: Tesseract's own threads only slow down pages read side by side). Its TSV gives each word's box and confidence; the
words are grouped into `pdflayout.Line`s as the text layer's are, so the same rules make
paragraphs and headings of them. The language pack follows `--lang`, else the language
guessed from the first page read with the English pack.

Errors say how to fix them: the engine missing (`apt-get install tesseract-ocr`), a pack
missing (`apt-get install tesseract-ocr-fra`), no word found on any page (a picture).
"""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
import tempfile
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from statistics import median
from typing import Any

from indexer.importers.common import ImportSourceError, guess_language
from indexer.importers.pdflayout import Line

log = logging.getLogger(__name__)

DPI = 300  # Tesseract's "ImproveQuality" page: 300 dpi and more reads best
# A line none of whose words Tesseract read with this confidence (percent) or more is
# specks; its real words score 60-99 on the noisy scan of tests/fixtures/pdf/
NOISE_CONFIDENCE = 30
# and a mark of no letter or digit read with less than this is a speck (`|`, `~`, `_`)
PUNCTUATION_CONFIDENCE = 60
# ISO 639-1 (the corpus's `lang`) → Tesseract's pack names (ISO 639-2/T)
PACKS = {
    "en": "eng", "fr": "fra", "de": "deu", "it": "ita", "es": "spa", "pt": "por",
    "nl": "nld", "da": "dan", "sv": "swe", "no": "nor", "fi": "fin", "pl": "pol",
    "ru": "rus", "la": "lat", "el": "ell", "hu": "hun", "ca": "cat", "ro": "ron", "tr": "tur",
}  # fmt: skip
# the packs `glossator doctor` looks for and .ci/run installs: the languages of the
# corpora the project is tried on (indexer.corpus.lang's first ones)
COMMON_PACKS = ("eng", "fra", "deu", "ita", "spa")


def apt_line(packs: tuple[str, ...] = COMMON_PACKS) -> str:
    """`sudo apt-get install tesseract-ocr tesseract-ocr-fra …` (English comes with the engine)."""
    names = ["tesseract-ocr", *(f"tesseract-ocr-{p}" for p in packs if p != "eng")]
    return "sudo apt-get install " + " ".join(names)


def thread_limited_env(environ: dict[str, str]) -> dict[str, str]:
    """The engine's environment: the caller's, Tesseract's OpenMP threads limited to one."""
    return {**environ, "OMP_THREAD_LIMIT": "1"}


def locate(program: str) -> str | None:
    """The engine's path, or None when it is not installed there."""
    found = shutil.which(program)
    return found if found and os.access(found, os.X_OK) else None


def installed_packs(program: str) -> set[str]:
    found = locate(program)
    if found is None:
        return set()
    try:
        run = subprocess.run(
            [found, "--list-langs"], capture_output=True, text=True, timeout=30, check=False
        )
    except OSError:
        return set()
    lines = (run.stdout + run.stderr).splitlines()
    return {x.strip() for x in lines if x.strip() and " " not in x.strip() and ":" not in x}


@dataclass
class Tesseract:
    """The OCR engine `pdf.read_pages` calls for pages without text."""

    program: str = "tesseract"
    workers: int = 2
    progress: Callable[[str], None] | None = None
    # the engine's environment (the composition root's, with OMP_THREAD_LIMIT=1); None: this
    # process's, as it is
    env: dict[str, str] | None = None
    confidences: list[float] = field(default_factory=list)
    # how pages are read (bench/pdf.py --ocr-variants measures them side by side): the
    # raster's resolution, Tesseract's page segmentation mode (None: its default, 3, the
    # automatic layout analysis) and whether the page is made black and white here
    dpi: int = DPI
    psm: int | None = None
    binarize: bool = False

    def __call__(
        self, doc: Any, pages: list[int], *, lang: str | None, notes: list[str], path: str
    ) -> list[list[Line]]:
        found = locate(self.program)
        pack = PACKS.get(lang or "", "eng") if lang else "eng"
        if found is None:
            raise ImportSourceError(
                path,
                f"has {len(pages)} page(s) without a text layer and the OCR engine "
                f"{self.program!r} is not installed: {apt_line((pack,))} (or set "
                "GLOSSATOR_TESSERACT to where it is)",
            )
        packs = installed_packs(found)
        if pack not in packs:
            raise ImportSourceError(
                path,
                f"needs OCR in {lang or 'English'} and Tesseract has no {pack!r} language pack: "
                f"{apt_line((pack,))}",
            )
        with tempfile.TemporaryDirectory(prefix="glossator-ocr-") as tmp:
            images = [_rasterize(doc, i, Path(tmp), self.dpi, self.binarize) for i in pages]
            out: list[list[Line] | None] = [None] * len(pages)
            words: list[list[float]] = [[] for _ in pages]
            done = 0
            first = 0
            if lang is None and pages:
                # the language from the first page with words, read in English
                for first, image in enumerate(images):
                    out[first], words[first] = self._read(found, image, pages[first], "eng")
                    done += 1
                    self._tick(done, len(pages))
                    if out[first]:
                        break
                text = " ".join(x.text for x in out[first] or [])
                guessed = PACKS.get(guess_language(text, default="en"), "eng")
                if guessed != "eng" and guessed in packs:
                    pack = guessed
                    out[first] = None  # read again in its own language
                    done -= 1
            todo = [k for k in range(len(pages)) if out[k] is None]
            with ThreadPoolExecutor(max_workers=max(1, self.workers)) as pool:
                futures = {
                    k: pool.submit(self._read, found, images[k], pages[k], pack) for k in todo
                }
                for k, future in futures.items():
                    out[k], words[k] = future.result()
                    done += 1
                    self._tick(done, len(pages))
        confs = [c for w in words for c in w]
        self.confidences = confs
        if not confs:
            return [[] for _ in pages]  # (pdf.read_pages says so when no page has text)
        mean = sum(confs) / len(confs)
        notes.append(
            f"read {len(pages)} page(s) by OCR (Tesseract, {pack}): mean confidence "
            f"{mean:.0f} % over {len(confs)} words"
        )
        log.info("OCR: %d pages, %s, mean confidence %.1f", len(pages), pack, mean)
        return [x or [] for x in out]

    def _tick(self, done: int, total: int) -> None:
        if self.progress is not None:
            self.progress(f"OCR page {done}/{total}")

    def _read(
        self, program: str, image: Path, page: int, pack: str
    ) -> tuple[list[Line], list[float]]:
        mode = ["--psm", str(self.psm)] if self.psm is not None else []
        run = subprocess.run(
            [program, str(image), "stdout", "-l", pack, "--dpi", str(self.dpi), *mode, "tsv"],
            capture_output=True, text=True, env=self.env, check=False, timeout=600,
        )  # fmt: skip
        if run.returncode != 0:
            last = (run.stderr.strip().splitlines() or ["no message"])[-1]
            raise ImportSourceError(str(image), f"Tesseract failed on page {page + 1}: {last}")
        return _lines(run.stdout, page, self.dpi)


def _rasterize(doc: Any, index: int, folder: Path, dpi: int = DPI, binarize: bool = False) -> Path:
    """The page at `dpi` in grey (black and white when `binarize`), as a PGM (no imaging
    library needed)."""
    bitmap = doc[index].render(scale=dpi / 72, grayscale=True)
    pixels = bitmap.to_numpy()
    if pixels.ndim == 3:
        pixels = pixels[:, :, 0]
    pixels = despeckle(pixels.astype("uint8"))
    if binarize:
        pixels = ((pixels >= DARK) * 255).astype("uint8")
    height, width = pixels.shape
    target = folder / f"page-{index:05d}.pgm"
    with target.open("wb") as f:
        f.write(f"P5 {width} {height} 255\n".encode("ascii"))
        f.write(pixels.astype("uint8").tobytes())
    return target


# A dark blot with at most this many dark pixels in its 5×5 window at 300 dpi is a speck
# (dust, a JPEG's noise), not ink: a letter's stroke fills more (1 pt ≈ 4 pixels)
SPECK_PIXELS = 6
DARK = 128


def despeckle(pixels: Any) -> Any:
    """Specks whitened, and grey background with no ink near it: Tesseract's own
    binarization (Otsu) keeps both and reads them as `|`, `~`, `.` inside words."""
    import numpy as np

    dark = (pixels < DARK).astype(np.int32)
    padded = np.pad(dark, 2)
    sums = padded.cumsum(0).cumsum(1)
    sums = np.pad(sums, ((1, 0), (1, 0)))
    h, w = dark.shape
    window = sums[5 : 5 + h, 5 : 5 + w] - sums[:h, 5 : 5 + w] - sums[5 : 5 + h, :w] + sums[:h, :w]
    out = pixels.copy()
    out[(window <= SPECK_PIXELS) & (pixels < 230)] = 255
    return out


def _lines(tsv: str, page: int, dpi: int = DPI) -> tuple[list[Line], list[float]]:
    """Tesseract's TSV → lines (in points, as the text layer's) and its words' confidences."""
    scale = 72 / dpi
    groups: dict[tuple[str, str, str], list[list[str]]] = {}
    confs: list[float] = []
    for row in tsv.splitlines()[1:]:
        cols = row.split("\t")
        if len(cols) < 12 or cols[0] != "5" or not cols[11].strip():
            continue
        conf = float(cols[10])
        if conf >= 0:
            confs.append(conf)
        if conf < PUNCTUATION_CONFIDENCE and not any(c.isalnum() for c in cols[11]):
            continue  # a speck read as `|`, `~`, `_`
        groups.setdefault((cols[2], cols[3], cols[4]), []).append(cols)
    out = []
    for words in groups.values():
        # specks read as a line: no word of it with a letter or digit read with some
        # confidence (Tesseract gives a speck -1 or a few percent)
        if not any(
            float(w[10]) >= NOISE_CONFIDENCE and any(c.isalnum() for c in w[11]) for w in words
        ):
            continue
        lefts = [int(w[6]) for w in words]
        bottoms = [int(w[7]) + int(w[9]) for w in words]
        rights = [int(w[6]) + int(w[8]) for w in words]
        heights = [int(w[9]) for w in words]
        text = " ".join(w[11].strip() for w in words)
        out.append(
            Line(page, min(lefts) * scale, max(rights) * scale, median(bottoms) * scale,
                 median(heights) * scale, False, text, read=True)
        )  # fmt: skip
    out.sort(key=lambda x: (round(x.y), x.x0))
    return out, confs
