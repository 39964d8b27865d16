"""Titles in capitals normalised for labels (indexer/importers/titles.py): what a title in
capitals can tell is kept (numerals, elisions, a new start after a dash)."""

from __future__ import annotations

import pytest

from indexer.importers.titles import clean_title, smart_title


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        # roman numerals stay numerals (were `Chapter Xii`, `Louis Xiv`, `Henry Viii`)
        ("CHAPTER XII", "Chapter XII"),
        ("LOUIS XIV AND THE CARDINAL", "Louis XIV and the Cardinal"),
        ("HENRY VIII", "Henry VIII"),
        ("CHAPTER LI", "Chapter LI"),
        # words written with the numerals' letters stay words
        ("THE MIX OF CIVIL LIFE", "The Mix of Civil Life"),
        # elisions: the article small, the word after it a word (were `L'étranger`,
        # `D'artagnan`, `O'brien's`); English contractions stay one word
        ("L'ÉTRANGER", "L'Étranger"),
        ("D'ARTAGNAN", "D'Artagnan"),
        ("LE VICOMTE D'ARTAGNAN", "Le Vicomte d'Artagnan"),
        ("HISTOIRE D'UN CRIME", "Histoire d'un Crime"),
        ("DELL'AMORE E DELLA MORTE", "Dell'Amore e della Morte"),
        ("O'BRIEN'S DAUGHTER", "O'Brien's Daughter"),
        ("DON'T LOOK", "Don't Look"),
        ("I'M HERE", "I'm Here"),
        ("THE DUKE'S SECRET", "The Duke's Secret"),
        # a dash or a colon starts the title anew (was `Part Ii.—the Return`)
        ("PART II.—THE RETURN", "Part II.—The Return"),
        ("PART I: THE RETURN", "Part I: The Return"),
        ("CHAPTER II. THE RETURN", "Chapter II. The Return"),
        ("MR. AND MRS. SMITH", "Mr. and Mrs. Smith"),
        # small words of the book's languages (German's were capitalised)
        ("DER MANN OHNE EIGENSCHAFTEN", "Der Mann ohne Eigenschaften"),
        ("DON QUIJOTE DE LA MANCHA", "Don Quijote de la Mancha"),
        ("WHERE I AM", "Where I Am"),
        ("JOHN MCDONALD", "John McDonald"),
        # kept as before
        ("AVANT-PROPOS", "Avant-propos"),
        ("YOUTH — Æt. 1-25", "Youth — Æt. 1-25"),
        ("A Title in Mixed Case", "A Title in Mixed Case"),
    ],
)
def test_a_title_in_capitals_for_labels(source: str, expected: str) -> None:
    assert smart_title(source) == expected


def test_clean_title_drops_the_period_and_italics_then_normalises() -> None:
    assert clean_title("_THE SECOND BOOK OF KINGS XIV_.") == "The Second Book of Kings XIV"
