"""What search and the lookups return: plain dataclasses, one per concept.

They are the typed contract of `search/`: the CLI prints them, the MCP server
returns them as structured tool output (the SDK derives the JSON schema from
these annotations), and `glossator eval` reads their citations. Rows of the
database are *chunks* (one paragraph, or one chunk of a summary); a *node* is a
whole file (all the rows of one `source_file`, in order).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

Mode = Literal["hybrid", "bm25", "vector"]
MODES: tuple[str, ...] = ("hybrid", "bm25", "vector")
RerankStatus = Literal["applied", "timeout", "failed", "disabled"]
FreshnessStatus = Literal["current", "behind", "not indexed", "unknown"]


@dataclass(frozen=True)
class Citation:
    """Where a passage is: enough to quote it and to find it again."""

    repository: str
    branch: str
    source_file: str
    heading_path: str
    chunk_index: int
    line_start: int | None = None
    line_end: int | None = None

    @property
    def ref(self) -> str:
        """`source_file#chunk_index`, the form `glossator eval` and `get_node` use."""
        return f"{self.source_file}#{self.chunk_index}"

    def __str__(self) -> str:
        lines = ""
        if self.line_start is not None:
            lines = (
                f", line {self.line_start}"
                if self.line_end in (None, self.line_start)
                else f", lines {self.line_start}-{self.line_end}"
            )
        return (
            f"{self.heading_path} — {self.repository}:{self.source_file}#{self.chunk_index}{lines}"
        )


@dataclass
class Chunk:
    """One row: a paragraph (level 0) or a chunk of a summary (levels 1-3)."""

    citation: Citation
    level: int
    node_type: str
    work: str
    text: str
    token_count: int
    vectorized: bool


@dataclass
class Node:
    """One file of the corpus: all the rows of its `source_file`, in order."""

    repository: str
    branch: str
    source_file: str
    parent_source_file: str | None
    level: int
    node_type: str
    work: str
    heading_path: str
    chunks: list[Chunk]

    @property
    def text(self) -> str:
        return "\n\n".join(c.text for c in self.chunks)


@dataclass
class Scores:
    """Every score a hit got; None where that retriever did not find it.

    keyword: BM25 score; vector: cosine similarity (1 = same direction); fused:
    weighted reciprocal rank fusion (chapter included); chapter: the part of
    `fused` the hit inherits from its chapter's rankings (hybrid, search.chapters);
    rerank: the reranker's relevance. The ranks (1-based) are the hit's place in
    each list before fusion.
    """

    fused: float
    keyword: float | None = None
    vector: float | None = None
    rerank: float | None = None
    keyword_rank: int | None = None
    vector_rank: int | None = None
    chapter: float | None = None
    phrase: bool | None = None  # True: the hit holds a quoted part of the question (hybrid)


@dataclass
class Hit:
    """One result: a chunk, its scores, and the context asked for."""

    rank: int
    citation: Citation
    level: int
    node_type: str
    work: str
    text: str
    scores: Scores
    parent_source_file: str | None = None
    token_count: int = 0  # stored cl100k count of the text (context packs budget with it)
    parent: Node | None = None
    children: list[Node] | None = None
    previous: Chunk | None = None
    next: Chunk | None = None
    # a chapter summary hit (level 1) climbed down: its chapter's paragraphs nearest the query
    passages: list[Chunk] | None = None


@dataclass
class RerankReport:
    """What happened to reranking: `applied`, `timeout`, `failed` or `disabled`."""

    status: RerankStatus
    model: str | None = None
    seconds: float | None = None
    detail: str | None = None


@dataclass
class Freshness:
    """The index of one repository's branch compared with the branch's tip (search.freshness).

    status: `current` (indexed at the tip), `behind` (the branch moved since),
    `not indexed`, or `unknown` (the repository is not on this server).
    """

    repository: str
    branch: str
    status: FreshnessStatus
    indexed_commit: str | None = None
    indexed_at: str | None = None  # ISO 8601, UTC
    branch_tip: str | None = None
    note: str = ""
    problems: list[str] = field(default_factory=list)  # the last index's; empty: complete
    # while a job embeds (its rows loaded before their vectors, issue 41): the share of
    # the branch's vectorized rows that have their vector, 0 to 1; None: all of them
    vectors: float | None = None

    @property
    def vectors_incomplete(self) -> bool:
        return self.vectors is not None


@dataclass
class SearchResponse:
    query: str
    mode: Mode
    k: int
    branch: str
    filters: dict[str, Any]
    hits: list[Hit]
    rerank: RerankReport
    embedding_model: str | None = None
    # milliseconds per stage: embed, keyword, vector, fuse, rerank, context, total
    timings_ms: dict[str, float] = field(default_factory=dict)
    # the index's freshness, one entry per repository the answer draws on
    index: list[Freshness] = field(default_factory=list)
    # what the answer must say about the branches read (search.scope): a repository
    # without rows on its default branch, rows found only on other branches
    notes: list[str] = field(default_factory=list)


@dataclass
class OutlineEntry:
    """A node of the outline: a work, a part, a chapter or a liminary piece.

    `source_file` is the node's own file (its summary.md, or its source.md when
    it has no summary); `text_file` is the chapter's source.md when there is one.
    """

    kind: Literal["work", "part", "chapter"]
    title: str
    heading_path: str
    level: int
    source_file: str | None
    text_file: str | None = None
    summary_excerpt: str | None = None
    paragraphs: int | None = None
    repository: str | None = None  # set on works
    children: list[OutlineEntry] = field(default_factory=list)


@dataclass
class Outline:
    repository: str | None
    branch: str
    works: list[OutlineEntry]
    notes: list[str] = field(default_factory=list)  # about the branches read (search.scope)
