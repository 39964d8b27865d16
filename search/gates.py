"""Each corpus's calibrated relevance gate, kept per scope so that no pack measures it twice.

The gate of a context pack is calibrated on the corpus searched (search.calibration: ~50
searches, seconds on CPU). A bounded LRU cache sits in front of the database's copy
(store.calibrations), so a restart or a CLI run reads a gate back rather than measure it
again. A kept gate stays valid while what it was measured on holds: the (repository,
branch) pairs read, their indexed commits, the method's version, the tuning and the search
defaults (`state`).
"""

from __future__ import annotations

import hashlib
import logging
import statistics
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import psycopg
from cachetools import LRUCache

from search.calibration import METHOD, Abandoned, Calibration, calibrate, pack_scorer, unmeasured
from search.context import pack_search
from search.language import LanguageDetector
from search.options import QueryVector, SearchOptions
from search.query_vectors import QueryVectors
from search.relevance import Band, EvidenceRule
from search.scope import resolve as resolve_scope
from search.tuning import RelevanceGate, Tuning
from store.calibrations import load_calibration, save_calibration
from store.commits import indexed_of

log = logging.getLogger(__name__)

# Calibrations kept in memory (each a few hundred floats and short texts); the database
# keeps every scope's latest (store.calibrations), so an evicted one is read back, not
# measured again. 64: more scopes (repository x branch x work x model) than a server
# is asked about between two pushes.
CALIBRATION_CACHE_SIZE = 64


@dataclass(frozen=True)
class GateRequest:
    """What a context pack reads, so what its gate is calibrated on: `repository` (None:
    every one) on `branch` (None: each one's default), `work` the one filter, within the
    repositories `readable` (None: all)."""

    repository: str | None = None
    branch: str | None = None
    work: str | None = None
    readable: frozenset[str] | None = None


class CorpusGates:
    """The gates calibrated with `vectors`' embedder, each on the corpus a pack reads."""

    def __init__(
        self,
        vectors: QueryVectors,
        detector: LanguageDetector,
        defaults: SearchOptions,
        tuning: Tuning,
        cache_size: int = CALIBRATION_CACHE_SIZE,
    ) -> None:
        self.vectors = vectors
        self.detector = detector
        self.defaults = defaults
        self.tuning = tuning
        # (scope, state) -> calibration; its lock is held for a lookup or an insert only
        self.kept: LRUCache[tuple[object, ...], Calibration] = LRUCache(maxsize=cache_size)
        self._kept_lock = threading.Lock()

    def gate(
        self,
        conn: psycopg.Connection,
        languages: tuple[str, ...],
        request: GateRequest,
        stop: Callable[[], bool] | None = None,
    ) -> tuple[RelevanceGate | None, str, Band | None, EvidenceRule | None]:
        """`search.context.CorpusGate`: the gate, the reason, the uncertain band, the
        evidence rule."""
        cal = self.calibration(conn, languages, request, stop)
        if cal.uncertain_from is None or not cal.own:
            return cal.gate, cal.reason, None, None
        cross = cal.uncertain_from_cross
        band = Band(
            cal.uncertain_from,
            cal.uncertain_from if cross is None else cross,
            statistics.median(cal.own),
        )
        return cal.gate, cal.reason, band, cal.rule

    def calibration(
        self,
        conn: psycopg.Connection,
        languages: tuple[str, ...],
        request: GateRequest,
        stop: Callable[[], bool] | None = None,
    ) -> Calibration:
        """The gate calibrated on the corpus searched (search.calibration): from this
        process's cache, else from the database (store.calibrations: one measured by
        another process, a warm-up or before a restart), else measured now and kept in
        both; on `conn` (the pack's: a pool of two must not be asked for a third).

        Kept per scope (model, branch, repository, work, languages) and valid while the
        scope's `state` holds: the (repository, branch) pairs it reads (search.scope: the
        one named, or every repository for an unfiltered call), their indexed commits and what the
        measure depends on (the method's version, the tuning, the search defaults). A
        push to another repository leaves a repository's calibration valid. A named
        repository's scope names the branch it resolves to, so that a call without a
        branch and one naming the default branch share one calibration.

        When the calibration cannot be measured (the embedder fails: a provider model
        out of reach), the gate is None with the reason: the pack says "uncalibrated"
        rather than "found"; nothing is kept, the next pack tries again. `stop()` true:
        give up (Abandoned) between two of the calibration's searches."""
        model = self.vectors.embedder.model
        repository, branch, work = request.repository, request.branch, request.work
        # the branches the pack reads, within the caller's repositories: a calibration
        # never ranks rows the caller may not read
        pairs = resolve_scope(conn, repository, branch, request.readable).pairs
        if repository is not None and len(pairs) == 1:
            branch = pairs[0][1]
            request = replace(request, branch=branch)
        scope = (model, branch, repository, work, languages)
        state = self.state(conn, pairs)
        with self._kept_lock:
            found = self.kept.get((scope, state))
        if found is not None:
            return found
        # one row a scope in the database: a caller's narrower one (its pairs, so its
        # state, differ) stays in this process rather than replace everyone's
        shared = request.readable is None
        stored = load_calibration(conn, scope, state) if shared else None
        if stored is not None:
            cal = Calibration.from_json(stored)
        else:
            try:
                cal = self._measure(conn, languages, request, pairs, model, stop)
            except Abandoned:
                raise
            except Exception as exc:  # the embedder, mostly: a provider out of reach
                log.warning("the relevance gate could not be calibrated with %s: %s", model, exc)
                return unmeasured(model, languages, exc)
            try:
                if shared:
                    with conn.transaction():  # a savepoint: a failed write spoils no pack
                        save_calibration(conn, scope, state, cal.to_json())
            except psycopg.Error as exc:
                log.warning("the calibration could not be kept (measured again next time): %s", exc)
        with self._kept_lock:
            self.kept[(scope, state)] = cal
        return cal

    def state(self, conn: psycopg.Connection, pairs: Sequence[tuple[str, str]]) -> str:
        """What a calibration of the (repository, branch) `pairs` stands on (see
        `calibration`), as a digest."""
        commits = indexed_of(conn, pairs)
        method = (METHOD, repr(self.tuning), repr(self.defaults.replace(query_lang=None)))
        return hashlib.sha256(repr((sorted(pairs), commits, method)).encode()).hexdigest()

    def _measure(
        self,
        conn: psycopg.Connection,
        languages: tuple[str, ...],
        request: GateRequest,
        pairs: Sequence[tuple[str, str]],
        model: str,
        stop: Callable[[], bool] | None = None,
    ) -> Calibration:
        log.info(
            "calibrating the relevance gate of %s@%s for %s (once per indexed state, then "
            "kept in the database: ~50 searches)",
            request.repository or "every repository",
            request.branch or "default branches",
            model,
        )

        def hits(text: str, vector: QueryVector) -> list[Any]:
            lang = self.detector.detect(text)
            return pack_search(
                conn,
                text,
                query_vector=vector,
                repository=request.repository,
                branch=request.branch,
                work=request.work,
                options=self.defaults.replace(query_lang=lang, readable=request.readable),
                tuning=self.tuning,
            ).hits

        return calibrate(
            conn,
            self.vectors.of,
            pack_scorer(conn, search_hits=hits, scope=pairs, work=request.work),
            model=model,
            scope=pairs,
            languages=languages,
            stop=stop,
        )
