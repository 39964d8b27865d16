"""Import a folder of chapter files, one .md per chapter, whose YAML header says where it goes.

The shape of the Bastiat sources:

    ---
    book: "Sophismes économiques"      # or `work`
    author: "Frédéric Bastiat"
    series: 1  # Première série (1845)  # or `part`; the comment gives the part's title
    chapter: "VII"                     # or `number`; "0", "conclusion"… = unnumbered
    title: "Pétition des fabricants de chandelles, etc."
    source_repo: …                     # any other key is kept (provenance)
    ---
    # VII. — Pétition des fabricants de chandelles, etc.
    …

Files are read in name order (`s1-00-…`, `s1-01-…`); parts in the order of their
numbers. The part's title comes from `series_title`/`part_title`, else from the
comment after the number (`# Première série (1845)`: title, and the year kept as
`year`), else from the number (`Première série`). A leading heading that only
repeats the title is dropped; the rest of the body is kept byte for byte.

A folder of plain chapter files (no YAML header, or a header without a part) is a
book without parts: each file a chapter whose title is its first heading (on its
first non-blank line, as indexer.corpus.markdown reads it), else its file name;
files in the order of the numbers in their names (`chapter-2` before `chapter-10`); the work's title from `--work-title`, else the folder's name.
Mixing files that name a part with files that do not is refused, naming both.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from indexer.corpus import frontmatter, markdown
from indexer.corpus import lang as languages
from indexer.corpus.layout import humanize
from indexer.importers.common import (
    ImportSourceError,
    drop_title_heading,
    guess_language,
    number_value,
    own_label,
    read_document,
    slugify,
    split_heading,
)
from indexer.importers.tree import Part, Section, Work

log = logging.getLogger(__name__)

WORK_KEYS = ("book", "work")
PART_KEYS = ("series", "part")
PART_TITLE_KEYS = ("series_title", "part_title")
NUMBER_KEYS = ("chapter", "number")
STRUCTURE = {*WORK_KEYS, *PART_KEYS, *PART_TITLE_KEYS, *NUMBER_KEYS, "title", "author", "lang"}

_ORDINALS_FR = (
    "Première", "Deuxième", "Troisième", "Quatrième", "Cinquième",
    "Sixième", "Septième", "Huitième", "Neuvième", "Dixième",
)  # fmt: skip
_COMMENT = re.compile(r"^\s*(?P<title>[^()]*?)\s*(?:\((?P<year>\d{3,4})\))?\s*$")


def part_label(key: str, value: Any) -> str:
    """A part's title from its number when the book gives none: `Première série`."""
    noun = "série" if key == "series" else "partie"
    n = value if isinstance(value, int) else number_value(str(value))
    if isinstance(n, int) and 1 <= n <= len(_ORDINALS_FR):
        return f"{_ORDINALS_FR[n - 1]} {noun}"
    return f"{noun.capitalize()} {value}"


def _comment_of(raw: str, key: str) -> str | None:
    for line in raw.split("\n"):
        m = re.match(rf"^{key}\s*:[^#]*#\s*(.+)$", line)
        if m:
            return m.group(1).strip()
    return None


def _pick(meta: dict[str, Any], keys: tuple[str, ...]) -> tuple[str | None, Any]:
    for key in keys:
        if key in meta and meta[key] not in (None, ""):
            return key, meta[key]
    return None, None


def _chapter_number(value: Any) -> str | None:
    """`"VII"` → "VII"; "0", "conclusion", "" → None (an unnumbered piece)."""
    if value is None:
        return None
    text = str(value).strip()
    n = number_value(text)
    if n is None or n == 0:
        return None
    return text.upper() if not text.isdigit() else text


CHAPTER_SUFFIXES = (".md", ".markdown", ".txt")
NOT_CHAPTERS = ("readme", "license", "licence", "changelog", "contributing")


