"""`glossator corpus import` of a folder of chapter files (the Bastiat shape), and the
committed example corpus it built."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from glossator.cli import main
from indexer.corpus import frontmatter
from indexer.corpus.layout import read_corpus
from indexer.corpus.policy import Policy, parse_policy
from indexer.corpus.source import DirectorySource
from indexer.importers.common import ImportSourceError
from indexer.importers.folder import first_heading, read_folder
from indexer.importers.writer import DEFAULT_POLICY, import_works
from tests.plugins.corpus import FIRST_SERIES

PROVENANCE = ("source_repo", "source_file", "source_commit", "source_page", "first_published")


def test_example_corpus_is_complete_and_linked(example_dir: Path) -> None:
    corpus = read_corpus(DirectorySource(example_dir))
    assert corpus.problems == []
    assert len(corpus.changes) == 0  # parent_source_file already right in every file
    sources = [n for n in corpus.in_reading_order() if n.level == 0]
    assert len(sources) == 41
    assert sources[0].heading_path == "Sophismes économiques > Première série > Introduction"
    assert (
        sources[1].heading_path
        == "Sophismes économiques > Première série > Chapitre I (Abondance, disette)"
    )
    assert sources[23].heading_path == "Sophismes économiques > Première série > Conclusion"
    assert sources[24].heading_path.startswith(
        "Sophismes économiques > Deuxième série > Chapitre I (Physiologie"
    )
    assert sources[-1].meta["number"] == "XVII"
    (work,) = corpus.works()
    assert work.meta["author"] == "Frédéric Bastiat"
    assert work.lang == "fr" and work.meta["generated"] is True
    assert work.meta["generator"]["provider"] == "extractive"  # the committed example is indexed
    parts = corpus.children(work.path)
    assert [p.title for p in parts] == ["Première série", "Deuxième série"]
    assert [p.meta["year"] for p in parts] == [1845, 1848]
    assert [len([c for c in corpus.children(p.path)]) for p in parts] == [24, 17]
    for node in sources:
        assert node.parent_source_file == f"{node.folder}/summary.md"
        assert all(key in node.meta for key in PROVENANCE)
    # committed indexed: every chapter has its summary and every file its sidecar
    assert len(list(example_dir.glob("corpus/*/*/*/summary.md"))) == 41
    mds = list(example_dir.glob("corpus/**/*.md"))
    assert all(md.with_name(md.name + ".jsonl").exists() for md in mds)
    assert parse_policy((example_dir / "glossator.toml").read_bytes()) == Policy()


def test_example_keeps_the_text(example_dir: Path) -> None:
    intro = frontmatter.read(
        "x", (example_dir / FIRST_SERIES / "00-introduction/source.md").read_bytes()
    )
    assert intro.meta["title"] == "Introduction" and "number" not in intro.meta
    assert intro.body.startswith("> En économie politique, il y a beaucoup à apprendre")
    assert "[^1]" in intro.body and "\n[^2]: Cet aperçu a donné lieu" in intro.body
    petition = next((example_dir / FIRST_SERIES).glob("chapitre-07-*/source.md"))
    doc = frontmatter.read("x", petition.read_bytes())
    assert doc.meta["title"] == "Pétition des fabricants de chandelles, etc."
    assert doc.meta["number"] == "VII"
    assert not doc.body.lstrip().startswith("#")  # the title heading went, the rest stayed
    assert doc.body.startswith("Pétition\n\ndes fabricants de chandelles")


def _bastiat_source(example_dir: Path, dest: Path) -> Path:
    """Rebuild Bastiat-shaped chapter files (header block + title heading) from the example."""
    dest.mkdir()
    corpus = read_corpus(DirectorySource(example_dir))
    sources = [n for n in corpus.in_reading_order() if n.level == 0]
    for i, node in enumerate(sources):
        series = 1 if "serie-1" in node.folder else 2
        comment = "Première série (1845)" if series == 1 else "Deuxième série (1848)"
        number = node.meta.get("number")
        chapter = number or ("0" if i == 0 else "conclusion")
        heading = f"# {number}. — {node.title}" if number else f"# {node.title}"
        lines = [
            "---",
            'book: "Sophismes économiques"',
            'author: "Frédéric Bastiat"',
            f"series: {series}  # {comment}",
            f'chapter: "{chapter}"',
            *frontmatter.dump_key("title", node.title),
        ]
        for key in (*PROVENANCE, "license"):
            lines += frontmatter.dump_key(key, node.meta[key])
        text = "\n".join([*lines, "---", heading, "", node.body])
        (dest / f"s{series}-{i:02d}.md").write_text(text, encoding="utf-8")
    return dest


def test_reimport_gives_the_example_byte_for_byte(example_dir: Path, tmp_path: Path) -> None:
    src = _bastiat_source(example_dir, tmp_path / "src")
    out = tmp_path / "out"
    result = CliRunner().invoke(main, ["corpus", "import", str(src), str(out)])
    assert result.exit_code == 0, result.output
    # the first series' introduction and conclusion are pieces (were counted as chapters)
    assert "imported 1 work(s), 2 parts, 39 chapters, 2 pieces" in result.output

    # summaries may since have been filled by the summarizer: compare the author's text
    mine = {p.relative_to(out): p.read_bytes() for p in out.rglob("source.md")}
    committed = {p.relative_to(example_dir): p.read_bytes() for p in example_dir.rglob("source.md")}
    assert sorted(mine) == sorted(committed)
    assert all(mine[k] == committed[k] for k in mine)


def _chapter(folder: Path, name: str, header: str, body: str = "Du texte.\n") -> Path:
    path = folder / name
    path.write_text(f"---\n{header}\n---\n{body}", encoding="utf-8")
    return path


@pytest.fixture
def src(tmp_path: Path) -> Path:
    folder = tmp_path / "src"
    folder.mkdir()
    _chapter(
        folder,
        "a-01.md",
        'book: "Œuvre"\nauthor: "A. Auteur"\nseries: 1\nchapter: "I"\ntitle: "Début, fin"',
        "# I. — Début, fin\n\n## Un sous-titre\n\n> Une citation[^1].\n\n[^1]: La note.\n",
    )
    _chapter(folder, "a-02.md", 'book: "Œuvre"\nseries: 1\nchapter: "II"\ntitle: "Suite"')
    return folder


def test_body_kept_exactly_and_part_title_from_number(src: Path, tmp_path: Path) -> None:
    work = read_folder(src)
    assert work.title == "Œuvre" and work.author == "A. Auteur"
    (part,) = work.parts
    assert part.title == "Première série"
    first = part.sections[0]
    assert first.number == "I"
    assert first.body == "## Un sous-titre\n\n> Une citation[^1].\n\n[^1]: La note.\n"
    stats, problems = import_works(tmp_path / "dest", [work])
    assert (stats.works, stats.parts, stats.chapters) == (1, 1, 2)
    assert problems == []
    written = tmp_path / "dest/corpus/oeuvre/serie-1-premiere-serie/chapitre-01-debut-fin/source.md"
    assert written.read_text(encoding="utf-8").endswith(first.body)
    assert (tmp_path / "dest/glossator.toml").read_text(encoding="utf-8") == DEFAULT_POLICY


def test_heading_that_is_not_the_title_is_kept(src: Path) -> None:
    _chapter(
        src, "a-03.md", 'series: 1\nchapter: "III"\ntitle: "Trois"', "# Autre chose\n\nTexte.\n"
    )
    work = read_folder(src)
    assert work.parts[0].sections[2].body == "# Autre chose\n\nTexte.\n"


def test_header_without_title_names_the_file(src: Path) -> None:
    bad = _chapter(src, "a-03.md", 'series: 1\nchapter: "III"')
    with pytest.raises(ImportSourceError, match="no `title`") as e:
        read_folder(src)
    assert e.value.path == str(bad)


def test_non_utf8_chapter_names_the_file(src: Path) -> None:
    bad = src / "a-03.md"
    bad.write_bytes("---\nseries: 1\ntitle: é\n---\ntexte é\n".encode("latin-1"))
    with pytest.raises(ImportSourceError, match="not valid UTF-8") as e:
        read_folder(src)
    assert e.value.path == str(bad)


def test_unreadable_chapter_names_the_file(src: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bad = _chapter(src, "a-03.md", "series: 1\ntitle: T")
    real = Path.read_bytes

    def read_bytes(self: Path) -> bytes:  # chmod 000 does not stop root, who runs CI here
        if self == bad:
            raise PermissionError(13, "Permission denied", str(self))
        return real(self)

    monkeypatch.setattr(Path, "read_bytes", read_bytes)
    with pytest.raises(ImportSourceError, match="cannot be read \\(Permission denied\\)") as e:
        read_folder(src)
    assert e.value.path == str(bad)


def test_dest_reached_through_a_link_outside_is_refused(src: Path, tmp_path: Path) -> None:
    dest = tmp_path / "dest"
    dest.mkdir()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (dest / "corpus").symlink_to(elsewhere)
    with pytest.raises(ImportSourceError, match="outside") as e:
        import_works(dest, [read_folder(src)])
    assert "corpus/oeuvre" in e.value.path
    assert list(elsewhere.iterdir()) == [] and not (dest / "glossator.toml").exists()


def test_link_escaping_src_is_refused(src: Path, tmp_path: Path) -> None:
    outside = _chapter(tmp_path, "outside.md", "series: 1\ntitle: Dehors")
    (src / "a-09.md").symlink_to(outside)
    with pytest.raises(ImportSourceError, match="outside"):
        read_folder(src)


def test_chapter_without_part_and_conflicting_books(src: Path) -> None:
    _chapter(src, "a-03.md", 'book: "Autre"\nseries: 1\ntitle: "Trois"')
    with pytest.raises(ImportSourceError, match="--work-title"):
        read_folder(src)
    assert read_folder(src, work_title="Œuvre").title == "Œuvre"
    _chapter(src, "a-04.md", 'title: "Sans partie"')
    with pytest.raises(ImportSourceError, match="series: N"):
        read_folder(src, work_title="Œuvre")


def test_cli_errors_are_one_line(tmp_path: Path, src: Path) -> None:
    runner = CliRunner()
    missing = runner.invoke(main, ["corpus", "import", str(tmp_path / "nope"), str(tmp_path / "d")])
    assert missing.exit_code == 1
    # rich wraps long lines at the terminal width: compare words
    assert "nope: does not exist; check the path" in " ".join(missing.output.split())
    assert runner.invoke(main, ["corpus", "import", str(src), str(tmp_path / "d")]).exit_code == 0
    again = runner.invoke(main, ["corpus", "import", str(src), str(tmp_path / "d")])
    assert again.exit_code == 1 and "already holds a corpus" in " ".join(again.output.split())
    assert "Traceback" not in again.output


def test_force_replaces_the_work_and_keeps_the_policy(src: Path, tmp_path: Path) -> None:
    dest = tmp_path / "d"
    import_works(dest, [read_folder(src)])
    (dest / "glossator.toml").write_text("[chunking]\nmax_tokens = 200\n", encoding="utf-8")
    (src / "a-02.md").unlink()
    _chapter(src, "a-03.md", 'series: 1\nchapter: "III"\ntitle: "Trois"')
    with pytest.raises(ImportSourceError, match="--force"):
        import_works(dest, [read_folder(src)])
    import_works(dest, [read_folder(src)], force=True)
    part = dest / "corpus/oeuvre/serie-1-premiere-serie"
    assert sorted(p.name for p in part.iterdir()) == [
        "chapitre-01-debut-fin",
        "chapitre-03-trois",
        "summary.md",
    ]
    assert "max_tokens = 200" in (dest / "glossator.toml").read_text(encoding="utf-8")
    assert not read_corpus(DirectorySource(dest)).problems


def test_small_corpus_helper(small_corpus: Path, tmp_path: Path) -> None:
    from tests.plugins.corpus import make_small_corpus

    corpus = read_corpus(DirectorySource(small_corpus))
    assert not corpus.problems
    assert [n.title for n in corpus.in_reading_order() if n.level == 0] == [
        "Introduction",
        "Abondance, disette",
        "Obstacle, cause",
    ]
    both = read_corpus(DirectorySource(make_small_corpus(tmp_path / "b", 2, both_series=True)))
    assert len([n for n in both.nodes.values() if n.level == 0]) == 4 and not both.problems


def test_the_first_heading_of_a_plain_chapter() -> None:
    assert first_heading("\n\n## Chapitre 2 ##\n\nTexte.") == "Chapitre 2"
    assert first_heading("    # Indenté\n") == "Indenté"  # the first line's indent never mattered
    assert first_heading("# Chapitre 1#\n") == "Chapitre 1"
    assert first_heading("Texte.\n\n# Plus loin\n") is None
    assert first_heading("```\n# code\n```") is None
    assert first_heading("#Collé\n") is None
