"""Import one Markdown file whose heading levels give the structure.

    ---                          optional: author, lang, title, any other key (kept on the work)
    author: Frédéric List
    ---
    # Système national d'économie politique        a work (several `#` = several works)
    ## Préface                                      text under it, no `###`: a liminary piece
    …
    ## Livre premier — L'histoire                   has `###` chapters: a part
    ### Chapitre I. — Les Italiens                  a chapter: number "I", title "Les Italiens"
    …
    #### Anything deeper                            stays in the chapter's text
    ## Chapter 3. Title                             labelled as a chapter: its `###` are text

A book without parts is `#` work and `##` chapters: a `##` block without `###`
is a section of the work: a chapter (`## Chapter 3. Title`, `## The Storm`) or a
liminary piece (`## Preface`, told by its title: `common.is_liminary`). Without `lang` in the frontmatter
the language is guessed from the text's stop words (`common.guess_language`).

Headings are those indexer.corpus.markdown reads, as chunking reads them, on a line of
their own that starts with the `#`s and a space. Headings inside fenced code are
text; a fence ends at a fence of the same marker at least as long and is
indented by spaces only (the line patterns this importer had before the parser
let a shorter fence end it, ```` closed by ```, and a tab indent one).

Footnote definitions gathered at the end of the file move to the chapter that calls them, so every chapter
carries its own notes. Text that belongs to no piece or chapter (under `#` before
the first `##`, under a part before its first `###`) is an error rather than
something silently dropped: the message says which heading to add.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from indexer.corpus import frontmatter, markdown
from indexer.corpus.errors import CorpusError
from indexer.importers.common import (
    ImportSourceError,
    drop_title_heading,
    guess_language,
    heading_label,
    number_value,
    own_label,
    read_document,
    roman_to_int,
    split_heading,
)
from indexer.importers.etext import is_contents_title
from indexer.importers.selection import Selection
from indexer.importers.tree import Part, Section, Work

# Footnotes are not CommonMark (markdown-it-py reads them with a plugin this project
# does not install), so their definitions and calls stay line patterns.
_NOTE_DEF = re.compile(r"^\[\^([^\]\s]+)\]:")
_NOTE_REF = re.compile(r"\[\^([^\]\s]+)\](?!:)")


@dataclass
class _Block:
    level: int
    title: str
    line: int  # 1-based line of the heading in the file
    text: list[str] = field(default_factory=list)
    children: list[_Block] = field(default_factory=list)

    @property
    def has_text(self) -> bool:
        return any(line.strip() for line in self.text)


def _headings(body: str) -> dict[int, tuple[int, str]]:
    """The `#`, `##`, `###` headings of the body by line offset: (level, title).

    indexer.corpus.markdown finds them (none inside fenced code); this importer asks more
    of a heading line than CommonMark does: it starts the line (no indentation)
    and its `#`s are followed by a space or a tab. A title that is only `#`s
    (`## ##`) is those `#`s, not empty as in CommonMark."""
    out: dict[int, tuple[int, str]] = {}
    for b in markdown.blocks(body):
        unindented = b.text.startswith("#") and b.text[b.level : b.level + 1] in (" ", "\t")
        if b.kind == "heading" and b.level <= 3 and unindented:
            out[b.start] = (b.level, b.title.strip() or b.text[b.level :].strip())
    return out


def _outline(path: str, body: str, first_line: int) -> list[_Block]:
    """The `#`, `##`, `###` blocks of the file; deeper headings stay in the text."""
    works: list[_Block] = []
    stack: list[_Block] = []
    preamble: list[str] = []
    headings = _headings(body)
    for offset, line in enumerate(body.split("\n")):
        number = first_line + offset
        h = headings.get(offset)
        if h and h[0] == 3 and stack and _is_chapter(stack[-1]):
            h = None  # `### ` inside a `## Chapter 3` of a book without parts: its text
        if h:
            level, title = h
            block = _Block(level, title, number)
            while stack and stack[-1].level >= level:
                stack.pop()
            if level == 1:
                works.append(block)
            elif not stack:
                raise ImportSourceError(
                    f"{path}:{number}",
                    f"heading {'#' * level} comes before any `# ` work title; "
                    "start the file with `# Title of the work`",
                )
            elif stack[-1].level != level - 1:
                raise ImportSourceError(
                    f"{path}:{number}",
                    f"heading level {level} under a level {stack[-1].level} heading; "
                    "chapters (###) go under a part (##)",
                )
            else:
                stack[-1].children.append(block)
            stack.append(block)
        elif stack:
            stack[-1].text.append(line)
        else:
            preamble.append(line)
    if any(line.strip() for line in preamble):
        raise ImportSourceError(
            path, "text before the first `# ` heading; start the file with `# Title of the work`"
        )
    if not works:
        raise ImportSourceError(path, "no `# ` heading: the first heading gives the work's title")
    return works


def _is_chapter(block: _Block) -> bool:
    """A `## ` heading labelled as a chapter (`## Chapter 3. Title`, `## Letter 2`)."""
    return block.level == 2 and heading_label(block.title) is not None


_BARE_NUMBERED = re.compile(r"^(?P<num>[IVXLCDM]+|\d{1,3})\s+(?P<title>\S.*)$")


def _bare_numbers(blocks: list[_Block]) -> dict[int, tuple[str, str]]:
    """Siblings numbered without a separator (`## III Title`), read as numbered only in
    sequence with their numbered neighbours (`## II. Title` before, `## IV Title` after),
    so that `## I Promessi Sposi` alone stays a title."""
    values: list[int | None] = []
    candidates: dict[int, tuple[str, str]] = {}
    for n, block in enumerate(blocks):
        number, _ = split_heading(block.title)
        m = _BARE_NUMBERED.match(" ".join(block.title.split()))
        if number is None and m and m.group("title")[:1].isupper():
            raw = m.group("num")
            value = int(raw) if raw.isdigit() else roman_to_int(raw)
            if value is not None:
                candidates[n] = (raw if raw.isdigit() else raw.upper(), m.group("title"))
                number = str(value)
        values.append(number_value(number) if number else None)
    kept: dict[int, tuple[str, str]] = {}
    for n in candidates:
        value = values[n]
        before = next((values[k] for k in range(n - 1, -1, -1) if values[k] is not None), None)
        after = next((values[k] for k in range(n + 1, len(blocks)) if values[k] is not None), None)
        if value is not None and (before == value - 1 or after == value + 1):
            kept[n] = candidates[n]
    return kept


def _section(path: str, block: _Block, lang: str, bare: tuple[str, str] | None = None) -> Section:
    number, title = bare if bare else split_heading(block.title)
    body = "\n".join(block.text).strip("\n")
    body = drop_title_heading(body, title, number)
    meta = own_label(block.title, lang) if number is not None else {}
    return Section(title, body + "\n" if body else "", number, meta, origin=f"{path}:{block.line}")


def _split_notes(body: str) -> tuple[list[str], dict[str, list[str]]]:
    """The body's lines with each definition replaced by a marker, and the definitions."""
    lines = body.split("\n")
    out: list[str] = []
    defs: dict[str, list[str]] = {}
    j = 0
    while j < len(lines):
        m = _NOTE_DEF.match(lines[j])
        if not m or m.group(1) in defs:
            out.append(lines[j])
            j += 1
            continue
        block = [lines[j]]
        j += 1
        while j < len(lines) and lines[j].startswith(("    ", "\t")):
            block.append(lines[j])
            j += 1
        defs[m.group(1)] = block
        out.append("\0" + m.group(1))
    return out, defs


