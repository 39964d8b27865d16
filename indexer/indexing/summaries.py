"""Generate the summaries that are due, bottom-up, and return them as `Changes`.

Level 1 first, then 2, then 3, each level reading the summaries the level below
has just produced: editing one chapter regenerates exactly three summaries (the
chapter's, its part's, its work's) and an unchanged corpus costs no call.

Failures never stop the run and never half-write: a summary that fails (model
error, timeout, refusal, unusable prompt) keeps its previous file and is reported
by path; its parent is then *not* regenerated either, because it would be built
from a stale input; a part whose chapters could not all be read is left alone
for the same reason. A summary the input itself defeats (`UnsummarizableError`:
no sentence fits the budget, nothing but headings) is not a failure of the run but
of the text: the lead or the heading is written instead, with a warning
(indexer.providers.summarizers.fallback), and the parents are built from it. The caller
applies the returned `Changes` atomically.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from indexer.corpus import frontmatter
from indexer.corpus import lang as languages
from indexer.corpus.errors import CorpusError, Problem
from indexer.corpus.layout import Corpus, Node
from indexer.corpus.source import Changes, FileSource
from indexer.indexing.plan import (
    PlanItem,
    blocked_by_problems,
    blocked_problem,
    due_reason,
    generator_record,
    input_nodes,
    inputs_of,
    inputs_sha256,
    summary_nodes,
)
from indexer.indexing.prompts import Prompts
from indexer.providers.summarizers.base import (
    Summarizer,
    SummarizerError,
    SummaryRequest,
    SummaryResponse,
    UnsummarizableError,
    Usage,
)
from indexer.providers.summarizers.fallback import fallback_summary

log = logging.getLogger(__name__)

# progress(stage, done, total), the indexer's progress protocol (indexer.indexing.sidecars)
Progress = Callable[[str, int, int], None]


@dataclass
class SummaryResult:
    changes: Changes = field(default_factory=Changes)
    problems: list[Problem] = field(default_factory=list)
    plan: list[PlanItem] = field(default_factory=list)  # every summary due, and why
    generated: list[str] = field(default_factory=list)  # paths written by this run
    usage: Usage = field(default_factory=Usage)  # spent (or, in a dry run, estimated)
    seconds: float = 0.0

    @property
    def calls(self) -> int:
        return self.usage.calls

    @property
    def failed(self) -> bool:
        return any(p.severity == "error" for p in self.problems)

    def line(self, provider: str) -> str:
        """The one-line total the CLI ends with."""
        cost = f", ${self.usage.cost_usd:.4f}" if self.usage.cost_usd else ""
        return (
            f"{len(self.generated)} summaries generated ({len(self.plan)} due) by {provider}: "
            f"{self.usage.calls} calls, {self.usage.input_tokens} input tokens, "
            f"{self.usage.output_tokens} output tokens{cost}, {self.seconds:.1f} s"
        )


@dataclass
class _Due:
    node: Node
    request: SummaryRequest
    generator: dict[str, Any]


def generate(
    corpus: Corpus,
    source: FileSource,
    summarizer: Summarizer,
    *,
    dry_run: bool = False,
    progress: Progress | None = None,
) -> SummaryResult:
    """Every summary of `corpus` that is due, as Changes (nothing written here)."""
    started = time.monotonic()
    result = SummaryResult()
    prompts = Prompts(source, corpus.policy)
    blocked = blocked_by_problems(corpus)
    texts: dict[str, str] = {}  # summary path → its text after this run (fresh when regenerated)
    failed: set[str] = set()  # summaries that could not be made, and those blocked by them
    due_paths: set[str] = set()  # for dry runs: what a real run would regenerate
    nodes = summary_nodes(corpus)
    total = sum(1 for n in nodes if n.generated)
    done = 0
    for level in (1, 2, 3):
        batch: list[_Due] = []
        for node in (n for n in nodes if n.level == level):
            if not node.generated:
                continue  # written by hand: kept, and still an input to its parent
            due = _consider(node, corpus, summarizer, prompts, texts, failed, blocked, result)
            if due is None:
                continue
            reason = due[1]
            if reason is None and dry_run:
                stale = [n.path for n in input_nodes(corpus, node, corpus.policy.algorithm)]
                reason = next((f"{p} will be regenerated" for p in stale if p in due_paths), None)
            if reason is None:
                continue
            result.plan.append(PlanItem(node.path, level, reason))
            due_paths.add(node.path)
            batch.append(due[0])
        if dry_run:
            for item in batch:
                request = _as_if_regenerated(item.request, due_paths, corpus)
                result.usage.add(summarizer.estimate(request))
            continue
        by_path = {item.node.path: item for item in batch}

        def tick(request: SummaryRequest) -> None:
            nonlocal done
            done += 1
            if progress is not None:
                progress("summaries", done, total)

        outcomes = summarizer.run_many([item.request for item in batch], progress=tick)
        for path, outcome in outcomes.items():
            _record(by_path[path], outcome, summarizer, texts, failed, result)
    if progress is not None:
        progress("summaries", total, total)
    result.seconds = time.monotonic() - started
    log.info(
        "summaries: %d due, %d generated, %d calls, %d+%d tokens, %.1f s",
        len(result.plan),
        len(result.generated),
        result.usage.calls,
        result.usage.input_tokens,
        result.usage.output_tokens,
        result.seconds,
    )
    return result


def _as_if_regenerated(
    request: SummaryRequest, due_paths: set[str], corpus: Corpus
) -> SummaryRequest:
    """For the estimate: an input that will be regenerated first counts as a summary of
    its full budget, not as the (often missing) text it has now."""
    inputs = tuple(
        replace(i, text="mot " * corpus.policy.budget_tokens[corpus.nodes[i.path].level])
        if i.path in due_paths
        else i
        for i in request.inputs
    )
    return replace(request, inputs=inputs)


def _consider(
    node: Node,
    corpus: Corpus,
    summarizer: Summarizer,
    prompts: Prompts,
    texts: dict[str, str],
    failed: set[str],
    blocked: dict[str, str],
    result: SummaryResult,
) -> tuple[_Due, str | None] | None:
    """The request for `node` and why it is due (None: up to date); None when it cannot be made."""
    policy = corpus.policy
    if node.path in blocked:
        result.problems.append(blocked_problem(node, blocked[node.path]))
        failed.add(node.path)
        return None
    sources = input_nodes(corpus, node, policy.algorithm)
    stale = [n.path for n in sources if n.path in failed]
    if stale:
        why = f"its input {stale[0]} could not be summarised"
        if len(stale) > 1:
            why += f" (and {len(stale) - 1} more)"
        result.problems.append(blocked_problem(node, why))
        failed.add(node.path)
        return None
    if not sources:
        result.problems.append(
            Problem(
                node.path,
                "nothing to summarise: it has no chapters or pieces below it yet",
                "warning",
            )
        )
        failed.add(node.path)
        return None
    try:
        prompt = prompts.for_node(node.work, node.level, node.lang)
    except CorpusError as e:
        result.problems.append(Problem.from_error(e))
        failed.add(node.path)
        return None
    budget = policy.budget_tokens[node.level]
    inputs = inputs_of(sources, texts)
    wanted = generator_record(
        provider=summarizer.provider,
        model=summarizer.model,
        algorithm=policy.algorithm,
        prompt_sha256=prompt.sha256 if summarizer.uses_prompt else None,
        inputs_sha256=inputs_sha256(node, inputs, budget),
    )
    request = SummaryRequest(
        path=node.path,
        level=node.level,
        title=languages.strip_summary_suffix(node.heading_path),
        prompt=prompt.text,
        inputs=inputs,
        budget_tokens=budget,
        lang=node.lang,
    )
    return _Due(node, request, wanted), due_reason(node, wanted)


def _record(
    item: _Due,
    outcome: SummaryResponse | SummarizerError,
    summarizer: Summarizer,
    texts: dict[str, str],
    failed: set[str],
    result: SummaryResult,
) -> None:
    node = item.node
    if isinstance(outcome, UnsummarizableError):
        _record_fallback(item, outcome, texts, result)
        return
    if isinstance(outcome, SummarizerError):
        if node.exists:
            result.problems.append(
                Problem(node.path, f"{outcome.message}; the previous summary is kept")
            )
        else:  # no summary at all would keep the text's rows out (fallback.py)
            written = _write_fallback(item, outcome, result, retry=True)
            result.problems.append(
                Problem(
                    node.path,
                    f"{outcome.message}; {written} until the summarizer "
                    "answers (the text's rows are indexed)",
                )
            )
        failed.add(node.path)  # its parents wait for the real summary
        return
    text = outcome.text.strip()
    result.usage.add(outcome.usage())
    if not text:
        result.problems.append(Problem(node.path, "the summarizer returned an empty summary"))
        failed.add(node.path)
        return
    generator = dict(item.generator)
    generator.update(
        input_tokens=outcome.input_tokens,
        output_tokens=outcome.output_tokens,
        cost_usd=round(outcome.cost_usd, 6),
    )
    if summarizer.price(1, 1) is None:
        generator["cost_usd"] = None  # unknown price: say so rather than record $0
    result.changes.write(node.path, render_summary(node, text, generator).encode("utf-8"))
    result.generated.append(node.path)
    texts[node.path] = text


def _record_fallback(
    item: _Due, error: UnsummarizableError, texts: dict[str, str], result: SummaryResult
) -> None:
    """No summarizer can summarise this input: write the lead or the heading instead
    (indexer.providers.summarizers.fallback), so that the text's rows load and the parents are made."""
    written = _write_fallback(item, error, result, retry=False)
    texts[item.node.path] = fallback_summary(item.request).text
    result.problems.append(
        Problem(
            item.node.path,
            f"{error.message}; {written} instead "
            "(generator.fallback in its frontmatter; the text's rows are indexed)",
            "warning",
        )
    )


