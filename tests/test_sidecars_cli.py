"""`glossator sidecars PATH`: the summary line, exit codes, and bad input.

Every bad file gets exactly one line naming it and the problem, the other files
still get their sidecars, the exit code says something failed, and no sidecar
(nor temporary file) is left for the bad file.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from glossator.cli import main
from tests.plugins.corpus import FIRST_SERIES, example_chapters, make_small_corpus

BAD = f"{FIRST_SERIES}/chapitre-99-mauvais"


# a pipe: whatever the environment running the tests says (rich reads these)
PIPED: dict[str, str | None] = {"TTY_COMPATIBLE": None, "FORCE_COLOR": None}
# a terminal, forced the way rich lets a user force it
TERMINAL: dict[str, str | None] = {
    "TTY_COMPATIBLE": "1",
    "TERM": "xterm-256color",
    "COLUMNS": "120",
}
CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")  # ESC, CR, …: anything but \t and \n


def sidecars(
    root: Path, *args: str, embedder: str = "fake", tty: dict[str, str | None] = PIPED
) -> Result:
    env = {"GLOSSATOR_EMBEDDER": embedder, "GLOSSATOR_LOG_LEVEL": "WARNING", **tty}
    return CliRunner().invoke(main, ["sidecars", str(root), *args], env=env)


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    return make_small_corpus(tmp_path / "corpus-repo", 2)


def good_sidecars(root: Path) -> list[Path]:
    return [root / c / "source.md.jsonl" for c in example_chapters(FIRST_SERIES)[:2]]


def test_summary_line_and_nothing_to_do_the_second_time(corpus: Path) -> None:
    first = sidecars(corpus)
    assert first.exit_code == 0, first.output
    assert first.stdout.startswith("4 files written (0 unchanged, 0 deleted), ")
    assert " embedded, 0 reused, " in first.stdout and first.stdout.endswith(" s\n")
    assert all(p.is_file() for p in good_sidecars(corpus))
    second = sidecars(corpus / "corpus")  # the corpus/ folder itself works too
    assert second.exit_code == 0
    assert second.stdout.startswith(
        "0 files written (4 unchanged, 0 deleted), 0 chunks, 0 embedded"
    )
    again = sidecars(corpus, "--all")
    assert again.stdout.startswith("4 files written (0 unchanged, 0 deleted)")
    assert "0 reused" in again.stdout


def test_json_is_one_object_and_nothing_else(corpus: Path) -> None:
    result = sidecars(corpus, "--json")
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert summary["ok"] is True and summary["command"] == "sidecars"
    assert summary["files"] == 4 and summary["embedded"] == summary["chunks"] > 0
    assert summary["problems"] == [] and summary["path"] == str(corpus.resolve())
    bad = _write(b"")(corpus)
    failed = sidecars(corpus, "--json")
    assert failed.exit_code == 1
    problems = json.loads(failed.stdout)["problems"]
    assert (
        problems
        == [
            {
                "path": bad.relative_to(corpus).as_posix(),
                "message": problems[0]["message"],
                "severity": "error",
                "user": True,  # the pushed files decide it: fixed by the user, not retried
            }
        ]
        and "empty source" in problems[0]["message"]
    )


def test_the_bar_is_drawn_on_a_terminal_only(corpus: Path) -> None:
    shown = sidecars(corpus, tty=TERMINAL)
    assert shown.exit_code == 0, shown.output
    # stages named as `glossator status` names a job's phases (hooks.progress)
    assert "embeddings" in shown.stderr and "sidecars" in shown.stderr
    assert "\x1b[" in shown.stderr and "ETA" in shown.stderr
    assert shown.stdout.startswith("4 files written") and not CONTROL.search(shown.stdout)
    piped = sidecars(corpus, "--all")
    assert piped.exit_code == 0 and piped.stdout.startswith("4 files written")
    assert not CONTROL.search(piped.stdout + piped.stderr), repr(piped.stderr)
    as_json = sidecars(corpus, "--all", "--json", tty=TERMINAL)
    assert json.loads(as_json.stdout)["files"] == 4
    assert not CONTROL.search(as_json.stdout + as_json.stderr), repr(as_json.stderr)


def test_index_json(corpus: Path, fake_summarizer: object) -> None:
    env = {"GLOSSATOR_EMBEDDER": "fake", "GLOSSATOR_SUMMARIZER": "fake", **PIPED}
    result = CliRunner().invoke(main, ["index", str(corpus), "--json"], env=env)
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert summary["ok"] is True and summary["command"] == "index"
    assert summary["summaries"]["generated"] == summary["summaries"]["due"] == 4
    assert summary["summaries"]["by"] == "fake:fake-1"
    assert summary["sidecars"]["files"] > 0 and summary["problems"] == []
    shown = CliRunner().invoke(main, ["index", str(corpus), "--all"], env=env | TERMINAL)
    assert shown.exit_code == 0 and "embeddings" in shown.stderr, shown.stderr
    assert shown.stdout.count("\n") == 1 and "summaries generated" in shown.stdout


def test_path_without_corpus_folder(tmp_path: Path) -> None:
    result = sidecars(tmp_path)
    assert result.exit_code == 2
    assert "has no corpus/ folder" in result.output


def test_an_embedder_failure_writes_nothing(corpus: Path) -> None:
    result = sidecars(corpus, embedder="voyage:voyage-3.5")  # no VOYAGE_API_KEY
    assert result.exit_code == 1
    assert "VOYAGE_API_KEY" in result.output
    assert list(corpus.rglob("*.jsonl")) == []


def _write(data: bytes) -> Callable[[Path], Path]:
    def make(root: Path) -> Path:
        path = root / BAD / "source.md"
        path.parent.mkdir(parents=True)
        path.write_bytes(data)
        return path

    return make


def _symlink(root: Path) -> Path:
    path = root / BAD / "source.md"
    path.parent.mkdir(parents=True)
    os.symlink(root / example_chapters(FIRST_SERIES)[1] / "source.md", path)
    return path


def _outside(root: Path) -> Path:
    path = root / "notes" / "brouillon.md"
    path.parent.mkdir()
    path.write_text("---\ntitle: Brouillon\n---\nUne idée.\n", encoding="utf-8")
    return path


_FM = "---\ntitle: Mauvais\nnumber: XCIX\n"
CASES: dict[str, tuple[Callable[[Path], Path], str, int]] = {
    # case: (make the bad file, expected words of its message, exit code)
    "malformed YAML": (
        _write(f"{_FM}subtitle: [pas fermé\n---\nTexte.\n".encode()),
        "malformed YAML frontmatter",
        1,
    ),
    "frontmatter not a mapping": (
        _write(b"---\n- une\n- liste\n---\nTexte.\n"),
        "frontmatter must be a mapping",
        1,
    ),
    "not UTF-8": (_write(f"{_FM}---\nÉté, café.\n".encode("latin-1")), "not valid UTF-8", 1),
    "binary": (_write(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x01"), "binary file", 1),
    "empty file": (_write(b""), "empty source", 1),
    "20 MB file": (_write(f"{_FM}---\n".encode() + b"mot " * 5_000_000), "over the 10 MB limit", 1),
    "symlink": (_symlink, "symbolic links are not followed", 1),
    "vectorize not a boolean": (
        _write(f'{_FM}vectorize: "yes"\n---\nTexte.\n'.encode()),
        "`vectorize` must be true or false",
        1,
    ),
    # a stray .md in a folder outside corpus/ is most likely misplaced (README.md at the root is fine)
    ".md outside corpus/": (_outside, "outside corpus/ is not indexed", 1),
}


@pytest.mark.parametrize("case", list(CASES))
def test_bad_input(corpus: Path, case: str) -> None:
    make, words, exit_code = CASES[case]
    bad = make(corpus)
    rel = bad.relative_to(corpus).as_posix()

    result = sidecars(corpus)

    assert result.exit_code == exit_code, result.output
    lines = [line for line in result.stderr.splitlines() if rel in line]
    assert len(lines) == 1, result.stderr
    assert words in lines[0]
    assert lines[0].startswith("error: " if exit_code else "warning: ")
    # the other files were processed
    assert all(p.is_file() for p in good_sidecars(corpus))
    assert result.stdout.startswith("4 files written")
    # nothing was written for the bad file, and no temporary file is left anywhere
    assert not Path(str(bad) + ".jsonl").exists()
    assert [p for p in corpus.rglob("*") if p.name.endswith(".tmp")] == []
