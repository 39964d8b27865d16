"""The reading tools' answers (`context`, `outline`): text and lean twin, as in
`search.mcp.views` (whose helpers they share)."""

from __future__ import annotations

import shlex
from typing import NotRequired  # pydantic needs it below Python 3.12

from typing_extensions import TypedDict

from search.context import ContextPack
from search.mcp.views import LeanChunk, LeanIndex, index_lines, lean_index, line_span, ref_of
from search.results import Outline, OutlineEntry


class LeanChapter(TypedDict):
    source_file: str
    heading_path: str
    summary: NotRequired[str]  # of the summary.md beside source_file
    passages: list[LeanChunk]


class LeanContext(TypedDict):
    found: bool
    tokens: int
    chapters: list[LeanChapter]
    index: list[LeanIndex]
    message: NotRequired[str]
    # the gate's verdict when not "relevant": "nothing relevant", "uncertain" (passages
    # given, not vouched for) or "uncalibrated" (search/calibration.py)
    verdict: NotRequired[str]
    notes: NotRequired[list[str]]  # about the branches read: a book on another branch


class LeanEntry(TypedDict):
    title: str
    kind: str
    source_file: NotRequired[str]
    text_file: NotRequired[str]
    paragraphs: NotRequired[int]
    excerpt: NotRequired[str]
    repository: NotRequired[str]
    children: NotRequired[list[LeanEntry]]


class LeanOutline(TypedDict):
    works: list[LeanEntry]
    notes: NotRequired[list[str]]  # about the branches read: a book on another branch


# -- context packs -------------------------------------------------------------------


def context_view(pack: ContextPack) -> tuple[str, LeanContext]:
    lines = index_lines(pack.index) + [f"note: {n}" for n in pack.notes]
    chapters: list[LeanChapter] = []
    if not pack.found:
        lines.append(pack.message)
    for ch in pack.chapters:
        folder = ch.source_file.rsplit("/", 1)[0] + "/"
        cited = ch.passages[0].citation if ch.passages else ch.summary_citation
        where = f"{cited.repository}:{folder}" if cited is not None else folder
        lines.append(f"\n## {ch.heading_path} · {where}")  # the citations' first half
        lean: LeanChapter = {
            "source_file": ch.source_file,
            "heading_path": ch.heading_path,
            "passages": [],
        }
        if ch.summary and ch.summary_citation is not None:
            summary_file = ch.summary_citation.source_file
            lines.append(
                f"summary ({summary_file.removeprefix(folder)}, machine-written): {ch.summary}"
            )
            lean["summary"] = ch.summary
        for p in ch.passages:
            lines.append(ref_of(p.citation, {"lines"}, folder))
            lines.append(p.text)
            chunk: LeanChunk = {"chunk": p.citation.chunk_index, "text": p.text}
            if p.citation.line_start is not None:
                chunk["lines"] = line_span(p.citation)
            lean["passages"].append(chunk)
        chapters.append(lean)
    data: LeanContext = {
        "found": pack.found,
        "tokens": pack.tokens,
        "chapters": chapters,
        "index": [lean_index(f) for f in pack.index],
    }
    if not pack.found:
        data["message"] = pack.message
        data["verdict"] = pack.relevance.verdict
    if pack.notes:
        data["notes"] = pack.notes
    return "\n".join(lines).strip(), data


# -- outline -------------------------------------------------------------------------


def outline_view(
    outline: Outline, *, depth: int = 3, excerpts: bool = False, shell: bool = False
) -> tuple[str, LeanOutline]:
    """The tree down to `depth` (1 works, 2 parts, 3 chapters); summaries' openings if asked.
    `shell`: the hint to see deeper is a command (`glossator outline`), not a tool call."""
    lines: list[str] = []
    several = len({w.repository for w in outline.works}) > 1

    def walk(entry: OutlineEntry, level: int) -> LeanEntry:
        lean: LeanEntry = {"title": entry.title, "kind": entry.kind}
        if entry.source_file:
            lean["source_file"] = entry.source_file
        if entry.text_file and entry.text_file != entry.source_file:
            lean["text_file"] = entry.text_file
        if entry.paragraphs is not None:
            lean["paragraphs"] = entry.paragraphs
        if excerpts and entry.summary_excerpt:
            lean["excerpt"] = entry.summary_excerpt
        if entry.repository and several:
            lean["repository"] = entry.repository
        files = [f for f in (entry.source_file, entry.text_file) if f]
        where = ", ".join(dict.fromkeys(files))
        count = f", {entry.paragraphs} ¶" if entry.paragraphs is not None else ""
        repo = f"[{entry.repository}] " if entry.repository and several else ""
        lines.append(f"{'  ' * (level - 1)}- {repo}{entry.title}: {where}{count}")
        if excerpts and entry.summary_excerpt:
            lines.append(f"{'  ' * level}{entry.summary_excerpt}")
        if level < depth and entry.children:
            lean["children"] = [walk(child, level + 1) for child in entry.children]
        elif entry.children:
            more = (
                f"glossator outline --work {_folder_name(entry)} --depth {level + 1}"
                if shell
                else f"outline(work=…, depth={level + 1})"
            )
            lines[-1] += f" ({len(entry.children)} below: {more})"
        return lean

    works = [walk(w, 1) for w in outline.works]
    if not works:
        lines.append("Nothing is indexed on this branch yet.")
    lines += [f"note: {n}" for n in outline.notes]
    data: LeanOutline = {"works": works}
    if outline.notes:
        data["notes"] = outline.notes
    return "\n".join(lines), data


def _folder_name(entry: OutlineEntry) -> str:
    """The work's folder, as `--work` takes it (quoted for a shell if it must be)."""
    path = entry.source_file or entry.text_file or ""
    parts = path.split("/")
    name = parts[1] if len(parts) > 2 and parts[0] == "corpus" else "WORK"
    return shlex.quote(name)
