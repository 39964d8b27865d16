-- Glossator schema, version 3: stop words are removed before unaccent.
--
-- Version 1 mapped words through unaccent then the stemmer, whose stop word list
-- is accented: « à », « été », « était » lost their accents first and survived as
-- lexemes ('a', 'ete'). A `simple` dictionary holding the language's stop words
-- (ACCEPT = false: it only ever stops a word or passes it on) now comes first.
-- PostgreSQL's French list also lacks « les » and the verb « a » (stemmed to 'le'
-- and 'a'); glossator_tsvector deletes those lexemes. The loader's trigger and
-- the BM25 query both use glossator_tsvector, so documents and queries agree.

CREATE TEXT SEARCH DICTIONARY glossator_french_stop
  (TEMPLATE = pg_catalog.simple, STOPWORDS = french, ACCEPT = false);
CREATE TEXT SEARCH DICTIONARY glossator_english_stop
  (TEMPLATE = pg_catalog.simple, STOPWORDS = english, ACCEPT = false);
CREATE TEXT SEARCH DICTIONARY glossator_german_stop
  (TEMPLATE = pg_catalog.simple, STOPWORDS = german, ACCEPT = false);

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
