"""`glossator corpus import SRC DEST`: build a corpus tree from a book in another shape."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click
from rich.console import Console
from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

from core.vocabulary import DEFAULT_BRANCH
from glossator.commands.common import settings_from_context
from indexer.importers.common import TITLE_FROM_FILE_NAME, ImportSourceError
from indexer.importers.tree import Work

if TYPE_CHECKING:
    from indexer.importers.docling import DoclingServer
from indexer.importers.writer import import_works, plan_and_check, render_tree

FORMATS = (
    "auto", "folder", "markdown", "epub", "text", "pdf", "image", "docx", "html", "docling"
)  # fmt: skip
OCR_MODES = ("auto", "force", "never")
# the first commit's author when git has no identity configured (first_commit says so)
IMPORT_NAME = "Glossator corpus import"
IMPORT_EMAIL = "glossator@localhost"
TEXT_SUFFIXES = (".txt", ".text", "")


def detect_format(src: Path) -> str:
    from indexer.importers.images import holds_only_images, is_image

    if src.is_dir():
        if holds_only_images(src):
            return "image"
        return "html" if _holds_only_pages(src) else "folder"
    if is_image(src):
        return "image"
    suffix = src.suffix.lower()
    if suffix in (".md", ".markdown"):
        return "markdown"
    if suffix == ".epub":
        return "epub"
    if suffix == ".pdf":
        return "pdf"
    if suffix == ".docx":
        return "docx"
    if suffix in _page_suffixes():
        return "html"
    if suffix in TEXT_SUFFIXES or _looks_like_text(src):
        return "text"
    raise ImportSourceError(
        str(src),
        "cannot tell its format from the name; pass --format folder, markdown, epub, text, pdf, docx or html",
    )


def _holds_only_pages(src: Path) -> bool:
    """A folder of saved web pages (a site's chapters), no Markdown file among them."""
    names = [p.suffix.lower() for p in src.iterdir() if p.is_file()]
    return any(n in _page_suffixes() for n in names) and ".md" not in names


def _page_suffixes() -> tuple[str, ...]:
    from indexer.importers.webpage import PAGE_SUFFIXES  # (lxml loaded only when asked)

    return PAGE_SUFFIXES


def _looks_like_text(src: Path) -> bool:
    """A file of text (no NUL byte in its first 8 KB), whatever its name says."""
    try:
        with src.open("rb") as f:
            head = f.read(8192)
    except OSError:
        return False
    return bool(head) and b"\x00" not in head


def read_source(
    src: Path,
    fmt: str,
    *,
    work_title: str | None = None,
    author: str | None = None,
    lang: str | None = None,
    encoding: str | None = None,
    exclude: tuple[str, ...] = (),
    skip_front_matter: bool = False,
    progress: Callable[[str], None] | None = None,
    ocr: str = "auto",
    tesseract: str = "tesseract",
    ocr_workers: int = 2,
    more: tuple[Path, ...] = (),
) -> list[Work]:
    """The works in `src`, read with the importer for `fmt` (`auto`: from the path);
    `more`: the page images after `src` when several are given."""
    for path in (src, *more):
        if not path.exists():
            raise ImportSourceError(str(path), "does not exist; check the path")
    if fmt == "auto":
        fmt = detect_format(src)
    if more and fmt != "image":
        raise ImportSourceError(
            str(src),
            "several sources are page images only (PNG, JPEG, TIFF); import a book at a time",
        )
    if fmt == "image":  # page images, through OCR
        works = [
            _read_images(
                [src, *more],
                lang,
                exclude,
                skip_front_matter,
                ocr,
                tesseract,
                ocr_workers,
                progress,
            )
        ]
        return _override(works, work_title, author, lang)
    if fmt == "html":  # one saved page, or a folder of a site's chapter pages
        from indexer.importers.webpage import read_pages

        works = [read_pages(src, work_title=work_title, lang=lang)]
        return _override(works, work_title, author, lang)
    if fmt == "folder":
        from indexer.importers.folder import read_folder

        return [
            read_folder(src, work_title=work_title, author=author, lang=lang, progress=progress)
        ]
    if src.is_dir():
        raise ImportSourceError(str(src), f"is a folder; --format {fmt} reads one file")
    works = _read_file(
        src, fmt, lang, encoding, exclude, skip_front_matter, ocr, tesseract, ocr_workers, progress
    )
    return _override(works, work_title, author, lang)


def _read_file(
    src: Path,
    fmt: str,
    lang: str | None,
    encoding: str | None,
    exclude: tuple[str, ...],
    skip_front_matter: bool,
    ocr: str,
    tesseract: str,
    ocr_workers: int,
    progress: Callable[[str], None] | None,
) -> list[Work]:
    """The works of one file in the format `fmt`, read by its importer."""
    if fmt == "markdown":
        from indexer.importers.markdown import read_markdown

        works = read_markdown(src, exclude=exclude, skip_front_matter=skip_front_matter, lang=lang)
    elif fmt == "epub":
        from indexer.importers.epub import read_epub

        works = [read_epub(src, exclude=exclude, skip_front_matter=skip_front_matter, lang=lang)]
    elif fmt == "docx":
        from indexer.importers.docx import read_docx

        works = [read_docx(src, exclude=exclude, skip_front_matter=skip_front_matter, lang=lang)]
    elif fmt == "docling":  # any file docling-serve converts (PDF, DOCX, PPTX, images…)
        from indexer.importers.docling import read_docling

        works = [
            read_docling(
                src,
                _docling_server(),
                exclude=exclude,
                skip_front_matter=skip_front_matter,
                lang=lang,
            )
        ]
    elif fmt == "text":
        from indexer.importers.text import read_text

        works = [
            read_text(
                src,
                lang=lang,
                encoding=encoding,
                exclude=exclude,
                skip_front_matter=skip_front_matter,
            )
        ]
    elif fmt == "pdf":
        works = [
            _read_pdf(src, lang, exclude, skip_front_matter, ocr, tesseract, ocr_workers, progress)
        ]
    else:  # pragma: no cover - click checks the choice
        raise ImportSourceError(str(src), f"unknown format {fmt}")
    return works


def _read_images(
    pages: list[Path],
    lang: str | None,
    exclude: tuple[str, ...],
    skip_front_matter: bool,
    ocr: str,
    tesseract: str,
    ocr_workers: int,
    progress: Callable[[str], None] | None,
) -> Work:
    """Page images read through OCR, as the pages of one book."""
    from indexer.importers.images import read_images

    return read_images(
        pages,
        lang=lang,
        exclude=exclude,
        skip_front_matter=skip_front_matter,
        ocr=ocr,
        ocr_engine=_ocr_engine(tesseract, ocr_workers, progress),
    )


def _read_pdf(
    src: Path,
    lang: str | None,
    exclude: tuple[str, ...],
    skip_front_matter: bool,
    ocr: str,
    tesseract: str,
    ocr_workers: int,
    progress: Callable[[str], None] | None,
) -> Work:
    """A PDF's work: its text layer, and its scanned pages read by Tesseract (`ocr`)."""
    from indexer.importers.pdf import read_pdf

    return read_pdf(
        src,
        lang=lang,
        exclude=exclude,
        skip_front_matter=skip_front_matter,
        ocr=ocr,
        ocr_engine=_ocr_engine(tesseract, ocr_workers, progress),
    )


def _ocr_engine(
    tesseract: str, workers: int, progress: Callable[[str], None] | None
) -> Callable[..., Any]:
    """Tesseract as the PDF and image importers call it, one thread per page process."""
    from indexer.importers.ocr import Tesseract, thread_limited_env

    return Tesseract(
        tesseract, workers=workers, progress=progress, env=thread_limited_env(dict(os.environ))
    )


def _docling_server() -> DoclingServer | None:
    """The docling-serve the settings name (GLOSSATOR_DOCLING_*), or None."""
    from indexer.importers.docling import DoclingServer

    settings = settings_from_context()
    if not settings.docling_url:
        return None
    key = settings.docling_api_key.get_secret_value() if settings.docling_api_key else None
    return DoclingServer(settings.docling_url, key, settings.docling_timeout)


def _override(
    works: list[Work], work_title: str | None, author: str | None, lang: str | None
) -> list[Work]:
    """The works with what the command line says instead of what the book says."""
    for work in works:
        if work_title:
            work.title = work_title
            work.notes = [n for n in work.notes if n != TITLE_FROM_FILE_NAME]
        if author:
            work.author = author
        if lang:
            work.lang = lang
    return works


def _ocr_settings(fmt: str, src: Path) -> dict[str, Any]:
    """The OCR engine's settings, read only for a PDF or page images (GLOSSATOR_TESSERACT,
    _OCR_WORKERS)."""
    from indexer.importers.images import holds_only_images, is_image

    scanned = (
        src.suffix.lower() == ".pdf" or is_image(src) or (src.is_dir() and holds_only_images(src))
    )
    if fmt not in ("pdf", "image") and not (fmt == "auto" and scanned):
        return {}
    from glossator.settings import Settings

    settings = Settings.from_env()
    return {"tesseract": settings.tesseract, "ocr_workers": settings.ocr_workers}


@click.group()
def corpus() -> None:
    """Build and check corpus repositories."""


@corpus.command("import")
@click.argument("sources", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.argument("dest", type=click.Path(path_type=Path))
@click.option(
    "--format",
    "fmt",
    type=click.Choice(FORMATS),
    default="auto",
    show_default=True,
    help="folder: chapter files (YAML headers optional); markdown: one file, # work, "
    "## parts, chapters or liminary pieces, ### chapters of a part; epub: the TOC gives "
    "parts and chapters; text: a plain-text book (Gutenberg's, Liber Liber's, Wikisource's…), headings found "
    "in the text; pdf: the outline gives parts and chapters, else the headings, scanned pages "
    "read by OCR (--ocr); image: page images (PNG, JPEG, TIFF; several, or a folder of them) "
    "read by OCR; docx: a Word document, Heading 1/2 styles give parts and chapters; html: a saved "
    "web page (a Wikisource chapter) or a folder of a site's chapter pages; docling: any file "
    "(PDF, DOCX, PPTX, images…) converted by the docling-serve GLOSSATOR_DOCLING_URL names. "
    "auto: from the name (.txt and unknown text files: text; a folder of .html pages only: html).",
)
@click.option("--work-title", help="Title of the work (overrides the book's own).")
@click.option("--author", help="Author of the work (overrides the book's own).")
@click.option(
    "--lang",
    help="Language of the work, ISO 639-1 (default: the book's own, else guessed from its "
    "text, else fr); labels, folder names and stemming follow it.",
)
@click.option(
    "--encoding",
    metavar="NAME",
    help="Encoding of a plain-text book (utf-8, cp1252, latin-1…); default: UTF-16/32 when a "
    "byte-order mark says so, else UTF-8, else "
    "Windows-1252, else Latin-1, said on stderr when not UTF-8.",
)
@click.option(
    "--exclude",
    multiple=True,
    metavar="PATTERN",
    help="Leave out sections whose title matches this regular expression (case-insensitive); repeatable.",
)
@click.option(
    "--skip-front-matter",
    is_flag=True,
    help="Leave out a translator's or editor's front matter (pieces before the first part "
    "whose title names a translator, editor or notice).",
)
@click.option(
    "--ocr",
    type=click.Choice(OCR_MODES),
    default="auto",
    show_default=True,
    help="PDF: read pages by OCR (Tesseract; GLOSSATOR_TESSERACT names it). auto: pages "
    "without a text layer; force: every page; never: none.",
)
@click.option(
    "--force", is_flag=True, help="Replace the imported works if DEST already holds a corpus."
)
@click.option(
    "--git/--no-git",
    "make_git",
    default=True,
    show_default=True,
    help="Make DEST a git repository on branch main with the import as its first commit "
    "(when DEST is not in a git repository yet), ready for `git push glossator main`.",
)
@click.option(
    "--dry-run",
    is_flag=True,
    help="Print the tree the import would write (works, parts, chapters with their first "
    "words) and write nothing.",
)
def import_command(
    sources: tuple[Path, ...],
    dest: Path,
    fmt: str,
    work_title: str | None,
    author: str | None,
    lang: str | None,
    encoding: str | None,
    exclude: tuple[str, ...],
    skip_front_matter: bool,
    force: bool,
    make_git: bool,
    dry_run: bool,
    ocr: str,
) -> None:
    """Import the book at SOURCES into the corpus repository DEST (created if missing):
    one file or folder, or several page images (PNG, JPEG, TIFF) read by OCR in order."""
    src, more = sources[0], tuple(sources[1:])
    console = Console(stderr=True)
    started = time.perf_counter()
    with Progress(
        SpinnerColumn(),
        TextColumn("{task.description}"),
        BarColumn(),
        TextColumn("{task.completed} files"),
        TimeElapsedColumn(),
        console=console,
        transient=True,
    ) as bar:
        total = sum(1 for p in src.iterdir() if p.suffix.lower() == ".md") if src.is_dir() else None
        task = bar.add_task(f"reading {src.name}", total=total)
        works = read_source(
            src,
            fmt,
            work_title=work_title,
            author=author,
            lang=lang,
            encoding=encoding,
            exclude=exclude,
            skip_front_matter=skip_front_matter,
            # (OCR says `OCR page 3/12` as it goes: the bar shows it)
            progress=lambda name: bar.update(
                task, advance=1, description=name if name.startswith("OCR") else None
            ),
            ocr=ocr,
            more=more,
            **_ocr_settings(fmt, src),
        )
        if dry_run:
            bar.update(task, description="checking")
            changes, stats, problems = plan_and_check(dest, works, force=force)
        else:
            bar.update(task, description=f"writing {dest}")
            stats, problems = import_works(dest, works, force=force)
    for work in works:
        for note in work.notes:
            console.print(f"{work.title}: {note}", highlight=False, markup=False, soft_wrap=True)
    if dry_run:
        click.echo(render_tree(changes))
    for problem in problems:
        console.print(str(problem), highlight=False)
    seconds = time.perf_counter() - started
    verb = "would import" if dry_run else "imported"
    click.echo(
        f"{verb} {stats.works} work(s), {stats.parts} parts, {stats.chapters} chapters, "
        f"{stats.pieces} pieces into {dest} in {seconds:.2f} s"
        + (" (dry run: nothing written)" if dry_run else "")
    )
    if make_git and not dry_run and stats.works:
        click.echo(first_commit(dest, works))


def first_commit(dest: Path, works: list[Work]) -> str:
    """Make `dest` a git repository on DEFAULT_BRANCH holding the import as its first
    commit, unless it is one already (a folder inside another repository becomes one of
    its own); the line saying what was done.

    The branch is named here (not left to git, whose default is `master` before 3.0 unless
    init.defaultBranch says otherwise) so that the README's `git push glossator main`
    works as written. Without a git identity configured, the commit is made as
    Glossator's import, and the line says so (`git commit --amend --reset-author` to
    make it yours)."""
    if shutil.which("git") is None:
        return "not a git repository yet: git is not installed (install it, then `git init`)"
    inside = _git(dest, "rev-parse", "--show-toplevel")
    around = ""
    if inside.returncode == 0:
        top = Path(inside.stdout.strip())
        if top.resolve() == dest.resolve():  # a corpus repository already: the user's commits
            return f"{dest} is a git repository already: commit the import there yourself"
        # A folder inside another repository (a clone of Glossator, a user's notes) cannot
        # be pushed as a corpus, which has `corpus/` at its root: it becomes a repository of
        # its own, and the line says the enclosing one does not track it (issue 39).
        around = f" (inside the git repository {top}, which does not track it)"
    for args in (("init", "-q"), ("symbolic-ref", "HEAD", f"refs/heads/{DEFAULT_BRANCH}")):
        done = _git(dest, *args)
        if done.returncode != 0:
            return f"git {args[0]} failed in {dest}: {done.stderr.strip()}"
    message = "Import " + ", ".join(w.title for w in works)
    note = ""
    done = _git(dest, "add", "-A")
    if done.returncode == 0:
        done = _git(dest, "commit", "-q", "-m", message)
        if done.returncode != 0 and _git(dest, "var", "GIT_AUTHOR_IDENT").returncode != 0:
            # no identity git accepts (no user.email, none in the environment)
            identity = ("-c", f"user.name={IMPORT_NAME}", "-c", f"user.email={IMPORT_EMAIL}")
            done = _git(dest, *identity, "commit", "-q", "-m", message)
            note = (
                f" as {IMPORT_NAME} <{IMPORT_EMAIL}> (no git identity is configured: "
                "`git commit --amend --reset-author` makes it yours)"
            )
    if done.returncode != 0:
        return (
            f"git could not commit the import in {dest} ({done.stderr.strip()}): "
            "commit it yourself before pushing"
        )
    commit = _git(dest, "rev-parse", "--short", "HEAD").stdout.strip()
    return (
        f"created a git repository in {dest}{around} on branch {DEFAULT_BRANCH}, the import "
        f"committed ({commit}){note}; push it with `git push glossator {DEFAULT_BRANCH}`"
    )


def _git(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, timeout=120)
