"""One citation form for every face: `repository:path#chunk:lines`.

    cite("mybook", "corpus/w/c/source.md", 3, 14, 14)   # 'mybook:corpus/w/c/source.md#3:14'
    parse("mybook:corpus/w/c/source.md#3:14-16")        # Cited('mybook', 'corpus/…', 3, (14, 16))

`chunk` is the paragraph's number in its file, from 0 (the sidecar's `chunk_index`); the
lines, `:first` or `:first-last` when a chunk spans several (packed dialogue, verse), are
where it stands in the Markdown file, for a reader's eye: a lookup goes by the chunk.
The repository and the chunk are optional when a reader accepts a citation (a file alone
is the whole file, in whichever repository has it), and the path may be relative to the
folder a search page's group header names (`repo:folder/`, then `file#chunk:lines` under
it: the same citation, split to print the folder once). A chunk range (`#3-5`) is not a
citation: one chunk is, read around it with `context`.

Every face prints it this way (the CLI's search, context and show, the MCP tools' text,
the web reader) and every reader of a file accepts it (`glossator show`, MCP `get_node`,
`get_parent`, `get_children`, `/api/nodes/<repository>/<file>` with the `#` sent as
`%23`, the web's reading pages and its search box).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from search.errors import BadQuery

# the repository: a name before the first '/' and ':' (gitserver.repos.NAME has no ':');
# the file: up to the last '#'; the chunk a number, then optionally the lines
_CITATION = re.compile(
    r"(?:(?P<repository>[^/:#\s]+):(?!//))?(?P<file>.+?\.md)"
    r"(?:#(?P<chunk>[0-9]+)(?P<range>-[0-9]+)?(?::(?P<first>[0-9]+)(?:-(?P<last>[0-9]+))?)?)?"
)


@dataclass(frozen=True)
class Cited:
    repository: str | None
    source_file: str
    chunk: int | None
    lines: tuple[int, int] | None = None


def cite(
    repository: str | None,
    source_file: str,
    chunk: int,
    line_start: int | None = None,
    line_end: int | None = None,
) -> str:
    """The citation of one chunk (module doc)."""
    out = f"{repository}:" if repository else ""
    out += f"{source_file}#{chunk}"
    if line_start is not None:
        end = line_end if line_end is not None else line_start
        out += f":{line_start}" if end == line_start else f":{line_start}-{end}"
    return out


def parse(text: str) -> Cited:
    """A citation, or a file alone, as `cite` writes it; BadQuery saying the form if not."""
    given = text.strip()
    m = _CITATION.fullmatch(given)
    if m is None or not m["file"].strip().endswith(".md"):  # every node is a Markdown file
        raise BadQuery(
            f"{_short(given)!r} is not a citation: write repository:path#chunk[:line], "
            "e.g. mybook:corpus/<work>/<chapter>/source.md#3:14 (repository and #chunk optional)"
        )
    if m["range"]:
        first, last = int(m["chunk"]), int(m["range"][1:])
        middle = (first + last) // 2
        raise BadQuery(
            f"#{first}-{last} is a range of chunks; a citation names one: ask for #{middle} "
            f"with context={max(last - middle, 1)} to read the chunks around it"
        )
    lines = None
    if m["first"] is not None:
        lines = (int(m["first"]), int(m["last"] or m["first"]))
    chunk = int(m["chunk"]) if m["chunk"] is not None else None
    return Cited(m["repository"], m["file"].strip(), chunk, lines)


def merge(
    source_file: str, chunk: int | None, repository: str | None
) -> tuple[str, int | None, str | None]:
    """A reader's arguments with a citation given as its file: (file, chunk, repository),
    refusing a citation that says another chunk or repository than the arguments."""
    if "#" not in source_file and not _has_repository(source_file):
        return source_file, chunk, repository
    cited = parse(source_file)
    if cited.chunk is not None and chunk is not None and cited.chunk != chunk:
        raise BadQuery(
            f"the citation names chunk {cited.chunk} and chunk is {chunk}: give one of them"
        )
    if cited.repository and repository and cited.repository != repository:
        raise BadQuery(
            f"the citation names repository {cited.repository!r} and repository is "
            f"{repository!r}: give one of them"
        )
    return (
        cited.source_file,
        cited.chunk if cited.chunk is not None else chunk,
        cited.repository or repository,
    )


def whole_file(source_file: str, repository: str | None) -> tuple[str, str | None]:
    """(file, repository) of a citation given where a whole file is read (its parent, its
    children): the chunk and lines it names do not change which file that is."""
    file, _, repository = merge(source_file, None, repository)
    return file, repository


def _has_repository(text: str) -> bool:
    head = text.split("/", 1)[0]
    return ":" in head and not head.endswith(":")


def _short(text: str) -> str:
    return text if len(text) <= 80 else text[:80] + "…"
