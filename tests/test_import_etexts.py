"""E-texts as found (issue 22): real texts in tests/fixtures/etexts/ (SOURCES.md names each
source and licence), imported with no hand edits; each test asserts the exact chapters.
"""

from __future__ import annotations

import re
from pathlib import Path
from types import SimpleNamespace

import pytest
from click.testing import CliRunner

from glossator.cli import main
from indexer.corpus.layout import read_corpus
from indexer.corpus.source import DirectorySource
from indexer.importers.common import TITLE_FROM_FILE_NAME, ImportSourceError
from indexer.importers.etext import is_dedication, title_and_author
from indexer.importers.headings import parse
from indexer.importers.text import decode, read_text
from indexer.importers.tree import Work

ETEXTS = Path(__file__).parent / "fixtures" / "etexts"
GUTENBERG = Path(__file__).parent / "fixtures" / "gutenberg"
PRINCE = ETEXTS / "machiavelli-the-prince-pg1232-excerpt.txt"
TOZZI = ETEXTS / "tozzi-con-gli-occhi-chiusi-excerpt.txt"
PINOCCHIO = ETEXTS / "collodi-pinocchio-excerpt.txt"
KAFKA = ETEXTS / "kafka-die-verwandlung-pg22367-excerpt.txt"
DANTE = ETEXTS / "dante-divina-commedia-pg1012-excerpt.txt"
QUIJOTE = ETEXTS / "cervantes-don-quijote-pg2000-excerpt.txt"
CASMURRO = ETEXTS / "machado-dom-casmurro-excerpt.txt"
MONTE_CRISTO = ETEXTS / "dumas-monte-cristo-pg17989-excerpt.txt"
UNRAT = ETEXTS / "mann-professor-unrat-excerpt.txt"
UILENSPIEGEL = ETEXTS / "de-coster-uilenspiegel-pg11208-excerpt.txt"
PIRANDELLO = ETEXTS / "pirandello-uno-nessuno-e-centomila-excerpt.txt"
VERGA = ETEXTS / "verga-i-malavoglia-excerpt.txt"
VACANCES = ETEXTS / "verne-deux-ans-de-vacances-excerpt.txt"
GRANT = ETEXTS / "verne-kinder-des-kapitaens-grant-excerpt.txt"
CONTE = ETEXTS / "dumas-il-conte-di-monte-cristo-pg65391-excerpt.txt"
MEILEN = ETEXTS / "verne-20000-meilen-unter-den-meeren-excerpt.txt"
QUICHOTTE = ETEXTS / "cervantes-don-quichotte-pg42524-excerpt.txt"
ROMAN = [
    "I",
    "II",
    "III",
    "IV",
    "V",
    "VI",
    "VII",
    "VIII",
    "IX",
    "X",
    "XI",
    "XII",
    "XIII",
    "XIV",
    "XV",
    "XVI",
    "XVII",
    "XVIII",
    "XIX",
    "XX",
]
ROMAN += ["XX" + r for r in ROMAN[:9]] + ["XXX"] + ["XXX" + r for r in ROMAN[:6]]
# Pinocchio's chapter titles: the argument under each numeral, as the body writes it
PINOCCHIO_TITLES = [
    "Come andò che Maestro Ciliegia, falegname trovò un pezzo di legno che piangeva e rideva come un bambino",
    "Maestro Ciliegia regala il pezzo di legno al suo amico Geppetto, il quale lo prende per fabbricarsi un burattino maraviglioso, che sappia ballare, tirar di scherma e fare i salti mortali",
    "Geppetto, tornato a casa, comincia subito a fabbricarsi il burattino e gli mette il nome di Pinocchio. Prime monellerie del burattino",
    "La storia di Pinocchio col Grillo-parlante, dove si vede come i ragazzi cattivi hanno a noja di sentirsi correggere da chi ne sa più di loro",
    "Pinocchio ha fame e cerca un uovo per farsi una frittata; ma sul più bello, la frittata gli vola via dalla finestra",
    "Pinocchio si addormenta coi piedi sul caldano, e la mattina dopo si sveglia coi piedi tutti bruciati",
    "Geppetto torna a casa, e dà al burattino la colazione che il pover'uomo aveva portata per sè",
    "Geppetto rifà i piedi a Pinocchio, e vende la propria casacca per comprargli l'Abbecedario",
    "Pinocchio vende l'Abbecedario per andare a vedere il teatro dei burattini",
    "I burattini riconoscono il loro fratello Pinocchio e gli fanno una grandissima festa; ma sul più bello esce fuori il burattinaio Mangiafoco, e Pinocchio corre pericolo di fare una brutta fine",
    "Mangiafoco starnutisce e perdona a Pinocchio, il quale poi difende dalla morte il suo amico Arlecchino",
    "Il burattinaio Mangiafoco regala cinque monete d'oro a Pinocchio perchè le porti al suo babbo Geppetto: e Pinocchio, invece, si lascia abbindolare dalla Volpe e dal Gatto e se ne va con loro",
    "L'osteria del «Gambero Rosso.»",
    "Pinocchio, per non aver dato retta ai buoni consigli del Grillo-parlante, s'imbatte negli assassini",
    "Gli assassini inseguono Pinocchio; e dopo averlo raggiunto lo impiccano a un ramo della Quercia grande",
    "La bella Bambina dai capelli turchini fa raccogliere il burattino: lo mette a letto, e chiama tre medici per sapere se sia vivo o morto",
    "Pinocchio mangia lo zucchero, ma non vuol purgarsi; però quando vede i becchini che vengono a portarlo via, allora si purga. Poi dice una bugia e per gastigo gli cresce il naso",
    "Pinocchio ritrova la Volpe e il Gatto, e va con loro a seminare le quattro monete nel Campo dei miracoli",
    "Pinocchio è derubato delle sue monete d'oro, e per gastigo si busca quattro mesi di prigione",
    "Liberato dalla prigione, si avvia per tornare a casa della Fata; ma lungo la strada trova un serpente orribile, e poi rimane preso alla tagliuola",
    "Pinocchio è preso da un contadino, il quale lo costringe a far da can di guardia a un pollaio",
    "Pinocchio scuopre i ladri, e in ricompensa di essere stato fedele vien posto in libertà",
    "Pinocchio piange la morte della bella Bambina dai capelli turchini: poi trova un Colombo, che lo porta sulla riva del mare, e lì si getta nell'acqua per andare in aiuto del suo babbo Geppetto",
    "Pinocchio arriva all'isola delle «Api industriose» e ritrova la Fata",
    "Pinocchio promette alla Fata di esser buono e di studiare, perchè è stufo di fare il burattino e vuol diventare un bravo ragazzo",
    "Pinocchio va co' suoi compagni di scuola in riva al mare, per vedere il terribile Pesce-cane",
    "Gran combattimento fra Pinocchio e i suoi compagni: uno dei quali essendo rimasto ferito, Pinocchio viene arrestato dai carabinieri",
    "Pinocchio corre pericolo di esser fritto in padella, come un pesce",
    "Ritorna a casa della Fata, la quale gli promette che il giorno dopo non sarà più un burattino, ma diventerà un ragazzo. Gran colazione di caffè-e-latte per festeggiare questo grande avvenimento",
    "Pinocchio, invece di diventare un ragazzo, parte di nascosto col suo amico Lucignolo per il «Paese dei balocchi.»",
    "Dopo cinque mesi di cuccagna, Pinocchio con sua gran meraviglia sente spuntarsi un bel pajo d'orecchie asinine, e diventa un ciuchino, con la coda e tutto",
    "A Pinocchio gli vengono gli orecchi di ciuco, e poi diventa un ciuchino vero e comincia a ragliare",
    "Diventato un ciuchino vero è portato a vendere, e lo compra il Direttore di una compagnia di pagliacci, per insegnargli a ballare e saltare i cerchi: ma una sera azzoppisce e allora lo ricompra un altro, per far con la sua pelle un tamburo",
    "Pinocchio gettato in mare, è mangiato dai pesci, e ritorna ad essere un burattino come prima: ma mentre nuota per salvarsi, è ingoiato dal terribile Pesce-cane",
    "Pinocchio ritrova in corpo al Pesce-cane.... chi ritrova? Leggete questo capitolo e lo saprete",
    "Finalmente Pinocchio cessa d'essere un burattino e diventa un ragazzo",
]


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
    # six chapters; the introduction's sections, the dedication and the appended essay are
    # pieces (they were counted as chapters: 11 and 2)
    assert "would import 1 work(s), 0 parts, 6 chapters, 7 pieces" in dry.output
    assert not (tmp_path / "p").exists()


