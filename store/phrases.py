"""Quoted text in a question: the rows that hold it as a phrase.

    quoted_segments("qui a écrit « la disette prise pour l'abondance » ?")
    # ["la disette prise pour l'abondance"]
    phrase_rows(conn, ["la disette prise pour l'abondance"], ids=[12, 40, 41])
    # [40]: of these rows, the ones where it occurs

A reader who quotes wants the passage that says it, not the one that shares
the most words with it (BM25 counts words and ignores their order: « Ôte-toi
de mon soleil » ranks first the chapter that says « soleil » most). Hybrid
search puts those of its candidates first (`search.engine`).

A phrase is matched on the rows' own tsvectors: the segment goes through
`glossator_tsvector` (the rows' stop words, unaccent and stemmer), and its lexemes, in order, become a tsquery whose distances are the
positions' differences (`'diset' <-> 'pris' <3> 'abond'`). Stop words keep
their places, so « pour l' » still counts as two words between « prise » and
« abondance »; typographic and straight apostrophes parse alike; punctuation
is ignored, as it is in the rows. A segment of fewer than two lexemes is no
phrase (one word is BM25's job).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import psycopg

# « … », “ … ”, „ … “, " … ": the quotes French and English texts use
_QUOTED = re.compile(r"«\s*([^«»]+?)\s*»|“([^“”]+)”|„([^„“”]+)[“”]|\"([^\"]+)\"")
MAX_SEGMENTS = 5
MAX_SEGMENT_CHARS = 500

_SQL = """
WITH rows AS MATERIALIZED (
    SELECT id, ts_config, tsv FROM hierarchical_content_nodes WHERE id = ANY(%(ids)s)
),
occ AS (
    SELECT c.ts_config, s.n, u.lexeme, p.pos
      FROM (SELECT DISTINCT ts_config FROM rows) AS c,
           unnest(%(segments)s::text[]) WITH ORDINALITY AS s(segment, n),
           unnest(glossator_tsvector(c.ts_config, s.segment)) AS u,
           unnest(u.positions) AS p(pos)
),
spaced AS (
    SELECT ts_config, n, lexeme, pos,
           pos - lag(pos) OVER (PARTITION BY ts_config, n ORDER BY pos, lexeme) AS gap
      FROM occ
),
q AS (
    SELECT ts_config,
           string_agg(
               CASE WHEN gap IS NULL THEN '' ELSE '<' || gap || '> ' END
               || '''' || replace(replace(lexeme, '\\', '\\\\'), '''', '''''') || '''',
               ' ' ORDER BY pos, lexeme
           )::tsquery AS tsq
      FROM spaced
     GROUP BY ts_config, n
    HAVING count(*) >= 2
)
SELECT DISTINCT r.id FROM rows r JOIN q USING (ts_config) WHERE r.tsv @@ q.tsq ORDER BY r.id
"""


def quoted_segments(text: str) -> list[str]:
    """The quoted parts of a question, in order, de-duplicated (at most MAX_SEGMENTS)."""
    found: list[str] = []
    for m in _QUOTED.finditer(text):
        segment = next(g for g in m.groups() if g is not None).strip()
        if segment and segment not in found:
            found.append(segment[:MAX_SEGMENT_CHARS])
    return found[:MAX_SEGMENTS]


def phrase_rows(conn: psycopg.Connection, segments: Sequence[str], ids: Sequence[int]) -> list[int]:
    """Which of the rows `ids` hold any of `segments` as a phrase (sorted ids).

    The search engine asks about its fused candidates (both rankings' top rows), so
    the check reads those rows only, by primary key, whatever the corpus size.
    """
    if not segments or not ids:
        return []
    params = {"segments": list(segments), "ids": list(ids)}
    return [int(r[0]) for r in conn.execute(_SQL, params).fetchall()]
