"""An HTTP request's query string → the typed arguments of the search functions.

Every value arrives as text; each is checked here with the MCP tools' bounds and a
message saying what to send instead (`BadQuery`, which the web layer answers with
400). Text goes through `search.rows.check_text` (no NUL, no lone surrogate)
before it can reach PostgreSQL.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from search import inputs as search_inputs
from search import rows as search_rows
from search.errors import BadQuery, UnknownFile
from search.mcp.views import DEFAULT_FIELDS, Field
from search.options import AGENT_MAX_PER_CHAPTER, MAX_K
from search.results import MODES, Mode

FIELDS: tuple[Field, ...] = ("text", "heading", "lines", "scores")
MAX_NAME_CHARS = search_inputs.MAX_NAME_CHARS
MAX_PATH_CHARS = 1000  # a repository-relative file path


@dataclass(frozen=True)
class Param:
    """A query parameter a route takes: what `check` accepts and /openapi.json describes."""

    name: str
    kind: str  # its JSON Schema type: string, integer, boolean
    help: str
    required: bool = False


_REPOSITORY = Param("repository", "string", "one repository (default: every one)")
_WORK = Param("work", "string", "one work: its folder name under corpus/ (see outline)")
_BRANCH = Param("branch", "string", "a branch (default: each repository's default branch)")
_Q = Param("q", "string", "the words to look for, any language", required=True)
SEARCH_PARAMS = (
    _Q,
    Param("k", "integer", f"hits, 1 to {MAX_K} (default 10)"),
    Param("mode", "string", "hybrid (default), bm25 or vector"),
    Param("level", "integer", "0 paragraphs, 1 chapter summaries, 2 parts, 3 works"),
    _WORK,
    _REPOSITORY,
    _BRANCH,
    Param("fields", "string", "comma-separated: text, heading, lines, scores"),
    Param("snippets", "boolean", "the first ~40 words of each passage"),
    Param("max_tokens", "integer", "leave out the hits past this many tokens"),
    Param("max_per_chapter", "integer", "hits of one chapter (default 1)"),
    Param("format", "string", "json (default), text (the MCP tool's text) or response"),
)
CHUNK = Param("chunk", "integer", "one chunk (paragraph) of the file, 0-based")
# The query parameters of each route, by its path as Starlette and /openapi.json write it.
PARAMS: dict[str, tuple[Param, ...]] = {
    "/api/search": SEARCH_PARAMS,
    "/api/context": (
        Param("q", "string", "the question to answer", required=True),
        Param("budget", "integer", "tokens of passages to give (default 2000)"),
        _WORK,
        _REPOSITORY,
        _BRANCH,
        Param("format", "string", "json (default) or text (the MCP tool's text)"),
    ),
    "/api/outline": (
        _REPOSITORY,
        _WORK,
        _BRANCH,
        Param("depth", "integer", "1 works, 2 parts, 3 chapters (default)"),
        Param("excerpts", "boolean", "each summary's opening"),
    ),
    "/api/nodes/{repository}/{path}": (
        CHUNK,
        Param("context", "integer", "chunks either side of chunk, 0 to 20"),
        _BRANCH,
    ),
    "/api/nodes/{repository}/{path}/parent": (_BRANCH,),
    "/api/nodes/{repository}/{path}/children": (_BRANCH,),
    # the pages: a form's empty fields arrive too, and `h`/`moved` are a hit link's
    "/": (_BRANCH,),
    "/search": (
        _Q,
        Param("k", "integer", ""),
        Param("mode", "string", ""),
        _WORK,
        _REPOSITORY,
        _BRANCH,
        Param("level", "integer", ""),
    ),
    "/read/{repository}": (_BRANCH,),
    "/read/{repository}/{path}": (
        CHUNK,
        Param("h", "string", "the cited paragraph's hash"),
        Param("moved", "integer", "where the cited paragraph was"),
        Param("q", "string", "the words of the search that led here, marked"),
        _BRANCH,
    ),
    "/jobs": (Param("fragment", "string", ""),),
}


def check(raw_query: bytes, params: Mapping[str, str], route: str) -> None:
    """The one check of a request's query (search.inputs): UTF-8, known names, text that
    PostgreSQL takes. BadQuery (400) naming the closest parameter for an unknown one."""
    search_inputs.check_query_string(raw_query)
    known = tuple(p.name for p in PARAMS[route])
    search_inputs.check_known(params.keys(), known, route)
    search_inputs.check_arguments(params)


def text(params: Mapping[str, str], name: str, *, limit: int = MAX_NAME_CHARS) -> str | None:
    """The parameter stripped, None when absent or empty (an empty form field)."""
    value = params.get(name)
    if value is None or not value.strip():
        return None
    search_rows.check_text(name, value)
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
        search_rows.check_text("query", query)
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
    search_rows.check_text("file path", path)
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
    search_rows.check_text("repository", name)
    if len(name) > MAX_NAME_CHARS:
        raise BadQuery(f"repository is {len(name)} characters long; the limit is {MAX_NAME_CHARS}")
    return name