def test_pinocchio_author_line_bare_numerals_arguments_contents_at_the_end(tmp_path: Path) -> None:
    """Gutenberg's Pinocchio as found in a copy without its header: the author's line
    (`C. COLLODI`) above the title, bare numerals `I.` with the chapter's argument under
    them, an `INDICE` of 36 entries with page numbers after the text, a transcriber's
    note, Gutenberg's closing lines. The issue's Italian novel: the work was titled after
    its author line and the contents list was read into the last chapter."""
    work = read_text(PINOCCHIO)
    assert (work.title, work.author, work.lang) == (
        "Le avventure di Pinocchio",
        "Carlo Collodi",
        "it",
    )
    assert not work.parts
    assert [(s.number, s.title) for s in work.sections()] == list(
        zip(ROMAN, PINOCCHIO_TITLES, strict=True)
    )
    sections = work.sections()
    assert sections[0].body.startswith("— C'era una volta....\n\n— Un re!")
    last = sections[-1].body
    assert last.rstrip().endswith("FINE.") and "INDICE" not in last and "Nota del" not in last
    assert "Tutti la notte dormono\nE io non dormo mai...." in sections[30].body  # verse
    text = "".join(s.body for s in sections)
    assert "[Illustrazione" not in text and "Gutenberg" not in text and "Pag. 5" not in text
    assert "left out the contents list 'INDICE' (36 entries, lines 626-771)" in work.notes
    assert "left out a transcriber's note (lines 777-780)" in work.notes

    result = CliRunner().invoke(main, ["corpus", "import", str(PINOCCHIO), str(tmp_path / "p")])
    assert result.exit_code == 0, result.output
    assert "0 parts, 36 chapters, 0 pieces" in result.output
    corpus = read_corpus(DirectorySource(tmp_path / "p"))
    assert [p for p in corpus.problems if p.severity == "error"] == []
    paths = [n.heading_path for n in corpus.in_reading_order() if n.level == 0]
    assert paths[0].startswith("Le avventure di Pinocchio > Capitolo I (Come andò che")
    assert paths[-1] == (
        "Le avventure di Pinocchio > Capitolo XXXVI (Finalmente Pinocchio cessa "
        "d'essere un burattino e diventa un ragazzo)"
    )
    folders = sorted(p.name for p in (tmp_path / "p" / "corpus").glob("*/*/"))
    assert folders[0].startswith("capitolo-01-") and folders[-1].startswith("capitolo-36-")


def test_pinocchio_in_markdown_bare_numerals_and_an_indice(tmp_path: Path) -> None:
    """The issue's hand conversion of the Italian book to Markdown: `## I. Title` for the
    first chapters, `## III Title` (numeral, space, no period) after, an `## Indice`
    section first. Every chapter keeps its number, the contents list is no chapter, and
    the tree lists chapter 1 first (by name `capitolo-01-…` sorted after `36-…`)."""
    chapters = read_text(PINOCCHIO).sections()
    lines = ["---", "author: Carlo Collodi", "lang: it", "---", "# Le avventure di Pinocchio", ""]
    lines += ["## Indice", "", *(f"- {c.number}. {c.title}" for c in chapters), ""]
    for n, c in enumerate(chapters):
        sep = ". " if n < 2 else " "
        lines += [f"## {c.number}{sep}{c.title}", "", c.body]
    lines += ["## I Promessi Sposi, un altro libro", "", "Non è un capitolo numerato.", ""]
    src = tmp_path / "pinocchio.md"
    src.write_text("\n".join(lines), encoding="utf-8")
    runner = CliRunner()
    dry = runner.invoke(main, ["corpus", "import", str(src), str(tmp_path / "o"), "--dry-run"])
    assert dry.exit_code == 0, dry.output
    assert "left out the contents list `## Indice` (line 7)" in dry.output
    tree = [x.split("/")[0].strip() for x in dry.output.splitlines() if x.startswith("  ")]
    assert tree[0].startswith("capitolo-01-come-ando") and tree[2].startswith("capitolo-03-")
    assert tree[35].startswith("capitolo-36-") and tree[36] == "37-i-promessi-sposi-un-altro-libro"
    done = runner.invoke(main, ["corpus", "import", str(src), str(tmp_path / "o")])
    assert done.exit_code == 0, done.output
    corpus = read_corpus(DirectorySource(tmp_path / "o"))
    sources = [n for n in corpus.in_reading_order() if n.level == 0]
    assert [n.meta.get("number") for n in sources] == [*ROMAN, None]
    assert (
        sources[2].heading_path == f"Le avventure di Pinocchio > Capitolo III ({chapters[2].title})"
    )
    assert (
        sources[-1].heading_path == "Le avventure di Pinocchio > I Promessi Sposi, un altro libro"
    )


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("Capitolo primo", ("chapter", "Capitolo", "1", "")),
        ("CAPITOLO SECONDO.", ("chapter", "Capitolo", "2", "")),
        ("Capítulo tercero. La vuelta", ("chapter", "Capítulo", "3", "La vuelta")),
        ("Capítulo vigésimo", ("chapter", "Capítulo", "20", "")),
        ("Capítulo segundo", ("chapter", "Capítulo", "2", "")),
        ("Eerste hoofdstuk", ("chapter", "Hoofdstuk", "1", "")),
        ("Hoofdstuk 3", ("chapter", "Hoofdstuk", "3", "")),
        ("Zweites Kapitel", ("chapter", "Kapitel", "2", "")),
        ("Livre premier", ("part", "Livre", "1", "")),
        ("LIBRO SEGUNDO", ("part", "Libro", "2", "")),
        ("III", ("chapter", None, "III", "")),
        ("I.", ("chapter", None, "I", "")),
        ("Inferno • Canto XXXIV", ("chapter", "Canto", "XXXIV", "")),
        ("Primera parte del ingenioso hidalgo don Quijote de la Mancha",
         ("part", "Parte", "1", "Primera parte del ingenioso hidalgo don Quijote de la Mancha")),
        ("Capítulo Primero. De lo que el cura", ("chapter", "Capítulo", "1", "De lo que el cura")),
        ("Première partie", ("part", "Partie", "1", "")),
        # German ordinals past the tenth, and the spelling before 1901
        ("Dreiundzwanzigstes Capitel: Schluß", ("chapter", "Capitel", "23", "Schluß")),
        ("Elftes Kapitel", ("chapter", "Kapitel", "11", "")),
        ("Zwölfter Teil", ("part", "Teil", "12", "")),
        ("Einunddreißigstes Kapitel", ("chapter", "Kapitel", "31", "")),
        # French ordinals past the tenth; `dix` a number word, not the roman DIX (509)
        ("LIVRE ONZIÈME", ("part", "Livre", "11", "")),
        ("Chapitre dix-septième", ("chapter", "Chapitre", "17", "")),
        ("LIVRE DIX", ("part", "Livre", "10", "")),
    ],
)  # fmt: skip
def test_heading_numerals_in_the_books_languages(line: str, expected: tuple) -> None:
    h = parse(line)
    assert h is not None and (h.kind, h.label, h.number, h.title) == expected


