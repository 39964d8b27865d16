"""Context packs: the passages an agent should read to answer a question, within a budget.

    pack = context(db.pool, "pourquoi la disette n'enrichit pas", budget=1500,
                   embedder=embedder, settings=settings)
    for chapter in pack.chapters:
        chapter.summary                 # the chapter's summary (framing), when it fits
        for p in chapter.passages:      # reading order within the chapter
            p.citation, p.text

How a pack is made:

1. Hybrid search over paragraphs and chapter summaries (levels 0-1: a part's
   or the work's summary is too broad to answer from), at most
   `PER_CHAPTER` rows per chapter so that several chapters get a say.
2. A chapter-summary hit stands for its chapter: it climbs down to the
   chapter's paragraphs nearest the question (`search.passages`).
3. Relevance floor: a row counts only when the two retrievers agree on it
   (both find it, one of them in its top 20) and its cosine with
   the question is at least `min_similarity`; when nothing is left the pack
   says that nothing relevant was found instead of padding the budget with the
   least bad rows. Cosine alone cannot be the floor: multilingual-e5 gives
   questions foreign to the book (a pie recipe, Kubernetes) a best cosine of
   0.80-0.86, where the judged questions have 0.81-0.93 (bench/RESULTS.md).
   On the example, packs are found for 82 of the 85 judged questions (the
   lost ones are English: BM25 finds nothing to agree with) and for 6 of 12
   foreign probes; those share ordinary words with the book (trains, rules,
   weather) and get a small pack: the floor is a guard, not a judge.
4. Packing, best passage first: a passage goes in if it fits what is left of
   the budget; the first passage of a chapter brings the chapter's summary when
   both fit. Tokens are the stored `content_token_count` (cl100k), the same
   counts the indexer wrote, so the total is known without re-tokenising.
5. Output: chapters in the order of their best passage, passages in reading
   order within a chapter, each cited (file, heading path, chunk, lines);
   every chunk at most once.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from glossator.settings import Settings
from search import nodes as N
from search import rows as R
from search.engine import check_query, embed_query, search
from search.errors import BadQuery
from search.passages import best_paragraphs
from search.results import Chunk, Citation, Freshness, Hit, Node
from search.rows import ConnOrPool

MIN_BUDGET = 50
MAX_BUDGET = 100_000
MIN_SIMILARITY = 0.80
AGREE_TOP = 20
AGREE_DEPTH = 60  # both lists are 60 deep for 20 candidates: found by both
PER_CHAPTER = 3
CANDIDATES = 20


@dataclass
class Passage:
    """One paragraph of the text, with the similarity that earned it its place."""

    citation: Citation
    text: str
    token_count: int
    similarity: float
    rank: int  # 1 = the most relevant passage of the pack


@dataclass
class ChapterContext:
    """What the pack holds from one chapter: its summary (framing) and its passages."""

    source_file: str  # the chapter's text (source.md)
    heading_path: str
    summary: str | None
    summary_citation: Citation | None
    summary_token_count: int
    passages: list[Passage]


@dataclass
class ContextPack:
    question: str
    budget: int
    tokens: int  # summaries + passages, stored cl100k counts
    found: bool
    message: str
    chapters: list[ChapterContext]
    min_similarity: float
    index: list[Freshness] = field(default_factory=list)
    timings_ms: dict[str, float] = field(default_factory=dict)


class _Once:
    """The question embedded once, for search and the climb down alike."""

    def __init__(self, inner: Any, vector: Any) -> None:
        self.model, self.dimension = inner.model, inner.dimension
        self.vector = vector

    def embed_query(self, text: str) -> Any:
        return self.vector


def context(
    conn_or_pool: ConnOrPool,
    question: str,
    *,
    budget: int = 2000,
    repository: str | None = None,
    branch: str = "main",
    work: str | None = None,
    min_similarity: float = MIN_SIMILARITY,
    embedder: Any = None,
    reranker: Any = None,
    settings: Settings | None = None,
) -> ContextPack:
    """The best passages for `question` within `budget` tokens; see the module docstring."""
    started = time.perf_counter()
    if not isinstance(budget, int) or isinstance(budget, bool):
        raise BadQuery(f"budget must be a whole number of tokens, got {budget!r}")
    if not MIN_BUDGET <= budget <= MAX_BUDGET:
        raise BadQuery(f"budget must be from {MIN_BUDGET} to {MAX_BUDGET} tokens, got {budget}")
    settings = settings or Settings.from_env()
    if embedder is None:
        from indexer.embedders import get_embedder

        embedder = get_embedder(settings)
    once = _Once(embedder, embed_query(embedder, check_query(question, 1, "hybrid")))
    response = search(
        conn_or_pool,
        question,
        k=CANDIDATES,
        repository=repository,
        branch=branch,
        work=work,
        level=(0, 1),
        max_per_chapter=PER_CHAPTER,
        embedder=once,
        reranker=reranker,
        settings=settings,
    )
    with R.connection(conn_or_pool) as conn:
        kept = _candidates(conn, response.hits, once, branch, min_similarity)
        summaries = N.file_rows_many(
            conn,
            [(c.citation.repository, _summary_file(c.citation.source_file)) for c, _ in kept],
            branch,
        )
    chapters, tokens = _pack(kept, summaries, budget)
    found = bool(chapters)
    if found:
        n = sum(len(c.passages) for c in chapters)
        message = f"{n} passages from {len(chapters)} chapters, {tokens} of {budget} tokens"
    elif kept:
        message = (
            f"relevant passages exist but none fits a budget of {budget} tokens: raise the budget"
        )
    else:
        message = (
            "nothing relevant found: no passage is close enough to the question "
            f"(similarity floor {min_similarity}). Rephrase it, or browse with outline"
        )
    timings = dict(response.timings_ms)
    timings["total"] = round((time.perf_counter() - started) * 1000, 3)
    return ContextPack(
        question=response.query,
        budget=budget,
        tokens=tokens,
        found=found,
        message=message,
        chapters=chapters,
        min_similarity=min_similarity,
        index=response.index,
        timings_ms=timings,
    )


def _relevant(hit: Hit, min_similarity: float) -> bool:
    """Both retrievers agree on the row (one ranks it in its top AGREE_TOP, the other
    within AGREE_DEPTH) and its cosine clears the floor; see the module docstring."""
    s = hit.scores
    if s.keyword_rank is None or s.vector_rank is None or s.vector is None:
        return False
    best, worst = sorted((s.keyword_rank, s.vector_rank))
    return best <= AGREE_TOP and worst <= AGREE_DEPTH and s.vector >= min_similarity


def _candidates(
    conn: Any, hits: list[Hit], once: _Once, branch: str, min_similarity: float
) -> list[tuple[Chunk, float]]:
    """Relevant paragraphs in relevance order, each once: paragraph hits, and the
    paragraphs a relevant chapter-summary hit climbs down to."""
    relevant = [h for h in hits if _relevant(h, min_similarity)]
    climbed = best_paragraphs(
        conn,
        [(h.citation.repository, h.citation.source_file) for h in relevant if h.level == 1],
        once.vector,
        once.model,
        once.dimension,
        branch,
        per_chapter=2,
    )
    out: list[tuple[Chunk, float]] = []
    seen: set[tuple[str, str, int]] = set()
    for h in relevant:
        if h.level == 0:
            chunk = Chunk(h.citation, h.level, h.node_type, h.work, h.text, h.token_count, True)
            pairs = [(chunk, h.scores.vector or 0.0)]
        else:
            pairs = climbed.get((h.citation.repository, h.citation.source_file), [])
        for chunk, sim in pairs:
            c = chunk.citation
            key = (c.repository, c.source_file, c.chunk_index)
            if key not in seen:
                seen.add(key)
                out.append((chunk, sim))
    return out


def _summary_file(source_file: str) -> str:
    """A chapter's summary: summary.md in the folder of its source.md (DESIGN §3)."""
    return source_file.rsplit("/", 1)[0] + "/summary.md"


