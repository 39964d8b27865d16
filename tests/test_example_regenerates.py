"""The committed example regenerates to itself: every sidecar, every summary.

This pins what the indexer makes of Markdown (chunk text, line spans, token
counts, summaries' sentences) so that a change of parser or of chunking that
would re-embed or re-cite a library shows up here, naming the file and field.

No model runs: the embedder replays the committed vectors by embedding input (the
chunk's text as the recipe presents it). A regenerated chunk whose input is not
in the committed sidecars gets no committed vector and so differs; a chunk whose
input is unchanged has the same vector, since vectors are a function of the
input and the model.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from indexer.corpus.layout import read_corpus
from indexer.corpus.sidecar_format import Chunk, loads
from indexer.corpus.source import DirectorySource
from indexer.indexing.recipes import embedding_input
from indexer.indexing.sidecars import build
from indexer.indexing.summaries import generate
from indexer.providers.embedders.base import Answer, BaseEmbedder, InputType
from indexer.providers.summarizers.extractive import ExtractiveSummarizer

CHUNK_FIELDS = ("chunk_index", "content_token_count", "text", "line_start", "line_end")


class ReplayEmbedder(BaseEmbedder):
    """The committed sidecars' model, answering each input with its committed vector."""

    max_retries = 0

    def __init__(self, model: str, dimension: int, vectors: dict[str, Any]) -> None:
        super().__init__(model, dimension)
        self.vectors = vectors
        self.unknown: list[str] = []

    def embed_batch(self, texts: list[str], input_type: InputType) -> Answer:
        out = []
        for text in texts:
            if text not in self.vectors:
                self.unknown.append(text)
            out.append(self.vectors.get(text, [0.0] * self.dimension))
        return Answer(out)


def _committed(source: DirectorySource) -> dict[str, Any]:
    return {
        p: loads(p, source.read(p))
        for p in source.paths()
        if p.endswith(".md.jsonl") and p.startswith("corpus/")
    }


def _replay(committed: dict[str, Any]) -> ReplayEmbedder:
    heads = {(s.manifest.embedding_model, s.manifest.dimension) for s in committed.values()}
    assert len(heads) == 1, heads
    (model, dimension) = heads.pop()
    vectors = {
        embedding_input(s.manifest.extra["embedding_recipe"], s.manifest.heading_path, c.text): (
            c.embedding
        )
        for s in committed.values()
        for c in s.chunks
    }
    return ReplayEmbedder(model, dimension, vectors)


def _differences(path: str, old: Chunk, new: Chunk) -> list[str]:
    out = [
        f"{path} chunk {old.chunk_index}: {f} {getattr(old, f)!r} → {getattr(new, f)!r}"
        for f in CHUNK_FIELDS
        if getattr(old, f) != getattr(new, f)
    ]
    if old.embedding != new.embedding:
        out.append(f"{path} chunk {old.chunk_index}: embedding differs")
    return out


def test_every_sidecar_of_the_example_regenerates_field_by_field(example_dir: Path) -> None:
    source = DirectorySource(example_dir)
    committed = _committed(source)
    embedder = _replay(committed)
    corpus = read_corpus(source)
    assert not corpus.problems, corpus.problems

    result = build(corpus, source, embedder, all=True)

    assert not result.problems, result.problems
    written = {p: loads(p, d) for p, d in result.changes.items() if d is not None}
    assert sorted(written) == sorted(committed)
    assert not [p for p, d in result.changes.items() if d is None], "nothing is deleted"
    diffs: list[str] = []
    for path, old in committed.items():
        new = written[path]
        if old.manifest != new.manifest:
            diffs.append(f"{path}: manifest {old.manifest} → {new.manifest}")
        if len(old.chunks) != len(new.chunks):
            diffs.append(f"{path}: {len(old.chunks)} chunks → {len(new.chunks)}")
        for a, b in zip(old.chunks, new.chunks, strict=False):
            diffs.extend(_differences(path, a, b))
        # byte for byte too: the file git would see
        if not diffs and source.read(path) != result.changes[path]:
            diffs.append(f"{path}: same records, other bytes")
    assert not diffs, "\n".join(diffs[:20])
    assert not embedder.unknown


class _Rerun(ExtractiveSummarizer):
    """The extractive summarizer under another model name, so every summary is due."""

    model = ExtractiveSummarizer.model + "-rerun"


def test_every_summary_of_the_example_regenerates_to_its_bytes(example_dir: Path) -> None:
    source = DirectorySource(example_dir)
    corpus = read_corpus(source)
    summaries = sorted(p for p in source.paths() if p.endswith("/summary.md"))

    result = generate(corpus, source, _Rerun())

    assert not result.problems, result.problems
    written = {p: d for p, d in result.changes.items() if d is not None}
    assert sorted(written) == summaries
    diffs = []
    for path in summaries:
        new = written[path].decode("utf-8").replace(_Rerun.model, ExtractiveSummarizer.model, 1)
        if new != source.read(path).decode("utf-8"):
            diffs.append(path)
    assert not diffs, f"{len(diffs)} summaries differ, first {diffs[:5]}"
