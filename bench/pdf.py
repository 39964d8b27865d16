"""PDF import: which extractor, how fast a text PDF imports, how fast OCR reads a page.

    .venv/bin/python bench/pdf.py                 # extractors + import of the text PDFs
    .venv/bin/python bench/pdf.py --ocr           # and OCR seconds a page (1 and 2 workers)
    .venv/bin/python bench/pdf.py --ocr-variants  # only: OCR settings side by side

1. Extractors side by side on tests/fixtures/pdf/'s two born-digital books: seconds for
   the whole text (best of `--rounds`), and what each gives of what a reader needs: curly
   quotes (’ “), ligature glyphs left as such (ﬁ ﬂ), tabs and vertical tabs, words split
   at a line end (`pre-` / `dominates` read as two words), reading order (the first
   sentence of Sherlock's first story in one piece). pdfplumber and docling-parse are not
   dependencies: `pip install pdfplumber==0.11.10 docling-parse==7.23.1` to compare
   (either missing is skipped).
2. `indexer.importers.pdf.read_pdf` on each book (the whole import but the writing).
3. With --ocr: `read_pdf` on the 12-page clean scan, with 1 and 2 Tesseract processes.
4. With --ocr-variants (and nothing else): `read_pdf` on the clean 300 dpi and the noisy
   150 dpi scans with each way of reading a page (`ocr.Tesseract`'s settings: processes
   and Tesseract's threads, the raster's dpi, the page segmentation mode, black and white
   made here), seconds a page and the share of the printed words read right (the text
   layer of frankenstein-chromium.pdf, chapter by chapter, as tests/test_import_pdf_ocr.py
   measures it); then Tesseract's `--oem 1` against its default on three pages.
"""

from __future__ import annotations

import argparse
import os
import re
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PDFS = ROOT / "tests" / "fixtures" / "pdf"
BOOKS = [PDFS / "Adventures-Of-Sherlock-Holmes.pdf", PDFS / "The-War-of-the-Worlds.pdf"]
SCAN = PDFS / "frankenstein-scan-300.pdf"
NOISY = PDFS / "frankenstein-scan-150.pdf"
PRINTED = PDFS / "frankenstein-chromium.pdf"
FIRST = "eclipses and predominates the whole of her sex"


def pypdfium2_text(path: Path) -> str:
    import pypdfium2 as pdfium

    doc = pdfium.PdfDocument(str(path))
    out = []
    for page in doc:
        tp = page.get_textpage()
        out.append(tp.get_text_range())
        tp.close()
    doc.close()
    return "\n".join(out).replace("\r\n", "\n")


def pdfplumber_text(path: Path) -> str:
    import pdfplumber

    with pdfplumber.open(str(path)) as pdf:
        return "\n".join(page.extract_text() or "" for page in pdf.pages)


def docling_parse_text(path: Path) -> str:
    from docling_parse.pdf_parser import DoclingPdfParser

    parser = DoclingPdfParser()
    doc = parser.load(path_or_stream=str(path))
    out = []
    for _, page in doc.iterate_pages():
        out.append("\n".join(line.text for line in page.textline_cells))
    return "\n".join(out)


def probes(text: str) -> dict[str, object]:
    joined = " ".join(text.split())
    return {
        "’“": text.count("’") + text.count("“"),
        "ligatures": sum(text.count(c) for c in "ﬀﬁﬂﬃﬄ"),
        "tabs": text.count("\t") + text.count("\v"),
        "split words": len(re.findall(r"[a-z]-\s*\n\s*[a-z]", text)) + text.count("\ufffe"),
        "order": FIRST in joined.replace("\ufffe", "").replace("pre- dominates", "predominates"),
    }


def best(fn: Callable[[], object], rounds: int) -> tuple[float, object]:
    times, result = [], None
    for _ in range(rounds):
        t = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t)
    return min(times), result


def _words(text: str) -> list[str]:
    return re.findall(r"[^\W_]+(?:[’'-][^\W_]+)*", text)


def word_accuracy(original: object, scanned: object) -> float:
    """The printed words the scan's chapters hold in order, over all printed words."""
    import difflib

    found = total = 0
    for a, b in zip(original.sections(), scanned.sections(), strict=False):  # type: ignore[attr-defined]
        wa, wb = _words(a.body), _words(b.body)
        m = difflib.SequenceMatcher(None, wa, wb, autojunk=False)
        found += sum(x.size for x in m.get_matching_blocks())
        total += len(wa)
    return found / total if total else 0.0


