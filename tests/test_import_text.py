"""`glossator corpus import BOOK.txt DEST`: plain-text books, Project Gutenberg's and others.

The two Gutenberg books are copied as distributed (Windows-1252, CRLF, header and
footer) in tests/fixtures/gutenberg/; their expected chapters were counted by hand
from the text (grep of the heading lines, the contents list and the illustrated
edition's `Chapter I.]` left aside). The small books below are written here in
other conventions: parts, titles on the next line, bare numerals, contents lists,
verse, French, a BOM and CRLF without any Gutenberg header.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from click.testing import CliRunner

from glossator.cli import main
from indexer.corpus.layout import read_corpus
from indexer.corpus.source import DirectorySource, new_file_mode
from indexer.importers.common import TITLE_FROM_FILE_NAME
from indexer.importers.text import decode, read_text, strip_gutenberg

GUTENBERG = Path(__file__).parent / "fixtures" / "gutenberg"
ROMAN = [
    "I", "II", "III", "IV", "V", "VI", "VII", "VIII", "IX", "X",
]  # fmt: skip


def roman(n: int) -> str:
    tens = ["", "X", "XX", "XXX", "XL", "L", "LX"][n // 10]
    return tens + (["", *ROMAN])[n % 10]


def prose(words: int, seed: str = "text") -> str:
    """A hard-wrapped paragraph of `words` words (wrapped at 60 columns)."""
    out, line = [], ""
    common = [
        "the",
        "man",
        "and",
        "the",
        "sea",
        "were",
        "in",
        "the",
        "boat",
        "of",
        "his",
        "father",
        "with",
        "a",
        "net",
    ]
    for i in range(words):
        word = f"{seed}{i}" if i % 2 == 0 else common[i % len(common)]
        if len(line) + len(word) + 1 > 60:
            out.append(line)
            line = word
        else:
            line = f"{line} {word}".strip()
    out.append(line + ".")
    return "\n".join(out)


def test_frankenstein_letters_then_chapters() -> None:
    work = read_text(GUTENBERG / "pg84.txt")
    assert work.title == "Frankenstein; Or, The Modern Prometheus"
    assert work.author == "Mary Wollstonecraft Shelley" and work.lang == "en"
    assert not work.parts
    sections = work.sections()
    titles = [s.title for s in sections]
    assert titles == [f"Letter {n}" for n in range(1, 5)] + [f"Chapter {n}" for n in range(1, 25)]
    assert [s.meta.get("label") for s in sections[:5]] == ["Letter"] * 4 + [None]
    assert sections[0].body.startswith("_To Mrs. Saville, England._\n\nSt. Petersburgh")
    # unwrapped: a paragraph is one line; the Gutenberg licence is gone
    first = sections[4].body.split("\n\n")[0]
    assert first.startswith("I am by birth a Genevese") and "\n" not in first
    assert all("Project Gutenberg" not in s.body for s in sections)
    assert sections[-1].body.rstrip().endswith("lost in darkness and distance.")
    assert "\r" not in "".join(s.body for s in sections)


def test_pride_and_prejudice_preface_and_61_chapters() -> None:
    work = read_text(GUTENBERG / "pg1342.txt")
    assert (work.title, work.author, work.lang) == ("Pride and Prejudice", "Jane Austen", "en")
    sections = work.sections()
    assert sections[0].title == "Preface" and sections[0].number is None
    chapters = sections[1:]
    assert [c.number for c in chapters] == [roman(n) for n in range(1, 62)]
    assert [c.title for c in chapters] == [f"Chapter {roman(n)}" for n in range(1, 62)]
    # chapter I's heading sat inside an illustration block; its text is the novel's first line
    assert chapters[0].body.startswith("It is a truth universally acknowledged")
    text = "".join(s.body for s in sections)
    assert "[Illustration" not in text and "Heading to Chapter" not in text  # captions, list
    assert sections[0].body.rstrip().endswith("_GEORGE SAINTSBURY._")
    assert any("title page" in n for n in work.notes)


def test_gutenberg_books_import_through_the_cli(tmp_path: Path) -> None:
    runner = CliRunner()
    dest = tmp_path / "pp"
    dry = runner.invoke(
        main, ["corpus", "import", str(GUTENBERG / "pg1342.txt"), str(dest), "--dry-run"]
    )
    assert dry.exit_code == 0, dry.output
    assert "chapter-61/  Chapter LXI: Happy for all her maternal feelings" in dry.output
    assert "would import 1 work(s), 0 parts, 61 chapters, 1 pieces" in dry.output
    assert not dest.exists()
    done = runner.invoke(main, ["corpus", "import", str(GUTENBERG / "pg1342.txt"), str(dest)])
    assert done.exit_code == 0, done.output
    corpus = read_corpus(DirectorySource(dest))
    assert [p for p in corpus.problems if p.severity == "error"] == []
    sources = [n for n in corpus.in_reading_order() if n.level == 0]
    assert len(sources) == 62
    assert sources[0].heading_path == "Pride and Prejudice > Preface"
    assert sources[3].heading_path == "Pride and Prejudice > Chapter III"
    assert sources[3].path == "corpus/pride-and-prejudice/chapter-03/source.md"
    summary = corpus.nodes["corpus/pride-and-prejudice/chapter-03/summary.md"]
    assert summary.parent_source_file == "corpus/pride-and-prejudice/summary.md"
    assert summary.heading_path == "Pride and Prejudice > Chapter III (summary)"
    # the files get the mode any new file gets (0644 under umask 022), not mkstemp's 0600
    expected = new_file_mode()
    modes = {stat.S_IMODE(p.stat().st_mode) for p in (dest / "corpus").rglob("*.md")}
    assert modes == {expected}, (oct(expected), sorted(oct(m) for m in modes))
    old = os.umask(0o022)
    try:
        assert new_file_mode() == 0o644
    finally:
        os.umask(old)

    dest2 = tmp_path / "fr"
    done = runner.invoke(main, ["corpus", "import", str(GUTENBERG / "pg84.txt"), str(dest2)])
    assert done.exit_code == 0, done.output
    corpus = read_corpus(DirectorySource(dest2))
    paths = [n.heading_path for n in corpus.in_reading_order() if n.level == 0]
    assert paths[0] == "Frankenstein; Or, The Modern Prometheus > Letter 1"
    assert paths[4] == "Frankenstein; Or, The Modern Prometheus > Chapter 1"
    folders = sorted(p.name for p in (dest2 / "corpus").glob("*/*/"))
    assert folders[:5] == [
        "01-letter-1",
        "02-letter-2",
        "03-letter-3",
        "04-letter-4",
        "05-chapter-1",
    ]


def test_parts_titles_on_next_lines_verse_bom_crlf(tmp_path: Path) -> None:
    book = "\n\n".join(
        [
            "THE VOYAGE\n\nby A. Writer",
            "PREFACE",
            prose(60, "pre"),
            "CONTENTS\n\nBOOK I\n\nCHAPTER I\n\nCHAPTER II\n\nBOOK II\n\nCHAPTER III",
            "BOOK I.\n\nTHE SHORE",
            "CHAPTER I.\nIn Which We Leave",  # title on the next line of the same paragraph
            prose(80, "one"),
            "    The sea is wide,\n    the ship is small,\n    and I am far from home.",
            prose(40, "oneb"),
            "CHAPTER II.\n\nTHE STORM",  # title in capitals in the next paragraph
            prose(80, "two"),
            "BOOK THE SECOND",
            "CHAPTER III. -- The Landing.",  # title on the same line
            prose(80, "three"),
            "THE END",
        ]
    )
    src = tmp_path / "voyage.txt"
    src.write_bytes(b"\xef\xbb\xbf" + book.replace("\n", "\r\n").encode("utf-8"))
    work = read_text(src)
    assert work.lang == "en"
    assert [p.title for p in work.parts] == ["The Shore", "Book the Second"]
    assert [(s.number, s.title) for s in work.parts[0].sections] == [
        ("I", "In Which We Leave"),
        ("II", "The Storm"),
    ]
    assert [(s.number, s.title) for s in work.parts[1].sections] == [("III", "The Landing")]
    assert [s.title for _, s in work.pieces] == ["Preface"]
    one = work.parts[0].sections[0].body
    assert "The sea is wide,\nthe ship is small,\nand I am far from home." in one  # verse kept
    assert "\r" not in one and "\ufeff" not in one
    assert "one0 " in one and "one0\n" not in one and "\n" not in one.split("\n\n")[0]


def test_bare_numerals_and_french(tmp_path: Path) -> None:
    chapters = "\n\n".join(f"{roman(n)}.\n\n{prose(50, f'c{n}x')}" for n in range(1, 5))
    src = tmp_path / "bare.txt"
    src.write_text(f"The title\n\n{chapters}\n", encoding="utf-8")
    work = read_text(src)
    assert [s.number for s in work.sections()] == ["I", "II", "III", "IV"]
    assert work.sections()[0].title == "Chapter I"  # the language's label, English guessed
    assert read_text(src, lang="de").sections()[0].title == "Kapitel I"

    french = "\n\n".join(
        [
            "AVANT-PROPOS",
            "Le livre que voici est une histoire de la mer et des gens qui la connaissent bien, "
            "et qui ne la craignent pas plus que de raison. " * 3,
            "CHAPITRE PREMIER\n\nLE DÉPART",
            "Il était une fois un marin qui ne voulait pas partir, et qui partit tout de même "
            "pour la haute mer avec les autres. " * 3,
            "CHAPITRE DEUXIÈME",
            "Le vent se leva dans la nuit et la mer devint grosse, mais le navire tint bon "
            "jusqu'au matin et au-delà. " * 3,
        ]
    )
    src = tmp_path / "mer.txt"
    src.write_text(french, encoding="utf-8")
    work = read_text(src)
    assert work.lang == "fr"
    assert [(s.number, s.title) for s in work.sections()] == [
        (None, "Avant-propos"),
        ("1", "Le Départ"),
        ("2", "Chapitre 2"),
    ]


def test_no_chapter_heading_is_one_chapter_with_a_warning(tmp_path: Path) -> None:
    src = tmp_path / "essay.txt"
    src.write_text(prose(300, "w"), encoding="utf-8")
    work = read_text(src)
    assert [(s.title, s.number) for s in work.sections()] == [("essay", None)]
    assert work.sections()[0].body.startswith("w0 man w2 the w4")
    assert any(n.startswith("warning: found no chapter heading") for n in work.notes)
    result = CliRunner().invoke(main, ["corpus", "import", str(src), str(tmp_path / "out")])
    assert result.exit_code == 0, result.output
    assert "warning: found no chapter heading" in result.output
    assert "0 parts, 1 chapters" in result.output
    assert (tmp_path / "out" / "corpus" / "essay").is_dir()


def test_a_title_taken_from_the_file_name_is_said(tmp_path: Path) -> None:
    """No title page, no header: the work is titled after the file (`pg4711`), a guess
    said as a warning; --work-title, which replaces it, drops the warning."""
    src = tmp_path / "pg4711.txt"
    src.write_text(
        "CHAPTER I.\n\nIt was a dark and stormy night; the rain fell in torrents.\n\n"
        "CHAPTER II.\n\nThe next morning was fine, and everyone went out.\n",
        encoding="utf-8",
    )
    work = read_text(src)
    assert work.title == "pg4711"
    said = [n for n in work.notes if "titled after its file name" in n]
    assert said == [TITLE_FROM_FILE_NAME] and said[0].startswith("warning: ")
    result = CliRunner().invoke(main, ["corpus", "import", str(src), str(tmp_path / "a")])
    assert result.exit_code == 0 and "titled after its file name" in result.output, result.output
    named = CliRunner().invoke(
        main, ["corpus", "import", str(src), str(tmp_path / "b"), "--work-title", "Dark Night"]
    )
    assert named.exit_code == 0 and "titled after" not in named.output, named.output
    # a book that names itself says nothing of the kind
    assert not any("file name" in n for n in read_text(GUTENBERG / "pg84.txt").notes)


def test_gutenberg_header_only_when_present() -> None:
    text = "Title: X\n\n*** START OF THE PROJECT GUTENBERG EBOOK X ***\nbody\n*** END OF THE PROJECT GUTENBERG EBOOK X ***\nlicence"
    body, fields = strip_gutenberg(text)
    assert body == "body" and fields == {"title": "X"}
    assert strip_gutenberg("no header\n*** here ***") == ("no header\n*** here ***", {})
    assert decode("x", "e\u0301t\u00e9\r\n".encode()) == ("\u00e9t\u00e9\n", "utf-8")  # NFC
    assert decode("x", "caf\xe9 \x93q\x94".encode("latin-1")) == ("café “q”", "cp1252")


def test_german_ordinal_headings_parts_and_an_excluded_part(tmp_path: Path) -> None:
    satz = "Der Mann ging mit dem Hund an den See, und die Sonne schien auf das Wasser. "
    book = "\n\n".join(
        [
            "Erster Teil",
            "Erstes Kapitel",
            satz * 6,
            "ZWEITES KAPITEL. Die Reise",
            satz * 6,
            "Zweiter Teil",
            "Drittes Kapitel",
            satz * 6,
        ]
    )
    src = tmp_path / "buch.txt"
    src.write_text(book, encoding="utf-8")
    work = read_text(src)
    assert work.lang == "de"
    assert [p.title for p in work.parts] == ["Erster Teil", "Zweiter Teil"]
    assert [(s.number, s.title) for s in work.parts[0].sections] == [
        ("1", "Kapitel 1"),
        ("2", "Die Reise"),
    ]
    only_first = read_text(src, exclude=("^zweiter teil$",))
    assert [p.title for p in only_first.parts] == ["Erster Teil"] and not only_first.pieces


def test_contents_paragraph_and_title_on_the_next_line(tmp_path: Path) -> None:
    contents = "CONTENTS\n\n CHAPTER I.     Down the Rabbit-Hole\n CHAPTER II.    The Pool of Tears"
    book = "\n\n".join(
        [
            "ALICE'S ADVENTURES",
            contents,
            "CHAPTER I.\nDown the Rabbit-Hole",
            prose(70, "a"),
            "CHAPTER II.\nThe Pool of Tears",
            prose(70, "b"),
        ]
    )
    src = tmp_path / "alice.txt"
    src.write_text(book, encoding="utf-8")
    work = read_text(src)
    assert [(s.number, s.title) for s in work.sections()] == [
        ("I", "Down the Rabbit-Hole"),
        ("II", "The Pool of Tears"),
    ]
    assert "Rabbit-Hole" not in work.sections()[0].body  # the contents list is not text


def test_titles_on_their_own_line_when_the_book_does_so_and_headings_glued_to_text(
    tmp_path: Path,
) -> None:
    chapters = [("I", "The Period"), ("II", "The Mail"), ("III", "The Night Shadows")]
    book = "\n\n".join(
        f"CHAPTER {n}.\n\n{title}\n\n{prose(60, n.lower())}" for n, title in chapters
    )
    src = tmp_path / "cities.txt"
    src.write_text(book, encoding="utf-8")
    work = read_text(src)
    assert [(s.number, s.title) for s in work.sections()] == chapters
    assert not work.sections()[0].body.startswith("The Period")

    # a heading with its text right under it (no blank line), and no title lines
    glued = "\n\n".join(f"Chapter {n}\n{prose(60, f'g{n}')}" for n in range(1, 4))
    src = tmp_path / "glued.txt"
    src.write_text(glued, encoding="utf-8")
    work = read_text(src)
    assert [(s.number, s.title) for s in work.sections()] == [
        ("1", "Chapter 1"),
        ("2", "Chapter 2"),
        ("3", "Chapter 3"),
    ]
    assert work.sections()[0].body.startswith("g10 ")


def test_a_part_title_in_mixed_case_on_the_line_after_the_part_heading(tmp_path: Path) -> None:
    """`PART ONE` / `The Departure` / `CHAPTER I.`: the line is the part's title, not a
    first section of the part (the chapters' own convention does not matter)."""
    book = "\n\n".join(
        [
            "THE CROSSING",
            "PART ONE\n\nThe Departure",
            "CHAPTER I.",
            prose(80, "one"),
            "CHAPTER II.",
            prose(80, "two"),
            "PART TWO",
            "The Return",
            "CHAPTER III.",
            prose(80, "three"),
        ]
    )
    src = tmp_path / "crossing.txt"
    src.write_text(book, encoding="utf-8")
    work = read_text(src)
    assert [p.title for p in work.parts] == ["The Departure", "The Return"]
    assert [[s.number for s in p.sections] for p in work.parts] == [["I", "II"], ["III"]]
    assert "The Departure" not in work.parts[0].sections[0].body
