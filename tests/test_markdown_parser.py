"""indexer.corpus.markdown: the blocks of a text, and each place it reads otherwise than CommonMark.

The chunker read Markdown with line regexes before it had a parser; the property
test below keeps that reading as an oracle, so a chunk boundary cannot move.
"""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from indexer.corpus.chunking import _blocks
from indexer.corpus.markdown import Block, blocks


def kinds(text: str) -> list[tuple[str, int, int]]:
    return [(b.kind, b.start, b.end) for b in blocks(text)]


def test_headings_paragraphs_and_fences_with_their_lines() -> None:
    text = "# Title #\n\nText on\ntwo lines.\n## Sub\n```py\ncode\n\nmore\n```\nafter\n"
    assert blocks(text) == [
        Block("heading", 0, 1, "# Title #", level=1, title="Title"),
        Block("paragraph", 2, 4, "Text on\ntwo lines."),
        Block("heading", 4, 5, "## Sub", level=2, title="Sub"),
        Block("code", 5, 10, "```py\ncode\n\nmore\n```", info="py"),
        Block("paragraph", 10, 11, "after"),
    ]


def test_an_unclosed_fence_runs_to_the_end() -> None:
    assert kinds("~~~~\ncode\n~~~\n\n# not a heading") == [("code", 0, 5)]


def test_setext_headings_are_paragraphs() -> None:
    assert kinds("Title\n=====\n\nSub\n---") == [("paragraph", 0, 2), ("paragraph", 3, 5)]


def test_indented_lines_are_paragraphs_and_never_headings_or_fences() -> None:
    assert kinds("    code\n\n    # not a heading\n    ```") == [
        ("paragraph", 0, 1),
        ("paragraph", 2, 4),
    ]
    assert kinds("\t# tab\n   # three spaces") == [("paragraph", 0, 1), ("heading", 1, 2)]


def test_lists_quotes_rules_and_html_neither_interrupt_nor_span_blank_lines() -> None:
    text = "Text\n- item\n> quote\n---\n<div>\n\n</div>\n\n1. one\n\n2. two"
    assert kinds(text) == [
        ("paragraph", 0, 5),
        ("paragraph", 6, 7),
        ("paragraph", 8, 9),
        ("paragraph", 10, 11),
    ]


def test_link_reference_definitions_are_text() -> None:
    assert kinds("[a]: http://example.org\n[^1]: http://x") == [("paragraph", 0, 2)]


def test_fences_open_with_any_info_and_close_with_any_tail() -> None:
    assert kinds("```a`b\nx\n```` tail\ny") == [("code", 0, 3), ("paragraph", 3, 4)]
    assert kinds("````\nx\n```\ny") == [("code", 0, 4)]  # shorter: not the end


def test_blank_is_what_str_strip_empties_and_a_lone_cr_ends_no_line() -> None:
    assert kinds("a\n\u00a0\u2003\nb\rc\n#\r\n# h\r") == [
        ("paragraph", 0, 1),
        ("paragraph", 2, 4),
        ("heading", 4, 5),
    ]


def test_a_title_is_as_written_in_the_text() -> None:
    (heading,) = blocks("## Titre \r")
    assert heading.title == "Titre \r"  # the caller strips it; no U+FFFD from the parse


# The chunker's block reading before indexer.corpus.markdown, kept as the oracle.
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_HEADING = re.compile(r"^ {0,3}#{1,6}(?:[ \t]|$)")


def regex_blocks(body: str) -> list[tuple[int, int, str]]:
    """(first line, last line + 1, kind) of each block, kind heading, code or text."""
    out: list[tuple[int, int, str]] = []
    group: list[int] = []
    fence: str | None = None
    lines = body.split("\n")

    def close(kind: str) -> None:
        if group:
            out.append((group[0], group[-1] + 1, kind))
            group.clear()

    for n, text in enumerate(lines):
        m = _FENCE.match(text)
        if fence is not None:
            group.append(n)
            if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence):
                close("code")
                fence = None
        elif m:
            close("text")
            fence = m.group(1)
            group.append(n)
        elif not text.strip():
            close("text")
        elif _HEADING.match(text):
            close("text")
            group.append(n)
            close("heading")
        else:
            group.append(n)
    close("code" if fence is not None else "text")
    return out


PIECES = [
    "", " ", "    ", "\t", "\u00a0", "\r", "#", "##", "# ", "#\t", "####### ", " #", "```",
    "````", "~~~", "```py", "`", "- ", "1. ", "> ", "| a |", "[^1]: ", "[a]: /u", "<div>",
    "<!--", "---", "===", "***", "mot", "Fin. Suite", "\\#",
]  # fmt: skip
LINE = st.lists(st.sampled_from(PIECES), max_size=4).map("".join)


def _tight(body: str, found: list[tuple[int, int, str]]) -> list[tuple[int, int, str]]:
    """Without trailing blank lines (an unclosed fence's), and without blank blocks."""
    lines = body.split("\n")
    out = []
    for start, end, kind in found:
        while end > start and not lines[end - 1].strip():
            end -= 1
        if end > start:
            out.append((start, end, kind))
    return out


@settings(max_examples=400, deadline=None)
@given(st.lists(LINE, max_size=14).map("\n".join))
def test_the_blocks_are_those_the_chunker_read_with_regexes(body: str) -> None:
    kind = {"heading": "heading", "code": "code", "paragraph": "text"}
    mine = _tight(body, [(b.start, b.end, kind[b.kind]) for b in blocks(body)])
    assert mine == _tight(body, regex_blocks(body))
    assert len(_blocks(body)) == len(mine)
