"""Where a plain-text book's lines break: verse (the author's breaks, kept) or prose
hard-wrapped at some width (the wrap's breaks, joined).

The evidence is the breaks themselves, not one book's width: a wrap breaks a line only
where the next word would not fit (`forced_breaks`); verse breaks where the author did.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from indexer.importers.etext import CENTRED_INDENT


class _Lines(Protocol):
    lines: list[str]  # as in the file (indentation kept)


@dataclass(frozen=True)
class Measure:
    """The book's line measure: its wrap width (the 90th percentile of its line lengths)
    and whether it is a book of verse, whose every line break is the author's."""

    width: int
    verse: bool = False
    wrap: int = 0  # the width its prose was wrapped at (forced_breaks), 0 if unknown


def measure(paras: Sequence[_Lines]) -> Measure:
    lengths = sorted(len(x.rstrip()) for p in paras for x in p.lines)
    if not lengths:
        return Measure(72)
    width = max(lengths[int(len(lengths) * 0.9)], 20)
    wrap = wrap_width(paras)
    verse = width < VERSE_WIDTH and forced_breaks(paras, wrap) < FORCED_PROSE
    return Measure(width, verse, wrap)


# Only a book whose lines run this short (its 90th percentile) may be a book of verse:
# Gutenberg wraps prose at 70-75 columns and a printed page's measure holds 60-70
# characters. Under it the line breaks decide (forced_breaks): prose hard-wrapped at 40-55
# columns is joined, verse kept. A wider book's verse is told paragraph by paragraph
# (is_verse). (The Divina Commedia, Gutenberg #1012: 41.)
VERSE_WIDTH = 55
# The share of forced line breaks under which a short-lined book is verse. Measured on
# real texts: hard-wrapped prose 0.93-1.00 (Kafka's Verwandlung, Dom Casmurro, Professor
# Unrat, Pride and Prejudice and Frankenstein, each rewrapped at 40, 45 and 50 columns as
# an editor's greedy wrap does; 0.91-0.98 as found at 70-73 columns but Frankenstein
# 0.65, whose wrap width varies), the Divina Commedia's tercets 0.38 (fixture, width 39).
FORCED_PROSE = 0.6


def wrap_width(paras: Sequence[_Lines]) -> int:
    """The width prose was wrapped at: the 90th percentile of the lengths of the lines
    that are not centred, without their indentation (a centred title page's lines would
    widen it)."""
    lengths = sorted(len(x.strip()) for p in paras for x in p.lines if not _centred(x))
    return lengths[int(len(lengths) * 0.9)] if lengths else 0


def forced_breaks(paras: Sequence[_Lines], wrap: int) -> float:
    """The share of line breaks inside paragraphs that the width forced: the next line's
    first word would not have fitted on the line (or the line ends in a hyphen). A
    hard-wrapped paragraph breaks only where forced; verse breaks where the author did."""
    forced = total = 0
    for p in paras:
        for line, nxt in itertools.pairwise(x.strip() for x in p.lines):
            total += 1
            forced += _forced(line, nxt, wrap)
    return forced / total if total else 1.0


def _forced(line: str, nxt: str, wrap: int) -> bool:
    word = nxt.split()[0] if nxt else ""
    return line.endswith("-") or len(line) + 1 + len(word) > wrap


def _centred(line: str) -> bool:
    return len(line) - len(line.lstrip()) >= CENTRED_INDENT


def is_verse(para: _Lines, book: Measure) -> bool:
    """Lines the author broke: every paragraph of a book of verse; lines all well short of
    the book's width, or all in capitals; else not when the wrap forced every break;
    else short enough and indented in turn (a stanza) or each starting in capitals (verse,
    an address), or indented in turn with no break forced."""
    lines = para.lines
    if len(lines) < 2:
        return False
    if book.verse:
        return True
    width = book.width
    inner = [len(x.strip()) for x in lines[:-1]]
    if max(inner) < 0.7 * width:
        return True
    indents = {len(x) - len(x.lstrip()) for x in lines}
    capitals = all(x.strip()[:1].isupper() for x in lines)
    stripped = [x.strip() for x in lines]
    forced = [_forced(a, b, book.wrap) for a, b in itertools.pairwise(stripped)]
    if all(not any(c.islower() for c in x) for x in stripped):
        return True  # every line in capitals: an imprint, an address, not running prose
    if book.wrap and all(forced):
        # every break where the wrap put it: prose, even if each line starts with a
        # capital (Pride and Prejudice's `…by Mrs. Hurst and` / `Elizabeth herself.`)
        return False
    if max(inner) < 0.9 * width and (len(indents) > 1 or capitals):
        return True
    # lines indented in turn none of whose breaks the width forced: a quoted stanza as
    # long as the prose around it (Professor Unrat's two lines of Schiller at 50 columns)
    return len(indents) > 1 and book.wrap > 0 and not any(forced)
