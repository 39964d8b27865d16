"""Sidecars of the example corpus for the store's tests, built without the indexer pipeline.

The real builder (indexer.indexing.sidecars) embeds with a model and writes summaries;
the store only needs valid sidecars of real French text, so this reads the
corpus, chunks each file with the indexer's own chunker, writes a stand-in
summary (its chapter's first paragraph) where a chapter has none, and gives
each chunk the fake embedder's hashed vector.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from functools import cache
from pathlib import Path
from typing import Any

import psycopg

from indexer.corpus.chunking import chunk_markdown
from indexer.corpus.layout import read_corpus
from indexer.corpus.sidecar_format import Chunk, Manifest, Sidecar, dumps, file_hash
from indexer.corpus.source import DirectorySource, MemorySource
from indexer.embedders.fake import hashed_vector
from store.db import configure_connection
from store.keyword import K1, B
from store.tree import sync_tree

EXAMPLE_DIR = Path(__file__).resolve().parents[1] / "example"
MODEL = "fake/hash-32"
DIM = 32
PETITION = (
    "corpus/sophismes-economiques/serie-1-premiere-serie/"
    "chapitre-07-petition-des-fabricants-de-chandelles-etc/source.md"
)


def sidecar_for(
    path: str,
    text: str,
    *,
    heading_path: str,
    parent: str | None,
    level: int,
    node_type: str,
    body: str | None = None,
    body_line: int = 1,
    model: str | None = MODEL,
    dimension: int = DIM,
    lang: str = "fr",
) -> bytes:
    chunks = []
    for i, c in enumerate(chunk_markdown(text if body is None else body, body_line, 400)):
        vector = hashed_vector(c.text, dimension) if model else None
        chunks.append(Chunk(i, c.token_count, c.text, vector, c.line_start, c.line_end))
    manifest = Manifest(
        source_file=path,
        source_file_hash=file_hash(text.encode("utf-8")),
        parent_source_file=parent,
        heading_path=heading_path,
        level=level,
        node_type=node_type,
        chunk_count=len(chunks),
        embedding_model=model,
        dimension=dimension if model else None,
        extra={"work": path.split("/")[1], "lang": lang},
    )
    return dumps(Sidecar(manifest, chunks))


def example_source(
    example_dir: Path, *, model: str | None = MODEL, dimension: int = DIM
) -> MemorySource:
    """The example corpus (every .md) with a sidecar beside each, in memory."""
    corpus = read_corpus(DirectorySource(example_dir))
    files: dict[str, bytes] = {}
    for node in corpus.nodes.values():
        text, body, line = node.text, node.body, node.body_line
        if not node.exists:  # a chapter summary not written yet: its first paragraph stands in
            first = next(p for p in corpus.nodes[_source_of(node.path)].body.split("\n\n") if p)
            text = body = first.strip() + "\n"
            line = 1
        files[node.path] = text.encode("utf-8")
        files[node.path + ".jsonl"] = sidecar_for(
            node.path,
            text,
            body=body,
            body_line=line,
            heading_path=node.heading_path,
            parent=node.parent_source_file,
            level=node.level,
            node_type=node.node_type,
            model=model,
            dimension=dimension,
        )
    return MemorySource(files)


def _source_of(summary_path: str) -> str:
    return summary_path.rsplit("/", 1)[0] + "/source.md"


@cache
def example_files(model: str | None = MODEL, dimension: int = DIM) -> dict[str, bytes]:
    """`example_source` of the committed example, computed once per session."""
    return dict(example_source(EXAMPLE_DIR, model=model, dimension=dimension).files)


def example() -> MemorySource:
    """A fresh, editable MemorySource of the example corpus and its sidecars."""
    return MemorySource(example_files())


def load_template(pg_server: Any, repository: str = "bastiat") -> str:
    """A database holding the example corpus (branch main) to clone per test; its name."""
    name = pg_server.create_database()
    with psycopg.connect(pg_server.url(name)) as c:
        configure_connection(c)
        result = sync_tree(c, repository=repository, source=example())
        assert result.ok, result.problems
    return name


@contextmanager
def clone(pg_server: Any, template: str) -> Iterator[psycopg.Connection]:
    """A connection (pgvector registered) to a fresh copy of `template`, dropped after."""
    name = pg_server.create_database(template)
    c = psycopg.connect(pg_server.url(name))
    configure_connection(c)
    try:
        yield c
    finally:
        c.close()
        pg_server.drop_database(name)


def okapi_bm25(docs: Mapping[Any, Counter[str]], terms: Iterable[str]) -> dict[Any, float]:
    """Okapi BM25 (k1, b and Lucene's idf as store.keyword) of each document with a
    positive score, from each document's lexeme counts: the tests' independent check.
    A document's length is its number of lexeme occurrences."""
    terms = set(terms)
    lengths = {key: sum(c.values()) for key, c in docs.items()}
    n, avgdl = len(docs), sum(lengths.values()) / len(docs)
    df = {t: sum(1 for d in docs.values() if t in d) for t in terms}
    scores = {}
    for key, tfs in docs.items():
        s = sum(
            math.log(1 + (n - df[t] + 0.5) / (df[t] + 0.5))
            * tfs[t]
            * (K1 + 1)
            / (tfs[t] + K1 * (1 - B + B * lengths[key] / avgdl))
            for t in terms
            if tfs.get(t)
        )
        if s > 0:
            scores[key] = s
    return scores