def chapter_files(src: Path) -> list[Path]:
    """The chapter files directly in `src`, in name order, none escaping it by a link."""
    root = src.resolve()
    files = []
    for path in sorted(src.iterdir()):
        if path.suffix.lower() not in CHAPTER_SUFFIXES or not path.is_file():
            continue
        if path.stem.lower() in NOT_CHAPTERS:
            log.warning("skipped %s: not a chapter of the book", path)
            continue
        if not path.resolve().is_relative_to(root):
            raise ImportSourceError(
                str(path), f"is a link to a file outside {src}; copy the file itself into {src}"
            )
        files.append(path)
    return files


def read_folder(
    src: Path,
    *,
    work_title: str | None = None,
    author: str | None = None,
    lang: str | None = None,
    progress: Callable[[str], None] | None = None,
) -> Work:
    """The work described by the chapter files of `src`."""
    if not src.is_dir():
        raise ImportSourceError(str(src), "is not a folder of chapter .md files")
    files = chapter_files(src)
    if not files:
        raise ImportSourceError(str(src), "holds no .md chapter files")
    book = _Chapters()
    for path in files:
        if progress:
            progress(path.name)
        book.add(path, read_document(path), lang or "fr")
    if work_title is None:
        work_title = book.work_title(src)
    if author is None and len(book.authors) == 1:
        author = next(iter(book.authors))
    if lang is None:
        lang = book.langs.pop() if len(book.langs) == 1 else None
    if lang is None:
        sample = "\n".join(s.body for s in book.sections())
        lang = guess_language(sample)
    work = Work(work_title, author, lang)
    for _, part in sorted(book.parts.items(), key=lambda kv: _sort_key(kv[0])):
        if part.slug and part.slug.startswith("partie-"):  # the part's word in the work's language
            part.slug = slugify(languages.labels(lang).part) + part.slug.removeprefix("partie")
        work.add_part(part)
    for section in sorted(book.flat, key=lambda s: _name_order(Path(s.origin).name)):
        work.add_chapter(section)
    if not work.parts and not work.pieces:
        raise ImportSourceError(str(src), "holds no chapter with text")
    return work


@dataclass
class _Chapters:
    """What the chapter files say, file by file: the book's parts, or its chapters
    when it has none, and the work titles, authors and languages their headers give."""

    parts: dict[Any, Part] = field(default_factory=dict)
    flat: list[Section] = field(default_factory=list)  # chapters of a book without parts
    titles: dict[str, str] = field(default_factory=dict)  # work title → first file giving it
    authors: set[str] = field(default_factory=set)
    langs: set[str] = field(default_factory=set)

    def add(self, path: Path, doc: frontmatter.Document, lang: str) -> None:
        """Add one chapter file: to its part, or as a chapter of a book without parts."""
        meta = doc.meta
        key, value = _pick(meta, PART_KEYS)
        if key is None:
            if self.parts:
                raise ImportSourceError(
                    str(path),
                    f"names no part but {next(iter(self.parts.values())).sections[0].origin} "
                    "does: add `series: N` (or `part: N`) to its header, or remove the parts "
                    "from all",
                )
            self.flat.append(_plain_chapter(path, doc, lang))
            self._note_work(meta, path)
            return
        if self.flat:
            raise ImportSourceError(
                str(path),
                f"names a part but {self.flat[0].origin} does not: give every file a "
                "`series: N` (or `part: N`), or none",
            )
        title = meta.get("title")
        if not isinstance(title, str) or not title.strip():
            raise ImportSourceError(
                str(path), 'its header block has no `title`; add a line `title: "…"`'
            )
        title = title.strip()
        self._note_work(meta, path)
        part = self.parts.get(value)
        if part is None:
            part = self.parts[value] = _new_part(key, value, meta, doc.raw_frontmatter)
        _, raw_number = _pick(meta, NUMBER_KEYS)
        number = _chapter_number(raw_number)
        extra = {k: v for k, v in meta.items() if k not in STRUCTURE}
        body = drop_title_heading(doc.body, title, number)
        part.sections.append(Section(title, body, number, extra, origin=str(path)))

    def _note_work(self, meta: dict[str, Any], path: Path) -> None:
        _, book = _pick(meta, WORK_KEYS)
        if isinstance(book, str) and book.strip():
            self.titles.setdefault(book.strip(), str(path))
        if isinstance(meta.get("author"), str):
            self.authors.add(meta["author"].strip())
        if isinstance(meta.get("lang"), str):
            self.langs.add(meta["lang"].strip())

    def work_title(self, src: Path) -> str:
        """The one work title the headers give, else the folder's name for plain files."""
        if len(self.titles) > 1:
            (a, fa), (b, fb) = list(self.titles.items())[:2]
            raise ImportSourceError(
                fb, f"says book {b!r} but {fa} says {a!r}; fix one, or pass --work-title"
            )
        if not self.titles and not self.flat:
            raise ImportSourceError(str(src), "no chapter header gives `book:`; pass --work-title")
        return next(iter(self.titles)) if self.titles else humanize(src.resolve().name)

    def sections(self) -> list[Section]:
        return self.flat or [c for p in self.parts.values() for c in p.sections]


