"""Rows before vectors (issue 41): a job's rows are searchable while it embeds, its vectors
land slice by slice, and an interrupted job resumes from the vectors already loaded.

The job is the real one (hooks.job.BranchIndexer with the server's indexer) on a real
PostgreSQL; the embedder is the recording fake (tests.fakes), sliced small by the
`vector_slice` setting's RowLoader argument so that a small book has several slices.
The real model and a real worker killed with SIGKILL: tests/test_e2e_landing.py.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pygit2
import pytest

from gitserver.repos import RepoStore
from hooks.commitback import GitCommitBack
from hooks.gitsource import GitTreeSource
from hooks.job import BranchIndexer
from hooks.loading import RowLoader
from hooks.reuse import ReusingIndexer, pipeline_index
from indexer.corpus.cache import IndexCaches
from indexer.corpus.sidecar_format import loads
from indexer.providers.embedders.base import EmbedderError
from search.engine import search
from search.options import QueryVector, SearchOptions
from tests.fakes import FakeEmbedder
from tests.gitserver_support import commit_all, git
from tests.plugins.corpus import make_small_corpus

SLICE = 8  # texts per slice: the small corpus's ~100 texts make a dozen


def job(store: Any, pool: Any, embedder: Any, summarizer: Any) -> BranchIndexer:
    """The job as glossator.worker composes it, in slices of SLICE texts."""
    return BranchIndexer(
        store,
        ReusingIndexer(embedder, summarizer, pipeline_index()),
        RowLoader(pool, vector_slice=SLICE),
        GitCommitBack(store),
    )


def pushed(tmp: Path, name: str = "livre") -> tuple[RepoStore, pygit2.Repository]:
    store = RepoStore(tmp / "repos", data_dir=tmp / "data")
    bare = store.create(name)
    work = make_small_corpus(tmp / "work", 3)
    git("init", "-q", "-b", "main", str(work))
    commit_all(work, "corpus")
    git("push", "-q", str(bare), "main", cwd=work, env={"GLOSSATOR_DATA_DIR": str(tmp)})
    return store, pygit2.Repository(str(bare))


def assert_rows_are_the_sidecars(pool: Any, repo: pygit2.Repository, commit: str) -> None:
    """Every row is its committed sidecar's chunk: text and vector (the sidecar's rounding)."""
    source = GitTreeSource.at(repo, commit)
    want: dict[tuple[str, int], tuple[str, list[float] | None]] = {}
    for path in source.paths():
        if path.endswith(".md.jsonl"):
            sidecar = loads(path, source.read(path))
            for c in sidecar.chunks:
                want[(path.removesuffix(".jsonl"), c.chunk_index)] = (c.text, c.embedding)
    with pool.connection() as conn:
        rows = conn.execute(
            "SELECT source_file, chunk_index, content, embedding::real[] FROM hierarchical_content_nodes"
            " WHERE repository = 'livre' AND branch = 'main'"
        ).fetchall()
        assert conn.execute("SELECT count(*) FROM vector_coverage").fetchone() == (0,)
    assert len(rows) == len(want)
    for path, index, text, vector in rows:
        text_want, vector_want = want[(path, index)]
        assert text == text_want
        assert (vector is None) == (vector_want is None), (path, index)
        if vector is not None:
            assert np.allclose(np.asarray(vector), vector_want, atol=1e-6), (path, index)


def ids_now(conn: Any) -> set[int]:
    return {
        i
        for (i,) in conn.execute(
            "SELECT id FROM hierarchical_content_nodes WHERE repository = 'livre'"
        ).fetchall()
    }


def test_rows_are_searchable_while_the_vectors_land(
    tmp_path: Path, database: Any, fake_summarizer: Any
) -> None:
    seen: list[dict[str, Any]] = []
    pool = database.pool

    class Watching(FakeEmbedder):
        """Searches from inside the job, at its third slice of vectors."""

        def embed_batch(self, texts: list[str], input_type: Any) -> Any:
            calls = sum(kind == "document" for _, kind in self.history)
            if input_type == "document" and calls == 2:
                with pool.connection() as conn:
                    # the vectors land beside the rows (landed_vectors), never on them
                    with_vectors, without, on_rows = conn.execute(
                        "SELECT count(l.node_id), count(*) - count(l.node_id), count(embedding)"
                        " FROM hierarchical_content_nodes h LEFT JOIN landed_vectors l"
                        " ON l.node_id = h.id WHERE h.repository = 'livre'"
                    ).fetchone()
                    ids = ids_now(conn)
                    text, model, vector = conn.execute(
                        "SELECT h.content, l.model, l.vector::real[] FROM landed_vectors l"
                        " JOIN hierarchical_content_nodes h ON h.id = l.node_id"
                        " WHERE h.level = 0 ORDER BY l.node_id LIMIT 1"
                    ).fetchone()
                response = search(pool, "abondance", SearchOptions(mode="bm25", repository="livre"))
                # the vector stage finds a vector that landed: its own row ranks first
                nearest = search(
                    pool,
                    "abondance",
                    SearchOptions(mode="vector", repository="livre"),
                    query_vector=QueryVector(model, len(vector), vector),
                )
                seen.append({"landed text": text, "nearest": nearest})
                seen.append(
                    {
                        "with": with_vectors,
                        "without": without,
                        "on_rows": on_rows,
                        "response": response,
                        "ids": ids,
                    }
                )
            return super().embed_batch(texts, input_type)

    store, repo = pushed(tmp_path)
    embedder = Watching(max_batch_size=SLICE)
    outcome = job(store, pool, embedder, fake_summarizer).run("livre", "main")

    landed, during = seen
    assert landed["nearest"].hits[0].text == landed["landed text"]
    assert during["with"] == 2 * SLICE and during["without"] > 0  # two slices landed
    assert during["on_rows"] == 0  # the rows pg_search indexes were not written again
    response = during["response"]
    assert response.hits, "keyword search answers before the vectors are in"
    [index] = response.index
    assert index.vectors is not None and 0 < index.vectors < 1
    assert index.note.startswith(f"vectors {int(index.vectors * 100)} %, keyword search complete")
    # after the job: the rows are the committed sidecars', nothing embedded twice
    texts = embedder.embedded_texts
    assert len(texts) == len(set(texts)) == outcome.embedded
    assert_rows_are_the_sidecars(pool, repo, outcome.indexed or "")
    with pool.connection() as conn:
        # the final load wrote the rows whole, vectors in, and emptied the side table
        assert not ids_now(conn) & during["ids"]
        assert conn.execute("SELECT count(*) FROM landed_vectors").fetchone() == (0,)
    after = search(pool, "abondance", SearchOptions(mode="bm25", repository="livre"))
    assert after.index[0].vectors is None and "vectors" not in after.index[0].note


class Failing(FakeEmbedder):
    """Fails (not a transient error) at its `at`-th document request, as a crash would."""

    def __init__(self, at: int) -> None:
        super().__init__(max_batch_size=SLICE)
        self.at = at

    def embed_batch(self, texts: list[str], input_type: Any) -> Any:
        if input_type == "document" and sum(k == "document" for _, k in self.history) == self.at:
            self.history.append((list(texts), "query"))  # not counted as embedded
            raise EmbedderError("the worker died here")
        return super().embed_batch(texts, input_type)


def test_an_interrupted_job_resumes_from_the_vectors_loaded(
    tmp_path: Path, database: Any, fake_summarizer: Any
) -> None:
    pool = database.pool
    store, repo = pushed(tmp_path / "a")
    first = Failing(at=5)
    with pytest.raises(EmbedderError):
        job(store, pool, first, fake_summarizer).run("livre", "main")
    done_before = first.embedded_texts
    assert len(done_before) == 5 * SLICE
    with pool.connection() as conn:
        total, missing = conn.execute(
            "SELECT total, missing FROM vector_coverage WHERE repository = 'livre'"
        ).fetchone()
    assert total - missing == 5 * SLICE  # what landed stays, and search says how much

    # a new process (nothing kept in memory): it takes back what landed
    second = FakeEmbedder(max_batch_size=SLICE)
    outcome = job(store, pool, second, fake_summarizer).run("livre", "main")
    assert outcome.resumed == 5 * SLICE
    assert not set(second.embedded_texts) & set(done_before)
    assert len(second.embedded_texts) == len(set(second.embedded_texts))
    assert_rows_are_the_sidecars(pool, repo, outcome.indexed or "")

    # the sidecars committed are those of an indexing never interrupted (the same bytes)
    whole = FakeEmbedder(max_batch_size=SLICE)
    expected = pipeline_index()(
        GitTreeSource.at(repo, outcome.tip or ""),
        embedder=whole,
        summarizer=fake_summarizer,
        caches=IndexCaches(),
    )
    assert len(whole.embedded_texts) == len(done_before) + len(second.embedded_texts)
    committed = GitTreeSource.at(repo, outcome.indexed or "")
    sidecars = {p: d for p, d in expected.changes.items() if p.endswith(".jsonl")}
    assert sidecars
    for path, data in sidecars.items():
        got = committed.read(path).split(b"\n")
        for a, b in zip(got, data.split(b"\n"), strict=True):
            assert a == b, path
