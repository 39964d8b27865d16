"""Paths are found under either Unicode normalization (issue 23, item 9).

git keeps a path's bytes as pushed: a folder named in NFD (macOS, some tools) is stored
`e` + U+0301, while every client types `é` (NFC). The node tools and a search's work
filter find it under both spellings."""

from __future__ import annotations

import unicodedata

import psycopg
import pytest

from indexer.corpus.source import MemorySource
from search import SearchOptions, get_children, get_node, get_parent, outline, search
from store.tree import sync_tree
from tests.store_sidecars import sidecar_for

pytestmark = pytest.mark.pg_backends("postgres")

REPOSITORY = "unicode"
WORK_NFC = "économie-générale"
CHAPTER_NFC = "chapitre-01-élévation"


def nfd(text: str) -> str:
    return unicodedata.normalize("NFD", text)


def _book(work: str, chapter: str) -> MemorySource:
    """One work, one chapter; folder names as given (NFD here: what the push stored)."""
    files: dict[str, bytes] = {}
    summary = f"corpus/{work}/summary.md"
    body = "Un traité des échanges.\n"
    text = "---\ntitle: Économie générale\nlang: fr\n---\n" + body
    files[summary] = text.encode()
    files[summary + ".jsonl"] = sidecar_for(
        summary,
        text,
        heading_path="Économie générale (résumé)",
        parent=None,
        level=3,
        node_type="work_summary",
        body=body,
        body_line=5,
    )
    source = f"corpus/{work}/{chapter}/source.md"
    text = "La valeur naît de l'échange des services.\n\nLe prix suit la rareté du blé.\n"
    files[source] = text.encode()
    files[source + ".jsonl"] = sidecar_for(
        source,
        text,
        heading_path="Économie générale > Élévation",
        parent=summary,
        level=0,
        node_type="source",
    )
    return MemorySource(files)


@pytest.fixture
def nfd_book(conn: psycopg.Connection) -> str:
    """The book loaded with NFD folder names; returns its source.md's NFC spelling."""
    assert sync_tree(conn, repository=REPOSITORY, source=_book(nfd(WORK_NFC), nfd(CHAPTER_NFC))).ok
    conn.commit()
    stored = conn.execute(
        "SELECT DISTINCT source_file FROM hierarchical_content_nodes"
        " WHERE repository = %s AND level = 0",
        (REPOSITORY,),
    ).fetchall()
    assert stored == [(nfd(f"corpus/{WORK_NFC}/{CHAPTER_NFC}/source.md"),)]  # kept as pushed
    return f"corpus/{WORK_NFC}/{CHAPTER_NFC}/source.md"


def test_node_tools_find_an_nfd_path_under_its_nfc_spelling(conn, nfd_book):
    assert not nfd_book.isascii() and nfd_book == unicodedata.normalize("NFC", nfd_book)
    node = get_node(conn, nfd_book, repository=REPOSITORY)
    assert node.source_file == nfd(nfd_book) and "échange" in node.text
    assert get_node(conn, nfd_book).source_file == nfd(nfd_book)  # without a repository too
    assert get_node(conn, nfd_book, 1).chunks[0].text.startswith("Le prix")
    # the suffix form a search page's header leaves (relative to its folder)
    assert get_node(conn, f"{CHAPTER_NFC}/source.md").source_file == nfd(nfd_book)
    parent = get_parent(conn, nfd_book, repository=REPOSITORY)
    assert parent is not None and parent.source_file == nfd(f"corpus/{WORK_NFC}/summary.md")
    children = get_children(conn, f"corpus/{WORK_NFC}/summary.md", repository=REPOSITORY)
    assert [c.source_file for c in children] == [nfd(nfd_book)]
    tree = outline(conn, REPOSITORY, WORK_NFC)
    assert [w.title for w in tree.works] == ["Économie générale"]


def test_a_path_mixing_both_forms_is_found(conn, nfd_book):
    # the work typed in NFC, the chapter folder in NFD: neither whole form is stored
    mixed = f"corpus/{WORK_NFC}/{nfd(CHAPTER_NFC)}/source.md"
    assert mixed not in (nfd_book, nfd(nfd_book))
    assert get_node(conn, mixed, repository=REPOSITORY).source_file == nfd(nfd_book)


def test_a_search_filtered_on_the_nfc_work_finds_its_rows(conn, nfd_book):
    found = search(conn, "rareté du blé", SearchOptions(mode="bm25", work=WORK_NFC, k=3))
    assert found.hits and found.hits[0].citation.source_file == nfd(nfd_book)
