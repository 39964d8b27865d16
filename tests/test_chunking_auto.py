"""`[chunking] pack_chars = "auto"`: a work whose paragraphs are mostly lines is packed
into units of 400-1,200 characters, a work of prose is not, through the sidecar build
the CLI and the push run (indexer.indexing.sidecars.build). "auto" is the default
(absent: "auto"; false: one unit per paragraph; docs/search.md says on what figures).

The texts are real books committed in bench/books (bench/books/SOURCES.md): Molière's
*Le Médecin malgré lui*, acts I-II (a play: median paragraph 61 characters), and eleven
of Grimm's tales (prose: median paragraph over 800 characters); and the example corpus
(Bastiat, whose dialogue chapters are a few among essays)."""

from __future__ import annotations

import json
import shutil
from dataclasses import replace
from pathlib import Path

import pytest
from click.testing import CliRunner

from glossator.cli import main
from indexer.corpus.cache import IndexCaches
from indexer.corpus.chunking import (
    AUTO_MIN_PARAGRAPHS,
    AUTO_PACK,
    auto_pack,
    chunk_markdown,
    paragraph_shape,
)
from indexer.corpus.errors import CorpusError
from indexer.corpus.layout import read_corpus
from indexer.corpus.policy import POLICY_FILE, parse_policy
from indexer.corpus.sidecar_format import loads
from indexer.corpus.source import DirectorySource
from indexer.indexing.sidecars import SidecarResult, build, packing
from tests.fakes import FakeEmbedder

BOOKS = Path(__file__).resolve().parents[1] / "bench" / "books"
PLAY = "le-medecin-malgre-lui-actes-i-et-ii"
PROSE = "kinder-und-hausmarchen-auswahl"


@pytest.fixture
def two_books(tmp_path: Path) -> Path:
    """One corpus repository holding the play and the tales (their .md files), its
    glossator.toml the committed one (written before pack_chars was) with
    `pack_chars = "auto"` said."""
    root = tmp_path / "books"
    for book, work in (("medecin", PLAY), ("grimm", PROSE)):
        shutil.copytree(
            BOOKS / book / "corpus" / work,
            root / "corpus" / work,
            ignore=shutil.ignore_patterns("*.jsonl"),
        )
    policy = (BOOKS / "medecin" / POLICY_FILE).read_text(encoding="utf-8")
    assert "pack_chars" not in policy and policy.rstrip().endswith("max_tokens = 400")
    (root / POLICY_FILE).write_text(policy + 'pack_chars = "auto"\n', encoding="utf-8")
    return root


def _build(root: Path) -> SidecarResult:
    """Read the corpus and build its sidecars as the CLI does, both change sets applied."""
    source = DirectorySource(root)
    corpus = read_corpus(source)
    assert not corpus.failed, corpus.problems
    result = build(corpus, source, FakeEmbedder(dimension=8))
    source.apply(corpus.changes)
    source.apply(result.changes)
    return result


def _sources(root: Path, work: str) -> list[Path]:
    return sorted((root / "corpus" / work).rglob("source.md"))


def _sidecar(md: Path) -> tuple[dict, list]:
    side = loads(str(md), md.with_name(md.name + ".jsonl").read_bytes())
    return side.manifest.extra, side.chunks


def test_auto_packs_a_play_and_not_prose(two_books: Path) -> None:
    _build(two_books)
    plain_rows = packed_rows = 0
    for md in _sources(two_books, PLAY):
        extra, chunks = _sidecar(md)
        assert extra["pack_chars"] == list(AUTO_PACK)  # recorded: a change rebuilds it
        text = md.read_text(encoding="utf-8")
        lines = text.split("\n")
        for c in chunks:  # a unit is the paragraphs' own slice of the file, lines and all
            assert c.text in text
            assert "\n".join(lines[c.line_start - 1 : c.line_end]).strip() == c.text
        paragraphs = chunk_markdown(md.read_text(encoding="utf-8").split("---\n", 2)[2], 1, 400)
        plain_rows += len(paragraphs)
        packed_rows += len(chunks)
    assert packed_rows * 3 < plain_rows  # 476 paragraph rows become ~100 units
    for md in _sources(two_books, PROSE):
        extra, chunks = _sidecar(md)
        assert "pack_chars" not in extra
        body = md.read_text(encoding="utf-8").split("---\n", 2)[2]
        assert [c.text for c in chunks] == [c.text for c in chunk_markdown(body, 1, 400)]


