"""`glossator outline`, `glossator show` and `glossator context`: the MCP tools from a shell.

    glossator outline [--work W] [--depth 1-3] [--excerpts] [--repository R] [--json]
    glossator show [REPOSITORY:]FILE[#CHUNK[:LINES]] [--context N] [--parent | --children] [--json]
    glossator context "question" [--budget 2000] [--work W] [--repository R] [--json]

Same answers as the MCP tools `outline`, `get_node` / `get_parent` / `get_children` and
`context`: the same functions (search.nodes, SearchService.context) and views
(search.mcp.views, search.mcp.reading_views). The text on stdout is the tool's text; `--json`
prints the tool's structured content, one JSON object. `show` takes a file as every face
cites it (search.citation): `repository:path#chunk:lines`, or the path alone.

`context` embeds the question: when a server runs on this data directory it asks the
server (`GET /api/context`, glossator.remote), which holds the model already; `outline`
and `show` need no model and read the database directly (a running server's, shared).
An unknown repository, work or file is an error: one line, exit code 1.
"""

from __future__ import annotations

import json
from typing import Any

import click

from glossator.commands.base import Context, pass_context
from glossator.remote import ask
from glossator.search_wiring import open_database, search_service
from search import nodes
from search.citation import merge, parse
from search.context import MAX_BUDGET, MIN_BUDGET
from search.errors import BadQuery, UnknownFile
from search.mcp import reading_views, views

json_option = click.option(
    "--json", "as_json", is_flag=True, help="Print the MCP tool's structured content as JSON."
)
repository_option = click.option("--repository", help="Only this repository (default: all).")
branch_option = click.option(
    "--branch",
    help="The branch to read (default: each repository's own, the branch its HEAD names).",
)


def _print(text: str, data: Any, as_json: bool) -> None:
    if as_json:
        click.echo(json.dumps(data, ensure_ascii=False, indent=2))
    else:
        click.echo(text)


def split_ref(ref: str, repository: str | None) -> tuple[str, int | None, str | None]:
    """A citation as every face prints it (search.citation: `repository:path#chunk:lines`,
    each part but the path optional) → (file, chunk, repository)."""
    try:
        parse(ref)  # its form, whichever parts it has
        return merge(ref.strip(), None, repository)
    except BadQuery as e:
        raise click.BadParameter(str(e), param_hint="CITATION") from None


@click.command("outline")
@click.option("--work", help="Only this work (its folder name under corpus/).")
@click.option(
    "--depth",
    type=click.IntRange(1, 3),
    default=3,
    show_default=True,
    help="1 works, 2 parts, 3 chapters.",
)
@click.option("--excerpts", is_flag=True, help="Each summary's opening too.")
@repository_option
@branch_option
@json_option
@pass_context
def outline(
    obj: Context,
    work: str | None,
    depth: int,
    excerpts: bool,
    repository: str | None,
    branch: str | None,
    as_json: bool,
) -> None:
    """Table of contents: works, parts and chapters with their files (the `outline` tool)."""
    with open_database(obj.settings) as db:
        tree = nodes.outline(db.pool, repository, work, branch=branch)
    _print(*reading_views.outline_view(tree, depth=depth, excerpts=excerpts, shell=True), as_json)


@click.command("show")
@click.argument("ref", metavar="[REPOSITORY:]FILE[#CHUNK[:LINES]]")
@click.option(
    "--context",
    "around",
    type=click.IntRange(0, 20),
    default=0,
    show_default=True,
    help="Chunks either side of CHUNK.",
)
@click.option("--parent", "relation", flag_value="parent", help="The node FILE hangs from.")
@click.option("--children", "relation", flag_value="children", help="The nodes below FILE.")
@repository_option
@branch_option
@json_option
@pass_context
def show(
    obj: Context,
    ref: str,
    around: int,
    relation: str | None,
    repository: str | None,
    branch: str | None,
    as_json: bool,
) -> None:
    """A file as cited (the `get_node` tool), or its parent or children (`get_parent`,
    `get_children`)."""
    source_file, chunk, repository = split_ref(ref, repository)
    if relation is not None and (chunk is not None or around):
        raise click.UsageError(f"--{relation} takes a file, not a chunk: drop #{chunk}/--context")
    with open_database(obj.settings) as db:
        pool = db.pool
        if relation == "parent":
            parent = nodes.get_parent(pool, source_file, repository=repository, branch=branch)
            if parent is None:  # the MCP tool's message
                raise UnknownFile(
                    f"{source_file} is the summary of a whole work: it has no parent. "
                    "Use outline to see the work's parts and chapters."
                )
            text, data = views.node_view(parent)
        elif relation == "children":
            kids = nodes.get_children(pool, source_file, repository=repository, branch=branch)
            parent_file = kids[0].parent_source_file if kids else None
            text, data = views.children_view(parent_file or source_file, kids)  # type: ignore[assignment]
        else:
            node = nodes.get_node(
                pool, source_file, chunk, repository=repository, branch=branch, context=around
            )
            text, data = views.node_view(node)
    _print(text, data, as_json)


@click.command("context")
@click.argument("question")
@click.option(
    "--budget",
    type=click.IntRange(MIN_BUDGET, MAX_BUDGET),
    default=2000,
    show_default=True,
    help="Tokens of text at most.",
)
@click.option("--work", help="Only this work (its folder name under corpus/).")
@repository_option
@branch_option
@json_option
@pass_context
def context(
    obj: Context,
    question: str,
    budget: int,
    work: str | None,
    repository: str | None,
    branch: str | None,
    as_json: bool,
) -> None:
    """Cited passages to answer QUESTION within a token budget (the `context` tool)."""
    settings = obj.settings
    params = {
        "q": question,
        "budget": budget,
        "work": work,
        "repository": repository,
        "branch": branch,
        "format": "json" if as_json else "text",
    }
    answered = ask(settings, "/api/context", params)
    if answered is not None:
        if as_json:
            _print("", answered.json(), True)
        else:
            click.echo(answered.text.rstrip("\n"))
        return
    with open_database(settings) as db:
        service = search_service(settings, db)
        pack = service.context(
            question, budget=budget, repository=repository, branch=branch, work=work
        )
    _print(*reading_views.context_view(pack), as_json)