@pytest.mark.parametrize(
    "line",
    [
        "The first part of this deposition did not in the least interest me, but",  # Frankenstein
        "Primera parte de la noche, y la segunda.",
        "Salve • amigo",
    ],
)
def test_lines_that_are_not_headings(line: str) -> None:
    assert parse(line) is None


def test_kafka_german_title_von_author_and_bare_numerals() -> None:
    """Gutenberg's Die Verwandlung (German) as found in a copy without its header: a
    centred title page `DIE VERWANDLUNG / VON / FRANZ KAFKA` in capitals, sections `I.`
    `II.` `III.` without titles, the END marker and licence after the text."""
    work = read_text(KAFKA)
    assert (work.title, work.author, work.lang) == ("Die Verwandlung", "Franz Kafka", "de")
    assert [(s.number, s.title, s.meta) for s in work.sections()] == [
        ("I", "Kapitel I", {}),
        ("II", "Kapitel II", {}),
        ("III", "Kapitel III", {}),
    ]
    sections = work.sections()
    assert sections[0].body.startswith("Als Gregor Samsa eines Morgens aus unruhigen Träumen")
    assert sections[-1].body.rstrip().endswith("ihren jungen Körper dehnte.")
    assert "Gutenberg" not in "".join(s.body for s in sections)
    assert work.notes == [
        "left out the licence block after the text (lines 93-99)",
        "left out the title page before 'I.' (3 paragraphs, lines 1-5)",
    ]


def _liber_liber_layout(tmp_path: Path) -> Path:
    """The layout the issue describes (Liber Liber's and Wikisource's plain texts): one
    paragraph a line with no blank line, Liber Liber's card before the text (its own
    field names), an `Indice` at the front, `I.` then `II` without its period, each with
    its title on the next line, Liber Liber's appeal after the text. No file of that
    layout is in the stored repositories: this one is built from the real text of the
    Pinocchio fixture (its first six chapters), not from made-up prose."""
    chapters = read_text(PINOCCHIO).sections()[:6]
    lines = [
        "Questo e-book è stato realizzato anche grazie al sostegno di:",
        "E-text",
        "QUESTO E-BOOK:",
        "TITOLO: Le avventure di Pinocchio",
        "AUTORE: Collodi, Carlo",
        "DIRITTI D'AUTORE: no",
        "LICENZA: questo testo è distribuito con la licenza specificata al seguente "
        "indirizzo Internet: http://www.liberliber.it/online/opere/libri/licenze/",
        "INDICE DI AFFIDABILITA': 1",
        "  0: affidabilità bassa",
        'Informazioni sul "progetto Manuzio"',
        'Il "progetto Manuzio" è una iniziativa dell\'associazione culturale Liber Liber. '
        "Ulteriori informazioni sono disponibili sul sito Internet: http://www.liberliber.it/",
        "Carlo Collodi",
        "Le avventure di Pinocchio",
        "Indice",
        *(f"{c.number}. {c.title}" for c in chapters),
    ]
    for n, c in enumerate(chapters):
        lines += [f"{c.number}." if n % 2 == 0 else str(c.number), c.title]
        lines += c.body.strip().split("\n\n")
    lines += ["Liber Liber", "Se questo libro ti è piaciuto, aiutaci a realizzarne altri."]
    src = tmp_path / "pinocchio-liberliber.txt"
    src.write_bytes("\r\n".join(lines).encode("cp1252"))  # Liber Liber's older files
    return src


def test_the_issues_layout_one_paragraph_a_line_card_indice_numerals(tmp_path: Path) -> None:
    src = _liber_liber_layout(tmp_path)
    work = read_text(src)
    chapters = read_text(PINOCCHIO).sections()[:6]
    assert (work.title, work.author, work.lang) == (
        "Le avventure di Pinocchio",
        "Carlo Collodi",
        "it",
    )
    assert [(s.number, s.title) for s in work.sections()] == [(c.number, c.title) for c in chapters]
    assert [s.body for s in work.sections()] == [c.body for c in chapters]  # paragraphs kept
    assert work.notes == [
        "decoded as cp1252 (not UTF-8); pass --encoding to read it otherwise",
        "left out the licence card before the text (lines 1-11)",
        "left out the licence block after the text (lines 46-47)",
        "left out the contents list 'Indice' (6 entries, lines 14-20)",
        "left out the title page before 'I.' (2 paragraphs, lines 12-13)",
    ]


def test_hard_wrapped_lines_without_blank_lines(tmp_path: Path) -> None:
    """Kafka's text with its blank lines taken out (as some conversions leave it): the
    paragraphs end on short lines; the title page, headings and licence still found."""
    text = KAFKA.read_text(encoding="utf-8")
    src = tmp_path / "verwandlung.txt"
    src.write_text("\n".join(x for x in text.split("\n") if x.strip()), encoding="utf-8")
    work = read_text(src)
    assert (work.title, work.author) == ("Die Verwandlung", "Franz Kafka")
    assert [s.number for s in work.sections()] == ["I", "II", "III"]
    first = work.sections()[0].body.split("\n\n")
    assert len(first) == 2 and first[1].startswith("»Was ist mit mir geschehen?«")
    assert work.sections()[-1].body.rstrip().endswith("ihren jungen Körper dehnte.")


@pytest.mark.parametrize("book", ["pg84.txt", "pg1342.txt"])
def test_gutenberg_books_without_their_start_and_end_markers(tmp_path: Path, book: str) -> None:
    """Copies of copies often lose Gutenberg's `*** START OF` / `*** END OF` lines: the
    header is then a licence card, the licence after the text a block to leave out, and
    the book imports exactly as with its markers."""
    original = GUTENBERG / book
    lines, _ = decode(book, original.read_bytes())  # as distributed: Windows-1252
    kept = [x for x in lines.splitlines() if not re.match(r"^\s*\*{3}\s*(START|END) OF", x)]
    src = tmp_path / book
    src.write_text("\n".join(kept), encoding="utf-8")
    with_markers, without = read_text(original), read_text(src)
    assert (without.title, without.author, without.lang) == (
        with_markers.title,
        with_markers.author,
        with_markers.lang,
    )
    assert [(s.number, s.title, s.body) for s in without.sections()] == [
        (s.number, s.title, s.body) for s in with_markers.sections()
    ]
    assert any(n.startswith("left out the licence card before the text") for n in without.notes)
    assert any(n.startswith("left out the licence block after the text") for n in without.notes)


