"""What a reading page shows: a file's chunks, the summary beside them, where it sits.

    page = reading_page(db, "sophismes", "corpus/…/chapitre-07-…/source.md", branch="main")

A page is one file of the corpus, at `/read/<repository>/<source_file>`:

- a chapter's text (source.md): its paragraphs, each anchored `#chunk-N`, its
  summary (the summary.md of its folder) beside it;
- a summary (summary.md): its text, the chapter it summarises or the parts and
  chapters below it;
- a work's summary is the work's page: its outline.

Breadcrumbs climb the outline (work → part → chapter), previous/next follow the
reading order of the work's chapters.

Anchors that survive an edit: a hit's link names its paragraph by index *and* by a
short hash of its text (`?chunk=N&h=…#chunk-N`). When the paragraphs before it
change, the index moves but the hash does not: the page finds the paragraph by its
hash and redirects to its new anchor (saying so); when the paragraph itself
changed, the page says the cited text is gone and shows what is at its index now.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from urllib.parse import quote

from search import nodes
from search import rows as search_rows
from search.errors import UnknownFile
from search.results import Citation, Node, OutlineEntry
from search.rows import ConnOrPool

HASH_CHARS = 10  # 40 bits: a collision between two paragraphs of one file is not a concern


def paragraph_hash(text: str) -> str:
    """A short, stable name for a paragraph's text (whitespace runs do not count)."""
    return hashlib.sha256(" ".join(text.split()).encode()).hexdigest()[:HASH_CHARS]


@dataclass
class Crumb:
    title: str
    source_file: str | None


@dataclass
class ReadingPage:
    repository: str
    branch: str
    node: Node
    work_title: str
    crumbs: list[Crumb]
    summary: Node | None = None  # a chapter text's summary
    text_file: str | None = None  # a chapter summary's text
    entry: OutlineEntry | None = None  # the outline below this file (parts, works)
    previous: OutlineEntry | None = None
    next: OutlineEntry | None = None
    hashes: dict[int, str] = field(default_factory=dict)

    @property
    def is_work(self) -> bool:
        return self.node.level == 3

    def find(self, digest: str) -> int | None:
        """The chunk whose text hashes to `digest`, if one still does."""
        return next((i for i, h in self.hashes.items() if h == digest), None)


def _path_to(entries: list[OutlineEntry], source_file: str) -> list[OutlineEntry] | None:
    for entry in entries:
        if source_file in (entry.source_file, entry.text_file):
            return [entry]
        below = _path_to(entry.children, source_file)
        if below is not None:
            return [entry, *below]
    return None


def _chapters(entry: OutlineEntry) -> list[OutlineEntry]:
    """Entries with a text, in reading order (liminary pieces and chapters)."""
    own = [entry] if entry.text_file else []
    return own + [c for child in entry.children for c in _chapters(child)]


def reading_page(
    db: ConnOrPool,
    repository: str,
    source_file: str,
    *,
    branch: str | None,
    readable: frozenset[str] | None = None,
) -> ReadingPage:
    """The page of `source_file` (`branch` None: the repository's default branch), when
    `repository` is among `readable` (None: all); UnknownRepository / UnknownFile saying
    what exists."""
    with search_rows.connection(db) as conn:  # one connection for the four queries of a page
        node = nodes.get_node(
            conn, source_file, repository=repository, branch=branch, readable=readable
        )
        on = node.branch  # the branch it was found on, for the page and its lookups
        tree = nodes.outline(conn, repository, node.work, branch=on)
        work = tree.works[0] if tree.works else None
        path = _path_to(tree.works, node.source_file) if work else None
        if work is None or path is None:  # indexed but not in the tree: never expected
            raise UnknownFile(f"{source_file} is not in the outline of its work {node.work!r}")
        here = path[-1]
        summary = None
        if node.level == 0 and here.source_file and here.source_file != node.source_file:
            found = nodes.file_rows_many(conn, [(repository, here.source_file)], on)
            summary = found.get((repository, here.source_file))
    page = ReadingPage(
        repository=repository,
        branch=on,
        node=node,
        work_title=work.title,
        crumbs=[Crumb(e.title, e.source_file or e.text_file) for e in path],
        summary=summary,
        hashes={c.citation.chunk_index: paragraph_hash(c.text) for c in node.chunks},
    )
    if node.level == 1 and here.text_file and here.text_file != node.source_file:
        page.text_file = here.text_file
    if node.level >= 2 or here.kind != "chapter":
        page.entry = here
    chapters = _chapters(work)
    at = next((i for i, c in enumerate(chapters) if c is here), None)
    if at is not None:
        page.previous = chapters[at - 1] if at > 0 else None
        page.next = chapters[at + 1] if at + 1 < len(chapters) else None
    return page


def chunk_link(citation: Citation, text: str, query: str = "") -> str:
    """The reading page's URL of a chunk, naming it by index and by hash (module doc);
    `query`: the search that led there, whose words the page marks."""
    c = citation
    searched = f"&q={quote(query[:MAX_LINK_QUERY])}" if query.strip() else ""
    return read_url(c.repository, c.source_file) + (
        f"?chunk={c.chunk_index}&h={paragraph_hash(text)}{searched}#chunk-{c.chunk_index}"
    )


# the searched words a hit's link carries to the page that marks them: a query's words,
# not a pasted page (a URL that stays short enough for every browser and proxy)
MAX_LINK_QUERY = 300


def read_url(repository: str, source_file: str) -> str:
    return f"/read/{quote(repository, safe='')}/{quote(source_file, safe='/')}"
