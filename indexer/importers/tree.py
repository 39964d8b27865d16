"""The neutral shape every importer produces, and its layout as corpus files.

    Work ── pieces: Sections attached to the work: liminary pieces (préface,
        │          introduction) and, in a book without parts, its chapters
        └── parts ── sections: chapters (numbered or not: introduction, conclusion)

`layout` decides folder names once for every format (DESIGN §3): ASCII slugs,
zero-padded numeric prefixes so that folders sort in reading order, titles with
their accents in the frontmatter. It writes only what the author wrote (chapter
`source.md`) and frontmatter-only `summary.md` files for parts and works, which the
summarizer fills; chapter summaries are left to the summarizer entirely.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any

from indexer.corpus import frontmatter
from indexer.corpus import lang as languages
from indexer.corpus.layout import CORPUS_DIR, SOURCE, SUMMARY
from indexer.corpus.source import Changes, check_relative
from indexer.importers.common import ImportSourceError, is_liminary, number_value, slugify


@dataclass
class Section:
    """A chapter or a liminary piece: the author's text and its metadata."""

    title: str
    body: str
    number: str | None = None  # as written in the book: "IX", "12"; None for unnumbered
    meta: dict[str, Any] = field(default_factory=dict)  # extra frontmatter (provenance)
    origin: str = ""  # where it came from, for error messages (file, or file#anchor)


@dataclass
class Part:
    title: str
    sections: list[Section] = field(default_factory=list)
    meta: dict[str, Any] = field(default_factory=dict)
    slug: str | None = None  # folder name chosen by the importer (else positional)


@dataclass
class Work:
    title: str
    author: str | None = None
    lang: str = "fr"
    parts: list[Part] = field(default_factory=list)
    # liminary pieces and parts in reading order share the work's numbering
    pieces: list[tuple[int, Section]] = field(default_factory=list)  # (index among children)
    meta: dict[str, Any] = field(default_factory=dict)
    slug: str | None = None
    notes: list[str] = field(default_factory=list)  # what the importer left out, and why

    def add_piece(self, section: Section) -> None:
        self.pieces.append((len(self.pieces) + len(self.parts), section))

    def add_part(self, part: Part) -> None:
        self.parts.append(part)

    def add_chapter(self, section: Section) -> None:
        """A chapter of a book without parts: a section directly under the work."""
        self.add_piece(section)

    def flat_chapters(self) -> int:
        """Sections under the work that are chapters, not liminary pieces."""
        return count_chapters([s for _, s in self.pieces])

    @property
    def chapter_count(self) -> int:
        return sum(count_chapters(p.sections) for p in self.parts) + self.flat_chapters()

    def sections(self) -> list[Section]:
        """Every chapter and piece, in reading order."""
        parts = iter(self.parts)
        pieces = dict(self.pieces)
        out: list[Section] = []
        for i in range(len(self.parts) + len(self.pieces)):
            if i in pieces:
                out.append(pieces[i])
            else:
                out.extend(next(parts).sections)
        return out


@dataclass
class Stats:
    works: int = 0
    parts: int = 0
    chapters: int = 0
    pieces: int = 0


def is_chapter(section: Section, numbered_siblings: bool = False) -> bool:
    """Numbered; or, among sections none of which is numbered, not titled like a preface.
    Beside numbered chapters an unnumbered section is a piece: a part's preliminaries
    (Don Quijote's `Tasa`, `Aprobaciones`), an introduction's sections, an appended essay."""
    if section.number is not None:
        return True
    return not numbered_siblings and not is_liminary(section.title)


def count_chapters(sections: list[Section]) -> int:
    """How many of these sibling sections are chapters (the rest are pieces)."""
    numbered = any(s.number is not None for s in sections)
    return sum(1 for s in sections if is_chapter(s, numbered))


def _pad(count: int) -> int:
    return max(2, len(str(count)))


def section_prefixes(sections: list[Section]) -> tuple[list[int], bool]:
    """Folder numbers of a part's sections: the chapter's own number where it has one.

    An unnumbered piece takes the number after the previous one (an introduction
    before chapter I gets 0, a conclusion after XXII gets 23), so the folder
    prefix matches the book. When the book's numbers do not increase, positions
    are used instead, because the prefix must give the reading order.
    """
    numbers: list[int] = []
    previous = -1
    for s in sections:
        value = number_value(s.number)
        value = previous + 1 if value is None else value
        numbers.append(value)
        previous = value
    if all(b > a for a, b in itertools.pairwise(numbers)):
        return numbers, True
    return list(range(1, len(sections) + 1)), False


