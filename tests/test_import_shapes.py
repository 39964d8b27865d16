"""The e-text shapes issue 40 found misread, each on a real text (tests/fixtures/etexts/,
SOURCES.md names each source), and the `left out …` notices on stderr through the CLI.
"""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from glossator.cli import main
from indexer.corpus.layout import read_corpus
from indexer.corpus.source import DirectorySource
from indexer.importers.text import read_text

ETEXTS = Path(__file__).parent / "fixtures" / "etexts"
LIBER_LIBER = ETEXTS / "collodi-pinocchio-liberliber-card.txt"
PINOCCHIO_TITLES = [
    "Come andò che Maestro Ciliegia, falegname trovò un pezzo di legno che piangeva e "
    "rideva come un bambino.",
    "Maestro Ciliegia regala il pezzo di legno al suo amico Geppetto, il quale lo prende per "
    "fabbricarsi un burattino maraviglioso, che sappia ballare, tirar di scherma e fare i "
    "salti mortali.",
    "Geppetto, tornato a casa, comincia subito a fabbricarsi il burattino e gli mette il nome "
    "di Pinocchio. Prime monellerie del burattino.",
    "La storia di Pinocchio col Grillo-parlante, dove si vede come i ragazzi cattivi hanno a "
    "noja di sentirsi correggere da chi ne sa più di loro.",
]


def test_liber_liber_card_with_empty_fields_and_long_titles_under_bare_numerals(
    tmp_path: Path,
) -> None:
    """Liber Liber's card as its files carry it now (`NOTE:`, `SOGGETTO:` with no value on
    their line, `CODICE ISBN E-BOOK`, `TRATTO DA`, `INDICE DI AFFIDABILITA': 1` over its
    scale `0: affidabilità bassa`…): all of it left out, none of it a piece titled `Note`
    (it was: the card ended at `NOTE:`, read as a liminary heading). Each chapter's numeral
    alone on its line with its long argument on the next (unwrapped) is one heading with
    that title (they were untitled, the argument left as the chapter's first paragraph)."""
    work = read_text(LIBER_LIBER)
    assert (work.title, work.author, work.lang) == (
        "Le avventure di Pinocchio",
        "Carlo Collodi",
        "it",
    )
    assert not work.parts
    assert [(s.number, s.title) for s in work.sections()] == list(
        zip(["I", "II", "III", "IV"], [t.rstrip(".") for t in PINOCCHIO_TITLES], strict=True)
    )
    assert work.sections()[0].body.startswith("— C'era una volta....")
    text = "\n".join(s.body for s in work.sections())
    assert "AFFIDABILIT" not in text and "SOGGETTO" not in text and "TRATTO DA" not in text
    assert work.notes == [
        "left out the licence card before the text (lines 1-57)",
        "left out the title page before 'I' (3 paragraphs, lines 61-65)",
    ]


def test_left_out_notices_on_stderr_with_dry_run_and_import(tmp_path: Path) -> None:
    """docs/corpus.md promises `left out …` on stderr: with --dry-run and without, the
    tree or the summary on stdout, the notices on stderr only."""
    dest = tmp_path / "book"
    for args in (["--dry-run"], []):
        result = CliRunner().invoke(main, ["corpus", "import", str(LIBER_LIBER), str(dest), *args])
        assert result.exit_code == 0, result.output
        assert "left out the licence card before the text (lines 1-57)" in result.stderr
        assert "left out the title page before 'I'" in result.stderr
        assert "left out" not in result.stdout
        assert "0 parts, 4 chapters, 0 pieces" in result.stdout
    corpus = read_corpus(DirectorySource(dest))
    assert [p for p in corpus.problems if p.severity == "error"] == []


SMITH = ETEXTS / "smith-wealth-of-nations-pg3300-excerpt.txt"


