"""The one Markdown reader of the indexer: a text → its blocks, with their source lines.

    blocks("# Title\n\nText on\ntwo lines.\n")
    → [Block("heading", 0, 1, "# Title", level=1, title="Title"),
       Block("paragraph", 2, 4, "Text on\ntwo lines.")]

Every reader of Markdown in the indexer goes through here, so they agree on where a
heading or a code block is. markdown-it-py parses; its tokens' `.map` gives each
block's 0-based [start, end) lines, and `Block.text` is those lines as they are.
A block is a `heading` (ATX, one line: `level`, `title`), `code` (a fenced block,
blank lines and all; `info` follows the opening fence) or a `paragraph` (anything
else: non-blank lines up to a blank line, a heading or a fence). Blank lines belong
to no block; lists, quotes, tables and footnote definitions are paragraphs.

The rules are configured so that chunks and their line spans, which sidecars and
citations record, keep the reading the sidecars were made with (another would
re-embed a library). Where CommonMark would read otherwise:

- **Setext headings** (`Title` over `===`) are not headings: one paragraph.
- **Indented code** (four spaces) is not a block of its own: its lines are a
  paragraph, split at blank lines like any other. A line indented four columns
  or more is still never a heading or a fence (CommonMark's rule kept: the
  `code` rule stays registered, matching nothing, so markdown-it keeps it).
- **Lists, block quotes, thematic breaks (`---`), HTML blocks and tables** do
  not interrupt a paragraph and do not span blank lines: their lines are
  paragraphs, cut at blank lines.
- **Link reference definitions** (`[a]: http://…`) are text: CommonMark would
  consume them and leave no block, losing their lines.
- **Fences**: a backtick fence's info string may hold backticks, and a closing
  fence may have anything after its marker (CommonMark: spaces only).
- **Blank lines** are those Python's `str.strip` empties (a line of no-break
  spaces is blank; CommonMark knows spaces and tabs only), and a lone carriage
  return does not end a line (CommonMark: it does): both are fixed up before
  parsing, so the line numbers are the text's `split("\n")`.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Literal

from markdown_it import MarkdownIt
from markdown_it.rules_block import StateBlock

BlockKind = Literal["heading", "paragraph", "code"]


@dataclass(frozen=True)
class Block:
    kind: BlockKind
    start: int  # 0-based first line of the block in the text
    end: int  # 0-based line after its last (markdown-it's token.map)
    text: str  # its lines as in the text, joined by "\n"
    level: int = 0  # heading: 1 to 6
    title: str = ""  # heading: its text, without the #s and a closing sequence
    info: str = ""  # code: what follows the opening fence, stripped

    @property
    def lines(self) -> list[str]:
        return self.text.split("\n")


def blocks(text: str) -> list[Block]:
    """The blocks of a Markdown text, in order (blank lines belong to none)."""
    lines = text.split("\n")
    parsed = [_for_parser(line) for line in lines]
    out: list[Block] = []
    tokens = _parser().parse("\n".join(parsed))
    for n, token in enumerate(tokens):
        if token.map is None or token.level != 0:
            continue
        start, end = token.map
        raw = "\n".join(lines[start:end])
        if token.type == "heading_open":
            level = int(token.tag[1:])
            # the title as written: where markdown-it found it in the line it parsed
            title = tokens[n + 1].content
            at = parsed[start].find(title, parsed[start].index("#") + level)
            title = lines[start][at : at + len(title)]
            out.append(Block("heading", start, end, raw, level=level, title=title))
        elif token.type == "paragraph_open":
            out.append(Block("paragraph", start, end, raw))
        elif token.type == "fence":
            out.append(Block("code", start, end, raw, info=token.info.strip()))
    return out


def _for_parser(line: str) -> str:
    """A line as markdown-it should see it: empty when blank, no carriage return
    (U+FFFD, as markdown-it makes of NUL, keeps the line's length and is not a space)."""
    return line.replace("\r", "\ufffd") if line.strip() else ""


@cache
def _parser() -> MarkdownIt:
    md = MarkdownIt("commonmark")
    md.disable(["lheading", "list", "blockquote", "hr", "html_block", "reference"])
    md.block.ruler.at("code", _no_indented_code)
    md.block.ruler.at("fence", _fence, {"alt": ["paragraph"]})
    md.core.ruler.enableOnly(["normalize", "block"])  # blocks only: nothing is rendered
    return md


def _no_indented_code(state: StateBlock, start: int, end: int, silent: bool) -> bool:
    """Registered as `code` so that markdown-it still refuses a heading or a fence
    indented four columns (StateBlock.is_code_block), but reads no indented code."""
    return False


def _fence(state: StateBlock, start: int, end: int, silent: bool) -> bool:
    """markdown-it's fence rule, but any info string opens and any tail closes:
    the fence ends at a line of at least as many of the same marker, or the text's end."""
    if state.is_code_block(start):
        return False
    pos = state.bMarks[start] + state.tShift[start]
    marker = state.src[pos : pos + 1]
    if marker not in ("`", "~"):
        return False
    length = state.skipCharsStr(pos, marker) - pos
    if length < 3:
        return False
    if silent:
        return True
    line, closed = start + 1, False
    while line < end:
        at = state.bMarks[line] + state.tShift[line]
        if (
            state.src[at : at + 1] == marker
            and not state.is_code_block(line)
            and state.skipCharsStr(at, marker) - at >= length
        ):
            closed = True
            break
        line += 1
    state.line = line + 1 if closed else line
    token = state.push("fence", "code", 0)
    token.info = state.src[pos + length : state.eMarks[start]]
    token.markup = marker * length
    token.map = [start, state.line]
    return True
