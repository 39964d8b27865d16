"""`glossator token create|list|revoke`: the access tokens stored in PostgreSQL.

    glossator token create --read mybook [--read other]    # reads those repositories
    glossator token create --push mybook                   # pushes (and reads) mybook
    glossator token create --admin                         # everything, and /api/repos
    glossator token create --read '*'                      # reads every repository
    glossator token list
    glossator token revoke 3

A token is shown once, on stdout, when it is made; the database keeps its sha256 only
(core/access.py, store/tokens.py). The running server asks the database on each request,
so a new token works and a revoked one stops at once, with no restart.
"""

from __future__ import annotations

import sys

import click

from core.access import Role, new_token, token_digest
from gitserver.errors import GitServerError
from gitserver.repos import check_name
from glossator import wiring
from glossator.settings import Settings
from store.tokens import create_token, list_tokens, revoke_token

EVERY = "*"  # --read '*' / --push '*': every repository


def _settings() -> Settings:
    obj = click.get_current_context().obj  # glossator.cli.Context: settings read once
    settings = getattr(obj, "settings", None)
    return settings if isinstance(settings, Settings) else Settings.from_env()


@click.group()
def token() -> None:
    """Create, list and revoke access tokens (a role and the repositories it covers)."""


def _scope(names: tuple[str, ...]) -> list[str] | None:
    """The repositories named (None: every one, for '*'); a bad name is a usage error."""
    if EVERY in names:
        if len(names) > 1:
            raise click.ClickException(f"'{EVERY}' means every repository: name no other with it")
        return None
    for name in names:
        try:
            check_name(name)
        except GitServerError as e:
            raise click.ClickException(str(e)) from None
    return sorted(set(names))


@token.command("create")
@click.option("--read", "read", multiple=True, metavar="REPO", help="Read REPO (repeat; '*': all).")
@click.option(
    "--push",
    "push",
    multiple=True,
    metavar="REPO",
    help="Push to and read REPO (repeat; '*': all).",
)
@click.option("--admin", is_flag=True, help="Every repository, and creating repositories.")
@click.option("--note", default="", help="Whom or what it is for (shown by `token list`).")
def token_create(read: tuple[str, ...], push: tuple[str, ...], admin: bool, note: str) -> None:
    """Make a token and print it, once: keep it then, it cannot be shown again."""
    given = [flag for flag, on in (("--read", read), ("--push", push), ("--admin", admin)) if on]
    if len(given) != 1:
        raise click.ClickException(
            "give one role: --read REPO (repeatable), --push REPO (repeatable) or --admin"
        )
    if "\x00" in note or len(note) > 200:
        raise click.ClickException("--note must be text of 200 characters at most")
    role = Role.ADMIN if admin else Role.PUSH if push else Role.READ
    scope = None if admin else _scope(push or read)
    secret = new_token()
    with wiring.database(_settings(), share=True) as db, db.connect() as conn:
        token_id = create_token(conn, token_digest(secret), role.value, scope, note=note)
        conn.commit()
    covers = "every repository" if scope is None else ", ".join(scope)
    click.echo(
        f"token {token_id}: {role.value} on {covers}; shown once, keep it now "
        f"(revoke with `glossator token revoke {token_id}`)",
        err=True,
    )
    click.echo(secret)


@token.command("list")
def token_list() -> None:
    """The tokens made by `token create`, revoked ones too (never the tokens themselves)."""
    with wiring.database(_settings(), share=True) as db, db.connect() as conn:
        rows = list_tokens(conn)
    if not rows:
        click.echo("no tokens yet (glossator token create --read REPO)", err=True)
        return
    for r in rows:
        covers = "every repository" if r["repositories"] is None else ", ".join(r["repositories"])
        state = f"revoked {r['revoked_at']:%Y-%m-%d %H:%M}" if r["revoked_at"] else "live"
        note = f"  ({r['note']})" if r["note"] else ""
        made = f"{r['created_at']:%Y-%m-%d %H:%M}"
        click.echo(f"{r['id']}\t{r['role']}\t{covers}\tmade {made}\t{state}{note}")


@token.command("revoke")
@click.argument("token_id", metavar="ID", type=int)
def token_revoke(token_id: int) -> None:
    """Revoke token ID (see `token list`): the server refuses it from its next request."""
    with wiring.database(_settings(), share=True) as db, db.connect() as conn:
        done = revoke_token(conn, token_id)
        conn.commit()
    if not done:
        click.echo(f"error: no live token {token_id} (see `glossator token list`)", err=True)
        sys.exit(1)
    click.echo(f"token {token_id} revoked")
