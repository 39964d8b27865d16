"""The incremental plan and its propagation, with the recording fake (no model)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from indexer.corpus import frontmatter
from indexer.corpus.layout import read_corpus
from indexer.corpus.source import DirectorySource, OverlaySource
from indexer.indexing.summaries import SummaryResult, generate
from indexer.summaries.fake import FakeSummarizer
from tests.plugins.corpus import FIRST_SERIES, WORK, example_chapters, make_small_corpus

WORK_SUMMARY = f"{WORK}/summary.md"
PART_SUMMARY = f"{FIRST_SERIES}/summary.md"


def run(root: Path, summarizer: FakeSummarizer, *, dry_run: bool = False) -> SummaryResult:
    """What `glossator summarize` does: read, generate, apply (unless a dry run)."""
    source = DirectorySource(root)
    corpus = read_corpus(source)
    result = generate(corpus, OverlaySource(source, corpus.changes), summarizer, dry_run=dry_run)
    if not dry_run:
        source.apply(corpus.changes)
        source.apply(result.changes)
    return result


def chapter(n: int) -> str:
    return example_chapters()[n]


def edit_source(root: Path, folder: str, extra: str = "Un paragraphe ajouté pour le test.") -> None:
    path = root / folder / "source.md"
    path.write_text(path.read_text("utf-8") + f"\n{extra}\n", "utf-8")


@pytest.fixture
def corpus_root(tmp_path: Path) -> Path:
    root = make_small_corpus(tmp_path / "c", 3)
    run(root, FakeSummarizer())  # every summary generated once
    return root


def test_first_run_generates_every_summary_bottom_up(tmp_path: Path) -> None:
    root = make_small_corpus(tmp_path / "c", 3)
    fake = FakeSummarizer()
    result = run(root, fake)
    chapters = [f"{chapter(i)}/summary.md" for i in range(3)]
    assert fake.paths == [*chapters, PART_SUMMARY, WORK_SUMMARY]
    assert result.generated == fake.paths
    # chapters: missing; part and work: committed extractive summaries, provider changed
    assert {p.reason for p in result.plan} == {
        "missing",
        "provider changed (extractive:tfidf-centroid-mmr → fake:fake-1)",
    }
    assert not result.problems
    # level 2 is made from the level-1 summaries just written, not from stale text
    part_request = fake.history[3]
    assert [i.path for i in part_request.inputs] == chapters
    assert part_request.inputs[0].text.startswith("Résumé de « Sophismes économiques > ")


def test_unchanged_corpus_costs_no_call(corpus_root: Path) -> None:
    fake = FakeSummarizer()
    result = run(corpus_root, fake)
    assert fake.history == []
    assert result.plan == [] and result.changes == {} and result.calls == 0


def test_editing_one_chapter_regenerates_exactly_three_summaries(corpus_root: Path) -> None:
    edit_source(corpus_root, chapter(1))
    fake = FakeSummarizer()
    result = run(corpus_root, fake)
    assert fake.paths == [f"{chapter(1)}/summary.md", PART_SUMMARY, WORK_SUMMARY]
    assert [p.reason for p in result.plan] == ["inputs changed"] * 3
    assert result.calls == 3
    assert run(corpus_root, FakeSummarizer()).calls == 0


def test_dry_run_plans_the_propagation_without_calls(corpus_root: Path) -> None:
    edit_source(corpus_root, chapter(2))
    before = {p: p.read_bytes() for p in corpus_root.rglob("*.md")}
    fake = FakeSummarizer(price_per_token=1e-6)
    result = run(corpus_root, fake, dry_run=True)
    assert fake.history == []
    assert [(p.path, p.reason) for p in result.plan] == [
        (f"{chapter(2)}/summary.md", "inputs changed"),
        (PART_SUMMARY, f"{chapter(2)}/summary.md will be regenerated"),
        (WORK_SUMMARY, f"{PART_SUMMARY} will be regenerated"),
    ]
    assert result.usage.calls == 3 and result.usage.input_tokens > 1000
    assert result.usage.cost_usd > 0
    assert {p: p.read_bytes() for p in corpus_root.rglob("*.md")} == before


def test_summary_file_keeps_user_keys_and_records_generator(corpus_root: Path) -> None:
    doc = frontmatter.read(WORK_SUMMARY, (corpus_root / WORK_SUMMARY).read_bytes())
    assert doc.meta["author"] == "Frédéric Bastiat" and doc.meta["lang"] == "fr"
    assert doc.meta["title"] == "Sophismes économiques"
    assert doc.meta["generated"] is True
    gen = doc.meta["generator"]
    assert list(gen) == [
        "provider",
        "model",
        "algorithm",
        "prompt_sha256",
        "inputs_sha256",
        "input_tokens",
        "output_tokens",
        "cost_usd",
    ]
    assert (gen["provider"], gen["model"], gen["algorithm"]) == ("fake", "fake-1", "default")
    assert len(gen["prompt_sha256"]) == 64 and len(gen["inputs_sha256"]) == 64
    assert doc.body.startswith("Résumé de « Sophismes économiques »")
    chap = frontmatter.read("x", (corpus_root / chapter(1) / "summary.md").read_bytes())
    assert chap.meta["parent_source_file"] == PART_SUMMARY
    assert chap.meta["title"] == "Abondance, disette"


def test_hand_written_summary_is_kept_but_feeds_its_parent(corpus_root: Path) -> None:
    path = corpus_root / chapter(1) / "summary.md"
    hand = "---\ntitle: Abondance, disette\ngenerated: false\n---\nMon propre résumé.\n"
    path.write_text(hand, "utf-8")
    fake = FakeSummarizer()
    run(corpus_root, fake)
    # its text changed, so its part and work are regenerated from it; it is not
    assert fake.paths == [PART_SUMMARY, WORK_SUMMARY]
    assert fake.history[0].inputs[1].text == "Mon propre résumé."
    edit_source(corpus_root, chapter(1))
    fake = FakeSummarizer()
    run(corpus_root, fake)
    assert fake.history == []
    text = path.read_text("utf-8")
    assert "Mon propre résumé." in text and "generator" not in text


def test_deleting_and_adding_a_chapter_regenerate_its_ancestors(corpus_root: Path) -> None:
    shutil.rmtree(corpus_root / chapter(2))
    fake = FakeSummarizer()
    run(corpus_root, fake)
    assert fake.paths == [PART_SUMMARY, WORK_SUMMARY]
    assert len(fake.history[0].inputs) == 2

    make_small_corpus(corpus_root, 4)  # copies chapters 0-3 (2 and 3 new) again
    fake = FakeSummarizer()
    run(corpus_root, fake)
    assert fake.paths == [
        f"{chapter(2)}/summary.md",
        f"{chapter(3)}/summary.md",
        PART_SUMMARY,
        WORK_SUMMARY,
    ]


def test_part_without_summary_gets_one(tmp_path: Path) -> None:
    root = make_small_corpus(tmp_path / "c", 2)
    (root / PART_SUMMARY).unlink()
    result = run(root, FakeSummarizer())
    assert PART_SUMMARY in result.generated
    doc = frontmatter.read(PART_SUMMARY, (root / PART_SUMMARY).read_bytes())
    assert doc.meta["title"] == "Serie premiere serie"  # from the folder, until the user sets one
    assert doc.meta["parent_source_file"] == WORK_SUMMARY
    assert doc.meta["generated"] is True


def test_failed_summary_keeps_the_previous_one_and_blocks_its_ancestors(
    corpus_root: Path,
) -> None:
    target = f"{chapter(1)}/summary.md"
    before = (corpus_root / target).read_bytes()
    edit_source(corpus_root, chapter(1))
    edit_source(corpus_root, chapter(2))
    fake = FakeSummarizer(fail_paths={target})
    result = run(corpus_root, fake)
    assert (corpus_root / target).read_bytes() == before
    assert f"{chapter(2)}/summary.md" in result.generated  # the others go on
    assert PART_SUMMARY not in fake.paths and WORK_SUMMARY not in fake.paths
    errors = [p for p in result.problems if p.severity == "error"]
    assert [p.path for p in errors] == [target]
    assert "fake failure" in errors[0].message and "previous summary is kept" in errors[0].message
    warnings = {p.path: p.message for p in result.problems if p.severity == "warning"}
    assert f"its input {target} could not be summarised" in warnings[PART_SUMMARY]
    assert WORK_SUMMARY in warnings
    # once the model answers again, the part and work catch up
    fake = FakeSummarizer()
    run(corpus_root, fake)
    assert fake.paths == [target, PART_SUMMARY, WORK_SUMMARY]


def test_refusal_is_an_error_not_a_summary(corpus_root: Path) -> None:
    target = f"{chapter(0)}/summary.md"
    edit_source(corpus_root, chapter(0))
    result = run(corpus_root, FakeSummarizer(refuse_paths={target}))
    assert target not in result.generated
    assert any(p.path == target and "refused" in p.message for p in result.problems)


def test_unreadable_chapter_blocks_part_and_work(corpus_root: Path) -> None:
    (corpus_root / chapter(2) / "source.md").write_text("---\ntitle: Vide\n---\n\n", "utf-8")
    edit_source(corpus_root, chapter(1))
    fake = FakeSummarizer()
    result = run(corpus_root, fake)
    assert fake.paths == [f"{chapter(1)}/summary.md"]
    problems = {p.path: p for p in result.problems}
    assert "empty source" in problems[PART_SUMMARY].message
    assert problems[PART_SUMMARY].severity == "warning"
    assert WORK_SUMMARY in problems


def test_provider_or_prompt_change_regenerates(corpus_root: Path) -> None:
    class Other(FakeSummarizer):
        model = "fake-2"

    result = run(corpus_root, Other(), dry_run=True)
    assert len(result.plan) == 5
    assert result.plan[0].reason == "provider changed (fake:fake-1 → fake:fake-2)"

    (corpus_root / "prompts").mkdir()
    (corpus_root / "prompts" / "2.md").write_text("Résumez la série en trois phrases.\n", "utf-8")
    fake = FakeSummarizer()
    result = run(corpus_root, fake)
    assert fake.paths == [PART_SUMMARY, WORK_SUMMARY]
    assert result.plan[0].reason == "prompt changed"
    assert fake.history[0].prompt == "Résumez la série en trois phrases."

    work_prompt = corpus_root / "prompts" / "sophismes-economiques" / "3.md"
    work_prompt.parent.mkdir()
    work_prompt.write_text("Pour cette œuvre seulement.\n", "utf-8")
    fake = FakeSummarizer()
    run(corpus_root, fake)
    assert fake.paths == [WORK_SUMMARY]
    assert fake.history[0].prompt == "Pour cette œuvre seulement."


def test_empty_prompt_file_is_an_error_naming_it(corpus_root: Path) -> None:
    (corpus_root / "prompts").mkdir()
    (corpus_root / "prompts" / "1.md").write_text("\n", "utf-8")
    result = run(corpus_root, FakeSummarizer())
    errors = [p for p in result.problems if p.severity == "error"]
    assert errors and errors[0].path == "prompts/1.md" and "empty prompt" in errors[0].message


def test_a_prompt_that_is_a_symbolic_link_is_an_error_naming_it(corpus_root: Path) -> None:
    """From git a link reads as its target's path, which would have become the prompt."""
    (corpus_root / "prompts").mkdir()
    (corpus_root / "mine.md").write_text("Résumez fidèlement.\n", "utf-8")
    (corpus_root / "prompts" / "1.md").symlink_to("../mine.md")
    fake = FakeSummarizer()
    result = run(corpus_root, fake)
    errors = [p for p in result.problems if p.severity == "error"]
    assert errors and errors[0].path == "prompts/1.md", result.problems
    assert "symbolic link" in errors[0].message and errors[0].user
    assert all(r.prompt != "../mine.md" for r in fake.history)


