"""What every subcommand shares with the `glossator` group: the settings read once
(`Context`, `pass_context`) and the stdout console for results (`out_console`).

The subcommand modules import this module, never `glossator.cli`: that one imports
them to register them, so the dependency runs one way and no import order matters.
"""

from __future__ import annotations

import click
from rich.console import Console

from glossator.settings import Settings


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


def out_console() -> Console:
    """stdout for results: a terminal's width there, no wrapping when piped (a table
    folded at 80 columns cuts `GLOSSATOR_DATABASE_URL` in two for grep and cut)."""
    console = Console()
    return console if console.is_terminal else Console(width=100_000, soft_wrap=True)
