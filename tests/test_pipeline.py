"""The whole indexer (`indexer.indexing.run.index`) and `glossator index`, with fakes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from glossator.cli import main
from indexer.corpus import frontmatter
from indexer.corpus.cache import IndexCaches
from indexer.corpus.layout import read_corpus
from indexer.corpus.source import DirectorySource, MemorySource
from indexer.indexing.run import index
from indexer.providers.summarizers.extractive import ExtractiveSummarizer
from tests.fakes import FakeEmbedder, FakeSummarizer
from tests.plugins.corpus import FIRST_SERIES, WORK, make_small_corpus

LIST_MD = Path(__file__).parent / "fixtures/list/list.md"
LIST_WORK = "corpus/systeme-national-d-economie-politique"


def memory(root: Path) -> MemorySource:
    """The corpus as blobs: what the git worker hands the pipeline (no work tree)."""
    return MemorySource(
        {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()}
    )


def test_index_writes_summaries_then_their_sidecars(tmp_path: Path) -> None:
    source = memory(make_small_corpus(tmp_path / "c", 2))
    embedder = FakeEmbedder()
    result = index(source, embedder=embedder, summarizer=ExtractiveSummarizer())
    assert not result.failed, result.problems
    order = list(result.changes)
    summaries = [p for p in order if p.endswith("summary.md")]
    assert len(summaries) == 4 and result.stats.summaries_generated == 4
    for path in summaries:  # every summary gets its sidecar, after it
        assert order.index(path) < order.index(path + ".jsonl")
    sidecar = result.changes[f"{WORK}/summary.md.jsonl"] or b""
    manifest = json.loads(sidecar.split(b"\n", 1)[0])
    assert manifest["heading_path"] == "Sophismes économiques (résumé)"
    assert manifest["level"] == 3 and manifest["node_type"] == "work_summary"
    summary_text = (result.changes[f"{WORK}/summary.md"] or b"").decode()
    assert manifest["source_file_hash"].startswith("sha256:")
    chunk = json.loads(sidecar.split(b"\n")[1])
    assert chunk["text"] in summary_text
    assert result.stats.sidecars.files == 4 + 2  # 4 summaries and 2 chapter sources
    source.apply(result.changes)
    again = index(source, embedder=embedder, summarizer=ExtractiveSummarizer())
    assert len(again.changes) == 0 and again.stats.summaries_generated == 0
    assert "0 summaries generated (0 calls), 0 files written" in again.stats.line()


def test_one_chapter_edit_reindexes_three_summaries(tmp_path: Path) -> None:
    source = memory(make_small_corpus(tmp_path / "c", 3))
    embedder = FakeEmbedder()
    source.apply(index(source, embedder=embedder, summarizer=FakeSummarizer()).changes)
    chapter = next(p for p in source.paths() if p.endswith("abondance-disette/source.md"))
    source.files[chapter] += b"\nUn paragraphe de plus, pour voir.\n"
    fake = FakeSummarizer()
    result = index(source, embedder=embedder, summarizer=fake)
    assert len(fake.history) == 3
    written = sorted(p for p in result.changes if p.endswith(".jsonl"))
    folder = chapter.rsplit("/", 1)[0]
    assert written == sorted(
        [
            f"{folder}/source.md.jsonl",
            f"{folder}/summary.md.jsonl",
            f"{FIRST_SERIES}/summary.md.jsonl",
            f"{WORK}/summary.md.jsonl",
        ]
    )


def test_dry_run_changes_nothing(tmp_path: Path) -> None:
    source = memory(make_small_corpus(tmp_path / "c", 1))
    fake = FakeSummarizer()
    result = index(source, embedder=FakeEmbedder(), summarizer=fake, dry_run=True)
    assert len(result.changes) == 0 and fake.history == []
    # the chapter's summary is missing; the part's and work's (committed, extractive) are
    # due because the provider differs
    reasons = [p.reason for p in result.plan]
    assert reasons[0] == "missing" and len(reasons) == 3
    assert all(r.startswith("provider changed (extractive:") for r in reasons[1:])


@pytest.fixture
def list_corpus(tmp_path: Path) -> Path:
    dest = tmp_path / "list"
    imported = CliRunner().invoke(
        main, ["corpus", "import", str(LIST_MD), str(dest), "--skip-front-matter"]
    )
    assert imported.exit_code == 0, imported.output
    return dest


def test_list_shaped_work_end_to_end(list_corpus: Path) -> None:
    source = DirectorySource(list_corpus)
    fake = FakeSummarizer()
    result = index(source, embedder=FakeEmbedder(), summarizer=fake)
    assert not result.failed, result.problems
    source.apply(result.changes)
    # 10 chapters + 2 pieces, 4 livres, 1 work
    assert [len([r for r in fake.history if r.level == n]) for n in (1, 2, 3)] == [12, 4, 1]
    work = next(r for r in fake.history if r.level == 3)
    corpus = read_corpus(source)
    labels = [i.label for i in work.inputs]
    assert labels == [
        "Préface",
        "Introduction",
        "Livre premier — L'histoire",
        "Livre deuxième — La théorie",
        "Livre troisième — Les systèmes",
        "Livre quatrième — La politique",
    ]
    assert [corpus.nodes[i.path].level for i in work.inputs] == [1, 1, 2, 2, 2, 2]
    doc = frontmatter.read("x", (list_corpus / LIST_WORK / "summary.md").read_bytes())
    assert doc.meta["author"] == "Frédéric List" and doc.meta["generated"] is True
    preface = next(n for n in corpus.nodes.values() if n.level == 1 and n.title == "Préface")
    assert preface.parent_source_file == f"{LIST_WORK}/summary.md"
    assert (list_corpus / (preface.path + ".jsonl")).is_file()
    assert corpus.problems == []


def test_index_command(tmp_path: Path, fake_summarizer: FakeSummarizer) -> None:
    root = make_small_corpus(tmp_path / "c", 1)
    env = {"GLOSSATOR_SUMMARIZER": "fake", "GLOSSATOR_EMBEDDER": "fake"}
    result = CliRunner().invoke(main, ["index", str(root)], env=env)
    assert result.exit_code == 0, result.output
    assert "3 summaries generated (3 calls), 4 files written" in result.output
    assert (root / FIRST_SERIES / "summary.md.jsonl").is_file()
    fake_summarizer.fail_paths.add(f"{FIRST_SERIES}/00-introduction/summary.md")
    with (root / FIRST_SERIES / "00-introduction" / "source.md").open("a") as f:
        f.write("\nEncore.\n")
    failed = CliRunner().invoke(main, ["index", str(root)], env=env)
    assert failed.exit_code == 1
    assert f"{FIRST_SERIES}/00-introduction/summary.md: fake failure" in failed.output


class BlobSource(MemorySource):
    """Blobs with content ids, as the git worker's source has: counts every read."""

    def __init__(self, files: dict[str, bytes]) -> None:
        super().__init__(files)
        self.reads: list[str] = []

    def read(self, path: str) -> bytes:
        self.reads.append(path)
        return super().read(path)

    def blob_id(self, path: str) -> str | None:
        import hashlib

        data = self.files.get(path)
        return hashlib.sha1(b"salt-for-this-test" + data).hexdigest() if data is not None else None


