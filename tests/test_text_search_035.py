"""Migration 035's glossator_tsvector (PL/pgSQL, folding skipped for ASCII lexemes, the
Latin-1 part of the table for Latin-1 ones) gives exactly the tsvectors of migration
021's SQL definition, position for position, on the server without unaccent (where
the rows' tsvectors are folded and stemmed in SQL)."""

from __future__ import annotations

import psycopg
import pytest

from tests.store_sidecars import EXAMPLE_DIR

pytestmark = pytest.mark.pg_backends("pg_search")

# migration 021's definition (003's, with glossator_stemmer for every language), inlined
BEFORE_035 = (
    "CASE WHEN c.cfg = 'glossator_fr'::regconfig THEN ts_delete(s.v, ARRAY['le', 'a']) ELSE s.v END"
)
COMPARE = f"""
SELECT c.cfg::text, t.text, glossator_tsvector(c.cfg, t.text)::text, ({BEFORE_035})::text
  FROM unnest(%(configs)s::regconfig[]) AS c(cfg)
 CROSS JOIN unnest(%(texts)s::text[]) AS t(text)
 CROSS JOIN LATERAL (SELECT glossator_fold_stem(glossator_stemmer(c.cfg),
                                                to_tsvector(c.cfg, t.text))) AS s(v)
 WHERE glossator_tsvector(c.cfg, t.text) IS DISTINCT FROM ({BEFORE_035})
"""

TRICKY = [
    "",
    "   ",
    "L'Œuvre d'Ælfred, cœur œcuménique ; Straße, Maß, ĳzer, l·l, Ŀlibre",
    "Élève ÉLÈVE élève eleve — À Ça ÿ Ÿ Ø ø Ð ð Þ þ × ÷ µ ª º",
    "libre-échange, contre-révolution, porte-à-faux, peut-être",
    "2,5 % en 1848 ; 3.14 ; v1.2.3 ; 10/12/1850 ; 12:30",
    "https://exemple.fr/économie?q=prix et contact@exemple.fr, /usr/lib/fichier.txt",
    "des 'guillemets' et \"doubles\", un \\ antislash, un ' seul",
    "Ａｂｃ ﬁn ﬂeur Ⅻ ²³ ½",  # compatibility forms: not in the table, left alone
    "Москва́ ёлка Ёж, Αθήνα ἄνθρωπος, Łódź, Ĳsselmeer, Dvořák, Şişli, Ğ ğ İ ı",
    "économie politique, l'État, à la fois, été comme hiver, il a été",
    "le percepteur et le vigneron ; les deux haches ; a, à, le, la, les",
]


def _letters() -> list[str]:
    """Every letter U+00A0-U+024F alone and inside an ASCII word, one text each half."""
    letters = [chr(i) for i in range(0xA0, 0x250) if chr(i).isalpha()]
    return [" ".join(letters), " ".join(f"ab{c}cd {c}x Z{c}" for c in letters)]


def _paragraphs() -> list[str]:
    out = []
    for path in sorted(EXAMPLE_DIR.glob("corpus/**/source.md")):
        body = path.read_text("utf-8").split("---", 2)[-1]
        out += [p.strip() for p in body.split("\n\n") if p.strip()]
    return out


def _differences(
    conn: psycopg.Connection, configs: list[str], texts: list[str]
) -> list[tuple[str, ...]]:
    rows = conn.execute(COMPARE, {"configs": configs, "texts": texts}).fetchall()
    return [tuple(r) for r in rows]


def test_same_lexemes_and_positions_as_before(conn: psycopg.Connection) -> None:
    unaccent = conn.execute("SELECT 1 FROM pg_extension WHERE extname = 'unaccent'").fetchone()
    if unaccent:
        pytest.skip("a server with unaccent keeps its own glossator_tsvector (migration 035)")
    language = conn.execute(
        "SELECT lanname FROM pg_proc p JOIN pg_language l ON l.oid = p.prolang"
        " WHERE p.proname = 'glossator_tsvector'"
    ).fetchone()
    assert language == ("plpgsql",)
    configs = [
        r[0]
        for r in conn.execute(
            "SELECT DISTINCT cfg::text FROM glossator_languages WHERE cfg IS NOT NULL ORDER BY 1"
        )
    ]
    assert "glossator_fr" in configs and "glossator_de" in configs and len(configs) > 20
    configs.append("glossator_simple")
    paragraphs = _paragraphs()
    assert len(paragraphs) > 500
    # every configuration on the tricky texts, every letter and a sample of the example;
    # French (the example's language) on all of it
    assert _differences(conn, configs, TRICKY + _letters() + paragraphs[::40]) == []
    assert _differences(conn, ["glossator_fr"], paragraphs) == []
    # the texts do exercise each path: ASCII, Latin-1, beyond Latin-1, kept as they are
    lexemes = {
        r[0]
        for r in conn.execute(
            "SELECT u.lexeme FROM unnest(%s::text[]) AS t(text),"
            " unnest(glossator_tsvector('glossator_fr', t.text)) AS u",
            (TRICKY,),
        )
    }
    assert {"elev", "oeuvr", "strass", "ijzer", "1848", "contact@exemple.fr"} <= lexemes
