"""Import page images (PNG, JPEG, TIFF: a scanner's or a phone's pages) through OCR.

    glossator corpus import page1.png mybook             one image
    glossator corpus import page1.png page2.png mybook   several, in the order given
    glossator corpus import scans/ mybook                a folder of images, by name
                                                         (page2 before page10)

The images become the pages of a PDF without a text layer (Pillow writes it, each page
the image's size at its own resolution, else 300 dpi), and `pdf.read_pdf` reads that as
it reads any scan: OCR (`ocr.py`), then paragraphs, headings and chapters (`pdflayout.py`,
the text importer's rules). A file that is no image Pillow can read, or pictures in which
OCR finds no word, are refused in one line naming the file.
"""

from __future__ import annotations

import re
import tempfile
from collections.abc import Callable
from pathlib import Path

from indexer.importers import pdflayout as importers_pdflayout
from indexer.importers.common import ImportSourceError
from indexer.importers.tree import Work

IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".tif", ".tiff")
# An image that does not say its resolution is taken as a scanner's default page, 300 dpi
# (ocr.DPI's reading: a page of text at 300 dpi is a page's size)
DEFAULT_DPI = 300.0


def is_image(path: Path) -> bool:
    return path.suffix.lower() in IMAGE_SUFFIXES


# Files a folder of scans often carries beside its pages (where they came from, their
# licence): left out with a note, never read as a chapter. Any other file makes the folder
# something else (a Markdown corpus, saved pages), which its own importer reads.
ACCOMPANYING_STEMS = frozenset({"readme", "sources", "source", "license", "licence", "copying"})


def is_accompanying(path: Path) -> bool:
    return path.stem.lower() in ACCOMPANYING_STEMS and path.suffix.lower() in (".md", ".txt", "")


def holds_only_images(folder: Path) -> bool:
    """A folder whose files are images (hidden files and accompanying notes aside), at
    least one, and no sub-folder (a Markdown corpus has one per part or chapter)."""
    entries = [p for p in folder.iterdir() if not p.name.startswith(".")]
    if any(p.is_dir() for p in entries):
        return False
    files = [p for p in entries if not is_accompanying(p)]
    return bool(files) and all(is_image(p) for p in files)


def left_out_notes(sources: list[Path]) -> list[str]:
    """What a folder of images holds that is not read, said as the importers say it."""
    return [
        f"left out {p}: not a page image (a note that came with the scans)"
        for src in sources
        if src.is_dir()
        for p in sorted(src.iterdir())
        if p.is_file() and is_accompanying(p)
    ]


def image_files(sources: list[Path]) -> list[Path]:
    """The images to read, in order: a folder's by natural name order, else as given."""
    out: list[Path] = []
    for src in sources:
        if src.is_dir():
            found = sorted((p for p in src.iterdir() if p.is_file() and is_image(p)), key=_natural)
            if not found:
                raise ImportSourceError(str(src), "holds no PNG, JPEG or TIFF image to read")
            out.extend(found)
        elif not src.exists():
            raise ImportSourceError(str(src), "no such file")
        elif not is_image(src):
            raise ImportSourceError(
                str(src), "is not a PNG, JPEG or TIFF image; import other books one at a time"
            )
        else:
            out.append(src)
    return out


def _natural(path: Path) -> list[object]:
    return [int(t) if t.isdigit() else t.lower() for t in re.split(r"(\d+)", path.name)]


def images_to_pdf(images: list[Path], target: Path) -> int:
    """Write the images as the pages of a PDF at `target` (every frame of a TIFF a page);
    the number of pages."""
    from PIL import Image, ImageSequence, UnidentifiedImageError

    pages = []
    for path in images:
        try:
            with Image.open(path) as opened:
                dpi = opened.info.get("dpi") or (DEFAULT_DPI, DEFAULT_DPI)
                for frame in ImageSequence.Iterator(opened):
                    page = frame.copy()
                    page.load()
                    # grey (OCR reads grey; a bitonal scan stays bitonal)
                    pages.append((page if page.mode in ("1", "L") else page.convert("L"), dpi))
        except (UnidentifiedImageError, OSError, ValueError, SyntaxError) as e:
            raise ImportSourceError(
                str(path), f"is not an image that can be read (damaged or cut?): {_reason(e)}"
            ) from None
    first, rest = pages[0], pages[1:]
    resolution = float(first[1][0]) or DEFAULT_DPI
    first[0].save(
        target, "PDF", resolution=resolution, save_all=True, append_images=[p for p, _ in rest]
    )
    return len(pages)


def _reason(error: Exception) -> str:
    text = " ".join(str(error).split())
    return text.split(" '/", 1)[0] or type(error).__name__  # no temporary paths


def read_images(
    sources: list[Path],
    *,
    lang: str | None = None,
    exclude: tuple[str, ...] = (),
    skip_front_matter: bool = False,
    ocr: str = "auto",
    ocr_engine: Callable[..., list[list[importers_pdflayout.Line]]] | None = None,
) -> Work:
    """The work in the page images `sources` (files, or one folder of them)."""
    from indexer.importers.pdf import read_pdf

    images = image_files(sources)
    if ocr == "never":
        raise ImportSourceError(
            str(sources[0]), "page images are read by OCR, which --ocr never turns off: drop it"
        )
    name = sources[0].name if len(sources) == 1 and sources[0].is_dir() else images[0].stem
    shown = str(sources[0]) if len(sources) == 1 else f"{sources[0]} (and {len(sources) - 1} more)"
    with tempfile.TemporaryDirectory(prefix="glossator-images-") as tmp:
        pdf = Path(tmp) / f"{name}.pdf"
        count = images_to_pdf(images, pdf)
        try:
            work = read_pdf(
                pdf,
                lang=lang,
                exclude=exclude,
                skip_front_matter=skip_front_matter,
                ocr=ocr,
                ocr_engine=ocr_engine,
            )
        except ImportSourceError as e:
            message = e.message.replace(str(pdf), shown).replace(tmp, "")
            raise ImportSourceError(shown, message) from None
    work.notes = [n.replace(str(pdf), shown) for n in work.notes]
    for section in work.sections():
        section.origin = section.origin.replace(str(pdf), shown)
    work.notes[:0] = [f"read {count} page image(s) from {shown}", *left_out_notes(sources)]
    return work
