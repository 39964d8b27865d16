"""`glossator serve` (git server, MCP, and by default its indexing worker) and
`glossator worker` (indexing only: run N of them against one PostgreSQL)."""

from __future__ import annotations

import logging
import socket
import sys

import click

from glossator.settings import Settings

log = logging.getLogger(__name__)

WORKER_MODES = ("process", "thread", "none")


def _settings() -> Settings:
    obj = click.get_current_context().obj  # glossator.cli.Context: settings read once
    settings = getattr(obj, "settings", None)
    return settings if isinstance(settings, Settings) else Settings.from_env()


def listening_socket(host: str, port: int) -> socket.socket:
    """The server's TCP socket, bound (port 0: a free one), for uvicorn's `sockets=`.

    Made with `IPPROTO_TCP` named, not 0: asyncio sets TCP_NODELAY on each accepted
    connection only when the socket says it is TCP, and without it Nagle's algorithm
    held every response's second write until the client's delayed ACK -- ~40 ms on
    each MCP call and git request (bench/RESULTS.md, "Latency").
    """
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError:
        sock.close()
        raise
    return sock


# uvicorn's exit code when the application cannot start; a second server is one
STARTUP_FAILED = 3


def refuse_a_second_server(settings: Settings) -> None:
    """One line and exit 3 when a server, or another command's embedded PostgreSQL, holds
    this data directory: checked before listening, so that no "listening on" line and no
    traceback of the failed start-up come first."""
    from glossator.paths import running_server
    from glossator.wiring import database

    other = running_server(settings)
    if other is not None:
        click.echo(
            f"glossator: a server already runs on the data directory {settings.data_dir} "
            f"(process {other.get('pid')}, {other.get('url')}): use it, stop it first, or "
            "set GLOSSATOR_DATA_DIR to another directory",
            err=True,
        )
        sys.exit(STARTUP_FAILED)
    held = database(settings).held_by()
    if held is not None:
        click.echo(f"glossator: {held}", err=True)
        sys.exit(STARTUP_FAILED)


@click.command()
@click.option("--host", default=None, help="Listen address (default GLOSSATOR_HOST).")
@click.option("--port", type=int, default=None, help="Port, 0 for a free one (GLOSSATOR_PORT).")
@click.option(
    "--worker",
    "worker_mode",
    type=click.Choice(WORKER_MODES),
    default="process",
    show_default=True,
    help="The indexing worker: a child process (`glossator worker`, supervised), a "
    "thread of the server, or none (run `glossator worker` elsewhere).",
)
@click.option("--no-worker", is_flag=True, help="Same as --worker none.")
def serve(host: str | None, port: int | None, worker_mode: str, no_worker: bool) -> None:
    """Run the git server and MCP (/mcp/), and by default an indexing worker beside them."""
    import uvicorn

    from glossator.server import build_app

    settings = _settings()
    host = host or settings.host
    port = settings.port if port is None else port
    refuse_a_second_server(settings)
    from glossator.wiring import access_policy

    for line in access_policy(settings).describe():  # who can read what, said plainly
        print(f"glossator: {line}", file=sys.stderr, flush=True)
    if not settings.push_tokens:
        log.warning(
            "GLOSSATOR_PUSH_TOKENS is empty: pushes need a token of "
            "`glossator token create --push NAME`"
        )
    try:
        sock = listening_socket(host, port)
    except OSError as e:
        raise click.ClickException(
            f"cannot listen on {host}:{port}: {e.strerror}; set GLOSSATOR_PORT or --port"
        ) from None
    bound = sock.getsockname()[1]
    # the address it listens on, recorded in server.json: the CLI asks it (glossator.remote)
    settings = settings.replace(host=host, port=bound)
    app = build_app(settings, worker="none" if no_worker else worker_mode)
    config = uvicorn.Config(
        app,
        log_level=settings.log_level.lower(),
        access_log=False,
        lifespan="on",
        # h11's default (16 KB) answers a longer request line with a bare 400 before the
        # app sees it; with 1 MiB a pasted 100 KB query gets the search's own message
        h11_max_incomplete_event_size=1 << 20,
    )
    server = uvicorn.Server(config)
    # One line a script (or a test) can wait for; printed before the lifespan runs.
    print(f"glossator: listening on http://{host}:{bound}", file=sys.stderr, flush=True)
    server.run(sockets=[sock])
    if not server.started:
        sys.exit(1)


@click.command()
@click.option(
    "--concurrency",
    type=click.IntRange(1, 64),
    default=1,
    show_default=True,
    help="Jobs this worker runs side by side (each of a different branch).",
)
@click.option("--supervised-by", type=int, default=None, hidden=True)
@click.option("--sole-worker", is_flag=True, hidden=True)
@click.option("--ready-fd", type=int, default=None, hidden=True)
@click.option("--replaces", type=int, default=None, hidden=True)  # a dead child's pid
def worker(
    concurrency: int,
    supervised_by: int | None,
    sole_worker: bool,
    ready_fd: int | None,
    replaces: int | None,
) -> None:
    """Run indexing jobs from the queue in PostgreSQL (same settings as `serve`).

    Start as many as you like, on this machine or others: they share the queue, run
    jobs of different branches side by side and never one branch twice at a time.
    Each needs the server's database (GLOSSATOR_DATABASE_URL) and its repositories
    (GLOSSATOR_REPOS_DIR, a shared volume). Stops on SIGTERM or Ctrl-C."""
    from glossator.worker import run_worker

    sys.exit(
        run_worker(
            _settings(),
            concurrency=concurrency,
            sole_worker=sole_worker,
            supervised_by=supervised_by,
            ready_fd=ready_fd,
            replaces=replaces,
        )
    )
