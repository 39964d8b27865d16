"""Quoted text in a question: the rows that hold it as a phrase.

    quoted_segments("qui a écrit « la disette prise pour l'abondance » ?")
    # ["la disette prise pour l'abondance"]
    question_segments("nous avons changé tout cela, et nous faisons maintenant la médecine")
    # the whole question: no quotation marks, and long enough to be a quotation
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

A reader also quotes without quotation marks (« nous avons changé tout cela… »): a
question with none and of at least MIN_UNQUOTED_WORDS words is checked whole, as one
phrase (`question_segments`). It matches only a row that says the question's words
in its order, so a paraphrase or a question in its own words matches nothing and its
ranking is left as it is; what it restores is a quotation BM25 found but whose row a
packed retrieval unit, diluted by its neighbours' lines, let the vector side sink
(docs/search.md, "Retrieval units").
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import psycopg

from store.roundtrip import Statement

# « … », “ … ”, „ … “, " … ": the quotes French and English texts use
_QUOTED = re.compile(r"«\s*([^«»]+?)\s*»|“([^“”]+)”|„([^„“”]+)[“”]|\"([^\"]+)\"")
MAX_SEGMENTS = 5
MAX_SEGMENT_CHARS = 500
# The fewest words of an unquoted question checked whole as a phrase: a run of six words
# or more almost never recurs by chance in a book (near-duplicate detection takes runs of
# 4-10 words as a passage's fingerprint: Broder 1997, "On the resemblance and
# containment of documents"), while shorter questions are names and keywords, BM25's
# job. Not fitted: the judged sets' unquoted quotations have 8-24 words, and no other
# question of any set matches a row whole (bench/RESULTS.md, issue 37 "retrieval" branch).
MIN_UNQUOTED_WORDS = 6
_QUOTE_MARKS = re.compile(r"[«»“”„\"]")

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


def question_segments(text: str) -> list[str]:
    """The phrases a question asks for: its quoted parts (`quoted_segments`), or, with no
    quotation mark in it, the whole question when it has MIN_UNQUOTED_WORDS words or more."""
    if _QUOTE_MARKS.search(text):
        return quoted_segments(text)
    whole = text.strip()
    return [whole[:MAX_SEGMENT_CHARS]] if len(whole.split()) >= MIN_UNQUOTED_WORDS else []


def phrase_statement(segments: Sequence[str], ids: Sequence[int]) -> Statement | None:
    """The statement `phrase_rows` runs, for a batch (store.roundtrip); None: nothing to
    check. Its rows: one (id,) per row of `ids` that holds a segment as a phrase."""
    if not segments or not ids:
        return None
    return Statement(_SQL, {"segments": list(segments), "ids": list(ids)})


def phrase_ids(found: Sequence[Sequence[Any]]) -> set[int]:
    """The ids of `phrase_statement`'s rows."""
    return {int(r[0]) for r in found}


def phrase_rows(conn: psycopg.Connection, segments: Sequence[str], ids: Sequence[int]) -> list[int]:
    """Which of the rows `ids` hold any of `segments` as a phrase (sorted ids).

    The search engine asks about its fused candidates (both rankings' top rows), so
    the check reads those rows only, by primary key, whatever the corpus size.
    """
    statement = phrase_statement(segments, ids)
    if statement is None:
        return []
    return [int(r[0]) for r in conn.execute(statement.query, statement.params).fetchall()]
