"""`glossator summarize PATH [--dry-run] [--json]`: write the summaries that are due.

It first prints the plan (each summary due, and why) and, for a model that is
paid by the token, the estimated tokens and cost, before anything is spent; then
generates bottom-up with a progress bar, applies the files atomically (with the
reader's `parent_source_file` fixes) and ends with one line of totals. With
`--json`: one JSON object instead (the plan, the estimate, what was generated).
Exit code 1 when any problem is an error.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import click

from glossator.commands.common import (
    corpus_path,
    json_option,
    open_corpus,
    progress_bar,
    report,
)
from glossator.providers import get_summarizer
from indexer.corpus.layout import read_corpus
from indexer.corpus.source import OverlaySource
from indexer.indexing.summaries import SummaryResult, generate
from indexer.providers.summarizers.base import Summarizer, Usage


def plan_lines(result: SummaryResult, summarizer: Summarizer) -> list[str]:
    if not result.plan:
        return ["summaries: all up to date"]
    lines = [f"summaries due ({len(result.plan)}):"]
    lines += [f"  level {item.level}  {item.path}: {item.reason}" for item in result.plan]
    if summarizer.uses_prompt:
        usage = result.usage
        cost = summarizer.price(usage.input_tokens, usage.output_tokens)
        shown = "price unknown" if cost is None else f"about ${cost:.4f}"
        lines.append(
            f"estimate with {summarizer.provider}:{summarizer.model}: {usage.calls} calls, "
            f"~{usage.input_tokens} input tokens, ~{usage.output_tokens} output tokens, {shown} "
            "(before prompt caching and batch discounts)"
        )
    return lines


def usage_figures(usage: Usage, cost: float | None) -> dict[str, Any]:
    figures = dataclasses.asdict(usage)
    figures["cost_usd"] = None if cost is None else round(cost, 6)
    return figures


@click.command()
@corpus_path
@click.option("--dry-run", is_flag=True, help="Print the plan and the estimate; write nothing.")
@json_option
def summarize(path: Path, dry_run: bool, as_json: bool) -> None:
    """Generate the summaries of the corpus at PATH that are missing or out of date."""
    cmd = open_corpus(path)
    root, err, source = cmd.root, cmd.err, cmd.source
    corpus = read_corpus(source)
    summarizer = get_summarizer(cmd.settings)
    by = f"{summarizer.provider}:{summarizer.model}"
    view = OverlaySource(source, corpus.changes)
    plan = generate(corpus, view, summarizer, dry_run=True)
    lines = plan_lines(plan, summarizer)
    estimate = plan.usage
    data: dict[str, Any] = {
        "command": "summarize",
        "path": str(root),
        "dry_run": dry_run,
        "by": by,
        "plan": [dataclasses.asdict(item) for item in plan.plan],
        "estimate": usage_figures(
            estimate, summarizer.price(estimate.input_tokens, estimate.output_tokens)
        )
        if summarizer.uses_prompt
        else None,
        "generated": [],
    }
    problems = corpus.problems + plan.problems
    if not as_json:
        for line in lines[:-1]:
            click.echo(line)
    last = lines[-1]
    if not dry_run:
        if plan.plan:
            if not as_json:
                click.echo(last)
            with progress_bar(err, enabled=not as_json) as progress:
                result = generate(corpus, view, summarizer, progress=progress)
            problems = corpus.problems + result.problems
            source.apply(corpus.changes)
            source.apply(result.changes)
            last = result.line(by)
            data["generated"] = result.generated
            data["usage"] = usage_figures(result.usage, result.usage.cost_usd)
            data["seconds"] = round(result.seconds, 3)
        else:
            source.apply(corpus.changes)
    report(err, problems, last, as_json=as_json, data=data)
