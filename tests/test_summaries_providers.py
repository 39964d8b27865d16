"""The extractive provider on real Bastiat chapters, and the openai-compatible one over
httpx.MockTransport (no network)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import httpx
import pytest

from glossator.providers import get_summarizer
from glossator.settings import Settings, SettingsError
from indexer.corpus import frontmatter
from indexer.corpus.tokens import count_tokens
from indexer.providers.summarizers import RefusalError, SummaryInput, SummaryRequest
from indexer.providers.summarizers.extractive import ExtractiveSummarizer
from indexer.providers.summarizers.openai_compatible import OpenAICompatibleSummarizer
from tests.plugins.corpus import example_chapters


def chapter_request(example_dir: Path, folder: str, budget: int = 300) -> SummaryRequest:
    path = f"{folder}/source.md"
    doc = frontmatter.read(path, (example_dir / path).read_bytes())
    return SummaryRequest(
        path=f"{folder}/summary.md",
        level=1,
        title=doc.meta["title"],
        prompt="",
        inputs=(SummaryInput(doc.meta["title"], doc.body, path),),
        budget_tokens=budget,
    )


def flat(text: str) -> str:
    """The chapter's text with its footnote marks taken out (the only change allowed)."""
    return re.sub(r"\[\^[^\]]+\]", "", text)


@pytest.mark.parametrize("index", [1, 7, 20])  # Abondance, disette; Pétition; a later one
def test_extractive_sentences_come_from_the_chapter_in_order(example_dir: Path, index: int) -> None:
    folder = example_chapters()[index]
    req = chapter_request(example_dir, folder)
    summary = ExtractiveSummarizer().run(req)
    text = summary.text
    assert count_tokens(text) <= 300
    assert count_tokens(text) > 150  # the budget is used, not left empty
    body = req.inputs[0].text
    source = flat(body)
    chosen = ExtractiveSummarizer().extract(req)
    assert text == " ".join(s.text for s in chosen)  # one input: one paragraph
    position = 0
    for sentence in chosen:
        at = source.find(sentence.text, position)
        assert at >= 0, f"not in the chapter after the previous sentence: {sentence.text}"
        position = at + len(sentence.text)
    assert len(chosen) >= 3
    # footnote definitions are not text to summarise
    notes = [line for line in body.split("\n") if line.startswith("[^")]
    for note in notes:
        assert note.split(":", 1)[1].strip()[:40] not in text
    assert "[^" not in text and "\n#" not in text


def test_extractive_is_deterministic_and_records_its_method(example_dir: Path) -> None:
    req = chapter_request(example_dir, example_chapters()[3], budget=200)
    a, b = ExtractiveSummarizer().run(req), ExtractiveSummarizer().run(req)
    assert a == b and count_tokens(a.text) <= 200
    s = ExtractiveSummarizer()
    assert (s.provider, s.model, s.uses_prompt) == ("extractive", "tfidf-centroid-mmr", False)


def test_extractive_keeps_abbreviations_inside_sentences() -> None:
    text = (
        "M. Bugeaud disait que le pain cher enrichit le laboureur. J.-B. Say le contredit "
        "avec force dans son traité. Voir chap. XI du livre cité plus haut pour la suite.\n\n"
        "## Un titre\n\n[^1]: Une note de l'éditeur qui ne doit pas sortir.\n"
    )
    req = SummaryRequest("s.md", 1, "t", "", (SummaryInput("t", text),), 500)
    out = ExtractiveSummarizer().run(req).text
    assert out == (
        "M. Bugeaud disait que le pain cher enrichit le laboureur. J.-B. Say le contredit "
        "avec force dans son traité. Voir chap. XI du livre cité plus haut pour la suite."
    )


def chat(content: str | None, finish: str = "stop") -> dict[str, object]:
    return {
        "choices": [
            {"message": {"role": "assistant", "content": content}, "finish_reason": finish}
        ],
        "usage": {"prompt_tokens": 120, "completion_tokens": 40},
    }


def test_openai_compatible_request_retry_and_usage() -> None:
    seen: list[httpx.Request] = []
    answers = [httpx.Response(503), httpx.Response(200, json=chat("Un résumé fidèle."))]

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return answers.pop(0)

    waits: list[float] = []
    s = OpenAICompatibleSummarizer(
        "http://127.0.0.1:9/v1/",
        "qwen",
        transport=httpx.MockTransport(handler),
        sleep=waits.append,
        backoff_seconds=0.25,
    )
    req = SummaryRequest("s.md", 2, "Série", "Consignes.", (SummaryInput("I", "Texte."),), 500)
    out = s.run(req)
    assert (out.text, out.input_tokens, out.output_tokens, out.cost_usd) == (
        "Un résumé fidèle.",
        120,
        40,
        0.0,
    )
    assert len(seen) == 2 and waits == [0.25]
    assert str(seen[1].url) == "http://127.0.0.1:9/v1/chat/completions"
    body = json.loads(seen[1].content)
    assert body["model"] == "qwen" and body["temperature"] == 0
    assert body["messages"][0] == {"role": "system", "content": "Consignes."}
    assert "Texte." in body["messages"][1]["content"]


@pytest.mark.parametrize(("content", "finish"), [(None, "stop"), ("x", "content_filter")])
def test_openai_compatible_refusal(content: str | None, finish: str) -> None:
    transport = httpx.MockTransport(lambda r: httpx.Response(200, json=chat(content, finish)))
    s = OpenAICompatibleSummarizer("http://127.0.0.1:9/v1", "m", transport=transport)
    req = SummaryRequest("s.md", 1, "t", "p", (SummaryInput("t", "Texte."),), 100)
    with pytest.raises(RefusalError, match=r"^s\.md: "):
        s.run(req)


def test_get_summarizer_from_settings() -> None:
    base = Settings.from_env({})
    assert isinstance(get_summarizer(base), ExtractiveSummarizer)
    spec = base.replace(summarizer="openai-compatible:http://127.0.0.1:8000/v1")
    with pytest.raises(SettingsError, match="GLOSSATOR_SUMMARIZER_MODEL"):
        get_summarizer(spec)
    s = get_summarizer(spec.replace(summarizer_model="qwen"))
    assert isinstance(s, OpenAICompatibleSummarizer) and s.model == "qwen"
    with pytest.raises(SettingsError, match="base URL"):
        get_summarizer(base.replace(summarizer="openai-compatible"))
