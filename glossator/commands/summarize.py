"""`glossator summarize PATH [--dry-run]`: write the summaries that are due.

It first prints the plan (each summary due, and why) and, for a model that is
paid by the token, the estimated tokens and cost, before anything is spent; then
generates bottom-up with a progress bar, applies the files atomically (with the
reader's `parent_source_file` fixes) and ends with one line of totals.
Exit code 1 when any problem is an error.
"""

from __future__ import annotations

from pathlib import Path

import click
from rich.console import Console

from glossator.commands.indexing import (
    corpus_path,
    corpus_root,
    print_problems,
    progress_bar,
    settings_from_context,
)
from indexer.corpus import read_corpus
from indexer.source import DirectorySource, OverlaySource
from indexer.summaries import SummaryResult, generate, get_summarizer
from indexer.summaries.base import Summarizer


def print_plan(result: SummaryResult, summarizer: Summarizer) -> None:
    if not result.plan:
        click.echo("summaries: all up to date")
        return
    click.echo(f"summaries due ({len(result.plan)}):")
    for item in result.plan:
        click.echo(f"  level {item.level}  {item.path}: {item.reason}")
    if summarizer.uses_prompt:
        usage = result.usage
        cost = summarizer.price(usage.input_tokens, usage.output_tokens)
        shown = "price unknown" if cost is None else f"about ${cost:.4f}"
        click.echo(
            f"estimate with {summarizer.provider}:{summarizer.model}: {usage.calls} calls, "
            f"~{usage.input_tokens} input tokens, ~{usage.output_tokens} output tokens, {shown} "
            "(before prompt caching and batch discounts)"
        )


@click.command()
@corpus_path
@click.option("--dry-run", is_flag=True, help="Print the plan and the estimate; write nothing.")
def summarize(path: Path, dry_run: bool) -> None:
    """Generate the summaries of the corpus at PATH that are missing or out of date."""
    settings = settings_from_context()
    root = corpus_root(path)
    err = Console(stderr=True)
    source = DirectorySource(root)
    corpus = read_corpus(source)
    summarizer = get_summarizer(settings)
    view = OverlaySource(source, corpus.changes)
    plan = generate(corpus, view, summarizer, dry_run=True)
    print_plan(plan, summarizer)
    problems = corpus.problems + plan.problems
    if not dry_run:
        if plan.plan:
            with progress_bar(err) as progress:
                result = generate(corpus, view, summarizer, progress=progress)
            problems = corpus.problems + result.problems
            source.apply(corpus.changes)
            source.apply(result.changes)
            click.echo(result.line(f"{summarizer.provider}:{summarizer.model}"))
        else:
            source.apply(corpus.changes)
    print_problems(err, problems)
    if any(p.severity == "error" for p in problems):
        raise click.exceptions.Exit(1)
