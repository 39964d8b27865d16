"""Which branch a request reads when it names none (issue 23, item 2): each repository's
default branch (search.scope), and what the answer says when a book is elsewhere."""

from __future__ import annotations

import psycopg
import pytest

from indexer.corpus.source import MemorySource
from search import SearchOptions, UnknownFile, UnknownRepository, get_node, outline, search
from search.mcp.views import NO_HIT, NOTHING_READ, search_view
from search.nodes import get_children, get_parent
from store.tips import default_branches, record_heads
from store.tree import sync_tree
from tests.store_sidecars import sidecar_for

pytestmark = pytest.mark.pg_backends("postgres")


def _book(work: str, text: str) -> MemorySource:
    files: dict[str, bytes] = {}
    summary = f"corpus/{work}/summary.md"
    body = f"The book {work}.\n"
    page = f"---\ntitle: {work}\nlang: en\n---\n" + body
    files[summary] = page.encode()
    files[summary + ".jsonl"] = sidecar_for(
        summary, page, heading_path=f"{work} (summary)", parent=None, level=3,
        node_type="work_summary", body=body, body_line=5, lang="en",
    )  # fmt: skip
    source = f"corpus/{work}/chapter-01/source.md"
    files[source] = text.encode()
    files[source + ".jsonl"] = sidecar_for(
        source, text, heading_path=f"{work} > Chapter 1", parent=summary, level=0,
        node_type="source", lang="en",
    )  # fmt: skip
    return MemorySource(files)


@pytest.fixture
def two_books(conn: psycopg.Connection) -> psycopg.Connection:
    """`gardens` on main, `prince` on master, no HEAD recorded (loaded from folders)."""
    roses = "Roses want the morning sun; pruned in March, they flower in June.\n"
    feared = "It is much safer for a prince to be feared than loved.\n"
    assert sync_tree(conn, repository="gardens", source=_book("gardens", roses)).ok
    assert sync_tree(conn, repository="prince", branch="master", source=_book("prince", feared)).ok
    conn.commit()
    return conn


def test_each_repository_defaults_to_its_head_else_its_only_branch(two_books):
    found = default_branches(two_books, "main")
    assert {r: (d.branch, d.source) for r, d in found.items()} == {
        "gardens": ("main", "only branch"),
        "prince": ("master", "only branch"),
    }
    record_heads(two_books, {"prince": "master", "elsewhere": "trunk"})
    found = default_branches(two_books, "main")
    assert (found["prince"].branch, found["prince"].source) == ("master", "HEAD")
    assert found["elsewhere"].indexed == ()  # a HEAD, no rows yet: nothing to read


def test_a_plain_search_reads_each_repository_on_its_default(two_books):
    answer = search(two_books, "prince feared loved", SearchOptions(mode="bm25"))
    assert [(h.citation.repository, h.citation.branch) for h in answer.hits][:1] == [
        ("prince", "master")
    ]
    assert answer.notes == [] and answer.branch == "default"
    assert {(f.repository, f.branch) for f in answer.index} == {("prince", "master")}
    assert search(two_books, "roses", SearchOptions(mode="bm25")).hits[0].citation.branch == "main"
    node = get_node(two_books, "corpus/prince/chapter-01/source.md")
    assert node.branch == "master"
    assert [w.repository for w in outline(two_books).works] == ["gardens", "prince"]


def test_a_book_without_rows_on_its_default_branch_is_said(two_books):
    # HEAD names main (repo create's), the rows are on master: the answer says where they are
    record_heads(two_books, {"prince": "main"})
    answer = search(two_books, "prince feared loved", SearchOptions(mode="bm25"))
    assert all(h.citation.repository == "gardens" for h in answer.hits)
    assert answer.notes == [
        "prince has no indexed rows on its default branch 'main'; it has rows on 'master': "
        "pass branch='master' to read them"
    ]
    with pytest.raises(UnknownFile, match="pass branch='master'"):
        get_node(two_books, "corpus/prince/chapter-01/source.md")
    assert get_node(two_books, "corpus/prince/chapter-01/source.md", branch="master")
    assert outline(two_books).notes == answer.notes


def test_a_branch_asked_that_has_no_rows_says_which_have(two_books):
    answer = search(two_books, "roses", SearchOptions(mode="bm25", branch="draft"))
    assert answer.hits == [] and answer.branch == "draft"
    assert answer.notes == [
        "nothing found on branch 'draft'; other branches have rows: gardens@main, "
        "prince@master (pass branch to read one)"
    ]
    found = search(two_books, "prince feared", SearchOptions(mode="bm25", branch="master"))
    assert {h.citation.repository for h in found.hits} == {"prince"}