def test_boilerplate_inside_the_text_does_not_take_the_chapters_after_it(
    tmp_path: Path,
) -> None:
    """A publisher's appeal pasted between two chapters (past the middle of the book) is
    left out; the chapter after it is not: a block after the text stops at a heading."""
    text = KAFKA.read_text(encoding="utf-8").replace(
        "\nIII.\n", "\nLiber Liber\n\nSe questo libro ti è piaciuto, aiutaci.\n\n\n\n\nIII.\n"
    )
    src = tmp_path / "verwandlung.txt"
    src.write_text(text, encoding="utf-8")
    work = read_text(src)
    assert [s.number for s in work.sections()] == ["I", "II", "III"]
    assert "Liber Liber" not in work.sections()[1].body
    assert work.sections()[2].body.rstrip().endswith("ihren jungen Körper dehnte.")
    assert work.notes[0] == "left out the licence block after the text (lines 54-56)"


def test_a_long_heading_in_capitals_on_one_line() -> None:
    """The Prince's contents gives `CHAPTER IV. WHY THE KINGDOM OF DARIUS, … AT HIS
    DEATH` on one line (118 characters, over the 100 of a heading): a labelled heading
    with its title in capitals may run to 200; a long line in lower case stays text."""
    line = (
        "CHAPTER IV. WHY THE KINGDOM OF DARIUS, CONQUERED BY ALEXANDER, DID NOT REBEL "
        "AGAINST THE SUCCESSORS OF ALEXANDER AT HIS DEATH."
    )
    h = parse(line)
    assert h is not None and (h.label, h.number) == ("Chapter", "IV")
    assert h.title == (
        "Why the Kingdom of Darius, Conquered by Alexander, Did Not Rebel Against the "
        "Successors of Alexander at His Death"
    )
    assert parse(line.replace("WHY THE KINGDOM", "Why the kingdom").lower()) is None


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-le", "utf-32"])
def test_a_utf16_or_utf32_etext_imports(tmp_path: Path, encoding: str) -> None:
    """Windows' Notepad saves "Unicode" as UTF-16 with a byte-order mark: half its bytes
    are NULs, and it was refused as a binary file, even with --encoding utf-16."""
    text = TOZZI.read_text(encoding="utf-8")
    src = tmp_path / "tozzi.txt"
    src.write_bytes(text.encode(encoding))
    if encoding == "utf-16-le":  # no byte-order mark: only --encoding can tell
        with pytest.raises(ImportSourceError, match="pass --encoding utf-16-le"):
            read_text(src)
    else:
        work = read_text(src)
        assert work.title == "Con gli occhi chiusi"
        assert "benché avesse presto mutato mestiere" in work.sections()[0].body
        assert any(n.startswith(f"decoded as {encoding} (not UTF-8)") for n in work.notes)
    forced = read_text(src, encoding=encoding)
    assert forced.sections()[0].body == read_text(TOZZI).sections()[0].body
    assert not any(n.startswith("decoded as") for n in forced.notes)
    with pytest.raises(ImportSourceError, match="binary file"):  # NULs in the text itself
        (tmp_path / "nul.txt").write_bytes("Testo\x00binario\n".encode(encoding))
        read_text(tmp_path / "nul.txt", encoding=encoding)


def _book(path: Path, title: str, author: str, lang: str) -> Work:
    """The book at `path`, read with its title, author and language asserted."""
    work = read_text(path)
    assert (work.title, work.author, work.lang) == (title, author, lang)
    return work


def test_dante_running_heads_parts_without_a_label_verse_and_a_table_of_characters(
    tmp_path: Path,
) -> None:
    """Gutenberg's Divina Commedia (Italian, #1012): `INFERNO` alone, then `Inferno • Canto I`
    (the cantica as a running head before each canto), all of it verse indented by two
    spaces, and a transcriber's `TAVOLA DEI CARATTERI SPECIALI` after the last line. The
    book was one chapter (`found no chapter heading`), its tercets joined into prose."""
    work = _book(DANTE, "La Divina Commedia di Dante", "Dante Alighieri", "it")
    assert not work.pieces
    assert [(p.title, [(s.number, s.title, s.meta) for s in p.sections]) for p in work.parts] == [
        (
            cantica,
            [(n, f"Canto {n}", {"label": "Canto"}) for n in numbers],
        )
        for cantica, numbers in (
            ("Inferno", ["I", "II", "III"]),
            ("Purgatorio", ["I", "II", "III"]),
            ("Paradiso", ["I", "XXXII", "XXXIII"]),
        )
    ]
    first = work.parts[0].sections[0].body
    assert first.startswith(
        "Nel mezzo del cammin di nostra vita\nmi ritrovai per una selva oscura,\n"
        "ché la diritta via era smarrita.\n\nAhi quanto"
    )
    last = work.parts[-1].sections[-1].body
    assert last.rstrip().endswith(
        "sì come rota ch’igualmente è mossa,\n\nl’amor che move il sole e l’altre stelle."
    )
    text = "".join(s.body for s in work.sections())
    assert "CARATTERI" not in text and "= a grave" not in text and "- - -" not in text
    assert "Produced by" not in text and "Inferno •" not in text
    assert work.notes == [
        "left out Project Gutenberg's header (lines 1-24)",
        "left out Project Gutenberg's licence after the text (lines 282-292)",
        "left out a transcriber's note (lines 233-270)",
        "left out the title page before 'INFERNO' (2 paragraphs, lines 29-41)",
    ]
    dry = CliRunner().invoke(
        main, ["corpus", "import", str(DANTE), str(tmp_path / "d"), "--dry-run"]
    )
    assert dry.exit_code == 0, dry.output
    assert "would import 1 work(s), 3 parts, 9 chapters, 0 pieces" in dry.output


QUIJOTE_PART_1 = [
    ("I", "Que trata de la condición y ejercicio del famoso hidalgo don Quijote de la Mancha"),
    ("II", "Que trata de la primera salida que de su tierra hizo el ingenioso don Quijote"),
]


def test_don_quijote_contents_without_a_title_two_parts_and_their_preliminaries(
    tmp_path: Path,
) -> None:
    """Gutenberg's Don Quijote (Spanish, #2000): a contents list with no title (the
    preliminaries' names, then each chapter's title without its number, Part II's under its
    own heading); `Primera parte del ingenioso hidalgo…` and `Segunda parte…` as the parts,
    each with its Tasa, Aprobaciones, Prólogo… before `Capítulo primero. Que trata…`. The
    contents list was read as the text of a `Prólogo` piece and Part I's chapters ran into
    Part II's preliminaries."""
    work = _book(QUIJOTE, "Don Quijote", "Miguel de Cervantes Saavedra", "es")
    assert [(s.number, s.title) for _, s in work.pieces] == [
        (None, "Tasa"),
        (None, "Testimonio de las erratas"),
        (None, "Al libro de don Quijote de la Mancha"),
    ]
    assert [(p.title, [(s.number, s.title) for s in p.sections]) for p in work.parts] == [
        ("Primera parte del ingenioso hidalgo don Quijote de la Mancha", QUIJOTE_PART_1),
        (
            "Segunda parte del ingenioso caballero don Quijote de la Mancha",
            [
                (None, "Tasa"),
                (None, "Fee de erratas"),
                (None, "Aprobaciones"),
                (None, "Prólogo al lector"),
                (None, "Dedicatoria, al conde de Lemos"),
                (
                    "I",
                    "De lo que el cura y el barbero pasaron con don Quijote cerca de su enfermedad",
                ),
            ],
        ),
    ]
    sections = work.sections()
    assert sections[2].body.startswith("Urganda la desconocida\nSi de llegarte a los bue-,\n")
    assert sections[3].body.startswith("En un lugar de la Mancha, de cuyo nombre no quiero")
    assert "-Nunca fuera caballero\nde damas tan bien servido\n" in sections[4].body  # verse
    assert sections[4].body.rstrip().endswith("el deseo que tengo de serviros.")
    assert sections[-1].body.rstrip().endswith("que tan tiernos estaban.")
    text = "".join(s.body for s in sections)
    assert "Que trata de la notable pendencia" not in text  # a contents entry, not text
    assert work.notes == [
        "left out Project Gutenberg's header (lines 1-22)",
        "left out Project Gutenberg's licence after the text (lines 495-501)",
        "left out a contents list without a title (84 entries, lines 41-261): "
        "its entries are the headings of the text",
        "left out the title page before 'TASA' (3 paragraphs, lines 27-37)",
    ]
    result = CliRunner().invoke(main, ["corpus", "import", str(QUIJOTE), str(tmp_path / "q")])
    assert result.exit_code == 0, result.output
    # Part II's five preliminaries are pieces, not chapters (was: 8 chapters, 3 pieces)
    assert "2 parts, 3 chapters, 8 pieces" in result.output
    corpus = read_corpus(DirectorySource(tmp_path / "q"))
    assert [p for p in corpus.problems if p.severity == "error"] == []
    paths = [n.heading_path for n in corpus.in_reading_order() if n.level == 0]
    assert len(paths) == 11 and paths[0] == "Don Quijote > Tasa"
    assert paths[-1].startswith(
        "Don Quijote > Segunda parte del ingenioso caballero don Quijote de la Mancha > "
    )