def _write_fallback(
    item: _Due, error: SummarizerError, result: SummaryResult, *, retry: bool
) -> str:
    """Write the fallback summary of `item`; what was written, for the problem's message.
    `retry`: the summarizer failed this time (unreachable, refused…): the summary stays
    due (plan.due_reason) and is made at the next run."""
    node = item.node
    fallback = fallback_summary(item.request)
    generator = dict(item.generator)
    generator.update(
        input_tokens=0,
        output_tokens=0,
        cost_usd=0.0,
        fallback=fallback.kind,
        fallback_reason=error.message,
    )
    if retry:
        generator["fallback_retry"] = True
    result.changes.write(node.path, render_summary(node, fallback.text, generator).encode("utf-8"))
    result.generated.append(node.path)
    return fallback.describe(item.request.budget_tokens)


def render_summary(node: Node, text: str, generator: dict[str, Any]) -> str:
    """The summary file: the user's frontmatter keys kept, ours set, the body replaced."""
    updates: dict[str, Any] = {
        "title": node.title,
        "parent_source_file": node.parent_source_file,
        "generated": True,
        "generator": generator,
    }
    body = text.strip() + "\n"
    if not node.exists or not node.text:
        return frontmatter.render({k: v for k, v in updates.items() if v is not None}, body)
    updated = frontmatter.set_keys(node.text, updates)
    old_body = frontmatter.parse(node.path, updated).body
    head = updated[: len(updated) - len(old_body)] if old_body else updated
    if not head.endswith("\n"):
        head += "\n"
    return head + body
