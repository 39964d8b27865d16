"""`glossator eval`: retrieval quality of each mode on a set of judged queries.

A query file is JSONL, one query a line:

    {"query": "…", "relevant": ["corpus/…/source.md", "corpus/…/source.md#3"], "kind": "paraphrase"}

`kind` (optional) groups the figures. What counts as finding a relevant item:

- `source_file` — any chunk of that file;
- `source_file#chunk_index` — that chunk only;
- a hit on a chapter's `summary.md` counts for that chapter's `source.md` (same
  folder) when the item names the whole file, not a chunk: the summary names
  the chapter an agent has to open (`get_children`), which is what a
  chapter-level judgement asks for. The same hit never counts twice, and one
  item is found once, at its best rank.

Metrics per query, averaged: recall@k (share of the relevant items found in the
top k), MRR@k (1 / rank of the first relevant hit, 0 beyond k), nDCG@10 (binary
gains, one per item, at the rank it is first found) and top-1 (the first hit is
relevant). Latency: p50 and p95 of the search call, the query embedded
beforehand (each query is embedded once for all modes, and timed apart).
"""

from __future__ import annotations

import json
import math
import statistics
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from search.engine import search
from search.errors import BadQuery
from search.language import LanguageDetector
from search.options import AGENT_MAX_PER_CHAPTER, QueryEmbedder, QueryVector, SearchOptions
from search.rerank import Reranker
from search.results import Hit
from search.tuning import TUNING, Tuning

SPLITS = ("tune", "test")


@dataclass(frozen=True)
class Judged:
    query: str
    relevant: tuple[str, ...]
    kind: str = "other"
    split: str | None = None  # "tune" or "test": tune on one half, report the other
    lang: str | None = None  # the question's language as the file says it (for reports)


@dataclass
class Scores:
    recall: float
    mrr: float
    ndcg10: float
    top1: float
    first: int | None = None  # rank of the first relevant hit within k (None: none)
    found: int = 0  # relevant items found within k
    top: tuple[str, ...] = ()  # the first hits, as `hit_label` gives them


@dataclass
class ModeReport:
    name: str
    n: int
    recall: float
    mrr: float
    ndcg10: float
    top1: float
    p50_ms: float
    p95_ms: float
    by_kind: dict[str, dict[str, float]] = field(default_factory=dict)
    per_query: list[Scores] = field(default_factory=list)
    by_lang: dict[str, dict[str, float]] = field(default_factory=dict)

    @property
    def paraphrase_mrr(self) -> float | None:
        """MRR@k of the queries of kind "paraphrase" (the hard case), if any."""
        kind = self.by_kind.get("paraphrase")
        return kind["mrr"] if kind else None


