"""`glossator load` and `glossator db …`: the store's commands.

    glossator load PATH --repository NAME [--branch main] [--json]
    glossator db status [--json]

`load` syncs the database to the sidecars of a corpus tree (store.tree.sync_tree):
a progress bar on a terminal, one line per refused file, one summary line on stdout
(or, with `--json`, one JSON object); exit code 1 when a file was refused. Settings
come from the root command's context (the environment), so these commands use the
same database as `glossator serve`.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click
from rich.console import Console
from rich.table import Table

from core.vocabulary import DEFAULT_BRANCH
from glossator import wiring
from glossator.checks import keyword_caveat
from glossator.commands.base import out_console
from glossator.commands.common import err_console, json_option, progress_bar, report
from glossator.settings import Settings
from indexer.corpus.source import DirectorySource
from store import content, embedded, migrations, server, vectors
from store.keyword import choose_backend
from store.tree import sync_tree

err = Console(stderr=True, highlight=False, soft_wrap=True)  # never break a path


def _settings(ctx: click.Context) -> Settings:
    obj = ctx.find_root().obj
    settings = getattr(obj, "settings", None)
    return settings if isinstance(settings, Settings) else Settings.from_env()


@click.command()
@click.argument("path", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--repository", "-r", required=True, help="Repository name the rows belong to.")
@click.option(
    "--branch", "-b", default=DEFAULT_BRANCH, show_default=True, help="Branch of the rows."
)
@json_option
@click.pass_context
def load(ctx: click.Context, path: Path, repository: str, branch: str, as_json: bool) -> None:
    """Load the sidecars of the corpus tree at PATH into the database.

    Files whose sidecar is unchanged are skipped; rows of files that no longer
    exist are deleted; a bad sidecar is reported and keeps its previous rows.
    """
    source = DirectorySource(path)
    console = err_console()
    with (
        wiring.database(_settings(ctx), share=True) as db,
        progress_bar(console, enabled=not as_json) as progress,
    ):
        # the loader tells the number of files, then each file done (store.loader)
        counts = {"done": 0, "total": 0}

        def planned(total: int) -> None:
            counts["total"] = total
            progress("loading", 0, total)

        def visited(_path: str) -> None:
            counts["done"] += 1
            progress("loading", counts["done"], counts["total"])

        result = sync_tree(
            db,
            repository=repository,
            branch=branch,
            source=source,
            progress=visited,
            on_plan=planned,
        )
    data = {
        "command": "load",
        "repository": repository,
        "branch": branch,
        "loaded": len(result.loaded),
        "rows": result.rows,
        "unchanged": len(result.skipped),
        "deleted": len(result.deleted),
        "refused": sum(p.severity == "error" for p in result.problems),
        "seconds": round(result.seconds, 3),
    }
    line = f"{repository}/{branch}: {result.summary()}"
    report(console, result.problems, line, as_json=as_json, data=data)


@click.group()
def db() -> None:
    """Inspect the database (embedded PostgreSQL or GLOSSATOR_DATABASE_URL)."""


@db.command()
@click.option("--json", "as_json", is_flag=True, help="Print the figures as JSON.")
@click.pass_context
def status(ctx: click.Context, as_json: bool) -> None:
    """Server, schema version, and rows per repository, branch, level, node type and model."""
    out = out_console()
    settings = _settings(ctx)
    with wiring.database(settings, share=True) as database:
        info = database.info()
        with database.connect() as conn:
            version = max(migrations.applied(conn), default=0)
            rows = content.row_counts(conn)
            indexes = [(m, d, n) for m, (d, n) in sorted(vectors.registered(conn).items())]
            chosen = choose_backend(conn)
            backend, caveat = chosen.name, chosen.caveat
            if caveat:  # the fallback: "no pg_search" only where the server has none
                offered = "pg_search" in server.available_extensions(conn)
                caveat, _ = keyword_caveat(
                    caveat, offered=offered, schema=version > 0, setting=settings.keyword_backend
                )
            files = content.loaded_file_counts(conn)
    kind = "embedded" if info.embedded else "external"
    # an embedded PostgreSQL 18 directory moved aside for 17 (store.embedded), kept
    aside = embedded.kept_aside(info.data_dir) if info.data_dir is not None else []
    if as_json:
        keys = ("repository", "branch", "level", "node_type", "model", "rows")
        data = {
            "server": {"version": info.version, "kind": kind, "address": info.address},
            "database": info.database,
            "data_dir": str(info.data_dir) if info.data_dir is not None else None,
            "schema_version": version,
            "code_schema_version": migrations.code_version(),
            "keyword_backend": backend,
            "keyword_caveat": caveat or None,
            "kept_data_dirs": [str(p) for p in aside],
            "files": [{"repository": r, "branch": b, "loaded": n} for r, b, n in files],
            "rows": [dict(zip(keys, r, strict=True)) for r in rows],
            "vector_indexes": [{"model": m, "dimension": d, "name": n} for m, d, n in indexes],
        }
        click.echo(json.dumps(data, indent=2, ensure_ascii=False))
        return
    out.print(f"server:    PostgreSQL {info.version} ({kind})")
    out.print(f"address:   {info.address}  database: {info.database}")
    if info.data_dir is not None:
        out.print(f"data dir:  {info.data_dir}")
    for path in aside:
        out.print(f"kept:      {path} (another PostgreSQL version's; delete it by hand)")
    out.print(f"schema:    version {version} (this Glossator knows {migrations.code_version()})")
    out.print(f"keyword:   {backend}" + (f" [yellow]({caveat})[/yellow]" if caveat else ""))
    for repository, branch, n in files:
        out.print(f"files:     {repository}/{branch}: {n} loaded")
    table = Table(title="rows")
    for col in ("repository", "branch", "level", "node type", "model", "rows"):
        table.add_column(
            col, justify="right" if col in ("level", "rows") else "left", overflow="fold"
        )
    for r in rows:
        table.add_row(r[0], r[1], str(r[2]), r[3], r[4], str(r[5]))
    if not rows:
        table.add_row("(empty)", "", "", "", "", "0")
    out.print(table)
    for model, dim, name in indexes:
        out.print(f"HNSW index {name}: {model} ({dim} dimensions)")


@db.command("pg-search")
@click.pass_context
def pg_search(ctx: click.Context) -> None:
    """Create ParadeDB's pg_search BM25 index (needs the pg_search extension on the server)."""
    from store.pgsearch import PgSearchBackend

    with wiring.database(_settings(ctx), share=True) as database, database.connect() as conn:
        if "pg_search" not in server.available_extensions(conn):
            err.print(
                "[red]error:[/red] pg_search is not installed on this server: use ParadeDB "
                "(the paradedb/paradedb image) or install pg_search; the SQL BM25 stays in use"
            )
            sys.exit(1)
        created = PgSearchBackend.create_index(conn)
        conn.commit()
    err.print("pg_search index created" if created else "pg_search index already there")