def test_a_change_of_setting_rebuilds_what_it_changes(two_books: Path) -> None:
    _build(two_books)
    policy = two_books / POLICY_FILE
    text = policy.read_text(encoding="utf-8").replace('pack_chars = "auto"\n', "")
    policy.write_text(text + "pack_chars = false\n", encoding="utf-8")
    result = _build(two_books)
    play = {str(p.relative_to(two_books)) + ".jsonl" for p in _sources(two_books, PLAY)}
    assert play <= set(result.changes)  # the play's units changed: rebuilt
    assert not any(PROSE in path for path in result.changes)  # the tales' did not
    for md in _sources(two_books, PLAY):
        assert "pack_chars" not in _sidecar(md)[0]
    assert not _build(two_books).changes  # false again: nothing to rebuild
    policy.write_text(text, encoding="utf-8")  # absent: "auto", the default
    result = _build(two_books)
    assert play <= set(result.changes) and not any(PROSE in p for p in result.changes)
    assert all(_sidecar(md)[0]["pack_chars"] == list(AUTO_PACK) for md in _sources(two_books, PLAY))
    policy.write_text(text + "pack_chars = [400, 1200]\n", encoding="utf-8")
    result = _build(two_books)
    assert any(PROSE in path for path in result.changes)
    assert all(_sidecar(md)[0]["pack_chars"] == [400, 1200] for md in _sources(two_books, PROSE))


def test_auto_packs_no_file_of_the_example(example_dir: Path) -> None:
    """The example (Bastiat) has four dialogue chapters, but its work is an essay's
    shape: "auto" packs nothing, so its sidecars and summaries would stay as they are."""
    source = DirectorySource(example_dir)
    corpus = read_corpus(source, replace(read_corpus(source).policy, pack_chars="auto"))
    assert set(packing(corpus, source, IndexCaches().shapes).values()) == {None}
    dialogue = [
        n.path
        for n in corpus.nodes.values()
        if n.level == 0 and (s := paragraph_shape(n.body))[0] * 2 > s[1]
    ]
    assert len(dialogue) == 4, dialogue  # L'Utopiste, Conte chinois…: the work decides
    for path in sorted(example_dir.rglob("*.md.jsonl")):
        head = json.loads(path.read_bytes().split(b"\n", 1)[0])
        assert "pack_chars" not in head, path


def test_the_shape_rule() -> None:
    lines = [(1, 1)] * AUTO_MIN_PARAGRAPHS  # one short paragraph a chapter
    assert auto_pack(lines) == AUTO_PACK
    assert auto_pack(lines[:-1]) is None  # too few paragraphs to have a shape
    assert auto_pack([(15, 30)]) is None  # half short is not most
    assert auto_pack([(16, 30)]) == AUTO_PACK
    assert auto_pack([]) is None
    # headings and code do not count; a paragraph of 80 characters is not short
    body = "# Titre\n\n" + "x" * 79 + "\n\n" + "y" * 80 + "\n\n```\ncode\n```\n"
    assert paragraph_shape(body) == (1, 2)


@pytest.mark.parametrize(
    ("value", "expected"),
    [(None, "auto"), ('"auto"', "auto"), ("false", None), ("[]", None), ("[10, 20]", (10, 20))],
)
def test_pack_chars_values(value: str | None, expected: object) -> None:
    data = None if value is None else f"[chunking]\npack_chars = {value}\n".encode()
    assert parse_policy(data).pack_chars == expected


@pytest.mark.parametrize("value", ['"AUTO"', '"yes"', "true", "[400]"])
def test_a_bad_pack_chars_names_what_it_takes(value: str) -> None:
    with pytest.raises(CorpusError, match=r'pack_chars must be "auto", false, or \[min, max\]'):
        parse_policy(f"[chunking]\npack_chars = {value}\n".encode())


def test_a_bad_pack_chars_stops_the_cli_with_one_line_and_writes_nothing(two_books: Path) -> None:
    policy = two_books / POLICY_FILE
    policy.write_text(
        policy.read_text(encoding="utf-8").replace('"auto"', '"automatic"'), encoding="utf-8"
    )
    env = {"GLOSSATOR_EMBEDDER": "fake", "GLOSSATOR_LOG_LEVEL": "WARNING"}
    result = CliRunner().invoke(main, ["sidecars", str(two_books)], env=env)
    assert result.exit_code == 1
    problems = [line for line in result.output.splitlines() if "pack_chars" in line]
    assert len(problems) == 1 and 'must be "auto", false, or [min, max]' in problems[0]
    assert not list(two_books.rglob("*.jsonl"))