def _json_lines(path: Path) -> Iterator[tuple[int, Any]]:
    """Each non-blank line of a JSON-lines file, parsed, with its number; BadQuery names
    a line that is not JSON."""
    for n, line in enumerate(path.read_text("utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as e:
            raise BadQuery(f"{path}:{n}: not valid JSON ({e.msg})") from None
        yield n, obj


def load_queries(path: Path) -> list[Judged]:
    """Read and check a query file; BadQuery names the line that is wrong."""
    out: list[Judged] = []
    for n, obj in _json_lines(path):
        if (
            not isinstance(obj, dict)
            or not isinstance(obj.get("query"), str)
            or not obj["query"].strip()
        ):
            raise BadQuery(f'{path}:{n}: expected {{"query": "…", "relevant": ["…"]}}')
        rel = obj.get("relevant")
        if not isinstance(rel, list) or not rel or not all(isinstance(r, str) and r for r in rel):
            raise BadQuery(f"{path}:{n}: relevant must be a non-empty list of source_file[#chunk]")
        split = obj.get("split")
        if split is not None and split not in SPLITS:
            raise BadQuery(f"{path}:{n}: split must be one of {', '.join(SPLITS)}, got {split!r}")
        lang = obj.get("lang")
        if lang is not None and not isinstance(lang, str):
            raise BadQuery(f'{path}:{n}: lang must be an ISO 639-1 code such as "it", got {lang!r}')
        out.append(Judged(obj["query"], tuple(rel), str(obj.get("kind", "other")), split, lang))
    if not out:
        raise BadQuery(f"{path}: no queries")
    return out


def _satisfies(hit: Hit, item: str) -> bool:
    file, _, chunk = item.partition("#")
    c = hit.citation
    if chunk:
        return c.source_file == file and str(c.chunk_index) == chunk
    if c.source_file == file:
        return True
    # a chapter summary stands for its chapter's text
    return (
        c.source_file.endswith("/summary.md")
        and hit.level == 1
        and file.endswith("/source.md")
        and c.source_file.rsplit("/", 1)[0] == file.rsplit("/", 1)[0]
    )


def judge(hits: Sequence[Hit], relevant: Sequence[str], k: int) -> Scores:
    """recall@k, MRR@k, nDCG@10 and top-1 of one ranked list."""
    found: set[str] = set()
    gains: list[int] = []  # ranks (1-based) at which a new item is found
    first: int | None = None
    for rank, hit in enumerate(hits[: max(k, 10)], start=1):
        new = [item for item in relevant if item not in found and _satisfies(hit, item)]
        if new and first is None:
            first = rank
        if new:
            found.add(new[0])  # one hit finds one item
            gains.append(rank)
    within = len([r for r in gains if r <= k])
    first_k = first if first is not None and first <= k else None
    dcg = sum(1.0 / math.log2(r + 1) for r in gains if r <= 10)
    ideal = sum(1.0 / math.log2(r + 1) for r in range(1, min(len(relevant), 10) + 1))
    return Scores(
        within / len(relevant),
        1.0 / first_k if first_k else 0.0,
        dcg / ideal if ideal else 0.0,
        1.0 if first == 1 else 0.0,
        first=first_k,
        found=within,
        top=tuple(hit_label(h) for h in hits[:3]),
    )


def hit_label(hit: Hit) -> str:
    """A hit in a few words: its folder below the work (part/chapter), and the file
    if it is not the chapter's text ("corpus/w/p/ch/source.md" -> "p/ch")."""
    parts = hit.citation.source_file.split("/")
    folder = "/".join(parts[2:-1] if parts[0] == "corpus" and len(parts) > 3 else parts[:-1])
    return folder if parts[-1] == "source.md" else f"{folder} ({parts[-1]})"


@dataclass(frozen=True)
class Miss:
    """One query that a mode did not answer with a relevant first hit and all items."""

    query: str
    kind: str
    first: int | None
    found: int
    relevant: int
    top: tuple[str, ...]


def misses(report: ModeReport, queries: Sequence[Judged]) -> list[Miss]:
    """The queries of `report` whose first hit is not relevant or that miss an item."""
    return [
        Miss(q.query, q.kind, s.first, s.found, len(q.relevant), s.top)
        for q, s in zip(queries, report.per_query, strict=True)
        if s.first != 1 or s.found < len(q.relevant)
    ]


def _pct(values: list[float], q: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, math.ceil(q * len(ordered)) - 1)]


def halves(queries: Sequence[Judged]) -> dict[str, list[Judged]]:
    """{"tune": …, "test": …} when the queries carry a split, else {"all": queries}."""
    if not any(q.split for q in queries):
        return {"all": list(queries)}
    out = {s: [q for q in queries if q.split == s] for s in SPLITS}
    unsplit = [q for q in queries if q.split is None]
    if unsplit:
        out["unsplit"] = unsplit
    return {name: qs for name, qs in out.items() if qs}


def run_mode(
    conn_or_pool: Any,
    queries: Sequence[Judged],
    name: str,
    options: SearchOptions,
    *,
    k: int = 10,
    vectors: PrecomputedQueries | None = None,
    reranker: Reranker | None = None,
    detector: LanguageDetector | None = None,
    tuning: Tuning = TUNING,
) -> ModeReport:
    """Run every query through `search` with `options` and average the metrics; with a
    `detector`, each query's language is detected as the search service does it
    (`options.query_lang`), and the figures are also given per language (the file's
    `lang` when it says one, else the detected one, "?" when unknown)."""
    per_query: list[Scores] = []
    times: list[float] = []
    kinds: dict[str, list[Scores]] = {}
    langs: dict[str, list[Scores]] = {}
    options = options.replace(k=max(k, 10))
    for q in queries:
        vector = vectors.vector(q.query) if vectors is not None and options.mode != "bm25" else None
        detected = detector.detect(q.query) if detector is not None else None
        opts = options.replace(query_lang=detected) if detector is not None else options
        t = time.perf_counter()
        response = search(
            conn_or_pool, q.query, opts, query_vector=vector, reranker=reranker, tuning=tuning
        )
        times.append((time.perf_counter() - t) * 1000)
        s = judge(response.hits, q.relevant, k)
        per_query.append(s)
        kinds.setdefault(q.kind, []).append(s)
        langs.setdefault(q.lang or detected or "?", []).append(s)

    def mean(xs: list[Scores], attr: str) -> float:
        return round(statistics.fmean(getattr(x, attr) for x in xs), 4)

    return ModeReport(
        name=name,
        n=len(per_query),
        recall=mean(per_query, "recall"),
        mrr=mean(per_query, "mrr"),
        ndcg10=mean(per_query, "ndcg10"),
        top1=mean(per_query, "top1"),
        p50_ms=round(_pct(times, 0.5), 1),
        p95_ms=round(_pct(times, 0.95), 1),
        by_kind={
            kind: {
                "n": len(xs),
                "mrr": mean(xs, "mrr"),
                "recall": mean(xs, "recall"),
                "top1": mean(xs, "top1"),
            }
            for kind, xs in sorted(kinds.items())
        },
        per_query=per_query,
        by_lang={
            lang: {
                "n": len(xs),
                "mrr": mean(xs, "mrr"),
                "recall": mean(xs, "recall"),
                "top1": mean(xs, "top1"),
            }
            for lang, xs in sorted(langs.items())
        },
    )


class PrecomputedQueries:
    """Each query's vector, computed once for every mode.

    Four modes embed each query four times otherwise; and the latency of the
    search itself is measured apart from the embedding (`p50_ms`, `p95_ms`).
    """

    def __init__(self, embedder: QueryEmbedder, queries: Sequence[Judged]) -> None:
        self.model, self.dimension = embedder.model, embedder.dimension
        self.times_ms: list[float] = []
        self._vectors: dict[str, QueryVector] = {}
        for q in queries:
            text = q.query.strip()  # as search takes it
            if text not in self._vectors:
                t = time.perf_counter()
                values = list(embedder.embed_query(text))
                self.times_ms.append((time.perf_counter() - t) * 1000)
                self._vectors[text] = QueryVector(self.model, self.dimension, values)

    def vector(self, text: str) -> QueryVector:
        return self._vectors[text.strip()]

    @property
    def p50_ms(self) -> float:
        return round(_pct(self.times_ms, 0.5), 1)

    @property
    def p95_ms(self) -> float:
        return round(_pct(self.times_ms, 0.95), 1)


def evaluate(
    conn_or_pool: Any,
    queries: Sequence[Judged],
    *,
    k: int = 10,
    options: SearchOptions | None = None,
    embedder: QueryEmbedder | PrecomputedQueries | None = None,
    reranker: Reranker | None = None,
    max_per_chapter: int | None = None,
    detector: LanguageDetector | None = None,
    tuning: Tuning = TUNING,
) -> list[ModeReport]:
    """bm25, vector, hybrid, hybrid as the MCP tools run it (≤ AGENT_MAX_PER_CHAPTER
    rows per chapter), and hybrid+rerank when a reranker is given.

    `options` are the fusion settings (repository, branch, weights, rrf_k) every mode
    starts from; `max_per_chapter` caps every mode's rows instead of adding the
    agents' row. `embedder` may be a `PrecomputedQueries` (latencies exclude
    embedding either way); None: bm25 only.
    """
    vectors = (
        embedder
        if embedder is None or isinstance(embedder, PrecomputedQueries)
        else PrecomputedQueries(embedder, queries)
    )
    base = (options or SearchOptions()).replace(rerank=False, max_per_chapter=max_per_chapter)
    runs: list[tuple[str, SearchOptions]] = [
        ("bm25", base.replace(mode="bm25")),
        ("vector", base.replace(mode="vector")),
        ("hybrid", base.replace(mode="hybrid")),
        (
            f"hybrid, ≤{AGENT_MAX_PER_CHAPTER}/chapter (agents)",
            base.replace(mode="hybrid", max_per_chapter=AGENT_MAX_PER_CHAPTER),
        ),
    ]
    if max_per_chapter is not None:  # the caller's own cap applies to every row
        runs = runs[:3]
    if vectors is None:
        runs = runs[:1]
    out = [
        run_mode(
            conn_or_pool,
            queries,
            name,
            opts,
            k=k,
            vectors=vectors,
            detector=detector,
            tuning=tuning,
        )
        for name, opts in runs
    ]
    if reranker is not None and vectors is not None:
        hybrid = base.replace(mode="hybrid", rerank=True)
        out.append(
            run_mode(
                conn_or_pool,
                queries,
                "hybrid+rerank",
                hybrid,
                k=k,
                vectors=vectors,
                reranker=reranker,
                detector=detector,
                tuning=tuning,
            )
        )
    return out


# The context gate (search.context) on a judged set: does `found` mean "the book answers"?
#
# The on-topic questions are a judged set's (each names its chapters); the foreign ones
# are a file of questions the book does not answer, one a line ({"query": "…", "kind":
# "everyday" | "near" | …, "lang": "…"}), the kind saying how far from the book's field
# (bench/offtopic-*.jsonl). The figures are the flag's: precision, the share of `found`
# packs that answer an on-topic question; recall, the share of on-topic questions found.
FOUND = "relevant"  # the verdict of a pack the gate vouches for (search.relevance)
UNCERTAIN = "uncertain"
NOTHING = "nothing relevant"


@dataclass(frozen=True)
class Foreign:
    """A question the corpus does not answer."""

    query: str
    kind: str = "foreign"  # e.g. "everyday", "near" (near the book's field)
    lang: str | None = None


def load_foreign(path: Path) -> list[Foreign]:
    """Read and check a file of foreign questions; BadQuery names the line that is wrong."""
    out: list[Foreign] = []
    for n, obj in _json_lines(path):
        if not isinstance(obj, dict) or not isinstance(obj.get("query"), str):
            raise BadQuery(f'{path}:{n}: expected {{"query": "…", "kind": "…"}}')
        if not obj["query"].strip():
            raise BadQuery(f"{path}:{n}: the query is empty")
        if obj.get("relevant"):
            raise BadQuery(f"{path}:{n}: a foreign question names no relevant item")
        lang = obj.get("lang")
        out.append(Foreign(obj["query"], str(obj.get("kind", "foreign")), lang if lang else None))
    if not out:
        raise BadQuery(f"{path}: no queries")
    return out


def chapter_of(source_file: str) -> str:
    """The chapter a file or judged item belongs to: its folder ("…/ch/source.md#3" -> "…/ch")."""
    return source_file.partition("#")[0].rsplit("/", 1)[0]


@dataclass(frozen=True)
class Verdict:
    """What the gate said of one question, and the chapters its pack holds."""

    verdict: str  # FOUND, UNCERTAIN, NOTHING or "uncalibrated"
    chapters: tuple[str, ...] = ()  # the folders of the pack's chapters


def verdict_of(pack: Any) -> Verdict:
    """A `search.context.ContextPack`'s verdict."""
    return Verdict(pack.relevance.verdict, tuple(chapter_of(c.source_file) for c in pack.chapters))


def _shares(verdicts: Sequence[Verdict]) -> dict[str, float]:
    n = len(verdicts)
    counts = {v: sum(x.verdict == v for x in verdicts) for v in (FOUND, UNCERTAIN, NOTHING)}
    counts["other"] = n - sum(counts.values())
    return {"n": n, **{v: round(c / n, 4) if n else 0.0 for v, c in counts.items()}}


@dataclass
class GateReport:
    """The gate's verdicts on one set: shares per kind of question (`n` and the share of
    each verdict, "other" being uncalibrated), the found on-topic packs that hold a judged
    chapter, and the flag's precision and recall."""

    on_topic: dict[str, float]
    foreign: dict[str, dict[str, float]]  # by kind
    found_holding: int  # on-topic questions found whose pack holds one of their chapters
    found_on_topic: int
    found_foreign: int

    @property
    def recall(self) -> float:
        n = self.on_topic["n"]
        return round(self.found_on_topic / n, 4) if n else 0.0

    @property
    def precision(self) -> float | None:
        """None when the gate said `found` for no question."""
        found = self.found_on_topic + self.found_foreign
        return round(self.found_on_topic / found, 4) if found else None


def gate_report(
    judged: Sequence[tuple[Judged, Verdict]], foreign: Sequence[tuple[Foreign, Verdict]]
) -> GateReport:
    """The figures of the gate's verdicts on on-topic and foreign questions."""
    kinds: dict[str, list[Verdict]] = {}
    for q, v in foreign:
        kinds.setdefault(q.kind, []).append(v)
    holding = sum(
        v.verdict == FOUND and bool({chapter_of(r) for r in q.relevant} & set(v.chapters))
        for q, v in judged
    )
    return GateReport(
        on_topic=_shares([v for _, v in judged]),
        foreign={kind: _shares(vs) for kind, vs in sorted(kinds.items())},
        found_holding=holding,
        found_on_topic=sum(v.verdict == FOUND for _, v in judged),
        found_foreign=sum(v.verdict == FOUND for _, v in foreign),
    )
