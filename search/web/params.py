"""An HTTP request's query string → the typed arguments of the search functions.

Every value arrives as text; each is checked here with the MCP tools' bounds and a
message saying what to send instead (`BadQuery`, which the web layer answers with
400). Text goes through `search.rows.check_text` (no NUL, no lone surrogate)
before it can reach PostgreSQL.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from search import rows as R
from search.errors import BadQuery, UnknownFile
from search.mcp_views import DEFAULT_FIELDS, Field
from search.options import AGENT_MAX_PER_CHAPTER, MAX_K
from search.results import MODES, Mode

FIELDS: tuple[Field, ...] = ("text", "heading", "lines", "scores")
MAX_NAME_CHARS = 200  # a repository, work or branch name; longer is a mistake, not a name
MAX_PATH_CHARS = 1000  # a repository-relative file path


def text(params: Mapping[str, str], name: str, *, limit: int = MAX_NAME_CHARS) -> str | None:
    """The parameter stripped, None when absent or empty (an empty form field)."""
    value = params.get(name)
    if value is None or not value.strip():
        return None
    R.check_text(name, value)
    if len(value) > limit:
        raise BadQuery(f"{name} is {len(value)} characters long; the limit is {limit}")
    return value.strip()


def whole(
    params: Mapping[str, str], name: str, default: int | None, low: int, high: int | None
) -> int | None:
    value = text(params, name)
    if value is None:
        return default
    span = f"from {low} to {high}" if high is not None else f"of at least {low}"
    try:
        number = int(value)
    except ValueError:
        raise BadQuery(f"{name} must be a whole number {span}, got {value!r}") from None
    if number < low or (high is not None and number > high):
        raise BadQuery(f"{name} must be a whole number {span}, got {number}")
    return number


def flag(params: Mapping[str, str], name: str) -> bool:
    value = (text(params, name) or "false").lower()
    if value not in ("true", "false", "1", "0", "yes", "no", "on", "off"):
        raise BadQuery(f"{name} must be true or false, got {value!r}")
    return value in ("true", "1", "yes", "on")


@dataclass(frozen=True)
class SearchArgs:
    """The `search` tool's arguments, from `q`, `k`, `mode`, `level`, `work`,
    `repository`, `branch`, `fields`, `snippets`, `max_tokens`, `max_per_chapter`."""

    query: str
    k: int = 10
    mode: Mode = "hybrid"
    level: int | None = None
    work: str | None = None
    repository: str | None = None
    branch: str | None = None
    fields: tuple[Field, ...] = DEFAULT_FIELDS
    snippets: bool = False
    max_tokens: int | None = None
    max_per_chapter: int = AGENT_MAX_PER_CHAPTER

    @classmethod
    def parse(cls, params: Mapping[str, str]) -> SearchArgs:
        # the query's own limit (search.options.MAX_QUERY_CHARS) is checked by the search
        # itself, with its message; here only what PostgreSQL could not take
        query = params.get("q", "")
        R.check_text("query", query)
        mode = text(params, "mode") or "hybrid"
        if mode not in MODES:
            raise BadQuery(f"mode must be one of {', '.join(MODES)}, got {mode!r}")
        fields = cls.fields
        if (given := text(params, "fields")) is not None:
            names = tuple(f.strip() for f in given.split(",") if f.strip())
            bad = [f for f in names if f not in FIELDS]
            if bad:
                raise BadQuery(f"fields must be a comma-separated list of {', '.join(FIELDS)}")
            fields = names  # type: ignore[assignment]
        return cls(
            query=query,
            k=whole(params, "k", 10, 1, MAX_K) or 10,
            mode=mode,  # type: ignore[arg-type]
            level=whole(params, "level", None, 0, 3),
            work=text(params, "work"),
            repository=text(params, "repository"),
            branch=text(params, "branch"),
            fields=fields,
            snippets=flag(params, "snippets"),
            max_tokens=whole(params, "max_tokens", None, 100, None),
            max_per_chapter=whole(params, "max_per_chapter", AGENT_MAX_PER_CHAPTER, 1, MAX_K)
            or AGENT_MAX_PER_CHAPTER,
        )


def source_path(path: str) -> str:
    """A repository-relative Markdown file as a URL names it; UnknownFile for anything that
    could not be one (`..`, an absolute path, a backslash, not .md)."""
    R.check_text("file path", path)
    if len(path) > MAX_PATH_CHARS:
        raise UnknownFile(
            f"the file path is {len(path)} characters long; the limit is {MAX_PATH_CHARS}"
        )
    steps = path.split("/")
    if (
        not path
        or path.startswith("/")
        or "\\" in path
        or any(s in ("", ".", "..") for s in steps)
        or not path.endswith(".md")
    ):
        raise UnknownFile(
            f"{path!r} is not a file of a corpus: name a repository-relative Markdown file "
            "such as corpus/<work>/<chapter>/source.md (no '..', no leading '/')"
        )
    return path


def repository_name(name: str) -> str:
    R.check_text("repository", name)
    if len(name) > MAX_NAME_CHARS:
        raise BadQuery(f"repository is {len(name)} characters long; the limit is {MAX_NAME_CHARS}")
    return name