CASMURRO_CHAPTERS = [
    ("I", "Do titulo"),
    ("II", "Do livro"),
    ("III", "A denuncia"),
    ("IV", "Um dever amarissimo!"),
    ("V", "O aggregado"),
    ("VI", "Tio Cosme"),
]


@pytest.mark.parametrize("encoding", ["utf-8", "cp1252", "latin-1"])
def test_dom_casmurro_a_card_without_markers_numerals_with_and_without_period_and_titles(
    tmp_path: Path, encoding: str
) -> None:
    """A copy of Gutenberg's Dom Casmurro (Portuguese) that kept `Title:` and `Author:` but
    lost the START marker; a title page in capitals (`DOM CASMURRO / POR / MACHADO DE ASSIS
    / …`); `I`, `II.`, `III` (with and without a period), each with a short title closed by
    a full stop (`Do titulo.`). The work was titled `Title: Dom Casmurro` and the titles
    were read as each chapter's first paragraph. Also as a Latin-1 / Windows-1252 file."""
    src = tmp_path / "dom_casmurro.txt"
    src.write_bytes(CASMURRO.read_text(encoding="utf-8").encode(encoding))
    work = _book(src, "Dom Casmurro", "Machado de Assis", "pt")
    assert [(s.number, s.title) for s in work.sections()] == CASMURRO_CHAPTERS
    sections = work.sections()
    assert sections[0].body.startswith("Uma noite destas, vindo da cidade para o Engenho Novo")
    assert sections[3].body.startswith("José Dias amava os superlativos.")
    assert "GARNIER" not in "".join(s.body for s in sections)
    notes = [n for n in work.notes if not n.startswith("decoded as")]
    assert notes == ["left out the title page before 'I' (11 paragraphs, lines 1-21)"]
    if encoding != "utf-8":
        assert "decoded as cp1252 (not UTF-8); pass --encoding to read it otherwise" in work.notes


def test_monte_cristo_contents_with_an_author_line_and_a_tome_on_the_title_page() -> None:
    """Gutenberg's Le comte de Monte-Cristo, Tome I (French, #17989): two authors in the
    header (`Author: Alexandre Dumas` / `        Auguste Maquet`), `Tome I (1845-1846)` on
    the title page above a `Table des matières` that opens with the author's name, and
    bare numerals `I` with the title on the next paragraph. `Tome I` made a part titled
    `(1845-1846)` and the second author was lost."""
    work = _book(
        MONTE_CRISTO, "Le comte de Monte-Cristo, Tome I", "Alexandre Dumas, Auguste Maquet", "fr"
    )
    assert not work.parts
    assert [(s.number, s.title) for s in work.sections()] == [
        ("I", "Marseille.--L'arrivée"),
        ("II", "Le père et le fils"),
        ("III", "Les Catalans"),
    ]
    sections = work.sections()
    assert sections[0].body.startswith("Le 24 février 1815, la vigie de Notre-Dame")
    assert sections[-1].body.rstrip().endswith("inouï.\n\nFIN DU TOME PREMIER")
    assert "Table des matières" not in "".join(s.body for s in sections)
    assert work.notes == [
        "left out Project Gutenberg's header (lines 1-24)",
        "left out Project Gutenberg's licence after the text (lines 167-173)",
        "left out the contents list 'Table des matières' (32 entries, lines 38-72)",
        "left out the title page before 'I' (3 paragraphs, lines 29-33)",
    ]


def test_professor_unrat_a_centred_title_page_author_title_genre(tmp_path: Path) -> None:
    """Heinrich Mann's Professor Unrat (German, Kurt Wolff's edition) as a scanning
    project's plain text: a title page centred by spaces (`Heinrich Mann` / `Professor
    Unrat / oder / Das Ende eines Tyrannen` / `Roman` / the publisher), a bare `I`, a
    quotation set in indented lines, `*  *  *` between scenes. The work was titled after
    its author line and the title page, read as running text for its `oder`, was the
    chapter's first paragraphs. The excerpt keeps chapter I only: one chapter, a warning."""
    work = _book(UNRAT, "Professor Unrat oder Das Ende eines Tyrannen", "Heinrich Mann", "de")
    assert [(s.number, s.title) for s in work.sections()] == [(None, work.title)]
    body = work.sections()[0].body
    assert body.startswith("Da er Raat hieß, nannte die ganze Schule ihn Unrat.")
    assert "»Johanna: Es waren drei Gebete, die du tatst;\nGib wohl acht, Dauphin," in body
    assert "Kurt Wolff" not in body and "Roman" not in body.split("\n\n")[0]
    assert work.notes[0] == "left out the title page before the text (8 paragraphs, lines 1-26)"
    assert work.notes[1].startswith("warning: found no chapter heading")
    result = CliRunner().invoke(main, ["corpus", "import", str(UNRAT), str(tmp_path / "u")])
    assert result.exit_code == 0, result.output
    summary = (tmp_path / "u" / "corpus").glob("*/summary.md")
    assert "author: Heinrich Mann" in next(summary).read_text(encoding="utf-8")


