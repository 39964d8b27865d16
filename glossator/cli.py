"""The `glossator` command. Subcommands live in `glossator.commands`; this module
only wires them together, loads settings once, and turns Glossator's own errors
into one clear line and a non-zero exit code (never a traceback).
"""

from __future__ import annotations

import json
import logging
import sys

import click
from rich.console import Console
from rich.table import Table

from core.errors import GlossatorError
from glossator.commands.base import Context, out_console, pass_context
from glossator.commands.corpus import corpus
from glossator.commands.doctor import doctor
from glossator.commands.indexing import index, sidecars
from glossator.commands.load import db, load
from glossator.commands.reading import context, outline, show
from glossator.commands.repo_delete import repo_delete
from glossator.commands.repos import repo, status
from glossator.commands.search import eval_command, mcp, search
from glossator.commands.serve import serve, worker
from glossator.commands.summarize import summarize
from glossator.commands.tokens import token
from glossator.settings import Settings, SettingsError

__all__ = ["Context", "main", "out_console", "pass_context"]

# soft_wrap: an error is one line whatever the terminal's width (greppable, copyable)
console = Console(stderr=True, soft_wrap=True)

# Commands whose log is their output: INFO by default, timestamped.
LONG_RUNNING = ("serve", "worker")


class GlossatorGroup(click.Group):
    def invoke(self, ctx: click.Context) -> object:
        try:
            return super().invoke(ctx)
        except GlossatorError as e:
            console.print("[red]error:[/red] ", end="", highlight=False)
            console.print(str(e), markup=False, highlight=False)  # a name may hold [brackets]
            sys.exit(2 if isinstance(e, SettingsError) else 1)


def log_level(settings: Settings, verbose: int, command: str | None) -> str:
    """-v INFO, -vv DEBUG; else GLOSSATOR_LOG_LEVEL when set; else INFO for the server
    and the worker (a log is their output) and WARNING for commands, whose output is
    their summary."""
    if verbose:
        return "DEBUG" if verbose > 1 else "INFO"
    if settings.source("log_level") != "default":
        return str(settings.log_level)
    return "INFO" if command in LONG_RUNNING else "WARNING"


@click.group(cls=GlossatorGroup)
@click.version_option(package_name="glossator")
@click.option("-v", "--verbose", count=True, help="Log more: -v INFO, -vv DEBUG.")
@click.pass_context
def main(ctx: click.Context, verbose: int) -> None:
    """Glossator: push Markdown books, get summaries, sidecars and hybrid search."""
    ctx.obj = Context()
    command = ctx.invoked_subcommand
    server = command in LONG_RUNNING
    logging.basicConfig(
        level=log_level(ctx.obj.settings, verbose, command),
        format=("%(asctime)s " if server else "") + "%(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    for notice in ctx.obj.settings.notices:  # ignored variables: said, never fatal
        console.print(f"[yellow]warning:[/yellow] {notice}", highlight=False)


@main.command()
@click.option("--json", "as_json", is_flag=True, help="Print the settings as JSON.")
@pass_context
def config(obj: Context, as_json: bool) -> None:
    """Print every setting: value (secrets masked), where it came from, and help."""
    rows = obj.settings.describe()
    if as_json:
        keys = ("variable", "value", "source", "help")
        click.echo(json.dumps([dict(zip(keys, r, strict=True)) for r in rows], indent=2))
        return
    table = Table(show_lines=False)
    for col in ("setting", "value", "source", "help"):
        table.add_column(col, overflow="fold")
    for variable, shown, source, help_text in rows:
        table.add_row(variable, shown, source, help_text)
    out_console().print(table)


for _command in (
    corpus,
    sidecars,
    summarize,
    index,
    load,
    db,
    serve,
    worker,
    repo,
    status,
    search,
    context,
    outline,
    show,
    mcp,
    eval_command,
    doctor,
    token,
):
    main.add_command(_command)
repo.add_command(repo_delete)
