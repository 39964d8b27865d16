"""The summary written when none can be made: the text's lead, else the heading.

A summary is its chapter's parent node: without one, the loader refuses the
chapter's rows ("its parent_source_file … has no sidecar") and the text is not
searchable. When the summarizer fails *because of the input itself*
(`UnsummarizableError`: a 300 KB paragraph without sentence punctuation, a
10,000-line list, a chapter of headings only), asking again can never help, so
the indexer writes this instead, says so once (a warning), and records it in
the summary's `generator` frontmatter (`fallback: lead` or `fallback: heading`,
with `fallback_reason`). Its record otherwise matches what the summarizer would
have written, so the summary is not due again until its inputs, the provider or
the prompt change — the same input is not retried at every job.

A summarizer that fails this time (unreachable, refusing) for a summary that does
not exist yet gets the same stand-in, so that the text's rows load during the
outage, but the problem stays an error (the job is retried) and the record adds
`fallback_retry: true`: the summary is due again at the next run
(plan.due_reason), and its parents wait for the real one.

The lead is the first paragraphs of the inputs as the extractive summarizer
reads them (no headings, footnotes or marks), cut at a word boundary within the
level's token budget (at a character when a run has no space), ending with " …"
when cut. No text at all: the heading of the node summarised.
"""

from __future__ import annotations

from dataclasses import dataclass

from indexer.corpus.tokens import count_tokens
from indexer.providers.summarizers.base import SummaryRequest
from indexer.providers.summarizers.extractive import clean_paragraphs

ELLIPSIS = " …"


@dataclass(frozen=True)
class Fallback:
    text: str
    kind: str  # "lead" or "heading": recorded as generator.fallback

    def describe(self, budget_tokens: int) -> str:
        if self.kind == "heading":
            return "the heading was written as its summary"
        return f"the text's lead (at most {budget_tokens} tokens) was written as its summary"


def fallback_summary(request: SummaryRequest) -> Fallback:
    """The lead of `request`'s inputs within its budget, or its heading."""
    paragraphs = [p for item in request.inputs for p in clean_paragraphs(item.text)]
    if paragraphs:
        text = lead("\n\n".join(paragraphs), request.budget_tokens)
        if text:
            return Fallback(text, "lead")
    return Fallback(request.title.strip() or request.path, "heading")


def lead(text: str, budget_tokens: int) -> str:
    """The longest start of `text` within `budget_tokens`, cut at a word boundary."""
    text = text.strip()
    if count_tokens(text) <= budget_tokens:
        return text
    room = budget_tokens - count_tokens(ELLIPSIS)
    if room <= 0:
        return ""
    # Binary search on the prefix length; the window bounds the first counts (a token
    # is rarely over 8 characters; when the window is all within the budget anyway,
    # the whole text is searched).
    hi = min(len(text), room * 8)
    if count_tokens(text[:hi]) <= room:
        hi = len(text)
    lo = 0
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if count_tokens(text[:mid]) <= room:
            lo = mid
        else:
            hi = mid - 1
    cut = text[:lo]
    space = max(cut.rfind(" "), cut.rfind("\n"))
    if space > len(cut) // 2:  # a word boundary near the end; else a run without spaces
        cut = cut[:space]
    cut = cut.rstrip()
    return cut + ELLIPSIS if cut else ""
