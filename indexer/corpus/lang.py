"""A work's language (`lang`, ISO 639-1, inherited from the work): the words Glossator writes.

Heading paths (`Chapter 3 (Title)`, `… (summary)`), the folder slugs an importer
writes (`chapter-03-…`, `part-1-…`) and the text-search configuration
(`store/migrations/021_languages.sql`) all follow the work's `lang`. A language
not listed here gets English labels (the lingua franca of the CLI) and
PostgreSQL's `simple` configuration; French stays the default `lang` (DESIGN §3).
"""

from __future__ import annotations

from dataclasses import dataclass

DEFAULT_LANG = "fr"


@dataclass(frozen=True)
class Labels:
    chapter: str  # a numbered chapter's label in its heading: "Chapitre I (Titre)"
    part: str  # the word an importer uses in a part's folder slug
    summary: str  # a summary's heading path ends with " (<summary>)"


LABELS: dict[str, Labels] = {
    "fr": Labels("Chapitre", "Partie", "résumé"),
    "en": Labels("Chapter", "Part", "summary"),
    "de": Labels("Kapitel", "Teil", "Zusammenfassung"),
    "es": Labels("Capítulo", "Parte", "resumen"),
    "it": Labels("Capitolo", "Parte", "riassunto"),
    "pt": Labels("Capítulo", "Parte", "resumo"),
    "ca": Labels("Capítol", "Part", "resum"),
    "nl": Labels("Hoofdstuk", "Deel", "samenvatting"),
    "da": Labels("Kapitel", "Del", "resumé"),
    "sv": Labels("Kapitel", "Del", "sammanfattning"),
    "nb": Labels("Kapittel", "Del", "sammendrag"),
    "no": Labels("Kapittel", "Del", "sammendrag"),
    "fi": Labels("Luku", "Osa", "tiivistelmä"),
    "pl": Labels("Rozdział", "Część", "streszczenie"),
    "ro": Labels("Capitolul", "Partea", "rezumat"),
    "hu": Labels("Fejezet", "Rész", "összefoglaló"),
    "tr": Labels("Bölüm", "Kısım", "özet"),
    "ru": Labels("Глава", "Часть", "краткое содержание"),
    "el": Labels("Κεφάλαιο", "Μέρος", "περίληψη"),
    "la": Labels("Caput", "Pars", "summarium"),
}
_FALLBACK = LABELS["en"]


def code(lang: str | None) -> str:
    """`en-GB` → `en`; empty → the default."""
    text = (lang or DEFAULT_LANG).strip().lower().replace("_", "-")
    return text.split("-")[0] or DEFAULT_LANG


def labels(lang: str | None) -> Labels:
    return LABELS.get(code(lang), _FALLBACK)


def summary_suffix(lang: str | None) -> str:
    return f" ({labels(lang).summary})"


# every suffix any language writes: a reader of heading paths need not know the work's lang
SUMMARY_SUFFIXES = tuple(sorted({f" ({lab.summary})" for lab in LABELS.values()}))


def strip_summary_suffix(heading_path: str) -> str:
    """A summary's heading path without its " (summary)" mark, whatever the language."""
    for suffix in SUMMARY_SUFFIXES:
        if heading_path.endswith(suffix):
            return heading_path.removesuffix(suffix)
    return heading_path
