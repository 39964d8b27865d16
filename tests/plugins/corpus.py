"""Fixtures: the example corpus committed in example/ (Bastiat, *Sophismes économiques*).

    example_dir                 Path of example/ in the repository: read it, never write it
    example_copy                a full copy in tmp_path, free to edit
    make_small_corpus(dest, n)  a corpus with the first `n` chapters of the first série
    small_corpus                make_small_corpus(tmp_path / "small", 3)

Nothing here reads ../shared: the example is built once by `glossator corpus import`
and committed, so tests see exactly what the README's first run sees.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from indexer.corpus.layout import folder_order

EXAMPLE_DIR = Path(__file__).resolve().parents[2] / "example"
WORK = "corpus/sophismes-economiques"
FIRST_SERIES = f"{WORK}/serie-1-premiere-serie"
SECOND_SERIES = f"{WORK}/serie-2-deuxieme-serie"


def _copy_files(src: Path, dest: Path, rel: str) -> None:
    """Copy `rel` (a file or a folder) from src to dest, no summaries nor sidecars of chapters."""
    target = dest / rel
    if (src / rel).is_dir():
        shutil.copytree(src / rel, target, dirs_exist_ok=True)
    else:
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src / rel, target)


def example_chapters(part: str = FIRST_SERIES) -> list[str]:
    """Repo-relative chapter folders of a part of the example, in reading order."""
    folders = [p for p in (EXAMPLE_DIR / part).iterdir() if (p / "source.md").is_file()]
    folders.sort(key=lambda p: folder_order(p.name, {}))  # the reader's own order
    return [p.relative_to(EXAMPLE_DIR).as_posix() for p in folders]


def make_small_corpus(dest: Path, chapters: int = 3, *, both_series: bool = False) -> Path:
    """A corpus repository at `dest` holding the first `chapters` chapter folders of
    the first série (and as many of the second with `both_series`), with the work's
    and parts' summary.md and glossator.toml as committed in the example.

    The introduction (`00-introduction`) counts as the first chapter.
    """
    if chapters < 1:
        raise ValueError("a corpus needs at least one chapter")
    dest.mkdir(parents=True, exist_ok=True)
    _copy_files(EXAMPLE_DIR, dest, "glossator.toml")
    _copy_files(EXAMPLE_DIR, dest, f"{WORK}/summary.md")
    parts = [FIRST_SERIES, SECOND_SERIES] if both_series else [FIRST_SERIES]
    for part in parts:
        _copy_files(EXAMPLE_DIR, dest, f"{part}/summary.md")
        for folder in example_chapters(part)[:chapters]:
            (dest / folder).mkdir(parents=True, exist_ok=True)
            # the chapter's text only: a copied summary or sidecar would be stale
            shutil.copy2(EXAMPLE_DIR / folder / "source.md", dest / folder / "source.md")
    return dest


@pytest.fixture(scope="session")
def example_dir() -> Path:
    """The committed example corpus (read-only: copy it before writing)."""
    assert (EXAMPLE_DIR / WORK / "summary.md").is_file(), "example/ is missing; see README"
    return EXAMPLE_DIR


@pytest.fixture
def example_copy(tmp_path: Path, example_dir: Path) -> Path:
    """A full copy of the example corpus in a temporary folder."""
    dest = tmp_path / "example"
    shutil.copytree(example_dir, dest)
    return dest


@pytest.fixture
def small_corpus(tmp_path: Path) -> Path:
    """Three chapters of the first série (introduction, I, II) in a temporary corpus."""
    return make_small_corpus(tmp_path / "small", 3)
