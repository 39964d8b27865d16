"""E-texts as found (issue 22): real texts in tests/fixtures/etexts/ (SOURCES.md names each
source and licence), imported with no hand edits; each test asserts the exact chapters.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from glossator.cli import main
from indexer.corpus import read_corpus
from indexer.importers.common import ImportSourceError
from indexer.importers.text import read_text
from indexer.source import DirectorySource

ETEXTS = Path(__file__).parent / "fixtures" / "etexts"
PRINCE = ETEXTS / "machiavelli-the-prince-pg1232-excerpt.txt"
TOZZI = ETEXTS / "tozzi-con-gli-occhi-chiusi-excerpt.txt"


def test_the_prince_contents_intro_pieces_chapters_in_capitals_and_verse() -> None:
    """Gutenberg's The Prince: a contents list whose entries name the unnumbered pieces
    (`YOUTH — Æt. 1-25`) and the essay appended after chapter XXVI; titles in capitals
    on the lines under `CHAPTER I.`; Petrarch's verse closing chapter XXVI."""
    work = read_text(PRINCE)
    assert (work.title, work.author, work.lang) == ("The Prince", "Niccolò Machiavelli", "en")
    assert [(s.number, s.title) for s in work.sections()] == [
        (None, "Introduction"),
        (None, "Youth — Æt. 1-25—1469-94"),
        (None, "Office — Æt. 25-43—1494-1512"),
        (None, "Literature and Death — Æt. 43-58—1512-27"),
        (None, "The Man and His Works"),
        (None, "Dedication"),
        ("I", "How Many Kinds of Principalities There Are, and by What Means They Are Acquired"),
        ("II", "Concerning Hereditary Principalities"),
        ("III", "Concerning Mixed Principalities"),
        (
            "XX",
            "Are Fortresses, and Many Other Things to Which Princes Often Resort, "
            "Advantageous or Hurtful?",
        ),
        ("XXI", "How a Prince Should Conduct Himself So as to Gain Renown"),
        ("XXVI", "An Exhortation to Liberate Italy From the Barbarians"),
        (
            None,
            "Description of the Methods Adopted by the Duke Valentino When Murdering "
            "Vitellozzo Vitelli, Oliverotto da Fermo, the Signor Pagolo, and the Duke di "
            "Gravina Orsini",
        ),
    ]
    sections = {s.number or s.title: s for s in work.sections()}
    last = sections["XXVI"].body
    assert (
        "Virtu contro al Furore\nPrendera l’arme, e fia il combatter corto:\n"
        "Che l’antico valore\nNegli italici cuor non e ancor morto." in last
    )
    assert "Virtue against fury shall advance the fight,\nAnd it i’ th’ combat" in last
    assert last.rstrip().endswith("Edward Dacre, 1640.")
    assert "DESCRIPTION OF THE METHODS" not in last  # the appended essay is its own piece
    assert "THE PRINCE" not in sections["Dedication"].body
    text = "".join(s.body for s in work.sections())
    assert "CHAPTER IV." not in text and "Project Gutenberg" not in text  # contents, licence
    assert any(
        n.startswith("left out the contents list 'Contents' (35 entries") for n in work.notes
    )


def test_an_italian_etext_one_paragraph_a_line_without_headings(tmp_path: Path) -> None:
    """Tozzi, one paragraph a line, no blank line between them, a title page `Title / di /
    Author`, no chapter heading: one chapter (the work's title), a warning, exit 0."""
    work = read_text(TOZZI)
    assert (work.title, work.author, work.lang) == ("Con gli occhi chiusi", "Federigo Tozzi", "it")
    assert [(s.number, s.title) for s in work.sections()] == [(None, "Con gli occhi chiusi")]
    paragraphs = work.sections()[0].body.rstrip().split("\n\n")
    assert len(paragraphs) == 14 and all("\n" not in p for p in paragraphs)
    assert (
        paragraphs[0].startswith("Usciti dalla trattoria")
        and paragraphs[-1] == "- Ho versato l'olio."
    )
    assert any(n.startswith("warning: found no chapter heading") for n in work.notes)
    assert any("title page" in n for n in work.notes)

    result = CliRunner().invoke(main, ["corpus", "import", str(TOZZI), str(tmp_path / "b")])
    assert result.exit_code == 0, result.output
    assert "warning: found no chapter heading" in result.output
    corpus = read_corpus(DirectorySource(tmp_path / "b"))
    assert [p for p in corpus.problems if p.severity == "error"] == []
    assert [n.heading_path for n in corpus.in_reading_order() if n.level == 0] == [
        "Con gli occhi chiusi > Con gli occhi chiusi"
    ]


@pytest.mark.parametrize("encoding", ["latin-1", "cp1252"])
def test_latin1_and_windows1252_etexts_import(tmp_path: Path, encoding: str) -> None:
    src = tmp_path / "tozzi.txt"
    text = TOZZI.read_text(encoding="utf-8")
    if encoding == "cp1252":
        text = text.replace("- Ho", "– Ho")  # a dash Windows-1252 has and Latin-1 lacks
    src.write_bytes(text.encode(encoding))
    work = read_text(src)
    body = work.sections()[0].body
    assert "benché avesse presto mutato mestiere" in body and "più giovane di lui" in body
    assert any(n.startswith("decoded as cp1252") for n in work.notes)
    assert work.title == "Con gli occhi chiusi"
    forced = read_text(src, encoding="latin-1")
    assert "benché" in forced.sections()[0].body
    assert not any(n.startswith("decoded as") for n in forced.notes)
    with pytest.raises(ImportSourceError, match="not an encoding"):
        read_text(src, encoding="no-such-encoding")
    with pytest.raises(ImportSourceError, match="is not utf-8"):
        read_text(src, encoding="utf-8")


def test_cli_encoding_lang_and_a_dry_run_that_says_what_it_skipped(tmp_path: Path) -> None:
    src = tmp_path / "tozzi.txt"
    src.write_bytes(TOZZI.read_text(encoding="utf-8").encode("cp1252"))
    runner = CliRunner()
    result = runner.invoke(
        main,
        ["corpus", "import", str(src), str(tmp_path / "o"), "--encoding", "cp1252", "--lang", "fr"],
    )
    assert result.exit_code == 0, result.output
    summary = (tmp_path / "o" / "corpus" / "con-gli-occhi-chiusi" / "summary.md").read_text()
    assert "lang: fr" in summary and "author: Federigo Tozzi" in summary

    dry = runner.invoke(main, ["corpus", "import", str(PRINCE), str(tmp_path / "p"), "--dry-run"])
    assert dry.exit_code == 0, dry.output
    assert "left out the contents list 'Contents' (35 entries, lines 37-76)" in dry.output
    assert "left out the title page before 'INTRODUCTION'" in dry.output
    assert "left out 'THE PRINCE' (line 223): no text" in dry.output
    # the book's numbers do not give the order (pieces before chapter I): by position
    assert "  12-chapter-xxvi-an-exhortation-to-liberate-italy-from-the-barbarians/  " in dry.output
    assert "would import 1 work(s), 0 parts, 11 chapters, 2 pieces" in dry.output
    assert not (tmp_path / "p").exists()