def _cpu() -> float:
    """CPU seconds of this process and its finished children (Tesseract's processes): what a
    page costs whatever else the machine runs, where wall time on a loaded machine is not."""
    import resource

    me, kids = (
        resource.getrusage(resource.RUSAGE_SELF),
        resource.getrusage(resource.RUSAGE_CHILDREN),
    )
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def ocr_variants() -> None:
    import subprocess
    import tempfile

    import pypdfium2 as pdfium

    from indexer.importers.ocr import Tesseract, _rasterize, thread_limited_env
    from indexer.importers.pdf import read_pdf

    limited = thread_limited_env(dict(os.environ))
    free = {k: v for k, v in os.environ.items() if k != "OMP_THREAD_LIMIT"}
    variants = [
        ("default: 300 dpi grey, psm 3, 2 processes × 1 thread", {}),
        ("1 process, Tesseract's own threads", {"workers": 1, "env": free}),
        ("2 processes, Tesseract's own threads", {"env": free}),
        ("1 process × 1 thread", {"workers": 1}),
        ("psm 6 (one block of text)", {"psm": 6}),
        ("psm 4 (one column)", {"psm": 4}),
        ("240 dpi", {"dpi": 240}),
        ("200 dpi", {"dpi": 200}),
        ("black and white made here", {"binarize": True}),
    ]
    original = read_pdf(PRINTED)
    print(f"uptime load {os.getloadavg()}")
    print(
        "| way of reading | clean s/page | CPU s/page | words right "
        "| noisy s/page | CPU s/page | words right |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|")
    for name, settings in variants:
        cells = []
        for scan in (SCAN, NOISY):
            pages = len(pdfium.PdfDocument(str(scan)))
            engine = Tesseract(**{"env": limited, **settings})  # type: ignore[arg-type]
            t, cpu = time.perf_counter(), _cpu()
            work = read_pdf(scan, lang="en", ocr_engine=engine)
            seconds, cpu = time.perf_counter() - t, _cpu() - cpu
            cells += [
                f"{seconds / pages:.2f}",
                f"{cpu / pages:.2f}",
                f"{100 * word_accuracy(original, work):.1f} %",
            ]
        print(f"| {name} | " + " | ".join(cells) + f" |  (load {os.getloadavg()[0]:.1f})")
    # Tesseract's engine modes on three raster pages (Debian's packs hold LSTM models)
    doc = pdfium.PdfDocument(str(SCAN))
    with tempfile.TemporaryDirectory() as tmp:
        images = [_rasterize(doc, i, Path(tmp)) for i in range(3)]
        for oem in (None, "1"):
            t = time.perf_counter()
            for image in images:
                subprocess.run(
                    ["tesseract", str(image), "stdout", "-l", "eng", "--dpi", "300",
                     *(["--oem", oem] if oem else []), "tsv"],
                    env=limited, capture_output=True, check=True,
                )  # fmt: skip
            print(f"oem {oem or 'default'}: {(time.perf_counter() - t) / 3:.2f} s/page (1 process)")
    doc.close()
    print(f"uptime load at the end {os.getloadavg()}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--ocr", action="store_true")
    ap.add_argument(
        "--extractors", default="pypdfium2,pdfplumber,docling-parse", help="comma-separated"
    )
    ap.add_argument("--ocr-variants", action="store_true")
    args = ap.parse_args()
    if args.ocr_variants:
        ocr_variants()
        return
    print(f"load average {os.getloadavg()[0]:.1f}, {os.cpu_count()} CPUs")
    extractors = {
        "pypdfium2": pypdfium2_text,
        "pdfplumber": pdfplumber_text,
        "docling-parse": docling_parse_text,
    }
    print("| extractor | book | pages | s | ’“ | ligatures | tabs | split words | order |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---|")
    import pypdfium2 as pdfium

    for name, fn in extractors.items():
        if name not in args.extractors.split(","):
            continue
        for book in BOOKS:
            pages = len(pdfium.PdfDocument(str(book)))
            try:
                seconds, text = best(lambda fn=fn, book=book: fn(book), args.rounds)
            except ImportError:
                print(f"| {name} | (not installed) |")
                break
            p = probes(str(text))
            print(
                f"| {name} | {book.stem} | {pages} | {seconds:.2f} | {p['’“']} | "
                f"{p['ligatures']} | {p['tabs']} | {p['split words']} | {p['order']} |"
            )
    from indexer.importers.pdf import read_pdf

    print("\n| import (read_pdf) | pages | s (best) |\n|---|---:|---:|")
    for book in BOOKS:
        seconds, _ = best(lambda book=book: read_pdf(book), args.rounds)
        print(f"| {book.stem} | {len(pdfium.PdfDocument(str(book)))} | {seconds:.2f} |")
    import subprocess
    import tempfile

    print("\n| `glossator corpus import` (CLI, writing, git commit) | pages | s |\n|---|---:|---:|")
    glossator = ROOT / ".venv" / "bin" / "glossator"
    for book in BOOKS:
        with tempfile.TemporaryDirectory() as tmp:
            t = time.perf_counter()
            subprocess.run([str(glossator), "corpus", "import", str(book), f"{tmp}/c"],
                           check=True, capture_output=True)  # fmt: skip
            seconds = time.perf_counter() - t
        print(f"| {book.stem} | {len(pdfium.PdfDocument(str(book)))} | {seconds:.2f} |")
    if args.ocr:
        from indexer.importers.ocr import Tesseract, thread_limited_env

        pages = len(pdfium.PdfDocument(str(SCAN)))
        print("\n| OCR (read_pdf, clean 300 dpi scan) | workers | pages | s | s/page |")
        print("|---|---:|---:|---:|---:|")
        for workers in (1, 2):
            t = time.perf_counter()
            read_pdf(
                SCAN,
                lang="en",
                ocr_engine=Tesseract(workers=workers, env=thread_limited_env(dict(os.environ))),
            )
            seconds = time.perf_counter() - t
            print(f"| {SCAN.stem} | {workers} | {pages} | {seconds:.1f} | {seconds / pages:.2f} |")
    print(f"load average at the end {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
