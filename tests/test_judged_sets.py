"""bench/check_sets.py on the committed judged sets (issue 37): counts, relevant files and
paraphrases that share no content word with their chapter. No model, no database."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[1]
MEDECIN = "corpus/le-medecin-malgre-lui-actes-i-et-ii"


@pytest.fixture(scope="module")
def check_sets() -> ModuleType:
    spec = importlib.util.spec_from_file_location("check_sets", ROOT / "bench" / "check_sets.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["check_sets"] = module  # dataclasses resolve their module by name
    spec.loader.exec_module(module)
    return module


def test_committed_sets_pass(check_sets: ModuleType, capsys: pytest.CaptureFixture[str]) -> None:
    assert check_sets.main([]) == 0
    out = capsys.readouterr().out
    for name in ("medecin", "minna", "pride-and-prejudice", "frankenstein"):
        line = next(line for line in out.splitlines() if line.startswith(f"{name}:"))
        assert line.endswith(": ok"), line
    print(out)


def test_shared_words_folds_accents_and_inflections(check_sets: ModuleType) -> None:
    scene = check_sets.body(
        ROOT / "bench" / "books" / "medecin" / MEDECIN / "09-acte-ii-scene-4" / "source.md"
    )
    shared = check_sets.shared_words("Le médecin prescrit du pain trempé dans du vin", scene, "fr")
    assert {"medecin", "pain", "trempe", "vin"} <= set(shared)  # "trempé" folded
    assert "prescrit" not in shared
    assert check_sets.shared_words("die Soldaten", "ein braver Soldat", "de") == ["soldaten"]
    assert check_sets.shared_words("Darcy proposes", "his proposal to her", "en") == ["proposes"]
    assert check_sets.shared_words("the and of Darcy", "THE and OF", "en") == []  # stop words


def test_a_bad_set_fails_naming_each_problem(
    check_sets: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rows = [
        {  # shares four words with Act I, scene 5 ("avouer" by its stem, "bâton" folded)
            "query": "à coups de bâton il avoue être médecin",
            "relevant": [f"{MEDECIN}/05-acte-i-scene-5/source.md"],
            "kind": "paraphrase",
        },
        {
            "query": "une scène absente",
            "relevant": [f"{MEDECIN}/99-nowhere/source.md"],
            "kind": "plot",
        },
    ]
    (tmp_path / "queries-bad.jsonl").write_text(
        "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), "utf-8"
    )
    monkeypatch.setattr(check_sets, "BENCH", tmp_path)
    bad = check_sets.JudgedSet(
        "bad",
        ROOT / "bench" / "books" / "medecin",
        "fr",
        "queries-bad.jsonl",
        ("offtopic-bad.jsonl",),
    )
    problems, line = check_sets.check(bad)
    text = "\n".join(problems)
    assert "bench/offtopic-bad.jsonl is missing" in text
    assert "2 judged questions, fewer than 30" in text
    assert "1 paraphrases, fewer than 10" in text
    assert "0 foreign questions, fewer than 30" in text
    assert f"relevant file missing from medecin: {MEDECIN}/99-nowhere/source.md" in text
    assert "paraphrase shares avoue, baton, coups, medecin with its chapter" in text
    assert line.startswith("bad: 2 judged")
