"""What every subcommand shares with the `glossator` group: the settings read once
(`Context`, `pass_context`) and the stdout console for results (`out_console`).

The subcommand modules import this module, never `glossator.cli`: that one imports
them to register them, so the dependency runs one way and no import order matters.
"""

from __future__ import annotations

import io
import sys
from typing import IO, TYPE_CHECKING, TextIO, cast

import click

if TYPE_CHECKING:  # both imported where used: `glossator --help` needs neither
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
            from glossator.providers import check
            from glossator.settings import Settings

            settings = attach(Settings.from_env())
            check(settings)  # a provider no plugin registers stops the command here, at its start
            self._settings = settings
        return self._settings


pass_context = click.make_pass_decorator(Context, ensure=True)


# Piped, a line is as long as its content: rich lays things out on a canvas this
# wide (so that no table wraps) and _Unpadded cuts what it pads at the line's end.
PIPED_WIDTH = 100_000


class _Unpadded(io.TextIOBase):
    """A text stream that drops the spaces ending each line before writing it on.

    Rich pads to the console's width whatever expands (a `Padding`, a centred title,
    a justified text): 100,000 spaces a line on a pipe when nothing else
    would. Lines are held until their newline so that a line written in pieces is
    trimmed whole."""

    def __init__(self, out: TextIO) -> None:
        self._out = out
        self._pending = ""

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        *lines, self._pending = (self._pending + text).split("\n")
        if lines:
            self._out.write("".join(line.rstrip(" ") + "\n" for line in lines))
        return len(text)

    def flush(self) -> None:
        # rich flushes after every print, also one that ends mid-line (`end=""`): write
        # what is certain and keep the trailing spaces, which are content when more of
        # the line follows and padding when its newline does (dropped then, or at exit)
        if self._pending:
            certain = self._pending.rstrip(" ")
            self._out.write(certain)
            self._pending = self._pending[len(certain) :]
        self._out.flush()


def out_console() -> Console:
    """stdout for results: a terminal's width there; piped, no wrapping (a table
    folded at 80 columns cuts `GLOSSATOR_DATABASE_URL` in two for grep and cut) and
    no padding: each line as long as its content."""
    from rich.console import Console

    console = Console()
    if console.is_terminal:
        return console
    out = cast(IO[str], _Unpadded(sys.stdout))  # a TextIOBase: what rich writes to
    return Console(file=out, width=PIPED_WIDTH, soft_wrap=True)
