"""`glossator doctor`, the command: the checks of glossator/checks.py as a table (or JSON), and
an exit status of 1 when one failed."""

from __future__ import annotations

import dataclasses
import json
import sys

import click
from rich.table import Table

from glossator.checks import run
from glossator.commands.base import out_console
from glossator.settings import Settings


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Print the findings as JSON.")
@click.pass_context
def doctor(ctx: click.Context, as_json: bool) -> None:
    """Check the database, extensions, embedder, repositories, sidecars and jobs; say how to fix each problem."""
    obj = ctx.find_root().obj  # the settings glossator.cli read (and attached to a server)
    settings = obj.settings if obj is not None else Settings.from_env()
    findings = run(settings)
    fails = sum(f.status == "fail" for f in findings)
    warns = sum(f.status == "warn" for f in findings)
    if as_json:
        click.echo(json.dumps([dataclasses.asdict(f) for f in findings], indent=2))
        sys.exit(1 if fails else 0)
    table = Table()
    for col in ("check", "status", "detail", "fix"):
        table.add_column(col, overflow="fold")
    colours = {"ok": "green", "warn": "yellow", "fail": "red"}
    for f in findings:
        table.add_row(f.check, f"[{colours[f.status]}]{f.status}[/]", f.detail, f.fix)
    out_console().print(table)
    click.echo(f"{len(findings)} checks: {fails} failed, {warns} warnings")
    sys.exit(1 if fails else 0)
