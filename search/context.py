"""Context packs: the passages an agent should read to answer a question, within a budget.

    pack = context(db.pool, "pourquoi la disette n'enrichit pas", budget=1500,
                   query_vector=vector)          # or SearchService.context(question, …)
    for chapter in pack.chapters:
        chapter.summary                 # the chapter's summary (framing), when it fits
        for p in chapter.passages:      # reading order within the chapter
            p.citation, p.text

A hybrid search over paragraphs and chapter summaries (capped per chapter so that
several chapters get a say; a summary hit climbs down to its chapter's paragraphs,
search.passages), one "nothing relevant" decision per question (`_judge`,
search.relevance: best cosine, closeness to the book's centre and term coverage, since
cosine alone cannot tell a foreign question; thresholds from search.tuning or search.calibration), chapters whose
summaries are nearest the question joined when no row comes from them
(`_chapters_by_summary`), then packing coverage first (`_pack`: every chapter's best
passage, then the summaries, then second passages) on the stored cl100k token counts,
so the total is known without re-tokenising. Never padding: a foreign question gets
"nothing relevant" and `pack.relevance` shows the signals either way.

The steps, the relevance formula and how its constants were chosen: docs/search.md,
"Context packs"; figures in bench/RESULTS.md.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace

import psycopg

from search import nodes
from search import rows as search_rows
from search.engine import search
from search.errors import BadQuery
from search.options import QueryVector, SearchOptions
from search.passages import best_paragraphs
from search.relevance import (  # noqa: F401 - the gate's names, where callers found them
    CENTRE_WEIGHT,
    COVERAGE_WEIGHT,
    MIN_RELEVANCE,
    MIN_RELEVANCE_CROSS_LINGUAL,
    Band,
    EvidenceRule,
    Relevance,
    Signals,
    gate,
    judge,
    measure,
    vouches,
)
from search.rerank import Reranker
from search.results import Chunk, Citation, Freshness, Hit, Node, SearchResponse
from search.rows import ConnOrPool
from search.scope import Scope
from search.scope import resolve as resolve_scope
from search.tuning import TUNING, BandRule, RelevanceGate, Tuning

MIN_BUDGET = 50
MAX_BUDGET = 100_000


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
    relevance: Relevance
    index: list[Freshness] = field(default_factory=list)
    timings_ms: dict[str, float] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)  # about the branches read (search.scope)


def check_budget(budget: int) -> int:
    if not isinstance(budget, int) or isinstance(budget, bool):
        raise BadQuery(f"budget must be a whole number of tokens, got {budget!r}")
    if not MIN_BUDGET <= budget <= MAX_BUDGET:
        raise BadQuery(f"budget must be from {MIN_BUDGET} to {MAX_BUDGET} tokens, got {budget}")
    return budget


def pack_search(
    conn_or_pool: ConnOrPool,
    question: str,
    *,
    query_vector: QueryVector,
    repository: str | None,
    branch: str | None,
    work: str | None,
    reranker: Reranker | None = None,
    options: SearchOptions | None = None,
    tuning: Tuning = TUNING,
) -> SearchResponse:
    """The search a pack is made from (step 1): hybrid, levels 0-1, `tuning.packing`."""
    packing = tuning.packing
    base = options or SearchOptions()
    return search(
        conn_or_pool,
        question,
        base.replace(
            mode="hybrid",
            k=packing.candidates,
            repository=repository,
            branch=branch,
            work=work,
            level=(0, 1),
            node_type=None,
            max_per_file=None,
            max_per_chapter=packing.per_chapter,
            climb_down=0,
            with_parent=False,
            with_children=False,
            with_neighbours=False,
        ),
        query_vector=query_vector,
        reranker=reranker,
        tuning=tuning,
    )


# The gate calibrated on the corpus searched (search.calibration), given the connection
# the pack holds and the corpus's languages: the gate, or None with the reason it could
# not be calibrated; the "uncertain" band (its floors, for a question in the corpus's
# language and for one in another, and the corpus's own median; None: no band); the
# evidence rule fitted on the corpus (None: none).
CorpusGate = Callable[
    [psycopg.Connection, tuple[str, ...]],
    tuple[RelevanceGate | None, str, Band | None, EvidenceRule | None],
]


def context(
    conn_or_pool: ConnOrPool,
    question: str,
    *,
    query_vector: QueryVector,
    budget: int = 2000,
    repository: str | None = None,
    branch: str | None = None,
    work: str | None = None,
    min_relevance: float | None = None,
    reranker: Reranker | None = None,
    options: SearchOptions | None = None,
    tuning: Tuning = TUNING,
    corpus_gate: CorpusGate | None = None,
) -> ContextPack:
    """The best passages for `question` within `budget` tokens; see the module docstring.

    `query_vector` is the question embedded as a query (search.service embeds it);
    `options` gives the fusion weights (the rest is the pack's own: hybrid, levels 0-1,
    `tuning.packing`). The gate is `tuning`'s for the vector's model and the corpus's
    language (none: the pack is made, the signals reported). `min_relevance` replaces
    the gate's threshold (the cross-lingual one moves with it). Without a gate in
    `tuning`, `corpus_gate` gives one calibrated on the corpus (search.calibration);
    without either, nothing is refused and the pack says it is uncalibrated."""
    started = time.perf_counter()
    check_budget(budget)
    response = pack_search(
        conn_or_pool,
        question,
        query_vector=query_vector,
        repository=repository,
        branch=branch,
        work=work,
        reranker=reranker,
        options=options,
        tuning=tuning,
    )
    packing = tuning.packing
    with search_rows.connection(conn_or_pool) as conn:
        t = time.perf_counter()
        scope = resolve_scope(conn, repository, branch, options.readable if options else None)
        judged = _judge(
            conn, response, query_vector, scope, work, options, tuning, corpus_gate, min_relevance
        )
        relevance_ms = round((time.perf_counter() - t) * 1000, 3)
        hits = response.hits
        if judged.given:
            hits = hits + _chapters_by_summary(
                conn, question, query_vector, hits, repository, branch, work, options, tuning
            )
        kept = _candidates(
            conn, hits if judged.given else [], query_vector, scope.branches, packing.climb_down
        )
        summaries = nodes.file_rows_many(
            conn,
            [(c.citation.repository, _summary_file(c.citation.source_file)) for c, _ in kept],
            scope.branches,
        )
    chapters, tokens = _pack(kept, summaries, budget)
    found, message = _outcome(chapters, bool(kept), tokens, budget, judged, query_vector.model)
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
        relevance=judged.relevance,
        index=response.index,
        timings_ms=timings,
        notes=scope.notes(bool(response.hits)),  # rows found, whatever the gate says
    )


@dataclass
class _Judgement:
    """The "nothing relevant" decision on one question (step 3), and what it leaves to
    say: whether its passages are given, and why a band or a gate is missing."""

    relevance: Relevance
    found_relevant: bool  # at or above the threshold, or no threshold at all
    # below the threshold but above every everyday question foreign to the corpus (its
    # calibrated band, search.calibration): the passages are given, `found` is false
    uncertain: bool
    uncertain_from: float | None  # that band's floor (None: no band)
    uncalibrated: str  # why the corpus gate could not be calibrated ("" when it was)
    embedding: bool = False  # uncertain because a job is still embedding the rows

    @property
    def given(self) -> bool:
        """The pack is made (found relevant, or uncertain)."""
        return self.found_relevant or self.uncertain


def _judge(
    conn: psycopg.Connection,
    response: SearchResponse,
    query_vector: QueryVector,
    scope: Scope,
    work: str | None,
    options: SearchOptions | None,
    tuning: Tuning,
    corpus_gate: CorpusGate | None,
    min_relevance: float | None,
) -> _Judgement:
    """Measure the question's signals over the search's hits and judge them by the gate:
    `tuning`'s for the model and the corpus's languages, else the corpus's calibrated
    one (`corpus_gate`), else none (the pack says it is uncalibrated). The question's
    language is `options.query_lang` when a detection trusted it."""
    query_lang = options.query_lang if options is not None else None
    signals = measure(conn, response.query, query_vector, scope.pairs, work, response.hits)
    if query_lang is not None and signals.languages != ("simple",):
        # a trusted detection (search.language) decides, not the stop words
        signals.same_language = query_lang in signals.languages
    # search.tuning's hand-fitted gate (fitted on one book) is a floor of "found", never
    # the gate of a corpus that can be calibrated: on Molière it said "found" for 6 of 13
    # questions about other plays (bench/RESULTS.md, issue 37, the gate that vouches)
    hand = gate(tuning, query_vector.model, signals.languages)
    the_gate, source = hand, "tuning" if hand is not None else "none"
    uncalibrated, band, rule = "", None, None
    if corpus_gate is not None:
        the_gate, uncalibrated, band, rule = corpus_gate(conn, signals.languages)
        source = "corpus" if the_gate is not None else "none"
        if the_gate is not None and hand is not None and min_relevance is None:
            the_gate = _floored(the_gate, hand)
    uncertain_from: float | None = None
    relevance = judge(signals, the_gate, min_relevance)
    relevance.gate = source
    found_relevant = relevance.threshold is None or relevance.score >= relevance.threshold
    if band is not None:
        uncertain_from = band.floor_cross if relevance.cross_lingual else band.floor
        position = band.position(relevance.score, relevance.cross_lingual)
        relevance.position = None if position is None else round(position, 6)
    uncertain = (
        not found_relevant
        and min_relevance is None
        and uncertain_from is not None
        and relevance.score >= uncertain_from
    )
    if signals.evidence is not None:
        relevance.agree, relevance.margin = signals.evidence.agree, signals.evidence.margin
    if found_relevant and relevance.threshold is not None:
        relevance.found_by = "score"
    elif uncertain and _band_finds(relevance, signals, tuning.band_rule(query_vector.model)):
        found_relevant, uncertain, relevance.found_by = True, False, "band"
    elif uncertain and vouches(signals, response.hits):  # the question's own evidence
        found_relevant, uncertain, relevance.found_by = True, False, "vouched"
    elif (
        uncertain
        and rule is not None
        and tuning.evidence_rule
        and not relevance.cross_lingual
        and rule.finds(relevance.score, signals.evidence)
    ):
        found_relevant, uncertain, relevance.found_by = True, False, "rule"
    # a job is still embedding these rows (docs/push-pipeline.md): a low score may only mean the
    # vectors are not in yet, so the gate cannot say "nothing relevant"
    embedding = any(f.vectors_incomplete for f in response.index)
    embedding = embedding and not found_relevant and not uncertain and min_relevance is None
    uncertain = uncertain or embedding
    if uncertain:
        relevance.verdict = "uncertain"
    elif relevance.threshold is None:
        relevance.verdict = "uncalibrated"
    elif not found_relevant:
        relevance.verdict = "nothing relevant"
    return _Judgement(relevance, found_relevant, uncertain, uncertain_from, uncalibrated, embedding)


def _band_finds(relevance: Relevance, signals: Signals, rule: BandRule | None) -> bool:
    """The model's band rule (search.tuning.BandRule) says "found": a question placed
    high enough in its band, with its first chapter's lead in the corpus's language."""
    if rule is None or relevance.position is None:
        return False
    if relevance.cross_lingual:
        return rule.finds_cross(relevance.position)
    return signals.evidence is not None and rule.finds(relevance.position, signals.evidence.margin)


def _floored(corpus: RelevanceGate, hand: RelevanceGate) -> RelevanceGate:
    """The corpus's gate, its thresholds never below the hand-fitted gate's."""
    return replace(
        corpus,
        min_relevance=max(corpus.min_relevance, hand.min_relevance),
        min_relevance_cross_lingual=max(
            corpus.min_relevance_cross_lingual, hand.min_relevance_cross_lingual
        ),
    )


def _outcome(
    chapters: list[ChapterContext],
    had_candidates: bool,
    tokens: int,
    budget: int,
    judged: _Judgement,
    model: str,
) -> tuple[bool, str]:
    """`found` and the message saying what the pack holds, or why it is empty or not to
    be trusted (uncertain, uncalibrated)."""
    relevance = judged.relevance
    found = bool(chapters)
    if found:
        n = sum(len(c.passages) for c in chapters)
        message = f"{n} passages from {len(chapters)} chapters, {tokens} of {budget} tokens"
    elif had_candidates:
        message = (
            f"relevant passages exist but none fits a budget of {budget} tokens: raise the budget"
        )
    else:
        message = (
            "nothing relevant found: the question is not close enough to the indexed text "
            f"(relevance {relevance.score:.3f} < {relevance.threshold or 0:.3f}). Rephrase it, "
            "or browse with outline"
        )
    if found and judged.embedding:
        found = False
        message = (
            f"uncertain: the vectors of this corpus are still being computed, so the "
            f"question's relevance ({relevance.score:.3f}) cannot be judged yet; these "
            "passages come from keyword search and the vectors loaded so far"
        )
    elif found and judged.uncertain:
        found = False
        message = (
            f"uncertain: the question scores {relevance.score:.3f}, above every everyday "
            f"question foreign to this corpus ({judged.uncertain_from:.3f}) but below the "
            f"corpus's own threshold ({relevance.threshold or 0:.3f}): these passages may not "
            "answer it (a question about another book of the same kind sits here)"
        )
    if found and not relevance.calibrated:
        # not a "found" anyone should trust: the passages are given, unchecked
        found = False
        why = judged.uncalibrated or f"no relevance gate is calibrated for {model}"
        message = (
            f"uncalibrated: {why}, so whether these {sum(len(c.passages) for c in chapters)} "
            f"passages are relevant is not known (relevance {relevance.score:.3f} reported, "
            "nothing refused; see search/calibration.py)"
        )
    return found, message


def _candidates(
    conn: psycopg.Connection,
    hits: list[Hit],
    vector: QueryVector,
    branch: search_rows.Branches,
    per_chapter: int,
) -> list[tuple[Chunk, float]]:
    """Candidate paragraphs in relevance order, each once: paragraph hits, and the
    paragraphs a chapter-summary hit climbs down to."""
    climbed = best_paragraphs(
        conn,
        [(h.citation.repository, h.citation.source_file) for h in hits if h.level == 1],
        vector.values,
        vector.model,
        vector.dimension,
        branch,
        per_chapter=per_chapter,
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


# How many chapters the chapter-summary ranking may add to a pack's candidates (step 4):
# set by design, not swept on data (the judged sets measure what it does: bench/gate.py).
EXTRA_CHAPTERS = 5


def _chapters_by_summary(
    conn: psycopg.Connection,
    question: str,
    vector: QueryVector,
    hits: list[Hit],
    repository: str | None,
    branch: str | None,
    work: str | None,
    options: SearchOptions | None,
    tuning: Tuning,
) -> list[Hit]:
    """Chapter evidence the candidate rows miss: the chapters whose summaries are
    nearest the question (one vector ranking over level 1) and that no candidate row
    comes from, at most `EXTRA_CHAPTERS`, as summary hits (step 2 climbs them down).
    The pack's rows are capped per chapter, so 20 rows reach 7-8 chapters; on a book
    of eleven tales or cantos the judged one was missing from them as often as not
    when a pack missed it (bench/gate.py)."""
    held = {(h.citation.repository, _folder(h.citation.source_file)) for h in hits}
    base = options or SearchOptions()
    ranked = search(
        conn,
        question,
        base.replace(
            mode="vector",
            k=len(held) + EXTRA_CHAPTERS,
            repository=repository,
            branch=branch,
            work=work,
            level=1,
            node_type=None,
            max_per_file=1,
            max_per_chapter=1,
            climb_down=0,
            with_parent=False,
            with_children=False,
            with_neighbours=False,
            rerank=False,
        ),
        query_vector=vector,
        tuning=tuning,
    ).hits
    extra = [
        h for h in ranked if (h.citation.repository, _folder(h.citation.source_file)) not in held
    ]
    return extra[:EXTRA_CHAPTERS]


def _folder(source_file: str) -> str:
    return source_file.rsplit("/", 1)[0]


def _summary_file(source_file: str) -> str:
    """A chapter's summary: summary.md in the folder of its source.md (DESIGN §3)."""
    return source_file.rsplit("/", 1)[0] + "/summary.md"


