"""Verse kept as verse, hard-wrapped prose joined, whatever the width (issue 22, part 1):
the decision rests on where the lines break (indexer/importers/wrapping.py), measured on the real
texts in tests/fixtures/ (SOURCES.md), not on one book's width.

No e-text of prose wrapped under 55 columns is among the stored texts found so far, so the
narrow prose here is a real text rewrapped as an editor's greedy wrap does (Python's
textwrap), every other line left as it is; the verse is the Divina Commedia as found.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from indexer.importers.text import decode, read_text
from indexer.importers.tree import Work

FIXTURES = Path(__file__).parent / "fixtures"
KAFKA = FIXTURES / "etexts" / "kafka-die-verwandlung-pg22367-excerpt.txt"
UNRAT = FIXTURES / "etexts" / "mann-professor-unrat-excerpt.txt"
CASMURRO = FIXTURES / "etexts" / "machado-dom-casmurro-excerpt.txt"
DANTE = FIXTURES / "etexts" / "dante-divina-commedia-pg1012-excerpt.txt"
PRIDE = FIXTURES / "gutenberg" / "pg1342.txt"


def _rewrap(text: str, width: int) -> str:
    """Each paragraph of wrapped prose (two lines or more, none indented, one over 60
    characters) wrapped again at `width`; every other line as it was."""
    out: list[str] = []
    block: list[str] = []

    def flush() -> None:
        prose = len(block) >= 2 and max(len(x) for x in block) > 60
        if prose and not any(x[:1].isspace() for x in block):
            joined = " ".join(x.strip() for x in block)
            out.extend(textwrap.wrap(joined, width, break_long_words=False, break_on_hyphens=False))
        else:
            out.extend(block)
        block.clear()

    for line in text.split("\n"):
        if line.strip():
            block.append(line)
        else:
            flush()
            out.append(line)
    flush()
    return "\n".join(out)


def _tree(work: Work) -> tuple:
    return (
        work.title,
        work.author,
        [(p.title, [(s.number, s.title, s.body) for s in p.sections]) for p in work.parts],
        [(s.number, s.title, s.body) for _, s in work.pieces],
    )


@pytest.mark.parametrize("width", [40, 45, 50])
@pytest.mark.parametrize("book", [KAFKA, CASMURRO, PRIDE], ids=["kafka", "casmurro", "pride"])
def test_prose_wrapped_under_55_columns_is_joined_as_at_72(
    tmp_path: Path, book: Path, width: int
) -> None:
    """The same book wrapped at 40-50 columns imports into the same tree, every paragraph
    joined. Before, a book whose lines ran under 55 columns kept every line break (it was
    taken for verse)."""
    text, _ = decode(str(book), book.read_bytes())
    src = tmp_path / f"{book.stem}-{width}.txt"
    src.write_text(_rewrap(text, width), encoding="utf-8")
    assert _tree(read_text(src)) == _tree(read_text(book))


def test_a_quoted_stanza_in_narrow_prose_keeps_its_lines(tmp_path: Path) -> None:
    """Professor Unrat at 50 columns: its prose joined, and the two lines of Schiller on
    the blackboard, indented in turn and as long as the prose, kept as two lines (none of
    their breaks was forced by the width)."""
    text, _ = decode(str(UNRAT), UNRAT.read_bytes())
    src = tmp_path / "unrat-50.txt"
    src.write_text(_rewrap(text, 50), encoding="utf-8")
    work = read_text(src)
    assert _tree(work) == _tree(read_text(UNRAT))
    body = work.sections()[0].body
    assert "tatst;\nGib wohl acht, Dauphin, ob ich sie dir nenne!«" in body


def test_a_book_of_verse_keeps_its_lines() -> None:
    """The Divina Commedia (41 columns): a third of its line breaks are where a wrap would
    put them, so it is verse; every tercet keeps its lines."""
    work = read_text(DANTE)
    first = work.parts[0].sections[0].body.split("\n\n")[0]
    assert first.split("\n") == [
        "Nel mezzo del cammin di nostra vita",
        "mi ritrovai per una selva oscura,",
        "ché la diritta via era smarrita.",
    ]


def test_lines_each_starting_in_capitals_but_broken_by_the_wrap_are_prose() -> None:
    """Pride and Prejudice as found (72 columns): a two-line paragraph whose lines both
    start with a capital was kept as verse; its break is where the wrap put it."""
    work = read_text(PRIDE)
    text = "".join(s.body for s in work.sections())
    assert "met from another walk by Mrs. Hurst and Elizabeth herself." in text
    assert "he said to Elizabeth,--" in text


def test_a_spaced_dash_at_a_line_end_keeps_its_space() -> None:
    """Kafka's ` -- ` at the end of a line was glued to the next word (`war --Samsa`);
    a dash glued to its word (`Elizabeth,--`) still glues the next line to it."""
    body = read_text(KAFKA).sections()[0].body
    assert "ausgebreitet war -- Samsa war Reisender --, hing das Bild" in body
