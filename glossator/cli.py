"""The `glossator` command. Subcommands live in `glossator.commands`; this module
only wires them together, loads settings once, and turns Glossator's own errors
into one clear line and a non-zero exit code (never a traceback).
"""

from __future__ import annotations

import importlib
import json
import logging
import sys
from typing import TYPE_CHECKING, Any

import click

from core.errors import GlossatorError, SettingsError
from glossator.commands.base import Context, out_console, pass_context

if TYPE_CHECKING:
    from glossator.settings import Settings

__all__ = ["Context", "main", "out_console", "pass_context"]

# Commands whose log is their output: INFO by default, timestamped.
LONG_RUNNING = ("serve", "worker")

# Each command: its module, its name there, and its short help (the first line of its
# docstring, which tests/test_cli_startup.py checks). A command's module is imported
# when the command runs or shows its own help, never for `glossator --help`: the
# modules behind them import numpy, PostgreSQL's driver, the MCP SDK
# (`glossator --help` took 0.6-5.8 s, most of it importing what it never used).
COMMANDS: dict[str, tuple[str, str, str]] = {
    "context": (
        "glossator.commands.reading",
        "context",
        "Cited passages to answer QUESTION within a token budget (the `context` tool).",
    ),
    "corpus": ("glossator.commands.corpus", "corpus", "Build and check corpus repositories."),
    "db": (
        "glossator.commands.load",
        "db",
        "Inspect the database (embedded PostgreSQL or GLOSSATOR_DATABASE_URL).",
    ),
    "doctor": (
        "glossator.commands.doctor",
        "doctor",
        "Check the database, extensions, embedder, repositories, sidecars and jobs; say how "
        "to fix each problem.",
    ),
    "eval": (
        "glossator.commands.search",
        "eval_command",
        "Recall@k, MRR, nDCG@10, top-1 and paraphrase MRR of each mode on QUERIES.jsonl.",
    ),
    "index": (
        "glossator.commands.indexing",
        "index",
        "Index the corpus at PATH: frontmatter, due summaries, then sidecars, in that order.",
    ),
    "load": (
        "glossator.commands.load",
        "load",
        "Load the sidecars of the corpus tree at PATH into the database.",
    ),
    "mcp": (
        "glossator.commands.search",
        "mcp",
        "Serve the MCP tools over stdio (for desktop MCP clients).",
    ),
    "outline": (
        "glossator.commands.reading",
        "outline",
        "Table of contents: works, parts and chapters with their files (the `outline` tool).",
    ),
    "repo": (
        "glossator.commands.repos",
        "repo",
        "Create, list and delete the bare repositories the server serves.",
    ),
    "search": (
        "glossator.commands.search",
        "search",
        "Search the indexed corpus; print hits with citations and scores.",
    ),
    "serve": (
        "glossator.commands.serve",
        "serve",
        "Run the git server and MCP (/mcp/), and by default an indexing worker beside them.",
    ),
    "show": (
        "glossator.commands.reading",
        "show",
        "A file as cited (the `get_node` tool), or its parent or children (`get_parent`, "
        "`get_children`).",
    ),
    "sidecars": (
        "glossator.commands.indexing",
        "sidecars",
        "Write the JSONL sidecars of the corpus at PATH whose .md changed (hash or model).",
    ),
    "status": (
        "glossator.commands.repos",
        "status",
        "Indexing jobs: queued, running, done and failed, with errors, durations, progress.",
    ),
    "summarize": (
        "glossator.commands.summarize",
        "summarize",
        "Generate the summaries of the corpus at PATH that are missing or out of date.",
    ),
    "token": (
        "glossator.commands.tokens",
        "token",
        "Create, list and revoke access tokens (a role and the repositories it covers).",
    ),
    "worker": (
        "glossator.commands.serve",
        "worker",
        "Run indexing jobs from the queue in PostgreSQL (same settings as `serve`).",
    ),
}


def load_command(name: str) -> click.Command:
    """The command `name` of COMMANDS, its module imported now."""
    module, attribute, _ = COMMANDS[name]
    command: click.Command = getattr(importlib.import_module(module), attribute)
    if name == "repo" and isinstance(command, click.Group) and "delete" not in command.commands:
        from glossator.commands.repo_delete import repo_delete

        command.add_command(repo_delete)
    return command


def _error_console() -> Any:
    from rich.console import Console

    # soft_wrap: an error is one line whatever the terminal's width (greppable, copyable)
    return Console(stderr=True, soft_wrap=True)


class GlossatorGroup(click.Group):
    """`glossator`: COMMANDS loaded when used, and Glossator's errors as one line."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*self.commands, *COMMANDS})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands and cmd_name in COMMANDS:
            self.add_command(load_command(cmd_name), cmd_name)
        return self.commands.get(cmd_name)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """click's list of commands, from COMMANDS' short helps for those not loaded."""
        names = self.list_commands(ctx)
        if not names:
            return
        limit = formatter.width - 6 - max(len(name) for name in names)
        rows = []
        for name in names:
            command = self.commands.get(name)
            if command is None:
                help_text = click.Command(name, help=COMMANDS[name][2]).get_short_help_str(limit)
            elif command.hidden:
                continue
            else:
                help_text = command.get_short_help_str(limit)
            rows.append((name, help_text))
        with formatter.section("Commands"):
            formatter.write_dl(rows)

    def invoke(self, ctx: click.Context) -> object:
        try:
            return super().invoke(ctx)
        except GlossatorError as e:
            console = _error_console()
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
        _error_console().print(f"[yellow]warning:[/yellow] {notice}", highlight=False)


@main.command()
@click.option("--json", "as_json", is_flag=True, help="Print the settings as JSON.")
@pass_context
def config(obj: Context, as_json: bool) -> None:
    """Print every setting: value (secrets masked), where it came from, and help."""
    from rich.table import Table

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