def section_slug(section: Section, prefix: int, width: int, lang: str, numbered: bool) -> str:
    """`chapter-03-title` (the book's own number), or `05-chapter-1-title` by position
    when the book's numbers do not give the order (letters 1-4, then chapters 1-24).

    The label is the section's own (`label`: Letter) or the language's word for a
    chapter; a title that only repeats label and number is not repeated."""
    prefix_text = f"{prefix:0{width}d}"
    if section.number is None:
        return f"{prefix_text}-{slugify(section.title)}"
    label = str(section.meta.get("label") or languages.labels(lang).chapter)
    title = slugify(section.title)
    bare = {slugify(f"{label} {section.number}"), slugify(str(section.number))}
    tail = "" if title in bare else f"-{title}"
    if numbered:
        return f"{slugify(label, 30)}-{prefix_text}{tail}"
    return f"{prefix_text}-{slugify(f'{label} {section.number}', 40)}{tail}"


def _render(meta: dict[str, Any], body: str) -> bytes:
    clean = {k: v for k, v in meta.items() if v is not None}
    if body and not body.endswith("\n"):
        body += "\n"
    return frontmatter.render(clean, body).encode("utf-8")


def _source_meta(section: Section) -> dict[str, Any]:
    meta: dict[str, Any] = {"title": section.title}
    if section.number is not None:
        meta["number"] = str(section.number)
    for key, value in section.meta.items():
        if key not in meta:
            meta[key] = value
    return meta


def _check_section(section: Section) -> None:
    if not section.title.strip():
        raise ImportSourceError(section.origin or "?", "a chapter has no title; give it one")
    if not section.body.strip():
        raise ImportSourceError(
            section.origin or section.title,
            f"chapter {section.title!r} has no text; write it or leave it out (--exclude)",
        )


def layout(work: Work) -> tuple[str, Changes, Stats]:
    """The work's folder (`corpus/<slug>`) and every file to write under it."""
    changes = Changes()
    flat = work.flat_chapters() if not work.parts else 0
    stats = Stats(works=1, parts=len(work.parts), pieces=len(work.pieces) - flat, chapters=flat)
    work_dir = f"{CORPUS_DIR}/{work.slug or slugify(work.title)}"
    work_meta: dict[str, Any] = {"title": work.title, "author": work.author, "lang": work.lang}
    work_meta.update({k: v for k, v in work.meta.items() if k not in work_meta})
    work_meta["generated"] = True
    changes.write(check_relative(f"{work_dir}/{SUMMARY}"), _render(work_meta, ""))

    children = len(work.parts) + len(work.pieces)
    width = _pad(children)
    piece_at = dict(work.pieces)
    part_iter = iter(work.parts)
    seen: set[str] = set()
    # a book without parts: its chapters' folders carry the book's numbers
    flat_names: dict[int, str] = {}
    if not work.parts and any(s.number is not None for _, s in work.pieces):
        sections = [piece_at[i] for i in range(children)]
        prefixes, numbered = section_prefixes(sections)
        fwidth = _pad(max(prefixes, default=0))
        for i, (section, prefix) in enumerate(zip(sections, prefixes, strict=True)):
            flat_names[i] = section_slug(section, prefix, fwidth, work.lang, numbered)
    for index in range(children):
        if index in piece_at:
            piece = piece_at[index]
            _check_section(piece)
            name = flat_names.get(index) or f"{index + 1:0{width}d}-{slugify(piece.title)}"
            folder = f"{work_dir}/{name}"
            _claim(seen, folder, piece.origin)
            changes.write(
                check_relative(f"{folder}/{SOURCE}"), _render(_source_meta(piece), piece.body)
            )
            continue
        part = next(part_iter)
        # an importer may name the folder from the book (`serie-1-…`); else its position
        name = (
            slugify(part.slug, 80) if part.slug else f"{index + 1:0{width}d}-{slugify(part.title)}"
        )
        folder = f"{work_dir}/{name}"
        _claim(seen, folder, part.title)
        part_meta: dict[str, Any] = {"title": part.title}
        part_meta.update({k: v for k, v in part.meta.items() if k not in part_meta})
        part_meta["generated"] = True
        changes.write(check_relative(f"{folder}/{SUMMARY}"), _render(part_meta, ""))
        prefixes, numbered = section_prefixes(part.sections)
        swidth = _pad(max(prefixes, default=0))
        for section, prefix in zip(part.sections, prefixes, strict=True):
            _check_section(section)
            sub = f"{folder}/{section_slug(section, prefix, swidth, work.lang, numbered)}"
            _claim(seen, sub, section.origin)
            changes.write(
                check_relative(f"{sub}/{SOURCE}"), _render(_source_meta(section), section.body)
            )
        chapters = count_chapters(part.sections)
        stats.chapters += chapters
        stats.pieces += len(part.sections) - chapters
    return work_dir, changes, stats


def _claim(seen: set[str], folder: str, origin: str) -> None:
    if folder in seen:
        raise ImportSourceError(
            origin or folder,
            f"two chapters would share the folder {folder}; give them different titles or numbers",
        )
    seen.add(folder)
