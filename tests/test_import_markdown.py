"""`glossator corpus import` of one Markdown file (the List-shaped fixture)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from glossator.cli import main
from indexer.corpus import frontmatter
from indexer.corpus.layout import read_corpus
from indexer.corpus.source import DirectorySource
from indexer.importers.common import ImportSourceError
from indexer.importers.markdown import read_markdown

LIST_MD = Path(__file__).parent / "fixtures/list/list.md"
WORK = "corpus/systeme-national-d-economie-politique"


@pytest.fixture
def imported(tmp_path: Path) -> Path:
    dest = tmp_path / "list"
    result = CliRunner().invoke(
        main, ["corpus", "import", str(LIST_MD), str(dest), "--skip-front-matter"]
    )
    assert result.exit_code == 0, result.output
    assert "imported 1 work(s), 4 parts, 10 chapters, 2 pieces" in result.output
    return dest


def test_markdown_gives_the_list_tree(imported: Path) -> None:
    corpus = read_corpus(DirectorySource(imported))
    assert corpus.problems == [] and len(corpus.changes) == 0
    (work,) = corpus.works()
    assert work.meta["author"] == "Frédéric List" and work.meta["translator"] == "Henri Richelot"
    children = corpus.children(work.path)
    assert [(n.level, n.title) for n in children] == [
        (1, "Préface"),
        (1, "Introduction"),
        (2, "Livre premier — L'histoire"),
        (2, "Livre deuxième — La théorie"),
        (2, "Livre troisième — Les systèmes"),
        (2, "Livre quatrième — La politique"),
    ]
    assert [n.kind for n in children[:2]] == ["piece", "piece"]
    assert not any("traducteur" in n.title for n in corpus.nodes.values())
    chapters = [
        [corpus.nodes[f"{c.folder}/source.md"].meta["number"] for c in corpus.children(p.path)]
        for p in children[2:]
    ]
    assert chapters == [["I", "II", "III"], ["I", "II"], ["I", "II", "III"], ["I", "II"]]
    hanse = corpus.nodes[
        f"{WORK}/03-livre-premier-l-histoire/chapitre-02-les-villes-hanseatiques/source.md"
    ]
    assert hanse.title == "Les villes hanséatiques"
    assert hanse.parent_source_file == f"{hanse.folder}/summary.md"
    assert hanse.heading_path == (
        "Système national d'économie politique > Livre premier — L'histoire > "
        "Chapitre II (Les villes hanséatiques)"
    )
    preface = corpus.nodes[f"{WORK}/01-preface/source.md"]
    assert preface.heading_path == "Système national d'économie politique > Préface"
    assert "number" not in preface.meta


def test_level_3_children_once_summaries_are_written(imported: Path) -> None:
    # what the summarizer will do: write the pieces' summary.md
    for piece in ("01-preface", "02-introduction"):
        path = imported / WORK / piece / "summary.md"
        path.write_text(frontmatter.render({"title": piece, "generated": True}, "Résumé.\n"))
    corpus = read_corpus(DirectorySource(imported))
    assert not [p for p in corpus.problems if p.severity == "error"]
    (work,) = corpus.works()
    kids = corpus.children(work.path)
    assert [(n.node_type, n.exists) for n in kids] == [("section_summary", True)] * 2 + [
        ("part_summary", True)
    ] * 4
    assert all(n.parent_source_file == work.path for n in kids)
    # the reader fixes the parent link of the summaries written without it
    assert sorted(corpus.changes) == [
        f"{WORK}/01-preface/summary.md",
        f"{WORK}/02-introduction/summary.md",
    ]


def test_footnotes_follow_their_chapter_and_headings_stay(imported: Path) -> None:
    italians = imported / WORK / "03-livre-premier-l-histoire/chapitre-01-les-italiens/source.md"
    doc = frontmatter.read("x", italians.read_bytes())
    assert doc.body.endswith(
        "du commerce[^2].\n\n[^2]: Note inventée : le déclin est ici expliqué par les guerres entre cités.\n"
    )
    last = (
        imported
        / WORK
        / "06-livre-quatrieme-la-politique/chapitre-02-les-puissances-continentales/source.md"
    )
    assert "[^" not in last.read_text(encoding="utf-8")  # the definitions left the last chapter
    cosmo = next((imported / WORK / "04-livre-deuxieme-la-theorie").glob("chapitre-01-*/source.md"))
    assert "\n#### Une objection\n" in cosmo.read_text(encoding="utf-8")


def test_notes_numbered_per_chapter_stay_put(tmp_path: Path) -> None:
    src = tmp_path / "b.md"
    src.write_text(
        "# Livre\n\n## Partie\n\n### I. Un\n\nA[^1].\n\n[^1]: note un\n\n"
        "### II. Deux\n\nB[^1].\n\n[^1]: note deux\n",
        encoding="utf-8",
    )
    (work,) = read_markdown(src)
    one, two = work.parts[0].sections
    assert (one.number, one.title, two.title) == ("I", "Un", "Deux")
    assert one.body == "A[^1].\n\n[^1]: note un\n"
    assert two.body == "B[^1].\n\n[^1]: note deux\n"


@pytest.mark.parametrize(
    ("text", "message", "line"),
    [
        ("# W\n\nIntro libre.\n\n## P\n\n### C\n\nx\n", "text directly under the work", 1),
        ("# W\n\n## P\n\nTexte.\n\n### C\n\nx\n", "before its first chapter", 3),
        ("# W\n\n## Vide\n\n## P\n\n### C\n\nx\n", "neither text nor", 3),
        ("# W\n\n### C\n\nx\n", "go under a part", 3),
        ("## P\n\n### C\n\nx\n", "before any `# ` work title", 1),
        ("# W\n\n## Préface\n\nx\n", "has no chapter, only liminary pieces", 1),
        ("---\ntitle: [\n---\n# W\n", "malformed YAML", None),
        ("# W\n\n## P\n\n### C\n\nd\xe9j\xe0\n", "not valid UTF-8", None),
    ],
)
def test_bad_structure_names_file_and_line(
    tmp_path: Path, text: str, message: str, line: int | None
) -> None:
    src = tmp_path / "book.md"
    src.write_bytes(text.encode("utf-8") if "UTF-8" not in message else text.encode("latin-1"))
    with pytest.raises(ImportSourceError, match=message) as e:
        read_markdown(src)
    assert e.value.path == (f"{src}:{line}" if line else str(src))


def test_headings_in_code_fences_are_text(tmp_path: Path) -> None:
    src = tmp_path / "b.md"
    src.write_text("# W\n\n## P\n\n### C\n\n```\n## pas un titre\n```\n", encoding="utf-8")
    (work,) = read_markdown(src)
    assert work.parts[0].sections[0].body == "```\n## pas un titre\n```\n"


def test_a_fence_ends_as_chunking_reads_it(tmp_path: Path) -> None:
    """A ```` fence is not closed by ```: its `##` stays text, as the chunker sees it."""
    src = tmp_path / "b.md"
    body = "````\n```\n## pas un titre\n````\n"
    src.write_text(f"# W\n\n## P\n\n### C\n\n{body}\n### D\n\nFin.\n", encoding="utf-8")
    (work,) = read_markdown(src)
    assert [s.body for s in work.parts[0].sections] == [body, "Fin.\n"]