def test_uilenspiegel_front_pieces_in_capitals_a_note_call_and_a_book_in_words() -> None:
    """De Coster's Uilenspiegel in Dutch (Gutenberg #11208's text, its header lost): a
    centred title page `… / door / Charles de Coster / in het Vlaamsch vertaald door / …`;
    a life of the author, his last moments and the owl's preface, each under a line in
    capitals (`VOORREDE VAN DEN UIL [1]`, with a note's call); `EERSTE BOEK.`; bare `I.`.
    All that went into one `Front matter` piece, the title page with it."""
    work = _book(
        UILENSPIEGEL,
        "De legende en de heldhaftige, vroolijke en roemrijke daden van Uilenspiegel en "
        "Lamme Goedzak in Vlaanderenland en elders",
        "Charles de Coster",
        "nl",
    )
    assert [(s.number, s.title) for _, s in work.pieces] == [
        (None, "Korte Levensbeschrijving van Charles de Coster"),
        (None, "De Laatste Oogenblikken van Charles de Coster"),
        (None, "Voorrede van den Uil"),
    ]
    assert [(p.title, [(s.number, s.title) for s in p.sections]) for p in work.parts] == [
        # a label and its number in words, in Dutch sentence case (was `Eerste Boek`)
        ("Eerste boek", [(n, f"Hoofdstuk {n}") for n in ("I", "II", "III", "IV")])
    ]
    pieces = [s for _, s in work.pieces]
    assert pieces[0].body.startswith("Bewerkt naar Ch. Potvin, Francis Nautet enz.")
    assert pieces[2].body.rstrip().endswith("zal van overblijven. [3]\n\nBubulus Bubb.")
    assert work.parts[0].sections[0].body.startswith("In meimaand, als de hagedoorn in bloei")
    assert work.notes == [
        "left out the title page before 'KORTE LEVENSBESCHRIJVING VAN CHARLES DE COSTER' "
        "(6 paragraphs, lines 1-18)"
    ]


@pytest.mark.parametrize(
    ("page", "expected"),
    [
        # the shape of Professor Unrat's title page (the fixture above)
        (["Heinrich Mann", "Professor Unrat oder Das Ende eines Tyrannen", "Roman"],
         ("Professor Unrat oder Das Ende eines Tyrannen", "Heinrich Mann")),
        # a genre line between title and `by`/`von`: the author still follows the word
        (["The Awakening", "A Novel", "by Kate Chopin"], ("The Awakening", "Kate Chopin")),
        (["Effi Briest", "Roman", "von Theodor Fontane"], ("Effi Briest", "Theodor Fontane")),
    ],
)  # fmt: skip
def test_a_genre_line_under_the_title(page: list[str], expected: tuple[str, str]) -> None:
    """Title-page shapes (lines, not files): the genre names the line above it the title."""
    assert title_and_author(page) == expected


def test_a_part_of_parts_goes_before_their_titles(tmp_path: Path) -> None:
    """Constructed lines, not a file found (no copy of a book of tomes and books is among
    the stored texts): the headings of Les Misérables (Gutenberg #17489, `Tome I`,
    `Livre premier--Un juste`, `Chapitre I` / `Monsieur Myriel`). The corpus has one level
    of parts; the tomes were dropped with no word. Now each book's part is titled after
    its tome too, said once per tome."""
    text = "En 1815, M. Charles-François-Bienvenu Myriel était évêque de Digne. " * 6
    lines = ["TOME I", "", "FANTINE", "", "", "Livre premier--Un juste", "", ""]
    lines += ["Chapitre I", "", "Monsieur Myriel", "", text, "", "", "Chapitre II", ""]
    lines += ["Monsieur Myriel devient monseigneur Bienvenu", "", text, "", ""]
    lines += ["Livre deuxième--La chute", "", "", "Chapitre I", "", "Le soir d'un jour", ""]
    lines += [text, "", "", "TOME II", "", "COSETTE", "", "", "Livre premier--Waterloo", ""]
    lines += ["", "Chapitre I", "", "Ce qu'on rencontre en venant de Nivelles", "", text]
    src = tmp_path / "miserables.txt"
    src.write_text("\n".join(lines), encoding="utf-8")
    work = read_text(src, lang="fr")
    assert [(p.title, [s.title for s in p.sections]) for p in work.parts] == [
        ("Fantine — Un juste", ["Monsieur Myriel", "Monsieur Myriel devient monseigneur Bienvenu"]),
        ("Fantine — La chute", ["Le soir d'un jour"]),
        ("Cosette — Waterloo", ["Ce qu'on rencontre en venant de Nivelles"]),
    ]
    assert "'TOME I' holds parts: its title goes before theirs" in work.notes


PROSE = "Il était une fois un marin qui ne voulait pas partir, et qui partit pour la mer. " * 4


def _parts(tmp_path: Path, lines: list[str]) -> Work:
    src = tmp_path / "livres.txt"
    src.write_text("\n".join(lines), encoding="utf-8")
    return read_text(src, lang="fr")


def test_books_holding_parts_holding_chapters(tmp_path: Path) -> None:
    """Constructed lines (no stored e-text of this shape was found): `LIVRE PREMIER`
    holding `PREMIÈRE PARTIE` and `DEUXIÈME PARTIE`, then `LIVRE DEUXIÈME` holding its
    own. The corpus has one level of parts (DESIGN §3: corpus/<work>/<part>/<chapter>, a
    deeper folder is refused at push), so each part is titled after its book too; a
    label and its number read in French sentence case (was `Livre Premier — Première
    Partie`)."""
    chapter = ["CHAPITRE I", "", PROSE, ""]
    lines = ["LIVRE PREMIER", "", "", "PREMIÈRE PARTIE", "", "", *chapter]
    lines += ["CHAPITRE II", "", PROSE, "", "", "DEUXIÈME PARTIE", "", "", *chapter, ""]
    lines += ["LIVRE DEUXIÈME", "", "", "PREMIÈRE PARTIE", "", "", *chapter]
    work = _parts(tmp_path, lines)
    assert [(p.title, [s.number for s in p.sections]) for p in work.parts] == [
        ("Livre premier — Première partie", ["I", "II"]),
        ("Livre premier — Deuxième partie", ["I"]),
        ("Livre deuxième — Première partie", ["I"]),
    ]
    assert [n for n in work.notes if "holds parts" in n] == [
        "'LIVRE PREMIER' holds parts: its title goes before theirs",
        "'LIVRE DEUXIÈME' holds parts: its title goes before theirs",
    ]


def test_a_book_with_its_own_text_and_one_without_parts(tmp_path: Path) -> None:
    """The book's own text before its first part is kept, as a part of its own before
    the parts it holds (was: those parts lost the book's title); a next book holding
    chapters directly is not put under the first (was `Livre Premier — Livre Deuxième`)."""
    chapter = ["CHAPITRE I", "", PROSE, ""]
    lines = ["LIVRE PREMIER", "", "", "Ce livre raconte un voyage. " * 8, ""]
    lines += ["PREMIÈRE PARTIE", "", "", *chapter, "DEUXIÈME PARTIE", "", "", *chapter, ""]
    lines += ["LIVRE DEUXIÈME", "", "", *chapter, "CHAPITRE II", "", PROSE]
    work = _parts(tmp_path, lines)
    assert [(p.title, [(s.number, s.title) for s in p.sections]) for p in work.parts] == [
        ("Livre premier", [(None, "Livre premier")]),
        ("Livre premier — Première partie", [("I", "Chapitre I")]),
        ("Livre premier — Deuxième partie", [("I", "Chapitre I")]),
        ("Livre deuxième", [("I", "Chapitre I"), ("II", "Chapitre II")]),
    ]
    assert work.parts[0].sections[0].body.startswith("Ce livre raconte un voyage.")


BOVARY = ETEXTS / "flaubert-madame-bovary-pg14155-excerpt.txt"


