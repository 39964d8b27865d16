"""`glossator sidecars PATH`: the summary line, exit codes, and bad input.

Every bad file gets exactly one line naming it and the problem, the other files
still get their sidecars, the exit code says something failed, and no sidecar
(nor temporary file) is left for the bad file.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from glossator.cli import main
from tests.plugins.corpus import FIRST_SERIES, example_chapters, make_small_corpus

BAD = f"{FIRST_SERIES}/chapitre-99-mauvais"


def sidecars(root: Path, *args: str, embedder: str = "fake") -> Result:
    env = {"GLOSSATOR_EMBEDDER": embedder, "GLOSSATOR_LOG_LEVEL": "WARNING"}
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
