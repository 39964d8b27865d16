"""Calibrated relevance gates, kept (`search_calibrations`, migration 026).

    found = load_calibration(conn, scope, state)     # the payload, or None (absent or stale)
    save_calibration(conn, scope, state, payload)    # replaces the scope's row

`scope` is (model, branch, repository, work, languages): None for "each repository's
default branch", "every repository" or "every work" is stored as ''. `state` is the caller's fingerprint of what the
calibration was measured on (search.service: the scope's indexed commits and the
method); a row with another state is stale: not returned, replaced by the next save.
The payload is the caller's JSON (search.calibration.Calibration.to_json). Each
writer commits its own statement on an autocommit connection or within the caller's
transaction.
"""

from __future__ import annotations

from typing import Any

from psycopg.types.json import Jsonb

Scope = tuple[str, str | None, str | None, str | None, tuple[str, ...]]


def _params(scope: Scope) -> tuple[str, str, str, str, str]:
    model, branch, repository, work, languages = scope
    return model, branch or "", repository or "", work or "", ",".join(languages)


def load_calibration(conn: Any, scope: Scope, state: str) -> dict[str, Any] | None:
    """The payload saved for `scope` when it was measured on `state`, else None."""
    row = conn.execute(
        "SELECT payload FROM search_calibrations WHERE model = %s AND branch = %s"
        " AND repository = %s AND work = %s AND languages = %s AND state = %s",
        (*_params(scope), state),
    ).fetchone()
    return row[0] if row is not None else None


def save_calibration(conn: Any, scope: Scope, state: str, payload: dict[str, Any]) -> None:
    """Keep `payload` as `scope`'s calibration on `state` (a stale row is replaced)."""
    conn.execute(
        "INSERT INTO search_calibrations"
        " (model, branch, repository, work, languages, state, payload, computed_at)"
        " VALUES (%s, %s, %s, %s, %s, %s, %s, now())"
        " ON CONFLICT (model, branch, repository, work, languages)"
        " DO UPDATE SET state = EXCLUDED.state, payload = EXCLUDED.payload,"
        " computed_at = EXCLUDED.computed_at",
        (*_params(scope), state, Jsonb(payload)),
    )
