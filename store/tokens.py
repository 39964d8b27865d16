"""The access tokens the CLI makes (`access_tokens`, migration 050; core/access.py).

    token_id = create_token(conn, digest, "read", ["mybook"], note="for Ada")
    found = token_grant(conn, digest)       # (id, role, repositories) of a live token, or None
    rows = list_tokens(conn)                # every token, revoked ones too, never a digest
    revoke_token(conn, token_id)            # False when there is no such live token

Only digests are stored (core.access.token_digest): the token itself is shown once.
Each writer runs in the caller's transaction (or on an autocommit connection).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


def create_token(
    conn: Any, digest: str, role: str, repositories: Sequence[str] | None, *, note: str = ""
) -> int:
    """A new token's id; `repositories` None: every repository."""
    row = conn.execute(
        "INSERT INTO access_tokens (digest, role, repositories, note)"
        " VALUES (%s, %s, %s, %s) RETURNING id",
        (digest, role, list(repositories) if repositories is not None else None, note),
    ).fetchone()
    return int(row[0])


def token_grant(conn: Any, digest: str) -> tuple[int, str, list[str] | None] | None:
    """(id, role, repositories) of the live token with this digest; None: no such token."""
    row = conn.execute(
        "SELECT id, role, repositories FROM access_tokens WHERE digest = %s AND revoked_at IS NULL",
        (digest,),
    ).fetchone()
    return (int(row[0]), row[1], row[2]) if row is not None else None


def list_tokens(conn: Any) -> list[dict[str, Any]]:
    """Every token, oldest first: id, role, repositories, note, created_at, revoked_at."""
    cur = conn.execute(
        "SELECT id, role, repositories, note, created_at, revoked_at FROM access_tokens ORDER BY id"
    )
    names = [d.name for d in cur.description]
    return [dict(zip(names, row, strict=True)) for row in cur.fetchall()]


def revoke_token(conn: Any, token_id: int) -> bool:
    """Revoke token `token_id`; False when no live token has that id."""
    cur = conn.execute(
        "UPDATE access_tokens SET revoked_at = now() WHERE id = %s AND revoked_at IS NULL",
        (token_id,),
    )
    return bool(cur.rowcount)
