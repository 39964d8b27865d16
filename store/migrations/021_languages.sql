-- Glossator schema, version 21: a text search configuration for every language
-- PostgreSQL ships one for (issue 13); `simple` for the others.
--
-- Versions 1-3 had French, English and German. Each language below gets
-- glossator_<iso 639-1>, built like those three (migration 003): the language's
-- stop words first (a `simple` dictionary, ACCEPT = false, when PostgreSQL has a
-- stop word file for it), then unaccent, then the language's Snowball stemmer (on a
-- server without unaccent, folding and stemming in SQL, as migration 003 does).
-- A language whose pg_catalog configuration is missing from this server is
-- skipped and keeps `simple`. glossator_ts_config() reads the table, so a work's
-- `lang` picks its configuration; rows whose configuration changes get their tsv
-- again (the BM25 statistics triggers follow).

CREATE TABLE glossator_languages (
    iso      text PRIMARY KEY,   -- ISO 639-1, as `lang` is written ('fr', 'en-GB' → 'en')
    pg_name  text NOT NULL,      -- PostgreSQL's configuration and stemmer name
    cfg      regconfig           -- glossator_<iso>, NULL when this server lacks it
);

INSERT INTO glossator_languages (iso, pg_name) VALUES
  ('ar', 'arabic'), ('hy', 'armenian'), ('eu', 'basque'), ('ca', 'catalan'),
  ('da', 'danish'), ('nl', 'dutch'), ('en', 'english'), ('et', 'estonian'),
  ('fi', 'finnish'), ('fr', 'french'), ('de', 'german'), ('el', 'greek'),
  ('hi', 'hindi'), ('hu', 'hungarian'), ('id', 'indonesian'), ('ga', 'irish'),
  ('it', 'italian'), ('lt', 'lithuanian'), ('ne', 'nepali'), ('no', 'norwegian'),
  ('nb', 'norwegian'), ('nn', 'norwegian'), ('pt', 'portuguese'), ('ro', 'romanian'),
  ('ru', 'russian'), ('sr', 'serbian'), ('es', 'spanish'), ('sv', 'swedish'),
  ('ta', 'tamil'), ('tr', 'turkish'), ('yi', 'yiddish');

DO $$
DECLARE
  l record;
  name text;
  stop text;
  mapping text;
  cases text;
BEGIN
  FOR l IN SELECT iso, pg_name FROM glossator_languages ORDER BY iso LOOP
    IF NOT EXISTS (SELECT 1 FROM pg_ts_config c JOIN pg_namespace n ON n.oid = c.cfgnamespace
                    WHERE n.nspname = 'pg_catalog' AND c.cfgname = l.pg_name) THEN
      CONTINUE;  -- not on this server: the language keeps `simple`
    END IF;
    name := 'glossator_' || l.iso;
    IF NOT EXISTS (SELECT 1 FROM pg_ts_config WHERE cfgname = name) THEN
      EXECUTE format('CREATE TEXT SEARCH CONFIGURATION %I (COPY = pg_catalog.%I)', name, l.pg_name);
      stop := 'glossator_' || l.pg_name || '_stop';
      IF NOT EXISTS (SELECT 1 FROM pg_ts_dict WHERE dictname = stop) THEN
        BEGIN  -- fails when PostgreSQL has no stop word file for the language
          EXECUTE format('CREATE TEXT SEARCH DICTIONARY %I (TEMPLATE = pg_catalog.simple, '
                         'STOPWORDS = %s, ACCEPT = false)', stop, l.pg_name);
        EXCEPTION WHEN OTHERS THEN
          stop := NULL;
        END;
      END IF;
      IF EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'unaccent') THEN
        mapping := concat_ws(', ', quote_ident(stop), 'unaccent', quote_ident(l.pg_name || '_stem'));
      ELSE  -- folding and stemming happen in glossator_tsvector (migration 003), as for fr/en/de
        mapping := concat_ws(', ', quote_ident(stop), 'simple');
      END IF;
      EXECUTE format('ALTER TEXT SEARCH CONFIGURATION %I ALTER MAPPING FOR asciiword, '
                     'asciihword, hword_asciipart, word, hword, hword_part WITH %s', name, mapping);
    END IF;
    UPDATE glossator_languages SET cfg = name::regconfig WHERE iso = l.iso;
  END LOOP;
  -- Without unaccent, glossator_tsvector stems in SQL with glossator_stemmer(cfg): it
  -- learns every language's stemmer (written out, so the function stays immutable).
  IF NOT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'unaccent') THEN
    SELECT string_agg(format('WHEN %L::regconfig THEN %L::regdictionary',
                             cfg::text, pg_name || '_stem'), ' ' ORDER BY iso)
      INTO cases FROM glossator_languages WHERE cfg IS NOT NULL;
    EXECUTE format('CREATE OR REPLACE FUNCTION glossator_stemmer(cfg regconfig) '
                   'RETURNS regdictionary LANGUAGE sql IMMUTABLE PARALLEL SAFE AS '
                   '$f$ SELECT CASE cfg %s ELSE %L::regdictionary END $f$', cases, 'simple');
  END IF;
END
$$;

CREATE OR REPLACE FUNCTION glossator_ts_config(lang text) RETURNS regconfig
LANGUAGE sql STABLE PARALLEL SAFE AS $$
  SELECT coalesce(
    (SELECT cfg FROM glossator_languages
      WHERE iso = lower(split_part(replace(coalesce(lang, 'fr'), '_', '-'), '-', 1))),
    'glossator_simple'::regconfig)
$$;

-- rows whose language now has its own configuration are searched with it
UPDATE hierarchical_content_nodes SET lang = lang WHERE ts_config <> glossator_ts_config(lang);
