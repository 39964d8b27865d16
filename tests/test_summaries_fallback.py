"""Issue 23 item 7: a summary the input itself defeats is replaced by the text's lead
(or its heading), said once as a warning, recorded in `generator`, and its parents
are built from it. With the real extractive summarizer."""

from __future__ import annotations

from pathlib import Path

from indexer.corpus import frontmatter
from indexer.corpus.tokens import count_tokens
from indexer.providers.summarizers import SummaryInput, SummaryRequest, UnsummarizableError
from indexer.providers.summarizers.extractive import ExtractiveSummarizer
from indexer.providers.summarizers.fallback import ELLIPSIS, fallback_summary, lead
from tests.plugins.corpus import FIRST_SERIES, WORK, example_chapters, make_small_corpus
from tests.test_summaries_plan import run

WORDS = " ".join(f"mot{i % 997}" for i in range(60_000))[:300_000]  # 300 KB, no punctuation


def request(text: str, budget: int = 300) -> SummaryRequest:
    return SummaryRequest(
        path="corpus/w/c/summary.md",
        level=1,
        title="Œuvre > Chapitre",
        prompt="",
        inputs=(SummaryInput("Chapitre", text),),
        budget_tokens=budget,
    )


def test_the_lead_is_cut_at_a_word_within_the_budget() -> None:
    out = lead(WORDS, 300)
    assert count_tokens(out) <= 300 and out.endswith(ELLIPSIS)
    body = out.removesuffix(ELLIPSIS)
    assert WORDS.startswith(body) and WORDS[len(body)] == " "  # a whole word, not half of one
    assert count_tokens(body) > 250  # the budget is used, not a token or two
    assert lead("Court texte.", 300) == "Court texte."  # within the budget: unchanged


def test_a_run_without_spaces_is_cut_at_a_character() -> None:
    blob = "".join(chr(0x4E00 + (i * 7919) % 20000) for i in range(100_000))
    out = lead(blob, 300)
    assert count_tokens(out) <= 300 and blob.startswith(out.removesuffix(ELLIPSIS))


def test_no_text_falls_back_to_the_heading() -> None:
    fallback = fallback_summary(request("# Titre seul\n\n## Un autre\n"))
    assert (fallback.kind, fallback.text) == ("heading", "Œuvre > Chapitre")


def test_the_extractive_summarizer_says_the_input_defeats_it() -> None:
    for text in (WORDS, "\n".join(f"- article {i} du catalogue" for i in range(10_000))):
        try:
            ExtractiveSummarizer().run(request(text))
        except UnsummarizableError as e:
            assert "no sentence fits the budget of 300 tokens" in e.message
        else:
            raise AssertionError("summarised")


def test_an_unsummarisable_chapter_gets_a_fallback_once_and_its_parents_are_made(
    tmp_path: Path,
) -> None:
    root = make_small_corpus(tmp_path / "c", 2)
    chapter = example_chapters()[1]
    source = root / chapter / "source.md"
    head = source.read_text().split("\n---\n", 1)[0]
    source.write_text(f"{head}\n---\n\n{WORDS}\n")
    target = f"{chapter}/summary.md"

    result = run(root, ExtractiveSummarizer())
    assert not result.failed
    [said] = [p for p in result.problems if p.path == target]
    assert said.severity == "warning" and "lead" in said.message
    assert {target, f"{FIRST_SERIES}/summary.md", f"{WORK}/summary.md"} <= set(result.generated)
    doc = frontmatter.parse(target, (root / target).read_text())
    assert doc.meta["generator"]["fallback"] == "lead"
    assert "no sentence fits" in doc.meta["generator"]["fallback_reason"]
    assert doc.body.strip().endswith(ELLIPSIS.strip()) and WORDS.startswith(doc.body[:50])

    again = run(root, ExtractiveSummarizer())  # unchanged input: not due, not said again
    assert again.plan == [] and again.problems == []
