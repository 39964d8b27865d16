"""Settings → the plain values the lower layers take (the composition root's one job).

`store`, `hooks`, `indexer` and `gitserver` never read the settings or the environment
(docs/architecture.md, contracts in pyproject.toml); the commands and the server build
their collaborators here, so each rule "which setting feeds what" is written once.
"""

from __future__ import annotations

from functools import partial

from core.access import AccessPolicy, Grant, Role, StoredLookup
from gitserver.repos import RepoStore
from glossator import rebuild
from glossator.settings import Settings, reveal
from store.db import Database, DatabaseConfig
from store.tokens import token_grant


def database_config(settings: Settings) -> DatabaseConfig:
    return DatabaseConfig(
        data_dir=settings.data_dir,
        url=reveal(settings.database_url) or None,
        keyword_backend=settings.keyword_backend,
    )


def database(
    settings: Settings, *, pool_min: int = 1, pool_max: int = 8, share: bool = False
) -> Database:
    """The process's `Database` as the settings describe it (nothing started yet).

    `share`: see `Database`; for commands that only read or load, never for the server.
    An embedded data directory of PostgreSQL 18 is replaced by a new one whose rows are
    rebuilt from the repositories' sidecars (glossator.rebuild), whichever command
    starts it first."""
    store = RepoStore(settings.repos_dir, data_dir=settings.data_dir)
    return Database(
        database_config(settings),
        pool_min=pool_min,
        pool_max=pool_max,
        share=share,
        on_new_cluster=partial(rebuild.from_sidecars, store),
    )


def access_policy(settings: Settings, stored: StoredLookup | None = None) -> AccessPolicy:
    """Who may read, push and administer (core.access): GLOSSATOR_ANONYMOUS_READ, the
    `GLOSSATOR_*_TOKENS` variables (all-repository tokens of their role), the MCP token,
    and the tokens stored by `glossator token create` (`stored`, their lookup)."""
    admin = reveal(settings.admin_token)
    return AccessPolicy.from_tokens(
        anonymous_read=settings.anonymous_read,
        read=reveal(settings.read_tokens),
        push=reveal(settings.push_tokens),
        admin=(admin,) if admin else (),
        mcp=reveal(settings.mcp_token) or None,
        stored=stored,
    )


def stored_tokens(db: Database) -> StoredLookup:
    """The lookup of the tokens `glossator token create` stored (store.tokens), on the
    server's pool; a revoked token is no token from the next request on."""

    def lookup(digest: str) -> Grant | None:
        with db.pool.connection(timeout=10) as conn:
            found = token_grant(conn, digest)
        if found is None:
            return None
        token_id, role, repositories = found
        scope = frozenset(repositories) if repositories is not None else None
        return Grant(Role(role), scope, f"token {token_id}")

    return lookup