def _pack(
    candidates: list[tuple[Chunk, float]], summaries: dict[tuple[str, str], Node], budget: int
) -> tuple[list[ChapterContext], int]:
    """Greedy, best first: a passage goes in when it fits what is left."""
    chapters: dict[tuple[str, str], ChapterContext] = {}
    used = 0
    rank = 0
    for chunk, sim in candidates:
        c = chunk.citation
        key = (c.repository, c.source_file)
        cost = chunk.token_count
        if key not in chapters:
            summary = summaries.get((c.repository, _summary_file(c.source_file)))
            extra = sum(x.token_count for x in summary.chunks) if summary else 0
            if summary and used + cost + extra <= budget:
                first = summary.chunks[0].citation
                chapters[key] = ChapterContext(
                    c.source_file, c.heading_path, summary.text, first, extra, []
                )
                used += extra
            elif used + cost <= budget:
                chapters[key] = ChapterContext(c.source_file, c.heading_path, None, None, 0, [])
            else:
                continue
        if used + cost > budget:
            continue
        used += cost
        rank += 1
        chapters[key].passages.append(Passage(c, chunk.text, cost, round(sim, 6), rank))
    for ch in chapters.values():
        ch.passages.sort(key=lambda p: p.citation.chunk_index)
    return [ch for ch in chapters.values() if ch.passages], used