def test_madame_bovary_contents_of_bare_numerals_a_dedication_and_parts(tmp_path: Path) -> None:
    """Gutenberg's Madame Bovary (French, #14155, produced by Ebooks libres et gratuits):
    START/END markers; a `Table des matières` in one block (`PREMIÈRE PARTIE` / `I` /
    `II`…, the numbering again from I in each part); Flaubert's letter to Senard under
    `À Marie-Antoine-Jules Senard`; `PREMIÈRE PARTIE` over bare numerals. Before: the
    contents list ate the dedication, its addressee and `Cher et illustre ami,`, the
    letter was left out with the title page, the part was titled `I` and read as chapter 1
    and `II` was a piece (two bare numerals were too few to count), and `au-` / `dessus`
    read `au- dessus`."""
    work = _book(BOVARY, "Madame Bovary", "Gustave Flaubert", "fr")
    assert [(s.number, s.title) for _, s in work.pieces] == [(None, "À Marie-Antoine-Jules Senard")]
    assert [(p.title, [(s.number, s.title) for s in p.sections]) for p in work.parts] == [
        ("Première partie", [("I", "Chapitre I"), ("II", "Chapitre II")])
    ]
    letter = work.pieces[0][1].body
    assert letter.startswith(
        "MEMBRE DU BARREAU DE PARIS EX-PRESIDENT DE L'ASSEMBLÉE NATIONALE\n"
        "ET ANCIEN MINISTRE DE L'INTÉRIEUR\n\nCher et illustre ami,\n\n"
        "Permettez-moi d'inscrire votre nom en tête de ce livre et au-dessus même"
    )
    # the second dedication has no text of its own: it stays with the letter, not lost
    assert letter.endswith("GUSTAVE FLAUBERT\n\nParis, 12 avril 1857\n\nÀ Louis Bouilhet\n")
    first, second = work.parts[0].sections
    assert first.body.startswith("Nous étions à l'Étude, quand le Proviseur entra, suivi d'un")
    assert first.body.count("\n\n") == 3  # four paragraphs, each joined
    assert first.body.rstrip().endswith("quelque sirop pour sa santé et un peu plus d'amour.")
    assert second.body.rstrip().endswith(
        "il prit ses sabots à ses mains et se mit à courir devant lui."
    )
    text = "".join(s.body for s in work.sections())
    assert "Table des matières" not in text and "TROISIÈME PARTIE" not in text
    assert "Updated editions" not in text and "Ebooks libres" not in text
    assert work.notes == [
        "left out Project Gutenberg's header (lines 1-23)",
        "left out Project Gutenberg's licence after the text (lines 162-168)",
        "left out the contents list 'Table des matières' (38 entries, lines 40-79)",
        "left out the title page before 'À Marie-Antoine-Jules Senard' (3 paragraphs, lines 27-37)",
    ]
    dry = CliRunner().invoke(
        main, ["corpus", "import", str(BOVARY), str(tmp_path / "b"), "--dry-run"]
    )
    assert dry.exit_code == 0, dry.output
    assert "would import 1 work(s), 1 parts, 2 chapters, 1 pieces" in dry.output


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("À Marie-Antoine-Jules Senard", True),
        ("To Sir Walter Scott", True),
        ("An Goethe", True),
        ("A NOVEL", False),  # a title page's genre in capitals
        ("A Tale of Two Cities", False),  # a title: a word in lower case
        ("À l'heure où le soleil se couche", False),
    ],
)
def test_a_dedication_line(line: str, expected: bool) -> None:
    """What ends a contents list and opens a piece before the first heading."""
    assert is_dedication(SimpleNamespace(lines=[line], line=1)) is expected


def test_pirandello_bare_numerals_with_titles_in_mixed_case_under_a_book(tmp_path: Path) -> None:
    """Uno, nessuno e centomila as found (one paragraph a line): `Libro primo`, then `I. Mia
    moglie e il mio naso.`, `II. E il vostro naso?`: a numeral, a period and a title in mixed
    case. Only titles in capitals were read after a bare numeral: the book was one chapter,
    `Libro 1`, its four chapters lost in it."""
    work = _book(PIRANDELLO, "Uno, nessuno e centomila", "Luigi Pirandello", "it")
    assert [p.title for p in work.parts] == ["Libro primo"]
    assert [(s.number, s.title) for s in work.sections()] == [
        ("I", "Mia moglie e il mio naso"),
        ("II", "E il vostro naso?"),
        ("III", "Bel modo di essere soli"),
        ("IV", "Com’io volevo esser solo"),
    ]
    sections = work.sections()
    assert sections[0].body.startswith("– Che fai? – mia moglie mi domandò")
    # the song's lines, one a paragraph in the file, are kept one a paragraph
    assert "E se mi dici di no,\n\ncaro il mio bene, doman non verrò;\n\n" in sections[2].body
    assert sections[3].body.rstrip().endswith("Forse perché non riflettete bene.")


@pytest.mark.parametrize(
    ("line", "mixed", "expected"),
    [
        ("I. Mia moglie e il mio naso.", True, ("I", "Mia moglie e il mio naso")),
        ("II. E il vostro naso?", True, ("II", "E il vostro naso?")),
        ("I. Mia moglie e il mio naso.", False, None),  # inside running text: not read
        ("M. Dupont entra dans la pièce.", False, None),  # `Monsieur`, opening a line
        ("XII. Il padre, che non parlava,", True, None),  # a sentence going on
        ("II. — IL PADRE ED IL FIGLIO.", False, ("II", "Il Padre Ed il Figlio")),
    ],
)  # fmt: skip
def test_a_bare_numeral_with_a_title_in_mixed_case(
    line: str, mixed: bool, expected: tuple[str, str] | None
) -> None:
    h = parse(line, mixed=mixed)
    assert (None if h is None else (h.number, h.title)) == expected


def test_malavoglia_a_title_in_capitals_over_its_author_without_a_word_between() -> None:
    """I Malavoglia as found: `I MALAVOGLIA` / `Giovanni Verga` (no `di` between), then
    `Capitolo I`. The author was lost: only a word (`di`, `by`, `von`) or initials named
    one."""
    work = _book(VERGA, "I Malavoglia", "Giovanni Verga", "it")
    assert [(s.number, s.title) for s in work.sections()] == [
        ("I", "Capitolo I"),
        ("II", "Capitolo II"),
        ("III", "Capitolo III"),
    ]
    assert work.sections()[-1].body.rstrip().endswith("è stato Rocco Spatu.")


@pytest.mark.parametrize(
    ("page", "expected"),
    [
        # the shapes of the two fixtures around this test
        (["I MALAVOGLIA", "Giovanni Verga"], ("I MALAVOGLIA", "Giovanni Verga")),
        (["Jules Verne", "Deux Ans de vacances"], ("Deux Ans de vacances", "Jules Verne")),
        # two lines that read as names: which is the author is not told, none is taken
        (["Oliver Twist", "Charles Dickens"], ("Oliver Twist", None)),
        (["THE AWAKENING", "A Novel"], ("THE AWAKENING", None)),  # a genre is no name
        # a longer page: a publisher's name reads as a person's, none is taken
        (["I MALAVOGLIA", "Giovanni Verga", "Fratelli Treves Editori"], ("I MALAVOGLIA", None)),
    ],
)  # fmt: skip
def test_a_name_alone_on_a_title_page(page: list[str], expected: tuple[str, str | None]) -> None:
    assert title_and_author(page) == expected


