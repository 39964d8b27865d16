"""What the MCP tools hand an agent: a text for the model and a lean structured twin.

Every token a tool returns is a token of the agent's context window, so both
forms are written to be read, not dumped:

- the text: one block per hit, its citation on one line under a header naming
  its folder and heading path once per group (a page of ten hits spans two or
  three parts, so the long shared prefixes are not repeated on every hit), then
  the passage. No nulls, no echo of the query or settings.
- the structured content: the same hits as plain JSON without nulls (a missing
  key means "none").

A hit is cited by one compact `ref`, `file#chunk:lines` (`chapitre-07-…/source.md#5:22`
or `…#5:22-24`), the file relative to its group's folder, which the group's header names
with its repository (`## sophismes:corpus/…/`): together the one citation every face
prints, `repository:path#chunk:lines` (search.citation), split so that a page prints
the folder once. `get_node` takes it whole or as the ref alone (source_file), and a
quotation cites its lines, in ~5 tokens fewer than three keys. A heading is given only where the path does not already spell
it: a chapter folder named `chapitre-05-cherte-bon-marche` says what the heading
"Chapitre V (Cherté, bon marché)" says (the words, accents folded; numerals in
either form), and repeating it cost a page of ten hits ~150 tokens, a tenth of
its passages. Where the slug is not the title (a truncated or numbered slug, an
importer's other scheme) the heading stays.

Both are complete on their own: Claude Code and VS Code hand the model the
structured content alone when a tool returns it (anthropics/claude-code#9962,
#79944) while other clients hand it the text, so neither may lean on the other.
`bench/mcp_tokens.py` measures both against the passages they carry.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Sequence
from typing import (
    Literal,
    NotRequired,  # pydantic needs it below Python 3.12
)

from typing_extensions import TypedDict

from indexer.corpus.tokens import count_tokens
from search.results import (
    Chunk,
    Citation,
    Freshness,
    Hit,
    Node,
    SearchResponse,
)

Field = Literal["text", "heading", "lines", "scores"]
DEFAULT_FIELDS: tuple[Field, ...] = ("text", "heading", "lines")
SNIPPET_WORDS = 40  # about two lines: enough to judge a hit before opening it with get_node
NO_HIT = "No hit: try other words, mode vector for a paraphrase, or fewer filters."
# no repository was read (an empty server, books not indexed yet): other words cannot help
NOTHING_READ = (
    "No hit: nothing indexed was searched (the note says why); other words will not help."
)


def no_hit(index: list[Freshness]) -> str:
    """What an answer without hits says: other words help only where something was read."""
    return NO_HIT if index else NOTHING_READ


SHORT_COMMIT = 12  # as `git log --abbrev=12` prints: unambiguous in any book-sized repository


class LeanChunk(TypedDict):
    chunk: int
    source_file: NotRequired[str]  # when it is not the file of the node or hit that holds it
    lines: NotRequired[list[int]]  # [first, last], 1-based, in source_file
    text: NotRequired[str]


class LeanNode(TypedDict):
    source_file: str
    level: int
    heading_path: NotRequired[str]
    parent_source_file: NotRequired[str]
    chunks: list[LeanChunk]


class LeanPassage(TypedDict):
    ref: str  # file#chunk:lines, the file relative to its group's folder
    text: NotRequired[str]


class LeanHit(TypedDict):
    rank: int
    ref: str  # file#chunk:lines (see the module doc): get_node's source_file
    level: NotRequired[int]  # omitted for 0: a paragraph of the text, to quote
    heading: NotRequired[str]  # its last heading step, where the path does not spell it
    text: NotRequired[str]
    quoted: NotRequired[bool]  # holds words the query put in quotes
    scores: NotRequired[dict[str, float]]  # fused, keyword, vector, ranks: fields=["scores"]
    passages: NotRequired[list[LeanPassage]]  # a chapter summary's best paragraphs


class LeanIndex(TypedDict):
    repository: str
    branch: str
    status: str
    indexed_commit: NotRequired[str]
    note: NotRequired[str]
    vectors: NotRequired[float]  # while a job embeds: the share of rows with their vector


class LeanGroup(TypedDict):  # the hits under one folder: its path and heading path once
    folder: str
    heading_path: NotRequired[str]
    repository: str  # the citation's repository:folder/ with `folder`
    hits: list[LeanHit]


class LeanSearch(TypedDict):
    groups: list[LeanGroup]  # in the order of their best hit
    index: list[LeanIndex]
    omitted: NotRequired[int]  # hits left out to stay within max_tokens
    notes: NotRequired[list[str]]  # about the branches read: a book on another branch
    rerank: NotRequired[str]  # only when a reranker is configured: applied / timeout / failed


class LeanChildren(TypedDict):
    source_file: str
    children: list[LeanNode]


# -- search --------------------------------------------------------------------------


def search_view(
    response: SearchResponse,
    *,
    fields: Sequence[Field] = DEFAULT_FIELDS,
    snippets: bool = False,
    max_tokens: int | None = None,
) -> tuple[str, LeanSearch]:
    """The page as text and as lean JSON; with `max_tokens`, the hits whose text fits."""
    want: set[str] = set(fields)
    several = len({h.citation.repository for h in response.hits}) > 1
    header = index_lines(response.index) + [f"note: {n}" for n in response.notes]
    if response.rerank.status != "disabled":
        detail = f" ({response.rerank.detail})" if response.rerank.detail else ""
        header.append(f"rerank: {response.rerank.status}{detail}")
    kept: list[Hit] = []
    used = count_tokens("\n".join(header))
    for hit in response.hits:
        cost = count_tokens(_hit_block(hit, want, snippets, several, prefix="")) + 8
        if max_tokens is not None and kept and used + cost > max_tokens:
            break
        kept.append(hit)
        used += cost
    omitted = len(response.hits) - len(kept)
    lines = list(header)
    groups: list[LeanGroup] = []
    for (folder, heading, repo), group in _groups(kept, several):
        if lines:
            lines.append("")
        lines.append(_group_header(folder, heading, repo, want))
        lean: LeanGroup = {"folder": folder, "repository": repo, "hits": []}
        if heading and "heading" in want and not spelled_by(heading, folder):
            lean["heading_path"] = heading
        for hit in group:
            lines.append(_hit_block(hit, want, snippets, several, prefix=folder))
            lean["hits"].append(_lean_hit(hit, want, snippets, folder))
        groups.append(lean)
    if not response.hits:
        lines.append(no_hit(response.index))
    elif omitted:
        lines.append(f"\n{omitted} more hits left out to stay within max_tokens={max_tokens}.")
    data: LeanSearch = {
        "groups": groups,
        "index": [lean_index(f) for f in response.index],
    }
    if omitted:
        data["omitted"] = omitted
    if response.notes:
        data["notes"] = response.notes
    if response.rerank.status != "disabled":
        data["rerank"] = response.rerank.status
    return "\n".join(lines), data


def _groups(hits: list[Hit], several: bool) -> list[tuple[tuple[str, str, str], list[Hit]]]:
    """Hits grouped by the folder that holds their chapter, groups in order of their best hit."""
    groups: dict[tuple[str, str, str], list[Hit]] = {}
    for hit in hits:
        c = hit.citation
        key = (
            _group_folder(c.source_file),
            _parent_heading(c.heading_path),
            c.repository,
        )
        groups.setdefault(key, []).append(hit)
    return list(groups.items())


def _group_folder(source_file: str) -> str:
    """corpus/<work>/<part>/<chapter>/source.md → corpus/<work>/<part>/ (the chapter's parent)."""
    parts = source_file.split("/")
    return "/".join(parts[:-2]) + "/" if len(parts) > 2 else ""


def _parent_heading(heading_path: str) -> str:
    return " > ".join(heading_path.split(" > ")[:-1])


def _last_heading(heading_path: str) -> str:
    return heading_path.split(" > ")[-1]


def _words(text: str) -> list[str]:
    """Lower-case words with accents folded: how a slug spells a heading."""
    folded = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()
    return re.findall(r"[a-z0-9]+", folded.lower())


# a number in digits or a well-formed Roman numeral ("civil" is a word, not one)
_NUMERAL = re.compile(r"[0-9]+|m{0,3}(cm|cd|d?c{0,3})(xc|xl|l?x{0,3})(ix|iv|v?i{0,3})")


def spelled_by(heading: str, path: str) -> bool:
    """Whether `path` (a folder or a file's folder) already says every word of `heading`:
    each word appears in it, and a numeral (V, 5, 05) where the path has a number."""
    have = set(_words(path.replace("/", " ")))
    numbers = any(w.isdigit() for w in have)
    words = _words(heading)
    return bool(words) and all(
        w in have or (numbers and _NUMERAL.fullmatch(w) is not None) for w in words
    )


def _heading_shown(c: Citation, want: set[str]) -> str | None:
    """The hit's last heading step, unless its file's folder spells it (module doc)."""
    if "heading" not in want or not c.heading_path:
        return None
    last = _last_heading(c.heading_path)
    folder = c.source_file.rsplit("/", 1)[0] if "/" in c.source_file else ""
    return None if spelled_by(last, folder.rsplit("/", 1)[-1]) else last


def _group_header(folder: str, heading: str, repository: str, want: set[str]) -> str:
    where = f"{repository}:{folder}"  # the citation's first half (module doc)
    if "heading" in want and heading and not spelled_by(heading, folder):
        return f"## {heading} · {where}"
    return f"## {where}"


def _hit_block(hit: Hit, want: set[str], snippets: bool, several: bool, prefix: str) -> str:
    c = hit.citation
    head = f"[{hit.rank}] " + ref_of(c, want, prefix)
    heading = _heading_shown(c, want)
    if heading:
        head += " " + heading
    marks = []
    if hit.level:
        marks.append("summary: open its text with get_children" if hit.level == 1 else "summary")
    if hit.scores.phrase:
        marks.append("quoted words found")
    if "scores" in want:
        marks.append("scores " + ", ".join(f"{k} {v:g}" for k, v in _scores(hit).items()))
    if marks:
        head += " (" + "; ".join(marks) + ")"
    out = [head]
    if hit.parent is not None and hit.parent.chunks:
        first = hit.parent.chunks[0]
        out.append(f"in {first.citation.source_file}#0: " + _text(first.text, snippets))
    if hit.previous is not None and "text" in want:
        out.append(
            f"before #{hit.previous.citation.chunk_index}: {_text(hit.previous.text, snippets)}"
        )
    if "text" in want:
        out.append(_text(hit.text, snippets))
    if hit.next is not None and "text" in want:
        out.append(f"after #{hit.next.citation.chunk_index}: {_text(hit.next.text, snippets)}")
    for p in hit.passages or []:
        line = "→ " + ref_of(p.citation, want, prefix)
        out.append(line + ("\n" + _text(p.text, snippets) if "text" in want else ""))
    return "\n".join(out)


def ref_of(c: Citation, want: Iterable[str], prefix: str) -> str:
    """`file#chunk:first-last` (`:line` for one line), the file relative to `prefix`."""
    file = c.source_file.removeprefix(prefix) if prefix else c.source_file
    ref = f"{file}#{c.chunk_index}"
    if "lines" in want and c.line_start is not None:
        end = c.line_end if c.line_end is not None else c.line_start
        ref += f":{end}" if end == c.line_start else f":{c.line_start}-{end}"
    return ref


_REF = re.compile(r"(?P<file>.+)#(?P<chunk>[0-9]+)(?::(?P<first>[0-9]+)(?:-(?P<last>[0-9]+))?)?")


def parse_ref(ref: str) -> tuple[str, int, list[int] | None]:
    """(file, chunk, [first, last] or None) of a `ref`; ValueError if it is not one."""
    m = _REF.fullmatch(ref)
    if m is None:
        raise ValueError(f"{ref!r} is not a reference file#chunk[:first[-last]]")
    first = m["first"]
    lines = None if first is None else [int(first), int(m["last"] or first)]
    return m["file"], int(m["chunk"]), lines


def _text(text: str, snippets: bool) -> str:
    if not snippets:
        return text
    words = text.split()
    return " ".join(words[:SNIPPET_WORDS]) + (" …" if len(words) > SNIPPET_WORDS else "")


def _scores(hit: Hit) -> dict[str, float]:
    s = hit.scores
    raw = {
        "fused": s.fused,
        "keyword": s.keyword,
        "keyword_rank": s.keyword_rank,
        "vector": s.vector,
        "vector_rank": s.vector_rank,
        "chapter": s.chapter,
        "rerank": s.rerank,
    }
    return {k: round(float(v), 4) for k, v in raw.items() if v is not None}


def _lean_hit(hit: Hit, want: set[str], snippets: bool, folder: str) -> LeanHit:
    c = hit.citation
    out: LeanHit = {"rank": hit.rank, "ref": ref_of(c, want, folder)}
    if hit.level:
        out["level"] = hit.level
    heading = _heading_shown(c, want)
    if heading:
        out["heading"] = heading
    if "text" in want:
        out["text"] = _text(hit.text, snippets)
    if hit.scores.phrase:
        out["quoted"] = True
    if "scores" in want:
        out["scores"] = _scores(hit)
    if hit.passages:
        out["passages"] = [_lean_passage(p, want, snippets, folder) for p in hit.passages]
    return out


def _lean_passage(chunk: Chunk, want: set[str], snippets: bool, folder: str) -> LeanPassage:
    out: LeanPassage = {"ref": ref_of(chunk.citation, want, folder)}
    if "text" in want:
        out["text"] = _text(chunk.text, snippets)
    return out


def line_span(c: Citation) -> list[int]:
    start = c.line_start if c.line_start is not None else 0
    return [start, c.line_end if c.line_end is not None else start]


def _lean_chunk(chunk: Chunk, want: Iterable[str], snippets: bool, *, hit_file: str) -> LeanChunk:
    c = chunk.citation
    out: LeanChunk = {"chunk": c.chunk_index}
    if c.source_file != hit_file:
        out["source_file"] = c.source_file
    if "lines" in want and c.line_start is not None:
        out["lines"] = line_span(c)
    if "text" in want:
        out["text"] = _text(chunk.text, snippets)
    return out


def index_lines(index: list[Freshness]) -> list[str]:
    out = []
    for f in index:
        line = f"index {f.repository}@{f.branch}: {f.status}"
        if f.indexed_commit:
            line += f" at {f.indexed_commit[:SHORT_COMMIT]}"
        # problems: not fully indexed; vectors: a job is embedding
        if (f.status != "current" or f.problems or f.vectors_incomplete) and f.note:
            line += f" ({f.note})"
        out.append(line)
    return out


def lean_index(f: Freshness) -> LeanIndex:
    out: LeanIndex = {"repository": f.repository, "branch": f.branch, "status": f.status}
    if f.indexed_commit:
        out["indexed_commit"] = f.indexed_commit[:SHORT_COMMIT]
    if (f.status != "current" or f.problems or f.vectors_incomplete) and f.note:
        out["note"] = f.note
    if f.vectors is not None:
        out["vectors"] = round(f.vectors, 3)
    return out


# -- nodes ---------------------------------------------------------------------------


def lean_node(node: Node, want: Iterable[str] = DEFAULT_FIELDS, snippets: bool = False) -> LeanNode:
    out: LeanNode = {"source_file": node.source_file, "level": node.level, "chunks": []}
    if node.heading_path:
        out["heading_path"] = node.heading_path
    if node.parent_source_file:
        out["parent_source_file"] = node.parent_source_file
    out["chunks"] = [_lean_chunk(c, want, snippets, hit_file=node.source_file) for c in node.chunks]
    return out


def node_text(node: Node) -> str:
    """`heading — repository:file`, then each chunk under `#chunk:lines`: with the header,
    its citation (search.citation)."""
    kind = "text" if node.level == 0 else "summary"
    where = f"{node.repository}:{node.source_file}"
    lines = [f"{node.heading_path} — {where} ({kind}, {len(node.chunks)} chunks shown)"]
    for chunk in node.chunks:
        lines.append(ref_of(chunk.citation, {"lines"}, node.source_file))
        lines.append(chunk.text)
    return "\n".join(lines)


def node_view(node: Node) -> tuple[str, LeanNode]:
    return node_text(node), lean_node(node)


def children_view(source_file: str, children: list[Node]) -> tuple[str, LeanChildren]:
    if not children:
        text = f"{source_file} has no children: it is a chapter's text (level 0)."
    else:
        text = "\n\n".join(node_text(n) for n in children)
    return text, {"source_file": source_file, "children": [lean_node(n) for n in children]}
