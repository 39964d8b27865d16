"""`glossator corpus import SRC DEST`: build a corpus tree from a book in another shape."""

from __future__ import annotations

import shutil
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import click
from rich.console import Console
from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

from core.vocabulary import DEFAULT_BRANCH
from indexer.importers.common import TITLE_FROM_FILE_NAME, ImportSourceError
from indexer.importers.tree import Work
from indexer.importers.writer import import_works, plan_and_check, render_tree

FORMATS = ("auto", "folder", "markdown", "epub", "text")
# the first commit's author when git has no identity configured (first_commit says so)
IMPORT_NAME = "Glossator corpus import"
IMPORT_EMAIL = "glossator@localhost"
TEXT_SUFFIXES = (".txt", ".text", "")


def detect_format(src: Path) -> str:
    if src.is_dir():
        return "folder"
    suffix = src.suffix.lower()
    if suffix in (".md", ".markdown"):
        return "markdown"
    if suffix == ".epub":
        return "epub"
    if suffix in TEXT_SUFFIXES or _looks_like_text(src):
        return "text"
    raise ImportSourceError(
        str(src),
        "cannot tell its format from the name; pass --format folder, markdown, epub or text",
    )


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
) -> list[Work]:
    """The works in `src`, read with the importer for `fmt` (`auto`: from the path)."""
    if not src.exists():
        raise ImportSourceError(str(src), "does not exist; check the path")
    if fmt == "auto":
        fmt = detect_format(src)
    if fmt == "folder":
        from indexer.importers.folder import read_folder

        return [
            read_folder(src, work_title=work_title, author=author, lang=lang, progress=progress)
        ]
    if src.is_dir():
        raise ImportSourceError(str(src), f"is a folder; --format {fmt} reads one file")
    if fmt == "markdown":
        from indexer.importers.markdown import read_markdown

        works = read_markdown(src, exclude=exclude, skip_front_matter=skip_front_matter, lang=lang)
    elif fmt == "epub":
        from indexer.importers.epub import read_epub

        works = [read_epub(src, exclude=exclude, skip_front_matter=skip_front_matter, lang=lang)]
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
    else:  # pragma: no cover - click checks the choice
        raise ImportSourceError(str(src), f"unknown format {fmt}")
    for work in works:
        if work_title:
            work.title = work_title
            work.notes = [n for n in work.notes if n != TITLE_FROM_FILE_NAME]
        if author:
            work.author = author
        if lang:
            work.lang = lang
    return works


@click.group()
def corpus() -> None:
    """Build and check corpus repositories."""


@corpus.command("import")
@click.argument("src", type=click.Path(path_type=Path))
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
    "in the text. auto: from the name (.txt and unknown text files: text).",
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
    src: Path,
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
) -> None:
    """Import the book at SRC into the corpus repository DEST (created if missing)."""
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
            progress=lambda name: bar.advance(task),
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