def test_deux_ans_de_vacances_author_over_title_and_the_numeral_again(tmp_path: Path) -> None:
    """Verne's Deux ans de vacances as found (Wikisource's layout: `Jules Verne` / `Deux
    Ans de vacances`, `CHAPITRE PREMIER.` / `DEUX ANS DE VACANCES`, `CHAPITRE II.` / `II`,
    each chapter's argument under it, captions `(Page 9.)`). The work was titled `Jules
    Verne` with no author, chapter I took the book's title and chapter II opened with `II`."""
    work = _book(VACANCES, "Deux Ans de vacances", "Jules Verne", "fr")
    assert [(s.number, s.title) for s in work.sections()] == [
        ("I", "Chapitre I"),
        ("II", "Chapitre II"),
        ("XXX", "Chapitre XXX"),
    ]
    sections = work.sections()
    assert sections[0].body.startswith("La tempête. – Un schooner désemparé.")
    assert sections[1].body.startswith("Au milieu du ressac. – Briant et Doniphan.")
    assert "DEUX ANS DE VACANCES" not in "".join(s.body for s in sections)
    assert "\n\nCette eau ne provenait que des paquets de mer (Page 9.)\n\n" in sections[0].body
    assert sections[-1].body.rstrip().endswith("les grands presque des hommes.")


def test_kinder_des_kapitaens_grant_no_blank_lines_and_a_part_without_a_known_label() -> None:
    """Verne's Die Kinder des Kapitäns Grant as found (one paragraph a line, no blank line,
    no title page): `Einleitung.`, `Erstes Welttheater: Süd-Amerika.` over `Erstes
    Kapitel: Der Hammerhai.`. The part's line was a paragraph of the introduction."""
    work = read_text(GRANT)
    assert (work.title, work.author, work.lang) == (GRANT.stem, None, "de")
    assert TITLE_FROM_FILE_NAME in work.notes
    assert [p.title for p in work.parts] == ["Süd-Amerika"]
    assert [(s.number, s.title) for s in work.sections()] == [
        (None, "Einleitung"),
        ("1", "Der Hammerhai"),
        ("2", "Die drei Schriftstücke"),
    ]
    intro, first, second = work.sections()
    assert "Welttheater" not in intro.body and len(intro.body.split("\n\n")) == 3
    assert len(first.body.rstrip().split("\n\n")) == 6
    assert "Es ist der Hammerhai, [Fußnote] und wenn" in first.body
    assert second.body.rstrip().endswith("eine schottische Kolonie zu gründen.")


def test_il_conte_di_monte_cristo_dashes_an_indice_at_the_end_and_endnotes() -> None:
    """Gutenberg's Il Conte di Monte-Cristo (Italian, #65391): `I. — MARSIGLIA — L’ARRIVO.`
    (a dash after the numeral), an `INDICE` after `FINE.` (`Capitolo … Pag.`, entries
    over two lines, numerals `IL.` and `IC.`), then `NOTE:` over the translator's notes and
    a `Nota del Trascrittore`. The titles began with the dash (`— Il Padre Ed il Figlio`),
    and `NOTE:` was taken for an entry of the `INDICE`, its notes left in chapter II."""
    work = _book(CONTE, "Il Conte di Monte-Cristo", "Alexandre Dumas, Auguste Maquet", "it")
    assert [(s.number, s.title) for s in work.sections()] == [
        ("I", "Marsiglia — L’arrivo"),
        ("II", "Il padre ed il figlio"),
        (None, "Note"),
    ]
    first, second, notes = work.sections()
    assert first.body.startswith("Il 28 Febbraio 1815 la vedetta")
    # the count's letter: its paragraphs joined, its signature kept line by line
    assert "Vostro amico\nEDMONDO DANTÈS\n_Conte di Monte-Cristo_.»" in second.body
    assert second.body.rstrip().endswith("_Aspettare e sperare_?\n\nFINE.")
    assert notes.body.startswith("[1] _Monte-Cristo, piccola isola del mar Tirreno")
    assert notes.body.rstrip().endswith("proprio del teatro francese. (T.)_")
    assert "INDICE" not in "".join(s.body for s in work.sections())
    assert work.notes == [
        "left out Project Gutenberg's header (lines 1-24)",
        "left out Project Gutenberg's licence after the text (lines 363-369)",
        "left out a transcriber's note (lines 350-359)",
        "left out the contents list 'INDICE' (120 entries, lines 193-315)",
        "left out the title page before 'I. — MARSIGLIA — L’ARRIVO.' (10 paragraphs, lines 26-56)",
    ]


def test_20000_meilen_the_older_spelling_and_ordinals_past_the_tenth() -> None:
    """Verne's 20000 Meilen unter den Meeren in German as found (one paragraph a line, no
    title page): `Band 1`, `Erstes Capitel: Eine schweifende Klippe` (the spelling before
    1901), `Band 2` numbered again from its `Erstes Capitel`, up to `Dreiundzwanzigstes
    Capitel: Schluß`. `Capitel` was no label and German ordinals stopped at the tenth: the
    book was two chapters, `Band 1` and `Band 2`."""
    work = read_text(MEILEN)
    assert (work.title, work.author, work.lang) == (MEILEN.stem, None, "de")
    assert [p.title for p in work.parts] == ["Band 1", "Band 2"]
    assert [(s.number, s.title) for s in work.sections()] == [
        ("1", "Eine schweifende Klippe"),
        ("2", "Für und Wider"),
        ("1", "Der Indische Ocean"),
        ("23", "Schluß"),
    ]
    last = work.sections()[-1].body.rstrip()
    assert last.startswith("Hiermit schließt") and last.endswith("Der Kapitän Nemo – – und ich.")


def test_don_quichotte_a_book_and_its_chapter_on_one_line_and_the_translators_piece() -> None:
    """Gutenberg's Don Quichotte in French (Furne's translation, #42524): `PREMIÈRE PARTIE`,
    then `LIVRE PREMIER--CHAPITRE PREMIER` (the book's heading and its first chapter's on
    one line) over the title in capitals; after the `PRÉFACE`, the translator's `UN MOT SUR
    CETTE NOUVELLE TRADUCTION`. Chapter I was lost (the line made a part titled `Chapitre
    Premier`, its text that part's first section), the translator's note was read as
    the end of the author's preface, and the transcriber's `Au lecteur` was a piece."""
    work = _book(
        QUICHOTTE,
        "L'ingénieux chevalier Don Quichotte de la Manche",
        "Miguel de Cervantes Saavedra",
        "fr",
    )
    assert [p.title for p in work.parts] == ["Première partie — Livre premier"]
    assert [(s.number, s.title) for s in work.sections()] == [
        (None, "Préface"),
        (None, "Un Mot sur Cette Nouvelle Traduction"),
        ("I", "Qui Traite de la Qualité et des Habitudes de l'Ingénieux Don Quichotte"),
        ("II", "Qui Traite de la Première Sortie Que Fit l'Ingénieux Don Quichotte"),
        ("III", "Ou l'on Raconte de Quelle Plaisante Manière Don Quichotte Fut Armé Chevalier"),
    ]
    sections = work.sections()
    assert sections[0].body.rstrip().endswith("sans m'oublier cependant.")
    assert sections[1].body.startswith("Comme Homère, comme Virgile")
    assert sections[2].body.startswith("Dans un petit bourg de la Manche")
    # the romancero's quatrain keeps its lines
    assert "Vit-on jamais un chevalier,\nPlus en faveur auprès des belles?\n" in sections[3].body
    # `  Au lecteur` over the transcriber's note, indented like the title pages after it,
    # is the file's front matter, not a piece of the book's (it held the title pages)
    assert "left out the title page before 'PRÉFACE' (12 paragraphs, lines 34-89)" in work.notes