def test_a_piece_after_a_part_keeps_its_own_title(tmp_path: Path) -> None:
    """A bare-numbered chapter of a part (`### II Deux`) does not number a piece after it."""
    src = tmp_path / "b.md"
    src.write_text(
        "# Livre\n\n## Préface\n\nTexte.\n\n## Première partie\n\n### I. Un\n\nUn.\n\n"
        "### II Deux\n\nDeux.\n\n## Conclusion\n\nFin.\n",
        encoding="utf-8",
    )
    (work,) = read_markdown(src)
    assert [(s.title, s.number) for _, s in work.pieces] == [
        ("Préface", None),
        ("Conclusion", None),
    ]
    assert [(s.title, s.number) for s in work.parts[0].sections] == [("Un", "I"), ("Deux", "II")]


def test_several_works_and_the_force_flag(tmp_path: Path) -> None:
    src = tmp_path / "two.md"
    shutil.copy(LIST_MD, src)
    with src.open("a", encoding="utf-8") as f:
        f.write("\n# Un autre livre\n\n## Partie\n\n### Chapitre 1 : Seul\n\nTexte.\n")
    dest = tmp_path / "d"
    runner = CliRunner()
    ok = runner.invoke(main, ["corpus", "import", str(src), str(dest), "--format", "markdown"])
    assert ok.exit_code == 0, ok.output
    assert "imported 2 work(s), 5 parts, 11 chapters, 3 pieces" in ok.output
    lone = dest / "corpus/un-autre-livre/01-partie/chapitre-01-seul/source.md"
    assert frontmatter.read("x", lone.read_bytes()).meta["number"] == "1"
    again = runner.invoke(main, ["corpus", "import", str(src), str(dest)])
    assert again.exit_code == 1
    forced = runner.invoke(main, ["corpus", "import", str(src), str(dest), "--force"])
    assert forced.exit_code == 0, forced.output
    assert not read_corpus(DirectorySource(dest)).problems
