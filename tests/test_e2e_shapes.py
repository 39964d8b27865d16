"""End to end, the shapes of book of issue 13: a book without parts (Frankenstein, imported
from its Gutenberg text), a book with parts and a liminary piece at the work level (the
example's shape); each pushed with the real git client to `glossator serve`, indexed,
loaded, searched, climbed and outlined. And the pushes refused at pre-receive: no
`corpus/` folder, two paths equal under NFC.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import psycopg
import pytest

from indexer.importers.text import read_text
from indexer.importers.writer import import_works
from search.nodes import get_parent, outline
from store.db import configure_connection
from tests.fakes import FakeEmbedder
from tests.gitserver_support import ServeProcess, commit_all, git, init_work
from tests.plugins.corpus import WORK, make_small_corpus
from tests.plugins.search import search
from tests.plugins.serve import TOKEN, create_repo

pytestmark = pytest.mark.slow

GUTENBERG = Path(__file__).parent / "fixtures" / "gutenberg"
FRANKENSTEIN = "corpus/frankenstein-or-the-modern-prometheus"


def _push_and_index(server: ServeProcess, work: Path, repo: str) -> None:
    create_repo(server, repo)
    git("init", "-q", "-b", "main", str(work))
    commit_all(work, "the book")
    git("push", "-q", server.url(repo, token=TOKEN), "main", cwd=work)
    [job] = server.wait_idle(repo, timeout=300)
    assert job["status"] == "done", job
    git("pull", "-q", "--ff-only", server.url(repo), "main", cwd=work)


def _rows(db_url: str, repo: str) -> dict[str, tuple[int, str | None, str]]:
    """source_file → (level, parent_source_file, heading_path)."""
    with psycopg.connect(db_url) as conn:
        found = conn.execute(
            "SELECT DISTINCT source_file, level, parent_source_file, heading_path"
            " FROM hierarchical_content_nodes WHERE repository = %s AND branch = 'main'",
            (repo,),
        ).fetchall()
    return {f: (level, parent, path) for f, level, parent, path in found}


def test_flat_book_and_book_with_parts_end_to_end(
    server: ServeProcess, db_url: str, tmp_path: Path
) -> None:
    # a book without parts, from its Gutenberg text: four letters and the first two chapters
    flat = tmp_path / "frankenstein"
    work = read_text(GUTENBERG / "pg84.txt")
    work.pieces = work.pieces[:6]
    import_works(flat, [work])
    _push_and_index(server, flat, "flat")
    rows = _rows(db_url, "flat")
    assert {level for level, _, _ in rows.values()} == {0, 1, 3}  # no level 2
    chapter = f"{FRANKENSTEIN}/05-chapter-1"
    assert rows[f"{chapter}/source.md"] == (
        0,
        f"{chapter}/summary.md",
        "Frankenstein; Or, The Modern Prometheus > Chapter 1",
    )
    assert rows[f"{chapter}/summary.md"] == (
        1,
        f"{FRANKENSTEIN}/summary.md",
        "Frankenstein; Or, The Modern Prometheus > Chapter 1 (summary)",
    )
    assert rows[f"{FRANKENSTEIN}/01-letter-1/source.md"][2].endswith(" > Letter 1")
    assert (
        rows[f"{FRANKENSTEIN}/summary.md"][2] == "Frankenstein; Or, The Modern Prometheus (summary)"
    )
    assert not any("Chapitre" in p or "résumé" in p for _, _, p in rows.values())  # English

    # a book with parts, and a liminary piece directly under the work
    parts = make_small_corpus(tmp_path / "parts", 2)
    preface = parts / WORK / "00-avertissement" / "source.md"
    preface.parent.mkdir()
    preface.write_text(
        "---\ntitle: Avertissement\n---\nCe petit volume réunit des articles sur la liberté "
        "des échanges et la protection douanière.\n",
        encoding="utf-8",
    )
    _push_and_index(server, parts, "parts")
    prow = _rows(db_url, "parts")
    assert {level for level, _, _ in prow.values()} == {0, 1, 2, 3}
    assert prow[f"{WORK}/00-avertissement/summary.md"][1:] == (
        f"{WORK}/summary.md",
        "Sophismes économiques > Avertissement (résumé)",
    )

    embedder = FakeEmbedder(384)  # the server's embedder (GLOSSATOR_EMBEDDER=fake)
    with psycopg.connect(db_url) as conn:
        configure_connection(conn)
        response = search(
            conn, "Genevese family syndics", repository="flat", k=3, embedder=embedder
        )
        assert response.hits[0].citation.source_file == f"{chapter}/source.md"
        assert response.hits[0].citation.heading_path.endswith(" > Chapter 1")
        response = search(
            conn,
            "liberté des échanges protection douanière",
            repository="parts",
            k=3,
            embedder=embedder,
            mode="bm25",
        )
        assert response.hits[0].citation.source_file == f"{WORK}/00-avertissement/source.md"
        # climb: paragraph → chapter summary → the work's summary (no part in between)
        summary = get_parent(conn, f"{chapter}/source.md", repository="flat")
        assert summary is not None and summary.source_file == f"{chapter}/summary.md"
        top = get_parent(conn, summary.source_file, repository="flat")
        assert top is not None and top.source_file == f"{FRANKENSTEIN}/summary.md"
        (book,) = outline(conn, "flat").works
        assert [c.kind for c in book.children] == ["chapter"] * 6
        assert [c.title for c in book.children][:5] == [
            "Letter 1", "Letter 2", "Letter 3", "Letter 4", "Chapter 1",
        ]  # fmt: skip
        (bastiat,) = outline(conn, "parts").works
        assert [c.kind for c in bastiat.children] == ["chapter", "part"]


def test_pushes_refused_at_pre_receive(server: ServeProcess, tmp_path: Path) -> None:
    create_repo(server, "shapes")
    no_corpus = init_work(tmp_path / "plain", {"book.md": "# A book\n\n## Chapter 1\n\nText.\n"})
    refused = git("push", server.url("shapes", token=TOKEN), "main", cwd=no_corpus, check=False)
    assert refused.returncode != 0
    assert "remote: glossator: corpus/: this branch has no corpus/ folder" in refused.stderr
    assert "corpus/<work>/<chapter>/source.md" in refused.stderr

    text = "---\ntitle: Café\nnumber: 1\n---\nDu texte.\n"
    nfc, nfd = "caf\u00e9", "cafe\u0301"
    files = {
        "corpus/livre/summary.md": "---\ntitle: Livre\n---\n",
        f"corpus/livre/{nfc}/source.md": text,
        f"corpus/livre/{nfd}/source.md": text,
    }
    twins = init_work(tmp_path / "twins", files)
    refused = git("push", server.url("shapes", token=TOKEN), "main", cwd=twins, check=False)
    assert refused.returncode != 0
    assert "same name under Unicode normalization" in refused.stderr
    assert "caf\\xe9" in refused.stderr and "cafe\\u0301" in refused.stderr
    assert server.jobs("shapes") == []
    shutil.rmtree(twins / "corpus" / "livre" / nfd)
    commit_all(twins, "one café")
    git("push", "-q", server.url("shapes", token=TOKEN), "main", cwd=twins)
