"""`glossator sidecars PATH [--all]` and `glossator index PATH [--all]`.

Commands here drive the indexer over a corpus working tree on disk: read the
corpus, compute `Changes`, apply them with `DirectorySource.apply` (temp file +
rename, so no file is ever half-written), print one line per problem and one
summary line. The exit code is 1 when any problem is an error.

Settings come from the `glossator` group's context when there is one, else from
the environment; this module must not import `glossator.cli` at import time
(that module imports this one to register the commands). The helpers here
(`corpus_root`, `print_problems`, `progress_bar`) are shared by `summarize`.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from glossator.settings import Settings
from indexer.corpus import CORPUS_DIR, read_corpus
from indexer.embedders import get_embedder
from indexer.errors import Problem
from indexer.sidecars import Progress as ProgressCallback
from indexer.sidecars import build
from indexer.source import DirectorySource

log = logging.getLogger(__name__)


def settings_from_context() -> Settings:
    ctx = click.get_current_context(silent=True)
    obj: Any = ctx.find_root().obj if ctx is not None else None
    if obj is not None and hasattr(obj, "settings"):
        return obj.settings
    return Settings.from_env()


def corpus_root(path: Path) -> Path:
    """The repository root for PATH: the root itself, or its corpus/ folder given directly."""
    path = path.resolve()
    if (path / CORPUS_DIR).is_dir():
        return path
    if path.name == CORPUS_DIR and path.is_dir():
        return path.parent
    raise click.BadParameter(
        f"{path} has no {CORPUS_DIR}/ folder; give the root of a corpus repository "
        f"(the folder holding {CORPUS_DIR}/<work>/summary.md)",
        param_hint="PATH",
    )


def print_problems(console: Console, problems: list[Problem]) -> None:
    for problem in problems:
        style = "red" if problem.severity == "error" else "yellow"
        # soft_wrap: one problem, one line, whatever the terminal width (greppable)
        console.print(
            f"[{style}]{problem.severity}[/{style}]: ", end="", highlight=False, soft_wrap=True
        )
        console.print(
            f"{problem.path}: {problem.message}", markup=False, highlight=False, soft_wrap=True
        )


@contextmanager
def progress_bar(console: Console) -> Iterator[ProgressCallback]:
    """A rich progress bar fed by the indexer's `progress(stage, done, total)` calls."""
    labels = {"files": "reading files", "chunks": "embedding chunks"}
    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        transient=True,
        disable=not console.is_terminal,
    ) as bar:
        tasks: dict[str, Any] = {}

        def update(stage: str, done: int, total: int) -> None:
            if stage not in tasks:
                tasks[stage] = bar.add_task(labels.get(stage, stage), total=total)
            bar.update(tasks[stage], completed=done, total=total)

        yield update


# PATH of the commands that work on a corpus tree: the repository root or its corpus/
corpus_path = click.argument(
    "path", type=click.Path(exists=True, file_okay=False, path_type=Path), default="."
)


@click.command()
@corpus_path
@click.option(
    "--all",
    "rebuild_all",
    is_flag=True,
    help="Rewrite every sidecar and re-embed every chunk (no skipping, no reuse).",
)
def sidecars(path: Path, rebuild_all: bool) -> None:
    """Write the JSONL sidecars of the corpus at PATH whose .md changed (hash or model)."""
    settings = settings_from_context()
    root = corpus_root(path)
    err = Console(stderr=True)
    source = DirectorySource(root)
    corpus = read_corpus(source)
    embedder = get_embedder(settings)
    with progress_bar(err) as progress:
        result = build(corpus, source, embedder, all=rebuild_all, progress=progress)
    source.apply(corpus.changes)  # parent_source_file fixes: the hashes are of these bytes
    source.apply(result.changes)
    problems = corpus.problems + result.problems
    print_problems(err, problems)
    click.echo(result.stats.line())
    if any(p.severity == "error" for p in problems):
        raise click.exceptions.Exit(1)


@click.command()
@corpus_path
@click.option(
    "--all",
    "rebuild_all",
    is_flag=True,
    help="Rewrite every sidecar and re-embed every chunk (summaries stay incremental).",
)
def index(path: Path, rebuild_all: bool) -> None:
    """Index the corpus at PATH: frontmatter, due summaries, then sidecars, in that order."""
    from indexer import pipeline
    from indexer.summaries import get_summarizer

    settings = settings_from_context()
    root = corpus_root(path)
    err = Console(stderr=True)
    source = DirectorySource(root)
    embedder = get_embedder(settings)
    summarizer = get_summarizer(settings)
    with progress_bar(err) as progress:
        result = pipeline.index(
            source, embedder=embedder, summarizer=summarizer, all=rebuild_all, progress=progress
        )
    source.apply(result.changes)
    print_problems(err, result.problems)
    click.echo(result.stats.line())
    if result.failed:
        raise click.exceptions.Exit(1)
