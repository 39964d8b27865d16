"""The whole indexer in one call: frontmatter → summaries → sidecars, as one `Changes`.

    index(source, *, embedder, summarizer, all=False, dry_run=False, progress=None, caches=None,
          landing=None)

This is what `glossator index` runs on a working tree and what the git worker
runs on a commit's blobs, so it does no disk I/O of its own: it reads a
`FileSource` and returns the files to write, in the order they must be produced:

1. `read_corpus` — the nodes, problems and `parent_source_file` fixes;
2. `summaries.generate` over the fixed files — summary.md files, bottom-up;
3. the corpus read again over `OverlaySource(source, changes so far)`, so new
   and regenerated summaries are nodes like any other;
4. `sidecars.build` over that view — the sidecars of the files as they will be,
   summaries included (a summary is never written without its sidecar). With a
   `landing` (the push job's), the rows of those files are loaded before their
   vectors are computed, and the vectors slice by slice (indexer.indexing.sidecars).
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field

from indexer.corpus.cache import IndexCaches
from indexer.corpus.errors import Problem
from indexer.corpus.layout import read_corpus
from indexer.corpus.source import Changes, FileSource, OverlaySource
from indexer.indexing.plan import PlanItem
from indexer.indexing.sidecars import Landing, Progress, SidecarStats, build
from indexer.indexing.summaries import SummaryResult, generate
from indexer.providers.embedders.base import Embedder
from indexer.providers.summarizers import Summarizer

log = logging.getLogger(__name__)


@dataclass
class IndexStats:
    summaries_due: int = 0
    summaries_generated: int = 0
    summary_calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    sidecars: SidecarStats = field(default_factory=SidecarStats)
    seconds: float = 0.0

    def line(self) -> str:
        """The one-line summary `glossator index` ends with."""
        cost = f", ${self.cost_usd:.4f}" if self.cost_usd else ""
        return (
            f"{self.summaries_generated} summaries generated ({self.summary_calls} calls"
            f"{cost}), {self.sidecars.written()}, {self.seconds:.1f} s"
        )


@dataclass
class IndexResult:
    changes: Changes = field(default_factory=Changes)
    problems: list[Problem] = field(default_factory=list)
    stats: IndexStats = field(default_factory=IndexStats)
    plan: list[PlanItem] = field(default_factory=list)  # the summaries due, and why

    @property
    def failed(self) -> bool:
        return any(p.severity == "error" for p in self.problems)


def _merge(into: Changes, changes: Changes) -> None:
    for path, data in changes.items():
        if data is None:
            into.delete(path)
        else:
            into.write(path, data)


def index(
    source: FileSource,
    *,
    embedder: Embedder,
    summarizer: Summarizer,
    all: bool = False,
    dry_run: bool = False,
    progress: Progress | None = None,
    caches: IndexCaches | None = None,
    landing: Landing | None = None,
) -> IndexResult:
    """Frontmatter fixes, due summaries and changed sidecars of `source`, merged in order.

    `dry_run`: only the summary plan (and its estimate); no Changes, no model called.
    `caches`: what was derived from blobs, kept by the caller across jobs (the worker's
    BranchIndexer); none: this call's own, which its two corpus reads share.
    """
    started = time.perf_counter()
    caches = caches if caches is not None else IndexCaches()
    result = IndexResult()
    corpus = read_corpus(source, caches=caches)
    result.problems.extend(corpus.problems)
    merged = Changes()
    _merge(merged, corpus.changes)
    view = OverlaySource(source, merged)

    summaries: SummaryResult = generate(
        corpus, view, summarizer, dry_run=dry_run, progress=progress
    )
    result.problems.extend(summaries.problems)
    result.plan = summaries.plan
    stats = result.stats
    stats.summaries_due = len(summaries.plan)
    stats.summaries_generated = len(summaries.generated)
    stats.summary_calls = summaries.usage.calls
    stats.input_tokens = summaries.usage.input_tokens
    stats.output_tokens = summaries.usage.output_tokens
    stats.cost_usd = summaries.usage.cost_usd
    if dry_run:
        stats.seconds = time.perf_counter() - started
        return result
    _merge(merged, summaries.changes)

    # the corpus as it will be: summaries written, parents fixed
    final = read_corpus(view, caches=caches)
    seen = set(result.problems)
    result.problems.extend(p for p in final.problems if p not in seen)
    _merge(merged, final.changes)
    sidecars = build(
        final, view, embedder, all=all, progress=progress, caches=caches, landing=landing
    )
    result.problems.extend(sidecars.problems)
    _merge(merged, sidecars.changes)

    result.changes = merged
    stats.sidecars = sidecars.stats
    stats.seconds = time.perf_counter() - started
    log.info("index: %s", stats.line())
    return result
