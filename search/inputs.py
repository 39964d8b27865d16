"""One check of what a caller sends, for every face: the MCP tools, the HTTP API, the pages.

    check_arguments({"work": "\\x00", "k": 3})         # BadQuery: the work contains a NUL…
    check_known(["repostory"], ("q", "repository"), "/api/search")
                                                      # BadQuery: repostory is not a parameter
                                                      # of /api/search: did you mean repository?

Every text a caller sends (a query, a repository, work or branch name, a file) passes
`search.rows.check_text` before anything reaches PostgreSQL, which could not take a NUL
or a lone surrogate and would fail mid-query (a traceback in the log, a "database error"
that reads as an outage). An argument or query parameter that is not one of the call's
is refused, naming the closest one: a typo'd filter ignored silently searched everything.
Both faces answer these `BadQuery` errors the same way: one sentence (400 over HTTP, a
tool error over MCP), no traceback.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping, Sequence
from urllib.parse import unquote_to_bytes

from search.errors import BadQuery
from search.rows import check_text

MAX_NAME_CHARS = 200  # a repository, work or branch name; longer is a mistake, not a name


def check_arguments(arguments: Mapping[str, object]) -> None:
    """Every text among `arguments` (and in their lists) as PostgreSQL can take it."""
    for name, value in arguments.items():
        values = value if isinstance(value, list | tuple) else [value]
        for v in values:
            if isinstance(v, str):
                check_text(name, v)


def check_name(name: str, value: str | None) -> str | None:
    """A repository, work or branch name: text PostgreSQL takes, of a name's length."""
    if value is None:
        return None
    check_text(name, value)
    if len(value) > MAX_NAME_CHARS:
        raise BadQuery(f"{name} is {len(value)} characters long; the limit is {MAX_NAME_CHARS}")
    return value


def closest(name: str, known: Sequence[str]) -> str | None:
    """The known name `name` was probably meant to be (a typo, another face's spelling)."""
    found = difflib.get_close_matches(name, known, n=1, cutoff=0.6)
    if found:
        return found[0]
    prefixed = [k for k in known if k.startswith(name) or name.startswith(k)]
    return prefixed[0] if prefixed else None


def unknown(name: str, known: Sequence[str], where: str, kind: str = "parameter") -> str:
    """The sentence for an argument `where` does not take."""
    shown = name if len(name) <= 40 else name[:40] + "…"
    guess = closest(name, known)
    hint = f": did you mean {guess}?" if guess else ""
    article = "an" if kind[:1] in "aeiou" else "a"
    takes = ", ".join(known) or "none"
    return f"{shown} is not {article} {kind} of {where}{hint} (it takes {takes})"


def check_known(given: Iterable[str], known: Sequence[str], where: str) -> None:
    """BadQuery naming the first of `given` that is not in `known`, and the closest one."""
    for name in given:
        if name not in known:
            raise BadQuery(unknown(name, known, where))


def check_query_string(raw: bytes) -> None:
    """Each parameter of a raw query string is UTF-8: a server that decoded it leniently
    would search for U+FFFD where the caller sent something else (a broken sequence, a
    lone surrogate's bytes), so it is refused as MCP refuses a lone surrogate."""
    for pair in raw.split(b"&"):
        name, _, value = pair.partition(b"=")
        for part in (name, value):
            try:
                unquote_to_bytes(part.replace(b"+", b" ")).decode("utf-8")
            except UnicodeDecodeError:
                label = unquote_to_bytes(name).decode("utf-8", "replace") or "parameter"
                raise BadQuery(
                    f"the {label} is not UTF-8 text (a broken byte sequence or a lone "
                    "surrogate): send valid UTF-8 text"
                ) from None
