"""What the corpus commands (`sidecars`, `index`, `summarize`, `load`) share: where
their settings and PATH come from, how they print problems, their progress bar and
their `--json` output.

Output conventions: the result (one summary line, or with `--json` one JSON
object) goes to stdout and nothing else does; problems, the progress bar and logs
go to stderr. The bar is drawn only on a terminal and never with `--json`, so a
pipe or a file gets no control characters.

Like every subcommand module it imports `glossator.commands.base`, never `glossator.cli`.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from glossator.settings import Settings
from hooks.progress import STAGES
from indexer.corpus.errors import Problem
from indexer.corpus.layout import CORPUS_DIR
from indexer.corpus.source import DirectorySource

# The indexer's progress protocol, progress(stage, done, total) (indexer.indexing.sidecars)
ProgressCallback = Callable[[str, int, int], None]

# PATH of the commands that work on a corpus tree: the repository root or its corpus/
corpus_path = click.argument(
    "path", type=click.Path(exists=True, file_okay=False, path_type=Path), default="."
)

json_option = click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="Print one JSON object (the summary and the problems) on stdout, nothing else.",
)


def settings_from_context() -> Settings:
    ctx = click.get_current_context(silent=True)
    obj: Any = ctx.find_root().obj if ctx is not None else None
    if obj is not None and hasattr(obj, "settings"):
        return obj.settings
    return Settings.from_env()


def err_console() -> Console:
    """stderr for problems and the bar; soft_wrap: one problem, one line (greppable)."""
    return Console(stderr=True, highlight=False, soft_wrap=True)


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


@dataclasses.dataclass(frozen=True)
class CorpusCommand:
    """How a corpus command starts: its settings, the corpus root PATH names, stderr,
    and the tree as a source."""

    settings: Settings
    root: Path
    err: Console
    source: DirectorySource


def open_corpus(path: Path) -> CorpusCommand:
    root = corpus_root(path)
    return CorpusCommand(settings_from_context(), root, err_console(), DirectorySource(root))


def print_problems(console: Console, problems: list[Problem]) -> None:
    for problem in problems:
        style = "red" if problem.severity == "error" else "yellow"
        console.print(
            f"[{style}]{problem.severity}[/{style}]: ", end="", highlight=False, soft_wrap=True
        )
        console.print(
            f"{problem.path}: {problem.message}", markup=False, highlight=False, soft_wrap=True
        )


def report(
    console: Console, problems: list[Problem], line: str, *, as_json: bool, data: dict[str, Any]
) -> None:
    """The end of a command: the problems and one summary line, or one JSON object
    (`data` plus `ok` and the problems) on stdout. Exit code 1 when a problem is an error."""
    failed = any(p.severity == "error" for p in problems)
    if as_json:
        payload = {"ok": not failed, **data, "problems": [dataclasses.asdict(p) for p in problems]}
        click.echo(json.dumps(payload, ensure_ascii=False))
    else:
        print_problems(console, problems)
        click.echo(line)
    if failed:
        raise click.exceptions.Exit(1)


# Labels of the stages (as `glossator status` names a job's phases, hooks.progress)
LABELS = {**STAGES, "loading": "loading"}


@contextmanager
def progress_bar(console: Console, *, enabled: bool = True) -> Iterator[ProgressCallback]:
    """A rich progress bar fed by the indexer's `progress(stage, done, total)` calls:
    one line per stage with its count, elapsed time and ETA. Drawn only when `enabled`
    (not `--json`) and the console is a terminal; else the callback does nothing."""
    shown = enabled and console.is_terminal
    with Progress(
        TextColumn("{task.description:<11}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("ETA"),
        TimeRemainingColumn(),
        console=console,
        transient=True,
        disable=not shown,
    ) as bar:
        tasks: dict[str, Any] = {}

        def update(stage: str, done: int, total: int) -> None:
            if not shown:
                return
            if stage not in tasks:
                tasks[stage] = bar.add_task(LABELS.get(stage, stage), total=total or None)
            bar.update(tasks[stage], completed=done, total=total or None)

        yield update