def test_a_part_heading_met_inside_a_chapter_is_its_section(tmp_path: Path) -> None:
    """Smith's Wealth of Nations (Gutenberg #3300), its five Books the book's five parts:
    `BOOK I.` (its title in capitals on three lines) holds chapters, and `CHAPTER X.`
    divides its own text into `PART I.` and `PART II.--…`, as Book V's `CHAPTER I.` does from its first line. Those were read as
    parts (and `BOOK II.` filed under `PART II` as a part of parts); they are the chapter's
    sections, `###` headings in its text."""
    work = read_text(SMITH)
    assert (work.title, work.author, work.lang) == (
        "An Inquiry into the Nature and Causes of the Wealth of Nations",
        "Adam Smith",
        "en",
    )
    assert [s.title for _, s in work.pieces] == [
        "Introduction and Plan of the Work",
        "Appendix to Book IV",
    ]
    assert [(p.title, [(s.number, s.title) for s in p.sections]) for p in work.parts] == [
        (
            "Of the Causes of Improvement in the Productive Powers of Labour, and of the Order "
            "According to Which Its Produce Is Naturally Distributed Among the Different Ranks "
            "of the People",
            [
                ("I", "Of the Division of Labour"),
                ("X", "Of Wages and Profit in the Different Employments of Labour and Stock"),
            ],
        ),
        (
            "Of the Nature, Accumulation, and Employment of Stock",
            [(None, "Introduction"), ("I", "Of the Division of Stock")],
        ),
        (  # `BOOK III.` straight over its `CHAPTER I.`
            "Of the Different Progress of Opulence in Different Nations",
            [("I", "Of the Natural Progress of Opulence")],
        ),
        (  # `BOOK IV.`'s two paragraphs before its first chapter: its first section
            "Of Systems of Political Economy",
            [
                (None, "Of Systems of Political Economy"),
                ("I", "Of the Principle of the Commercial or Mercantile System"),
                ("VII", "Of Colonies"),
            ],
        ),
        (  # `BOOK V.` alone, its title in capitals in the next paragraph
            "Of the Revenue of the Sovereign or Commonwealth",
            [("I", "Of the Expenses of the Sovereign or Commonwealth")],
        ),
    ]
    chapter_x = work.parts[0].sections[1].body
    assert (
        "\n\n### Part I. Inequalities arising from the nature of the employments themselves\n\n"
        in chapter_x
    )
    assert "\n\n### Part II. Inequalities occasioned by the Policy of Europe\n\n" in chapter_x
    assert chapter_x.rstrip().endswith("and from place to place.")
    # Book V's chapter I opens on its own `PART I.`, straight under the chapter's heading
    book_v_one = work.parts[4].sections[0].body
    assert book_v_one.startswith("### Part I. Of the Expense of Defence\n\nThe first duty")
    assert "headings labelled 'Part' met inside chapters are kept as their sections" in work.notes
    # no section of a chapter became a part, nor a chapter of another Book: Book IV's
    # chapter VII holds its `PART I.` / `PART II.` as Book I's chapter X does
    assert len(work.parts) == 5
    colonies = work.parts[3].sections[2].body
    assert colonies.startswith("### Part I. Of the Motives for Establishing New Colonies\n\n")
    assert "\n\n### Part II. Causes of the Prosperity of New Colonies\n\n" in colonies
    assert all("### Part" not in s.body for p in work.parts[1:3] for s in p.sections)
    assert work.parts[3].sections[1].body.startswith("That wealth consists in money")


NIEBLA = ETEXTS / "unamuno-niebla-pg49836-excerpt.txt"


def test_niebla_note_post_preface_title_over_chapter_one_and_an_epilogue_on_two_lines(
    tmp_path: Path,
) -> None:
    """Unamuno's Niebla (Gutenberg #49836) as gutenberg.org serves it, a byte-order mark
    and CRLF line ends: a `NOTA DE TRANSCRIPCIÓN` of bulleted items before the title page
    (they were a piece with it), a `POST-PRÓLOGO` signed `M. DE U.` after the `PRÓLOGO`
    (it was merged into it), the book's title `NIEBLA` over `I` (it was left at the end of
    the post-preface), and the epilogue's heading over two paragraphs, `ORACIÓN FÚNEBRE` /
    `POR MODO DE EPÍLOGO` (it was chapter III's text)."""
    src = tmp_path / "pg49836.txt"
    src.write_bytes(
        b"\xef\xbb\xbf" + NIEBLA.read_text(encoding="utf-8").replace("\n", "\r\n").encode()
    )
    work = read_text(src)
    assert (work.title, work.author, work.lang) == ("Niebla (Nivola)", "Miguel de Unamuno", "es")
    assert [(s.number, s.title) for s in work.sections()] == [
        (None, "Prólogo"),
        (None, "Post-prólogo"),
        ("I", "Capítulo I"),
        ("II", "Capítulo II"),
        ("III", "Capítulo III"),
        (None, "Oración Fúnebre por Modo de Epílogo"),
    ]
    prologue, post, first, _, third, epilogue = work.sections()
    assert prologue.body.rstrip().endswith("Y con esto acabo.\n\nVÍCTOR GOTI.")
    assert post.body.startswith("De buena gana discutiría")
    assert post.body.rstrip().endswith("M. DE U.")
    assert first.body.startswith("Al aparecer Augusto")
    assert third.body.rstrip().endswith("salió a la calle.")
    assert epilogue.body.startswith("Suele ser costumbre al final de las novelas")
    text = "".join(s.body for s in work.sections())
    assert "NIEBLA" not in text and "TRANSCRIPCIÓN" not in text and "ÍNDICE" not in text
    assert work.notes == [
        "left out Project Gutenberg's header (lines 1-26)",
        "left out Project Gutenberg's licence after the text (lines 274-280)",
        "left out a transcriber's note (lines 28-41)",
        "left out the list with page numbers 'ÍNDICE' (36 entries, lines 228-266)",
        "left out the book's title 'NIEBLA' over 'I' (line 136)",
        "left out the title page before 'PRÓLOGO' (9 paragraphs, lines 46-76)",
    ]
    dry = CliRunner().invoke(main, ["corpus", "import", str(src), str(tmp_path / "n"), "--dry-run"])
    assert dry.exit_code == 0, dry.output
    for note in work.notes:
        assert f"Niebla (Nivola): {note}" in dry.stderr
    assert "would import 1 work(s), 0 parts, 3 chapters, 3 pieces" in dry.stdout
