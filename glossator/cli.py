"""The `glossator` command. Subcommands live beside the code they drive; this module
only wires them together, loads settings once, and turns Glossator's own errors
into one clear line and a non-zero exit code (never a traceback).
"""

from __future__ import annotations

import importlib
import logging
import sys

import click
from rich.console import Console
from rich.table import Table

from glossator.errors import GlossatorError
from glossator.settings import Settings, SettingsError

console = Console(stderr=True)

# (module, attribute): each a click command or group, imported lazily so that a
# missing optional part never breaks `glossator config`.
SUBCOMMANDS: tuple[tuple[str, str], ...] = (
    ("indexer.importers.cli", "corpus"),
    ("indexer.cli", "sidecars"),
    ("indexer.summaries.cli", "summarize"),
    ("indexer.cli", "index"),
    ("store.cli", "load"),
    ("store.cli", "db"),
    ("gitserver.cli", "serve"),
    ("gitserver.cli", "repo"),
    ("gitserver.cli", "status"),
    ("search.cli", "search"),
    ("search.cli", "mcp"),
    ("search.cli", "eval_command"),
    ("glossator.doctor", "doctor"),
)


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


@click.group(cls=GlossatorGroup)
@click.version_option(package_name="glossator")
@click.pass_context
def main(ctx: click.Context) -> None:
    """Glossator: push Markdown books, get summaries, sidecars and hybrid search."""
    ctx.obj = Context()
    level = ctx.obj.settings.log_level
    logging.basicConfig(
        level=level, format="%(asctime)s %(levelname)s %(name)s: %(message)s", stream=sys.stderr
    )


@main.command()
@pass_context
def config(obj: Context) -> None:
    """Print every setting: value (secrets masked), where it came from, and help."""
    table = Table(show_lines=False)
    for col in ("setting", "value", "source", "help"):
        table.add_column(col, overflow="fold")
    for variable, shown, source, help_text in obj.settings.describe():
        table.add_row(variable, shown, source, help_text)
    Console().print(table)


def _register() -> None:
    for module_name, attr in SUBCOMMANDS:
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as e:
            if e.name and module_name.startswith(e.name):
                continue  # that part is not built yet
            raise
        command = getattr(module, attr, None)
        if command is not None:
            main.add_command(command)


_register()
