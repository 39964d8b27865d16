"""The chunker and token counts: paragraphs, Markdown blocks, splits, line spans."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from indexer.corpus.chunking import TextChunk, chunk_markdown
from indexer.corpus.tokens import TOKENIZER, count_tokens, encoder


def test_counts_cl100k_offline() -> None:
    assert TOKENIZER == "cl100k_base"
    # known cl100k ids: "hello world" → [15339, 1917]
    assert encoder().encode_ordinary("hello world") == [15339, 1917]
    assert count_tokens("") == 0
    assert count_tokens("<|endoftext|>") > 1  # a special token's text is plain text here


def texts(chunks: list[TextChunk]) -> list[str]:
    return [c.text for c in chunks]


def test_one_chunk_per_paragraph_with_file_line_numbers() -> None:
    body = "\nPremier paragraphe,\nsur deux lignes.\n\n\nSecond.\n"
    chunks = chunk_markdown(body, body_line=7, max_tokens=400)
    assert texts(chunks) == ["Premier paragraphe,\nsur deux lignes.", "Second."]
    assert [(c.line_start, c.line_end) for c in chunks] == [(8, 9), (12, 12)]
    assert chunks[0].token_count == count_tokens(chunks[0].text)


def test_markdown_blocks_are_kept_whole() -> None:
    body = (
        "## Un titre\n"
        "Texte collé au titre.\n"
        "\n"
        "- un\n"
        "  suite de un\n"
        "- deux\n"
        "\n"
        "| a | b |\n"
        "|---|---|\n"
        "| 1 | 2 |\n"
        "\n"
        "> cité\n"
        ">\n"
        "> encore\n"
        "\n"
        "[^1]: Une note.\n"
        "    Sa suite.\n"
        "\n"
        "```\n"
        "code\n"
        "\n"
        "toujours du code\n"
        "```\n"
    )
    assert texts(chunk_markdown(body, 1, 400)) == [
        "## Un titre",
        "Texte collé au titre.",
        "- un\n  suite de un\n- deux",
        "| a | b |\n|---|---|\n| 1 | 2 |",
        "> cité\n>\n> encore",
        "[^1]: Une note.\n    Sa suite.",
        "```\ncode\n\ntoujours du code\n```",
    ]


def test_long_paragraph_splits_at_sentences() -> None:
    sentences = [f"Voici la phrase numéro {i}, qui parle du commerce." for i in range(30)]
    body = " ".join(sentences)
    chunks = chunk_markdown(body, 1, 60)
    assert len(chunks) > 1
    for c in chunks:
        assert c.token_count <= 60
        assert c.text.endswith(".")  # every cut fell after a full stop
    assert " ".join(texts(chunks)) == body


def test_french_closing_guillemet_stays_with_its_sentence() -> None:
    body = "« Messieurs, vous êtes dans la bonne voie. » " * 20
    for c in chunk_markdown(body.strip(), 1, 40):
        assert c.text.startswith("«") and c.text.endswith("»")


def test_sentence_longer_than_threshold_splits_at_words() -> None:
    body = " ".join(["libre-échange"] * 200)
    chunks = chunk_markdown(body, 1, 25)
    assert all(c.token_count <= 25 for c in chunks)
    assert " ".join(texts(chunks)) == body


def test_long_list_splits_between_items_not_mid_line() -> None:
    items = [f"- article {i} : la protection du travail national" for i in range(40)]
    chunks = chunk_markdown("\n".join(items), 10, 50)
    assert len(chunks) > 1
    lines = [line for c in chunks for line in c.text.split("\n")]
    assert lines == items
    assert chunks[0].line_start == 10 and chunks[-1].line_end == 49
    assert all(c.token_count <= 50 for c in chunks)


def test_long_table_splits_between_rows() -> None:
    rows = ["| pays | droit |", "|---|---|"] + [f"| pays {i} | {i} % |" for i in range(60)]
    chunks = chunk_markdown("\n".join(rows), 1, 40)
    assert [line for c in chunks for line in c.text.split("\n")] == rows


def test_a_single_overlong_word_is_cut_into_runs_of_characters() -> None:
    word = "x" * 3000
    chunks = chunk_markdown(f"avant {word} après", 1, 20)
    found = texts(chunks)
    assert found[0] == "avant" and found[-1] == "après" and "".join(found[1:-1]) == word
    assert len(found) > 3 and all(c.token_count <= 20 for c in chunks)


def test_empty_body_has_no_chunks() -> None:
    assert chunk_markdown("\n\n  \n", 3, 400) == []
    with pytest.raises(ValueError):
        chunk_markdown("x", 1, 0)


# -- properties ---------------------------------------------------------------

_word = st.text(
    alphabet=st.sampled_from(list("abcdeéèàçôxyz’«»-")), min_size=1, max_size=14
) | st.sampled_from(["-", "*", "1.", "|", ">", "#", "[^1]:", "```", "M.", "etc."])
_sep = st.sampled_from([" ", " ", " ", ". ", "! ", " ? ", ", ", "\n", "\n\n", "\n- ", "\n| "])


@st.composite
def markdown_bodies(draw: st.DrawFn) -> str:
    parts = draw(st.lists(st.tuples(_word, _sep), min_size=0, max_size=120))
    return "".join(w + s for w, s in parts)


def _assert_covers(body: str, chunks: list[TextChunk]) -> None:
    """Each chunk is the next slice of the body; only whitespace lies between them."""
    pos = 0
    for c in chunks:
        assert c.text and c.text == c.text.strip()
        at = body.find(c.text, pos)
        assert at >= 0, "chunk text is not the next slice of the body"
        assert body[pos:at].strip() == "", "text was lost between chunks"
        pos = at + len(c.text)
    assert body[pos:].strip() == "", "text was lost at the end"


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(body=markdown_bodies(), max_tokens=st.integers(min_value=1, max_value=60))
def test_chunks_cover_the_body_in_order_within_the_threshold(body: str, max_tokens: int) -> None:
    chunks = chunk_markdown(body, 1, max_tokens)
    _assert_covers(body, chunks)
    for c in chunks:
        assert c.token_count == count_tokens(c.text)
        # over the threshold only when one character alone exceeds it
        assert c.token_count <= max_tokens or len(c.text) == 1
        assert 1 <= c.line_start <= c.line_end <= body.count("\n") + 1


@settings(max_examples=50, deadline=None)
@given(paragraphs=st.lists(markdown_bodies(), min_size=1, max_size=5))
def test_line_spans_point_at_the_chunk_text(paragraphs: list[str]) -> None:
    body = "\n\n".join(paragraphs)
    lines = body.split("\n")
    for c in chunk_markdown(body, 5, 30):
        span = "\n".join(lines[c.line_start - 5 : c.line_end - 5 + 1])
        assert c.text in span


def test_a_300_kb_paragraph_without_punctuation_or_spaces_is_split() -> None:
    """Issue 14: a 300 KB one-line chapter gave one chunk no model takes, and its rows
    were refused. Words without punctuation split at words; a run without any space
    splits into runs of characters; nothing is lost and every chunk fits."""
    words = " ".join(f"mot{i % 997}" for i in range(60_000))[:300_000]
    blob = "".join(chr(0x4E00 + (i * 7919) % 20000) for i in range(100_000))  # no spaces
    body = f"{words}\n\n{blob}\n"
    chunks = chunk_markdown(body, 1, 512)
    _assert_covers(body, chunks)
    assert len(chunks) > 100 and all(c.token_count <= 512 for c in chunks)
    assert "".join(c.text for c in chunks if c.line_start == 3) == blob


def test_packing_joins_short_paragraphs_and_keeps_headings_with_what_follows() -> None:
    lines = ["SGANARELLE. — Non.", "", "MARTINE. — Si.", "", "SGANARELLE. — Non, vous dis-je.", ""]
    body = "\n".join(lines * 2) + "\n## Scène II\n\nVALÈRE. — Monsieur, un mot.\n"
    plain = chunk_markdown(body, body_line=1, max_tokens=400)
    packed = chunk_markdown(body, body_line=1, max_tokens=400, pack=(60, 200))
    assert len(plain) == 8 and len(packed) == 3
    first = packed[0]
    # a packed chunk is the body's slice: its line span holds every paragraph it packs
    assert first.text == "\n".join(lines[:5])
    assert (first.line_start, first.line_end) == (1, 5)
    assert len(first.text) >= 60
    # the heading starts a chunk and takes the paragraph after it, never the one before
    assert packed[-1].text == "## Scène II\n\nVALÈRE. — Monsieur, un mot."
    assert not any("Scène" in c.text for c in packed[:-1])
    # the concatenation still gives back every paragraph, in order
    assert [t for c in packed for t in c.text.split("\n\n")] == [p.text for p in plain]


def test_packing_never_passes_its_maximum_nor_max_tokens() -> None:
    body = "\n\n".join(f"Réplique numéro {i}, assez brève." for i in range(60))
    for pack in ((100, 150), (400, 1200)):
        chunks = chunk_markdown(body, body_line=1, max_tokens=40, pack=pack)
        assert all(len(c.text) <= pack[1] and c.token_count <= 40 for c in chunks)
        assert " ".join(c.text for c in chunks).split() == body.split()
    # a last chunk under the minimum joins the one before
    chunks = chunk_markdown(body, body_line=1, max_tokens=4000, pack=(100, 10_000))
    assert all(len(c.text) >= 100 for c in chunks)
