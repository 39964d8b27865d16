"""The extractive summarizer reads dialogue by the exchange, prose by the sentence.

On a scene of Molière (bench/books/medecin, the judged play of issue 37) a summary is
made of whole runs of consecutive lines, speakers included, instead of lines torn from
their replies; on the example's essays nothing changes (tests/test_example_regenerates.py
pins their summaries byte for byte), and only its one dialogue chapter reads as dialogue.
"""

from __future__ import annotations

from pathlib import Path

from indexer.corpus import frontmatter
from indexer.corpus.tokens import count_tokens
from indexer.providers.summarizers.base import SummaryInput, SummaryRequest
from indexer.providers.summarizers.extractive import (
    EXCHANGE_SHARE,
    ExtractiveSummarizer,
    clean_paragraphs,
    is_dialogue,
    is_line,
    split_sentences,
    units,
)

ROOT = Path(__file__).resolve().parents[1]
SCENE = ROOT / "bench/books/medecin/corpus/le-medecin-malgre-lui-actes-i-et-ii/02-acte-i-scene-2"


def _body(path: Path) -> str:
    return frontmatter.parse(str(path), path.read_text("utf-8")).body


def test_lines_of_dialogue_are_short_turns() -> None:
    assert is_line("MARTINE. — De quoi vous mêlez-vous ?")
    assert is_line("— Et puis ?")
    assert is_line("« Oh ! single, my dear, to be sure ! »")
    assert is_line('"You want to tell me, and I have no objection to hearing it."')
    assert not is_line("Il y avait en Chine deux grandes villes.")  # narration
    assert not is_line("— " + "une longue réplique qui raisonne " * 4)  # a speech, not a line


def test_only_the_examples_dialogue_reads_as_dialogue(example_dir: Path) -> None:
    dialogue = [
        path.parent.name
        for path in sorted((example_dir / "corpus").rglob("source.md"))
        if is_dialogue(clean_paragraphs(_body(path)))
    ]
    assert dialogue == ["chapitre-11-l-utopiste"]
    assert is_dialogue(clean_paragraphs(_body(SCENE / "source.md")))


def test_a_scene_is_summarised_by_whole_exchanges() -> None:
    paragraphs = clean_paragraphs(_body(SCENE / "source.md"))
    budget = 300  # the chapter level's default (indexer.corpus.policy)
    request = SummaryRequest(
        path="scene/summary.md",
        level=1,
        title="Acte I, scène 2",
        prompt="",
        inputs=(SummaryInput("Acte I, scène 2", _body(SCENE / "source.md")),),
        budget_tokens=budget,
    )
    chosen = ExtractiveSummarizer().extract(request)
    cap = int(budget * EXCHANGE_SHARE)
    # every unit is a run of consecutive whole paragraphs within the cap, or a sentence
    # of a paragraph too long for one
    runs = {
        " ".join(paragraphs[i:j])
        for i in range(len(paragraphs))
        for j in range(i + 1, len(paragraphs) + 1)
    }
    sentences = {s for p in paragraphs for s in split_sentences(p, "fr")}
    for unit in chosen:
        assert unit.text in runs or unit.text in sentences, unit.text
    exchanges = [u for u in chosen if u.text in runs and u.text not in paragraphs]
    assert len(exchanges) >= 2, [u.text for u in chosen]
    assert all(count_tokens(u.text) <= cap + 20 for u in exchanges)  # + the joins' spaces
    summary = ExtractiveSummarizer().run(request).text
    assert count_tokens(summary) <= budget
    # an exchange is replies, their speakers named: two lines or more ("MARTINE. — …")
    replies = [u for u in exchanges if u.text.count(". — ") >= 2]
    assert len(replies) >= 2, [u.text for u in chosen]
    # prose: the units are the sentences, as before
    prose = ["Il y avait en Chine deux grandes villes. Un canal les unissait.", "Puis rien."]
    assert units(prose, "fr", cap) == [
        "Il y avait en Chine deux grandes villes.",
        "Un canal les unissait.",
        "Puis rien.",
    ]
