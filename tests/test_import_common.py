"""Slugs, roman numerals, chapter headings and folder numbering of the importers."""

from __future__ import annotations

import pytest

from indexer.importers.common import drop_title_heading, roman_to_int, slugify, split_heading
from indexer.importers.tree import Section, section_prefixes


@pytest.mark.parametrize(
    ("text", "slug"),
    [
        ("Abondance, disette", "abondance-disette"),
        ("Égaliser les conditions de production", "egaliser-les-conditions-de-production"),
        ("L’utopiste", "l-utopiste"),
        ("Il n'y a pas de principes absolus", "il-n-y-a-pas-de-principes-absolus"),
        ("Œuvres — « complètes »", "oeuvres-completes"),
        ("Immense découverte !!!", "immense-decouverte"),
        ("!!!", "sans-titre"),
    ],
)
def test_slugify(text: str, slug: str) -> None:
    assert slugify(text) == slug


def test_slugify_cuts_long_titles_at_a_word() -> None:
    slug = slugify(
        "Pétition des fabricants de chandelles, bougies, lampes, chandeliers, réverbères"
    )
    assert len(slug) <= 60 and not slug.endswith("-")
    assert slug.startswith("petition-des-fabricants") and slug.split("-")[-1] == "lampes"


@pytest.mark.parametrize(
    ("roman", "value"), [("I", 1), ("IV", 4), ("IX", 9), ("XIV", 14), ("XXII", 22), ("xl", 40)]
)
def test_roman(roman: str, value: int) -> None:
    assert roman_to_int(roman) == value


@pytest.mark.parametrize("text", ["", "IIII", "VX", "IL", "ABC"])
def test_not_roman(text: str) -> None:
    assert roman_to_int(text) is None


@pytest.mark.parametrize(
    ("heading", "number", "title"),
    [
        ("Chapitre IX. — Titre", "IX", "Titre"),
        ("IX. Titre", "IX", "Titre"),
        ("VII. — Pétition des fabricants", "VII", "Pétition des fabricants"),
        ("Chapitre 3 : Les fleuves", "3", "Les fleuves"),
        ("CHAPITRE xii", "XII", "Chapitre XII"),  # untitled: label and number
        ("Immense découverte !!!", None, "Immense découverte !!!"),
        ("L’utopiste", None, "L’utopiste"),
        ("Introduction", None, "Introduction"),
        ("IIX. Pas un nombre", None, "IIX. Pas un nombre"),
    ],
)
def test_split_heading(heading: str, number: str | None, title: str) -> None:
    assert split_heading(heading) == (number, title)


def test_drop_title_heading_only_when_it_repeats_the_title() -> None:
    body = "# XVIII. — Il n’y a pas de principes absolus\n\nTexte.\n"
    assert drop_title_heading(body, "Il n'y a pas de principes absolus", "XVIII") == "Texte.\n"
    assert drop_title_heading(body, "Autre titre", "XVIII") == body
    assert drop_title_heading("Texte.\n# Titre\n", "Titre") == "Texte.\n# Titre\n"


def test_folder_numbers_follow_the_book() -> None:
    def s(number: str | None) -> Section:
        return Section("t", "x", number)

    assert section_prefixes([s(None), s("I"), s("II"), s(None)]) == ([0, 1, 2, 3], True)
    assert section_prefixes([s("I"), s("II")]) == ([1, 2], True)
    assert section_prefixes([s("II"), s("I")]) == ([1, 2], False)  # out of order: positions