def test_long_context_algorithm_reads_full_chapters(corpus_root: Path) -> None:
    (corpus_root / "glossator.toml").write_text(
        '[summaries]\nalgorithm = "long-context"\n', "utf-8"
    )
    fake = FakeSummarizer()
    result = run(corpus_root, fake)
    assert {p.reason for p in result.plan} == {"algorithm changed (default → long-context)"}
    part = next(r for r in fake.history if r.path == PART_SUMMARY)
    assert [i.path for i in part.inputs] == [f"{chapter(i)}/source.md" for i in range(3)]
    work = next(r for r in fake.history if r.path == WORK_SUMMARY)
    assert [i.path for i in work.inputs] == [f"{chapter(i)}/summary.md" for i in range(3)]


def test_input_over_the_context_window_is_map_reduced(corpus_root: Path) -> None:
    edit_source(corpus_root, chapter(1))
    fake = FakeSummarizer(context_tokens=2500)
    result = run(corpus_root, fake)
    target = f"{chapter(1)}/summary.md"
    calls = [r for r in fake.history if r.path == target]
    assert len(calls) >= 3 and any(r.partial for r in calls) and not calls[-1].partial
    assert all(r.input_tokens() <= 2500 for r in calls)
    # the whole chapter went into the map steps: nothing was dropped
    mapped = "".join(i.text for r in calls if r.partial for i in r.inputs)
    body = frontmatter.read("x", (corpus_root / chapter(1) / "source.md").read_bytes()).body
    last_words = body.split()[-5:]
    assert " ".join(last_words) in mapped
    assert result.calls == len(fake.history)
