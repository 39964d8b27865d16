"""Markdown body → chunks: one per paragraph, long ones split without losing text.

A *block* is what a reader sees as one unit: a paragraph (lines up to a blank
line), a heading, a list, a block quote, a table, a run of footnote definitions,
or a fenced code block (blank lines inside the fence do not end it): the
blocks of indexer.corpus.markdown, the indexer's one Markdown parser. A block
within the token threshold is one chunk, its exact text. A longer one is cut
into finer units and the units are packed greedily back into chunks:

    prose        sentences → words → pieces of a word
    structured   items (list items with their continuation lines, table rows,
                 quote lines, footnote definitions) → lines → sentences → words
                 → pieces of a word
    code         lines → words → pieces of a word

so a list or a table splits between items, never mid-line, unless one line alone
is over the threshold. A "word" over the threshold (300 KB without a space: a
base64 blob, a script written without spaces) is cut into runs of characters,
so it is indexed like any other text instead of one chunk no model or summary
can take. Chunk text is always a slice of the body, stripped at its ends:
concatenating the chunks gives back the body up to whitespace at the cut points,
which is what the property tests check. A chunk goes over the threshold only
when it is one character that alone exceeds it.

Packing (`pack` = (min_chars, max_chars), the corpus policy's `[chunking] pack_chars`):
a dialogue line of eight words is a poor retrieval unit (its vector sits close to
everything, one shared word wins BM25 for it), so consecutive whole blocks are packed
into one chunk until it holds at least min_chars, never past max_chars or max_tokens.
A heading starts a new chunk (kept with what follows, never glued to what precedes);
a last chunk under the minimum joins the one before when it fits. A packed chunk is
one row: its text the blocks' slice of the body, its line span theirs, so a citation
names the lines of every paragraph it holds. Blocks that were split stay as they are.

With `pack_chars = "auto"` a work is packed, with AUTO_PACK, only when its shape
calls for it (`auto_pack`): when its paragraphs are mostly lines (the median under
DIALOGUE_MEDIAN_CHARS, over at least AUTO_MIN_PARAGRAPHS), as in a play or a dialogue
novel; a work of prose or verse keeps one chunk per paragraph. The decision is the
work's, not each file's, so a dialogue chapter of an essay (Bastiat's *L'Utopiste*)
stays as the rest of its book.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from indexer.corpus import markdown
from indexer.corpus.tokens import count_tokens

Span = tuple[int, int]  # [start, end) offsets in the body
Splitter = Callable[[str, Span], list[Span]]


@dataclass(frozen=True)
class TextChunk:
    text: str
    line_start: int  # 1-based, inclusive, lines of the .md file
    line_end: int
    token_count: int


# Where a structured block may be cut: a line that starts an item. These stay line
# patterns rather than the parser's lists and quotes because they are the cutting
# rule chunks were made with: CommonMark would not see an item in a line a paragraph
# runs on into (`1845. Le…` after a wrapped line, lazy continuation), nor a table
# row or a footnote definition (not CommonMark), so reading them from tokens would
# move chunk boundaries and re-embed a library.
_LIST_ITEM = re.compile(r"^[ \t]*(?:[-*+]|\d{1,9}[.)])(?:[ \t]|$)")
_QUOTE = re.compile(r"^ {0,3}>")
_TABLE_ROW = re.compile(r"^ {0,3}\|")
_TABLE_RULE = re.compile(r"^ {0,3}\|?[ \t]*:?-+:?[ \t]*(?:\|[ \t]*:?-+:?[ \t]*)+\|?[ \t]*$")
_FOOTNOTE = re.compile(r"^ {0,3}\[\^[^\]\s]+\]:")
_ITEM_STARTS = (_LIST_ITEM, _QUOTE, _TABLE_ROW, _TABLE_RULE, _FOOTNOTE)
# end of a sentence: . ! ? … possibly followed by closing quotes or brackets
# (French puts a space before a closing guillemet: « Fin. » Suite), then whitespace
_SENTENCE_END = re.compile(r"[.!?…]+(?:[ \u00a0\u202f]?[»”\"’)\]])*(?=\s)")
_WORD = re.compile(r"\S+")


def chunk_markdown(
    body: str, body_line: int, max_tokens: int, pack: tuple[int, int] | None = None
) -> list[TextChunk]:
    """Chunks of a Markdown body whose first line is line `body_line` of its file;
    `pack` (min_chars, max_chars) packs short consecutive blocks (the module's doc)."""
    if max_tokens < 1:
        raise ValueError("max_tokens must be positive")
    newlines = [m.start() for m in re.finditer("\n", body)]
    chunks: list[TextChunk] = []
    spans: list[tuple[Span, bool]] = []  # (span, whole block that may be packed)
    for span, kind in _blocks(body):
        pieces = _pack(body, [span], _LEVELS[kind], max_tokens)
        spans += [(p, len(pieces) == 1 and kind != "code") for p in pieces]
    units = [p for p, _ in spans] if pack is None else _pack_blocks(body, spans, pack, max_tokens)
    for s, e in units:
        text = body[s:e]
        chunks.append(
            TextChunk(
                text=text,
                line_start=body_line + bisect.bisect_left(newlines, s),
                line_end=body_line + bisect.bisect_left(newlines, e - 1),
                token_count=count_tokens(text),
            )
        )
    return chunks


# The units `pack_chars = "auto"` packs a dialogue-shaped work into: the range issue 37
# measured (400-1,200 characters, a few exchanges; docs/search.md, "Retrieval units").
AUTO_PACK = (400, 1200)
# A work is dialogue-shaped when its median paragraph is shorter than this: one line of a
# page (the 80-column line), less than one written sentence of ~20 words (~120
# characters). A shape, not a figure fitted to a book: the plays' medians are 61 and 75
# characters, the Spanish dialogue novel's 65, while prose and verse stay above
# it (the example essay 157, the Inferno's terzine 109, Austen and Shelley 262, Grimm
# 830). The summarizer's line of dialogue (extractive.LINE_CHARS) is the same measure.
DIALOGUE_MEDIAN_CHARS = 80
# Fewer paragraphs than this in a work and its median says nothing of its shape (a note, a
# poem, a title page and two lines): 30, the customary least sample for a proportion.
AUTO_MIN_PARAGRAPHS = 30


def paragraph_shape(body: str) -> tuple[int, int]:
    """(short, all): how many prose paragraphs of a body (the blocks chunks are made of,
    headings and code out) are under DIALOGUE_MEDIAN_CHARS, and how many there are."""
    lengths = [
        e - s for (s, e), kind in _blocks(body) if kind != "code" and not _is_heading(body[s:e])
    ]
    return sum(n < DIALOGUE_MEDIAN_CHARS for n in lengths), len(lengths)


def auto_pack(shapes: Iterable[tuple[int, int]]) -> tuple[int, int] | None:
    """AUTO_PACK when a work's paragraphs (the `paragraph_shape` of each of its chapters,
    pooled) are mostly lines: more than half under DIALOGUE_MEDIAN_CHARS (its median),
    and there are at least AUTO_MIN_PARAGRAPHS of them."""
    short = total = 0
    for s, n in shapes:
        short, total = short + s, total + n
    return AUTO_PACK if total >= AUTO_MIN_PARAGRAPHS and short * 2 > total else None


def _is_heading(text: str) -> bool:
    return text.startswith("#")


def _pack_blocks(
    body: str, spans: list[tuple[Span, bool]], pack: tuple[int, int], max_tokens: int
) -> list[Span]:
    """Consecutive whole blocks merged until a chunk holds min_chars (module doc)."""
    least, most = pack
    out: list[Span] = []
    packable: list[bool] = []
    current: Span | None = None
    headings_only = False  # the current chunk holds headings only: it takes what follows
    for span, whole in spans:
        heading = whole and _is_heading(body[span[0] : span[1]])
        if current is not None:
            merged = (current[0], span[1])
            if (
                whole
                and (headings_only or (current[1] - current[0] < least and not heading))
                and merged[1] - merged[0] <= most
                and count_tokens(body[merged[0] : merged[1]]) <= max_tokens
            ):
                current, headings_only = merged, headings_only and heading
                continue
            out.append(current)
            packable.append(True)
            current = None
        if whole:
            current, headings_only = span, heading
        else:
            out.append(span)
            packable.append(False)
    if current is not None:
        out.append(current)
        packable.append(True)
    # a last chunk under the minimum joins the one before when both are packed blocks
    # (not when it starts at a heading: a heading stays with what follows)
    if (
        len(out) > 1
        and packable[-1]
        and packable[-2]
        and out[-1][1] - out[-1][0] < least
        and not _is_heading(body[out[-1][0] : out[-1][1]])
    ):
        merged = (out[-2][0], out[-1][1])
        if (
            merged[1] - merged[0] <= most
            and count_tokens(body[merged[0] : merged[1]]) <= max_tokens
        ):
            out[-2:] = [merged]
    return out


def _trim(body: str, s: int, e: int) -> Span | None:
    """The span without whitespace at its ends, or None if nothing is left."""
    while s < e and body[s].isspace():
        s += 1
    while e > s and body[e - 1].isspace():
        e -= 1
    return (s, e) if s < e else None


def _lines(body: str, span: Span) -> list[tuple[int, int, str]]:
    """(start, end, text) of each line within span, end excluding the newline."""
    out = []
    start = span[0]
    while start <= span[1]:
        nl = body.find("\n", start, span[1])
        end = span[1] if nl == -1 else nl
        out.append((start, end, body[start:end]))
        if nl == -1:
            break
        start = nl + 1
    return out


def _blocks(body: str) -> list[tuple[Span, str]]:
    """Blocks in order, each (trimmed span, kind) with kind prose, structured or code.

    The parser (indexer.corpus.markdown) says where headings, fenced code and paragraphs are;
    a paragraph holding a line that starts an item is structured."""
    starts = [0] + [m.end() for m in re.finditer("\n", body)]  # offset of each line
    ends = [s - 1 for s in starts[1:]] + [len(body)]  # of each line, its newline excluded
    out: list[tuple[Span, str]] = []
    for block in markdown.blocks(body):
        span = _trim(body, starts[block.start], ends[block.end - 1])
        if span is None:
            continue
        if block.kind == "code":
            kind = "code"
        elif block.kind == "paragraph" and any(
            p.match(line) for line in block.lines for p in _ITEM_STARTS
        ):
            kind = "structured"
        else:
            kind = "prose"
        out.append((span, kind))
    return out


def _sentences(body: str, span: Span) -> list[Span]:
    s, e = span
    cuts = [s] + [m.end() for m in _SENTENCE_END.finditer(body, s, e) if m.end() < e]
    pieces = [_trim(body, a, b) for a, b in zip(cuts, [*cuts[1:], e], strict=True)]
    return [p for p in pieces if p is not None]


def _words(body: str, span: Span) -> list[Span]:
    return [m.span() for m in _WORD.finditer(body, span[0], span[1])]


# Runs a word over the threshold is cut into before packing: short enough that a
# run never holds many tokens, long enough that a 300 KB word is ~5,000 runs.
WORD_RUN_CHARS = 64


def _runs(body: str, span: Span) -> list[Span]:
    s, e = span
    return [(a, min(a + WORD_RUN_CHARS, e)) for a in range(s, e, WORD_RUN_CHARS)]


def _characters(body: str, span: Span) -> list[Span]:
    return [(a, a + 1) for a in range(span[0], span[1])]


def _line_spans(body: str, span: Span) -> list[Span]:
    pieces = [_trim(body, a, b) for a, b, _ in _lines(body, span)]
    return [p for p in pieces if p is not None]


def _items(body: str, span: Span) -> list[Span]:
    """List items (with continuation lines), rows, quote lines, footnote definitions."""
    starts: list[int] = []
    for a, _, text in _lines(body, span):
        if not starts or any(p.match(text) for p in _ITEM_STARTS):
            starts.append(a)
    pieces = [_trim(body, a, b) for a, b in zip(starts, [*starts[1:], span[1]], strict=True)]
    return [p for p in pieces if p is not None]


_LEVELS: dict[str, tuple[Splitter, ...]] = {
    "prose": (_sentences, _words, _runs, _characters),
    "structured": (_items, _line_spans, _sentences, _words, _runs, _characters),
    "code": (_line_spans, _words, _runs, _characters),
}


def _pack(
    body: str, units: list[Span], levels: tuple[Splitter, ...], max_tokens: int
) -> list[Span]:
    """Greedily merge consecutive units into spans of at most max_tokens.

    A unit over the threshold is cut with the next splitter and packed on its
    own; with no splitter left (one character) it stands alone, over the threshold.
    Counting the merged span itself, not summing units, keeps counts exact, and
    the span being measured never exceeds the threshold, so this stays linear.
    """
    out: list[Span] = []
    current: Span | None = None
    for unit in units:
        if count_tokens(body[unit[0] : unit[1]]) > max_tokens:
            if current is not None:
                out.append(current)
                current = None
            if levels:
                out.extend(_pack(body, levels[0](body, unit), levels[1:], max_tokens))
            else:
                out.append(unit)
            continue
        if current is None:
            current = unit
        elif count_tokens(body[current[0] : unit[1]]) <= max_tokens:
            current = (current[0], unit[1])
        else:
            out.append(current)
            current = unit
    if current is not None:
        out.append(current)
    return out