def _rounds(candidates: list[tuple[Chunk, float]]) -> list[list[tuple[Chunk, float]]]:
    """The candidates by rounds: each chapter's best passage in the order of the
    chapters' best, then each one's second best, and so on."""
    by_chapter: dict[tuple[str, str], list[tuple[Chunk, float]]] = {}
    for chunk, sim in candidates:
        c = chunk.citation
        by_chapter.setdefault((c.repository, c.source_file), []).append((chunk, sim))
    depth = max((len(v) for v in by_chapter.values()), default=0)
    return [[rows[i] for rows in by_chapter.values() if i < len(rows)] for i in range(depth)]


def _pack(
    candidates: list[tuple[Chunk, float]], summaries: dict[tuple[str, str], Node], budget: int
) -> tuple[list[ChapterContext], int]:
    """Greedy, coverage first (`_rounds`): every candidate chapter's best passage, then
    their summaries (framing), then their second passages, and so on; each goes in when
    it fits what is left. Best first over every row let one chapter's three rows and its
    summary take a budget that several chapters' best passages share: with the long
    paragraphs of a tale or a canto, 2,000 tokens held one or two chapters, and the judged
    one was the second or third as often as not (bench/gate.py, bench/RESULTS.md)."""
    chapters: dict[tuple[str, str], ChapterContext] = {}
    used = 0
    rank = 0
    rounds = _rounds(candidates)
    for n, batch in enumerate(rounds):
        for chunk, sim in batch:
            c = chunk.citation
            key = (c.repository, c.source_file)
            cost = chunk.token_count
            if used + cost > budget:
                continue
            if key not in chapters:
                chapters[key] = ChapterContext(c.source_file, c.heading_path, None, None, 0, [])
            used += cost
            rank += 1
            chapters[key].passages.append(Passage(c, chunk.text, cost, round(sim, 6), rank))
        if n == 0:
            for (repo, source_file), ch in chapters.items():
                summary = summaries.get((repo, _summary_file(source_file)))
                extra = sum(x.token_count for x in summary.chunks) if summary else 0
                if summary and used + extra <= budget:
                    ch.summary, ch.summary_citation = summary.text, summary.chunks[0].citation
                    ch.summary_token_count = extra
                    used += extra
    for ch in chapters.values():
        ch.passages.sort(key=lambda p: p.citation.chunk_index)
    return [ch for ch in chapters.values() if ch.passages], used