_DIGITS = re.compile(r"\d+")


def _name_order(name: str) -> tuple[tuple[int, ...], str]:
    """`chapter-2.md` before `chapter-10.md`: the numbers in the name, then the name."""
    return tuple(int(n) for n in _DIGITS.findall(name)), name


def first_heading(body: str) -> str | None:
    """The title of the heading on the body's first non-blank line, if it is one.

    indexer.corpus.markdown reads it, from the line's first non-space character (so an
    indented `    # Title` is still the title, as it always was here); `#`s at the
    title's end go even without a space before them (`# Chapitre 1#`: `Chapitre 1`)."""
    first = markdown.blocks(body.lstrip())[:1]
    if not first or first[0].kind != "heading":
        return None
    return first[0].title.rstrip(" \t#").strip() or None


def _plain_chapter(path: Path, doc: frontmatter.Document, lang: str) -> Section:
    """A chapter file without a part: title from `title:`, its first heading or its name."""
    meta = doc.meta
    heading = first_heading(doc.body)
    raw_title = meta.get("title") if isinstance(meta.get("title"), str) else None
    stem = " ".join(re.split(r"[-_\s]+", path.stem)).strip()
    source = raw_title or heading or (stem[:1].upper() + stem[1:])
    number, title = split_heading(source)
    _, raw_number = _pick(meta, NUMBER_KEYS)
    if raw_number is not None:
        number = _chapter_number(raw_number)
    extra = {k: v for k, v in meta.items() if k not in STRUCTURE}
    if number is not None and "label" not in extra:
        extra.update(own_label(source, lang))
    body = drop_title_heading(doc.body, title, number)
    if heading and body == doc.body:
        body = drop_title_heading(doc.body, heading)
    if not body.strip():
        raise ImportSourceError(str(path), "has no text; write the chapter or remove the file")
    return Section(title, body, number, extra, origin=str(path))


def _sort_key(value: Any) -> tuple[int, str]:
    n = (
        value
        if isinstance(value, int) and not isinstance(value, bool)
        else number_value(str(value))
    )
    return (n if n is not None else 1_000_000, str(value))


def _new_part(key: str, value: Any, meta: dict[str, Any], raw: str) -> Part:
    extra: dict[str, Any] = {}
    _, title = _pick(meta, PART_TITLE_KEYS)
    if not title:
        comment = _comment_of(raw, key)
        m = _COMMENT.match(comment) if comment else None
        if m and m.group("title"):
            title = m.group("title")
            if m.group("year"):
                extra["year"] = int(m.group("year"))
    title = str(title).strip() if title else part_label(key, value)
    n = _sort_key(value)[0]
    slug = f"{'serie' if key == 'series' else 'partie'}-{n if n < 1_000_000 else value}-{title}"
    return Part(title, meta=extra, slug=slug)
