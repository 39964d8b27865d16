"""`glossator sidecars PATH [--all] [--json]` and `glossator index PATH [--all] [--json]`.

Commands here drive the indexer over a corpus working tree on disk: read the
corpus, compute `Changes`, apply them with `DirectorySource.apply` (temp file +
rename, so no file is ever half-written), print one line per problem and one
summary line (or, with `--json`, one JSON object). A progress bar on a terminal
shows each stage (summaries, sidecars, embeddings) with its count and ETA. The
exit code is 1 when any problem is an error.
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
from glossator.providers import get_embedder
from indexer.corpus.layout import read_corpus
from indexer.indexing.sidecars import SidecarStats, build


def sidecar_figures(stats: SidecarStats) -> dict[str, Any]:
    figures = dataclasses.asdict(stats)
    figures["seconds"] = round(stats.seconds, 3)
    return figures


@click.command()
@corpus_path
@click.option(
    "--all",
    "rebuild_all",
    is_flag=True,
    help="Rewrite every sidecar and re-embed every chunk (no skipping, no reuse).",
)
@json_option
def sidecars(path: Path, rebuild_all: bool, as_json: bool) -> None:
    """Write the JSONL sidecars of the corpus at PATH whose .md changed (hash or model)."""
    cmd = open_corpus(path)
    root, err, source = cmd.root, cmd.err, cmd.source
    corpus = read_corpus(source)
    embedder = get_embedder(cmd.settings)
    with progress_bar(err, enabled=not as_json) as progress:
        result = build(corpus, source, embedder, all=rebuild_all, progress=progress)
    source.apply(corpus.changes)  # parent_source_file fixes: the hashes are of these bytes
    source.apply(result.changes)
    problems = corpus.problems + result.problems
    data = {"command": "sidecars", "path": str(root), **sidecar_figures(result.stats)}
    report(err, problems, result.stats.line(), as_json=as_json, data=data)


@click.command()
@corpus_path
@click.option(
    "--all",
    "rebuild_all",
    is_flag=True,
    help="Rewrite every sidecar and re-embed every chunk (summaries stay incremental).",
)
@json_option
def index(path: Path, rebuild_all: bool, as_json: bool) -> None:
    """Index the corpus at PATH: frontmatter, due summaries, then sidecars, in that order."""
    from glossator.providers import get_summarizer
    from indexer.indexing import run as indexing_run

    cmd = open_corpus(path)
    root, err, source = cmd.root, cmd.err, cmd.source
    embedder = get_embedder(cmd.settings)
    summarizer = get_summarizer(cmd.settings)
    with progress_bar(err, enabled=not as_json) as progress:
        result = indexing_run.index(
            source, embedder=embedder, summarizer=summarizer, all=rebuild_all, progress=progress
        )
    source.apply(result.changes)
    stats = result.stats
    data = {
        "command": "index",
        "path": str(root),
        "summaries": {
            "due": stats.summaries_due,
            "generated": stats.summaries_generated,
            "calls": stats.summary_calls,
            "input_tokens": stats.input_tokens,
            "output_tokens": stats.output_tokens,
            "cost_usd": round(stats.cost_usd, 6),
            "by": f"{summarizer.provider}:{summarizer.model}",
        },
        "sidecars": sidecar_figures(stats.sidecars),
        "seconds": round(stats.seconds, 3),
    }
    report(err, result.problems, stats.line(), as_json=as_json, data=data)
