"""get_node, get_parent, get_children and outline over the loaded chapters."""

from __future__ import annotations

import pytest

from search import (
    BadQuery,
    UnknownFile,
    UnknownRepository,
    get_children,
    get_node,
    get_parent,
    outline,
)
from tests.plugins.corpus import FIRST_SERIES, SECOND_SERIES, WORK
from tests.plugins.search import HACHES, PETITION, REPOSITORY, SEARCH_CHAPTERS

# the store and search suite runs on both keyword backends (tests/plugins/db.py)
pytestmark = pytest.mark.pg_backends("postgres", "pg_search")

TEXT = f"{PETITION}/source.md"
SUMMARY = f"{PETITION}/summary.md"


def test_get_node_returns_every_chunk_in_order(search_pool):
    node = get_node(search_pool, TEXT)
    assert node.repository == REPOSITORY and node.level == 0 and node.node_type == "source"
    assert node.parent_source_file == SUMMARY
    assert [c.citation.chunk_index for c in node.chunks] == list(range(len(node.chunks)))
    assert "soleil" in node.text
    spans = [(c.citation.line_start, c.citation.line_end) for c in node.chunks]
    assert all(a <= b for a, b in spans) and spans == sorted(spans)


def test_get_node_one_chunk_with_context(search_pool):
    one = get_node(search_pool, TEXT, 3)
    assert [c.citation.chunk_index for c in one.chunks] == [3]
    around = get_node(search_pool, TEXT, 3, context=2)
    assert [c.citation.chunk_index for c in around.chunks] == [1, 2, 3, 4, 5]
    first = get_node(search_pool, TEXT, 0, context=1)
    assert [c.citation.chunk_index for c in first.chunks] == [0, 1]


def test_get_node_errors_say_what_to_do(search_pool):
    with pytest.raises(UnknownFile, match="chunk 999 does not exist"):
        get_node(search_pool, TEXT, 999)
    # the path without its corpus/<work>/<part>/ prefix: the one file it ends (21d462f)
    chapter = "chapitre-07-petition-des-fabricants-de-chandelles-etc/source.md"
    assert get_node(search_pool, chapter).source_file == TEXT
    with pytest.raises(UnknownFile, match=r"is not indexed.*did you mean"):
        get_node(search_pool, f"serie-9/{chapter}")  # a wrong prefix: the ones that end alike
    with pytest.raises(UnknownFile, match="use outline"):
        get_node(search_pool, "corpus/nowhere/at-all.md")
    with pytest.raises(UnknownRepository, match="no repository named 'other'"):
        get_node(search_pool, TEXT, repository="other")
    with pytest.raises(BadQuery, match="context must be"):
        get_node(search_pool, TEXT, 1, context=50)


def test_get_parent_climbs_to_the_work(search_pool):
    chapter = get_parent(search_pool, TEXT)
    assert chapter.source_file == SUMMARY and chapter.level == 1
    part = get_parent(search_pool, SUMMARY)
    assert part.source_file == f"{FIRST_SERIES}/summary.md" and part.level == 2
    work = get_parent(search_pool, part.source_file)
    assert work.source_file == f"{WORK}/summary.md" and work.level == 3
    assert get_parent(search_pool, work.source_file) is None


def test_get_children_descends_in_reading_order(search_pool):
    work = get_children(search_pool, f"{WORK}/summary.md")
    assert [n.source_file for n in work] == [
        f"{FIRST_SERIES}/summary.md",
        f"{SECOND_SERIES}/summary.md",
    ]
    chapters = get_children(search_pool, f"{FIRST_SERIES}/summary.md")
    expected = [f"{c}/summary.md" for c in SEARCH_CHAPTERS if c.startswith(FIRST_SERIES)]
    assert [n.source_file for n in chapters] == expected
    text = get_children(search_pool, SUMMARY)
    assert [n.source_file for n in text] == [TEXT]
    assert get_children(search_pool, TEXT) == []


def test_outline_works_parts_chapters(search_pool):
    o = outline(search_pool)
    assert o.branch == "main" and len(o.works) == 1
    work = o.works[0]
    assert work.kind == "work" and work.title == "Sophismes économiques"
    assert work.repository == REPOSITORY
    assert [p.kind for p in work.children] == ["part", "part"]
    first, second = work.children
    assert first.source_file == f"{FIRST_SERIES}/summary.md"
    chapters = first.children
    assert [c.kind for c in chapters] == ["chapter"] * len(chapters)
    petition = chapters[0]
    assert petition.title.startswith("Chapitre VII")
    assert petition.source_file == SUMMARY and petition.text_file == TEXT
    assert petition.summary_excerpt and len(petition.summary_excerpt) <= 310
    assert petition.paragraphs == len(get_node(search_pool, TEXT).chunks)
    assert [c.text_file for c in second.children] == [
        f"{c}/source.md" for c in SEARCH_CHAPTERS if c.startswith(SECOND_SERIES)
    ]
    assert second.children[0].text_file == f"{HACHES}/source.md"


def test_outline_filters_and_errors(search_pool):
    assert outline(search_pool, REPOSITORY, "sophismes-economiques").works[0].children
    with pytest.raises(UnknownFile, match="no work named 'nope'"):
        outline(search_pool, work="nope")
    with pytest.raises(UnknownRepository):
        outline(search_pool, "nope")