def test_a_second_job_reads_only_what_changed(tmp_path: Path) -> None:
    """Content-addressed caches (indexer.corpus.cache): the cost of a job follows the change,
    when the caller keeps the caches from job to job (as the worker's BranchIndexer does)."""
    source = BlobSource(memory(make_small_corpus(tmp_path / "c", 4)).files)
    embedder, summarizer = FakeEmbedder(), FakeSummarizer()
    caches = IndexCaches()
    source.apply(index(source, embedder=embedder, summarizer=summarizer, caches=caches).changes)
    index(source, embedder=embedder, summarizer=summarizer, caches=caches)  # every blob seen

    chapter = next(p for p in source.paths() if p.endswith("abondance-disette/source.md"))
    source.files[chapter] += b"\nUn paragraphe de plus, pour voir.\n"
    source.reads.clear()
    result = index(source, embedder=embedder, summarizer=summarizer, caches=caches)
    assert result.stats.sidecars.embedded >= 1
    folder = chapter.rsplit("/", 1)[0]
    others = [p for p in source.reads if not p.startswith(folder + "/")]
    # nothing of the three unchanged chapters is read again
    assert not [p for p in others if "/chapitre-" in p or "/00-" in p], others
    assert f"{folder}/source.md" in source.reads

    # no module keeps them: a job without its owner's caches reads the unchanged too
    source.reads.clear()
    index(source, embedder=embedder, summarizer=summarizer)
    assert [p for p in source.reads if "/chapitre-" in p and not p.startswith(folder + "/")]