def _distribute_notes(sections: list[Section]) -> None:
    """Give each chapter the definitions of the notes it calls.

    A definition stays where it is when that section calls it (chapters often
    number their notes from 1 each). A note called in a section that lacks its
    definition takes an unclaimed one (defined in a section that does not call
    it, typically gathered at the end of the file), which leaves its old place.
    """
    split = [_split_notes(s.body) for s in sections]
    calls = [set(_NOTE_REF.findall(s.body)) for s in sections]
    unclaimed: dict[str, tuple[int, list[str]]] = {}
    for i, (_, defs) in enumerate(split):
        for label, block in defs.items():
            if label not in calls[i]:
                unclaimed.setdefault(label, (i, block))
    taken: set[tuple[int, str]] = set()
    extra: list[list[list[str]]] = [[] for _ in sections]
    for i, s in enumerate(sections):
        for label in dict.fromkeys(_NOTE_REF.findall(s.body)):
            if label not in split[i][1] and label in unclaimed:
                donor, block = unclaimed[label]
                extra[i].append(block)
                taken.add((donor, label))
    for i, s in enumerate(sections):
        lines: list[str] = []
        for line in split[i][0]:
            if line.startswith("\0"):
                if (i, line[1:]) not in taken:
                    lines.extend(split[i][1][line[1:]])
                continue
            lines.append(line)
        text = "\n".join(lines).rstrip("\n")
        if extra[i]:
            text += "\n\n" + "\n".join(line for block in extra[i] for line in block)
        s.body = text + "\n" if text.strip() else ""


