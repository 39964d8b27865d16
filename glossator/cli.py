"""The `glossator` command. Subcommands live beside the code they drive; this module
only wires them together, loads settings once, and turns Glossator's own errors
into one clear line and a non-zero exit code (never a traceback).
"""

from __future__ import annotations

import importlib
import json
import logging
import sys

import click
from rich.console import Console
from rich.table import Table

from core.errors import GlossatorError
from glossator.settings import Settings, SettingsError

console = Console(stderr=True)

# (module, attribute): each a click command or group. Every one is part of the install:
# a module or command that fails to import is a broken install and says so (no guard).
SUBCOMMANDS: tuple[tuple[str, str], ...] = (
    ("glossator.commands.corpus", "corpus"),
    ("glossator.commands.indexing", "sidecars"),
    ("glossator.commands.summarize", "summarize"),
    ("glossator.commands.indexing", "index"),
    ("glossator.commands.load", "load"),
    ("glossator.commands.load", "db"),
    ("glossator.commands.serve", "serve"),
    ("glossator.commands.serve", "worker"),
    ("glossator.commands.repos", "repo"),
    ("glossator.commands.repos", "status"),
    ("glossator.commands.search", "search"),
    ("glossator.commands.search", "mcp"),
    ("glossator.commands.search", "eval_command"),
    ("glossator.doctor", "doctor"),
)


# Commands whose log is their output: INFO by default, timestamped.
LONG_RUNNING = ("serve", "worker")


class Context:
    """What every subcommand gets: settings, read once from the environment."""

    def __init__(self) -> None:
        self._settings: Settings | None = None

    @property
    def settings(self) -> Settings:
        if self._settings is None:
            from glossator.paths import attach

            self._settings = attach(Settings.from_env())
        return self._settings


pass_context = click.make_pass_decorator(Context, ensure=True)


class GlossatorGroup(click.Group):
    def invoke(self, ctx: click.Context) -> object:
        try:
            return super().invoke(ctx)
        except GlossatorError as e:
            console.print(f"[red]error:[/red] {e}", highlight=False)
            sys.exit(2 if isinstance(e, SettingsError) else 1)


def out_console() -> Console:
    """stdout for results: a terminal's width there, no wrapping when piped (a table
    folded at 80 columns cuts `GLOSSATOR_DATABASE_URL` in two for grep and cut)."""
    console = Console()
    return console if console.is_terminal else Console(width=100_000, soft_wrap=True)


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


def _register() -> None:
    # imported here, after `main` and the helpers they use exist: the subcommand
    # modules import this one (Context, pass_context, out_console)
    for module_name, attr in SUBCOMMANDS:
        main.add_command(getattr(importlib.import_module(module_name), attr))


_register()