def test_a_named_repository_hears_nothing_of_the_others(two_books):
    # mybook's own answer never calls another repository "another branch" (issue 37, item 3)
    answer = search(two_books, "zeppelin", SearchOptions(mode="bm25", repository="gardens"))
    assert answer.hits == [] and answer.notes == []
    with pytest.raises(UnknownFile) as missing:
        get_node(two_books, "corpus/gardens/chapter-09/source.md", repository="gardens")
    assert "prince" not in str(missing.value) and "other branches" not in str(missing.value)
    # its own other branch is news, and named as a branch of it
    drafted = _book("gardens", "Zeppelins drift over the rose beds.\n")
    assert sync_tree(two_books, repository="gardens", branch="draft", source=drafted).ok
    two_books.commit()
    answer = search(two_books, "tulips", SearchOptions(mode="bm25", repository="gardens"))
    assert answer.notes == [
        "nothing found on branch 'main'; other branches have rows: gardens@draft "
        "(pass branch to read one)"
    ]


def test_an_empty_server_and_a_book_not_indexed_yet_are_said_as_such(conn):
    answer = search(conn, "anything", SearchOptions(mode="bm25"))
    assert answer.hits == [] and answer.index == []
    assert answer.notes == [
        "nothing is indexed here: push a corpus to this server and let it index"
    ]
    record_heads(conn, {"mybook": "main"})  # what a push records before its job runs
    conn.commit()
    answer = search(conn, "anything", SearchOptions(mode="bm25"))
    assert answer.notes == [
        "nothing is indexed here yet: mybook is pushed, not indexed yet "
        "(`glossator status` shows the indexing job, or what failed)"
    ]
    with pytest.raises(UnknownRepository, match="'mybook' is pushed but not indexed yet"):
        search(conn, "anything", SearchOptions(mode="bm25", repository="mybook"))
    # an agent reading the MCP page is not told to rephrase: other words cannot help
    text, data = search_view(answer)
    assert NOTHING_READ in text and NO_HIT not in text and "mybook is pushed" in text
    assert data["notes"] == answer.notes


def test_a_book_not_indexed_yet_beside_one_that_is(two_books):
    record_heads(two_books, {"mybook": "main"})
    two_books.commit()
    assert search(two_books, "roses", SearchOptions(mode="bm25")).notes == []  # found: no noise
    assert search(two_books, "zeppelin", SearchOptions(mode="bm25")).notes == [
        "mybook is pushed, not indexed yet (`glossator status` shows the indexing job, "
        "or what failed)"
    ]


def test_a_caller_reads_only_its_repositories(two_books):
    """`readable` (the caller's repositories, core.access) bounds the scope, so every query
    built from it: another repository's rows are never ranked, shown, or named."""
    only = frozenset({"gardens"})
    answer = search(two_books, "prince feared loved", SearchOptions(mode="bm25", readable=only))
    assert all(h.citation.repository == "gardens" for h in answer.hits)
    assert {f.repository for f in answer.index} <= {"gardens"} and answer.notes == []
    roses = search(two_books, "roses", SearchOptions(mode="bm25", readable=only))
    assert roses.hits and roses.hits[0].citation.repository == "gardens"
    with pytest.raises(UnknownRepository) as refused:
        search(two_books, "feared", SearchOptions(mode="bm25", repository="prince", readable=only))
    assert "prince" in str(refused.value) and "indexed repositories: gardens" in str(refused.value)
    with pytest.raises(UnknownFile):
        get_node(two_books, "corpus/prince/chapter-01/source.md", readable=only)
    with pytest.raises(UnknownFile):
        get_parent(two_books, "corpus/prince/chapter-01/source.md", readable=only)
    with pytest.raises(UnknownRepository):
        get_children(two_books, "corpus/prince/summary.md", repository="prince", readable=only)
    assert [w.repository for w in outline(two_books, readable=only).works] == ["gardens"]
    # nothing readable: nothing found, nothing named; to this caller nothing is indexed
    none = search(two_books, "roses", SearchOptions(mode="bm25", readable=frozenset()))
    assert none.hits == [] and none.index == []
    assert none.notes == ["nothing is indexed here: push a corpus to this server and let it index"]
    assert outline(two_books, readable=frozenset()).works == []