def read_markdown(
    src: Path,
    *,
    exclude: tuple[str, ...] = (),
    skip_front_matter: bool = False,
    lang: str | None = None,
) -> list[Work]:
    """The works of one Markdown file."""
    doc = read_document(src)
    return works_of(str(src), doc, exclude=exclude, skip_front_matter=skip_front_matter, lang=lang)


def read_markdown_data(
    path: str,
    data: bytes,
    *,
    exclude: tuple[str, ...] = (),
    skip_front_matter: bool = False,
    lang: str | None = None,
) -> list[Work]:
    """The works of Markdown another importer made (DOCX, Docling's), named `path` in errors."""
    try:
        doc = frontmatter.read(path, data)
    except CorpusError as e:
        raise ImportSourceError(path, e.message) from None
    return works_of(path, doc, exclude=exclude, skip_front_matter=skip_front_matter, lang=lang)


def works_of(
    path: str,
    doc: frontmatter.Document,
    *,
    exclude: tuple[str, ...] = (),
    skip_front_matter: bool = False,
    lang: str | None = None,
) -> list[Work]:
    """The works of a Markdown document read from `path`."""
    meta = dict(doc.meta)
    selection = Selection(exclude, skip_front_matter)
    works: list[Work] = []
    blocks = _outline(path, doc.body, doc.body_line)
    for wblock in blocks:
        title = str(meta.pop("title", "") or "") if len(blocks) == 1 else ""
        work = Work(
            title or wblock.title,
            author=meta.get("author"),
            lang=str(lang or meta.get("lang") or guess_language(doc.body)),
            meta={k: v for k, v in meta.items() if k not in ("author", "lang", "title")},
        )
        _fill_work(path, work, wblock, selection)
        works.append(work)
    return works


def _fill_work(path: str, work: Work, wblock: _Block, selection: Selection) -> None:
    """Give `work` the parts and pieces of its `#` block, and each chapter its notes."""
    if wblock.has_text:
        raise ImportSourceError(
            f"{path}:{wblock.line}",
            "text directly under the work's title; put it under a `## ` heading "
            "(e.g. `## Avant-propos`) so it becomes a liminary piece",
        )
    sections: list[Section] = []
    seen_part = False
    flat = [b for b in wblock.children if not b.children]
    bare = _bare_numbers(flat)
    for block in wblock.children:
        if block.children:
            seen_part = True
            part = _part(path, block, work.lang, selection)
            if part is not None:
                work.add_part(part)
                sections.extend(part.sections)
            continue
        piece = _piece(path, block, work, selection, not seen_part, bare.get(flat.index(block)))
        if piece is not None:
            work.add_piece(piece)  # numbered: a chapter of a book without parts
            sections.append(piece)
    _distribute_notes(sections)
    if not work.parts and not work.flat_chapters():
        raise ImportSourceError(
            f"{path}:{wblock.line}",
            f"the work {work.title!r} has no chapter, only liminary pieces or nothing: "
            "give each chapter a `## ` heading (`## Chapter 1. Title`), or use `## ` "
            "for parts and `### ` for their chapters",
        )


def _part(path: str, block: _Block, lang: str, selection: Selection) -> Part | None:
    """A `##` block with `###` chapters; None when it is left out or all its chapters are."""
    if selection.excluded(block.title):
        return None
    if block.has_text:
        raise ImportSourceError(
            f"{path}:{block.line}",
            f"text under the part {block.title!r} before its first chapter; "
            "give it a `### ` heading (e.g. `### Introduction`)",
        )
    part = Part(block.title)
    bare = _bare_numbers(block.children)
    for k, cblock in enumerate(block.children):
        if not selection.excluded(cblock.title):
            part.sections.append(_section(path, cblock, lang, bare.get(k)))
    return part if part.sections else None


def _piece(
    path: str,
    block: _Block,
    work: Work,
    selection: Selection,
    front: bool,
    bare: tuple[str, str] | None,
) -> Section | None:
    """A `##` block without `###`: a chapter of a book without parts, or a liminary
    piece (`front`: before any part); None when it is left out."""
    if not block.has_text:
        raise ImportSourceError(
            f"{path}:{block.line}",
            f"`## {block.title}` has neither text nor `### ` chapters; "
            "write it, give it chapters, or remove the heading",
        )
    if selection.excluded(block.title, front=front):
        return None
    if is_contents_title(block.title):  # the book's own list of its chapters
        work.notes.append(f"left out the contents list `## {block.title}` (line {block.line})")
        return None
    return _section(path, block, work.lang, bare)
