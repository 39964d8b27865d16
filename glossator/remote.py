"""Asking the running `glossator serve` rather than doing the work in this process.

A `glossator search` or `context` in a process of its own loads the embedding model
(and starts PostgreSQL when no server runs): 2-4 s before the first answer. When a
server runs on the same data directory (its `server.json`, glossator.paths), its
HTTP API (search.web.api) answers with the model it already holds, the same
functions behind it.

    response = ask(settings, "/api/search", {"q": "…", "format": "response"})
    if response is None: ...        # no server, or it cannot be reached: do it here

A server that answers with an error (an unknown repository, the database down) is
the answer: `GlossatorError` with its message, exit code 1. One that cannot be
reached, or refuses the CLI's token, is not: the command does the work itself and
says why at INFO (`-v`).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

import httpx

from core.errors import GlossatorError
from glossator.paths import running_server
from glossator.settings import Settings, reveal

log = logging.getLogger(__name__)

# A context pack on a loaded two-core machine takes seconds; the server bounds its own
# work (rerank budget, statement timeouts). This only keeps a wedged server from
# holding the command forever.
TIMEOUT_S = 120.0


def server_base(settings: Settings) -> str | None:
    """The URL of the server running on this data directory, if one runs."""
    info = running_server(settings)
    url = info.get("url") if info else None
    return url if isinstance(url, str) and url.startswith("http") else None


def _headers(settings: Settings) -> dict[str, str]:
    """A token the server's read policy takes (read tokens, else push tokens), if any."""
    tokens = reveal(settings.read_tokens) or reveal(settings.push_tokens)
    return {"Authorization": f"Bearer {tokens[0]}"} if tokens else {}


def ask(settings: Settings, path: str, params: Mapping[str, Any]) -> httpx.Response | None:
    """GET `path` on the running server; None when there is none to ask (see module)."""
    base = server_base(settings)
    if base is None:
        return None
    query = {k: str(v) for k, v in params.items() if v is not None and v is not False}
    try:
        response = httpx.get(
            base.rstrip("/") + path, params=query, headers=_headers(settings), timeout=TIMEOUT_S
        )
    except httpx.HTTPError as e:
        log.info("the server at %s does not answer (%s): working here", base, type(e).__name__)
        return None
    if response.status_code in (401, 403):
        log.info("the server at %s refuses this command's token: working here", base)
        return None
    if response.status_code == 200:
        log.info("answered by the server at %s", base)
        return response
    try:
        message = response.json()["error"]
    except (ValueError, KeyError, TypeError):  # not our API (an older server): do it here
        log.info("the server at %s has no %s: working here", base, path)
        return None
    raise GlossatorError(str(message))
