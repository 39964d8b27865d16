"""Summaries follow the work's language (issue 13): sentence splitting and stop words of
the extractive summarizer, the default prompts, the request sent to a model."""

from __future__ import annotations

from indexer.indexing.prompts import default_prompt
from indexer.providers.summarizers.base import SummaryInput, SummaryRequest
from indexer.providers.summarizers.extractive import ExtractiveSummarizer, split_sentences, words


def test_english_abbreviations_do_not_end_a_sentence() -> None:
    text = "Mr. Bennet was among the earliest. He called on Dr. Jones and St. John. It rained."
    assert split_sentences(text, "en") == [
        "Mr. Bennet was among the earliest.",
        "He called on Dr. Jones and St. John.",
        "It rained.",
    ]
    # French keeps its own rules: « M. » is an abbreviation there, « Mr. » is not
    assert split_sentences("M. Bugeaud parla. Il se tut.", "fr") == [
        "M. Bugeaud parla.",
        "Il se tut.",
    ]
    assert words("The ship and the sea were there", "en") == ["ship", "sea"]
    assert "ship" in words("The ship", "xx")  # a language without lists: all lists' stop words


def test_an_english_chapter_is_summarised_in_whole_sentences() -> None:
    body = (
        "Mr. Bennet was among the earliest of those who waited on Mr. Bingley. He had always "
        "intended to visit him, though to the last always assuring his wife that he should "
        "not go. Mrs. Bennet deigned not to make any reply, but began scolding one of her "
        "daughters."
    )
    request = SummaryRequest(
        path="corpus/w/c/summary.md",
        level=1,
        title="W > Chapter II",
        prompt="",
        inputs=(SummaryInput("Chapter II", body, "corpus/w/c/source.md"),),
        budget_tokens=60,
        lang="en",
    )
    text = ExtractiveSummarizer().summarize(request).text
    assert text and not text.startswith(("Bennet", "Bingley")) and "Mr." not in text.split()[-1:]


def test_default_prompts_and_request_follow_the_language() -> None:
    assert default_prompt(1).text.startswith("Vous résumez")
    assert default_prompt(1, "en").text.startswith("You are summarising one section of a book")
    assert default_prompt(3, "de").text == default_prompt(3, "en").text  # no German default yet
    request = SummaryRequest(
        path="p",
        level=1,
        title="W > Chapter 1",
        prompt="",
        inputs=(),
        budget_tokens=100,
        lang="en",
    )
    assert request.user_message().startswith(
        "Summarise “W > Chapter 1”.\nLanguage of the summary: en."
    )
    french = SummaryRequest(path="p", level=1, title="T", prompt="", inputs=(), budget_tokens=100)
    assert french.user_message().startswith("Résumez « T ».")
    # the message follows the language of the prompt: fr_CA is French for both
    canadian = SummaryRequest(
        path="p", level=1, title="T", prompt="", inputs=(), budget_tokens=100, lang="fr_CA"
    )
    assert canadian.user_message().startswith("Résumez « T ».")
    assert default_prompt(1, "fr_CA").text == default_prompt(1).text
