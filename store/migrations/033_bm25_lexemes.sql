-- Glossator schema, version 33: pg_search indexes each row in its own language
-- (issue 24).
--
-- Until now the pg_search index (store/pgsearch.py) tokenized every row with
-- Tantivy's French stemmer, whatever its work's `lang`. It now indexes the row's
-- own lexemes: those of its `tsv`, which PostgreSQL's text search made with the
-- row's configuration (migration 021: the language's stop words, unaccent, its
-- Snowball stemmer; `simple` for a language without one). Every language
-- PostgreSQL stems keeps its stemmer (31 configurations against Tantivy's 18
-- stemmers), accents are folded as the SQL BM25, the phrase check and the gate
-- fold them, and a query is analysed with the configurations of the rows it
-- searches (store.keyword.QUERY_LEXEMES), as the SQL BM25 analyses it.
--
-- glossator_lexeme_text(tsv) spells the lexemes out in the order of their
-- positions, each as many times as it occurs, so that pg_search's whitespace
-- tokenizer counts the same term frequencies and document length as the SQL
-- BM25 (bm25_row_terms.tf, doc_len).
--
-- A database that already has the old index (built with `glossator db pg-search`
-- or by Database.start()) gets it rebuilt here; elsewhere store.pgsearch makes
-- the new one when pg_search is enabled.

CREATE OR REPLACE FUNCTION glossator_lexeme_text(tsv tsvector) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT coalesce(string_agg(u.lexeme, ' ' ORDER BY p.pos, u.lexeme), '')
    FROM unnest(tsv) AS u, unnest(coalesce(u.positions, '{1}'::smallint[])) AS p(pos)
$$;

DO $$
BEGIN
  IF position('glossator_lexeme_text'
              IN coalesce(pg_get_indexdef(to_regclass('hcn_bm25')), 'glossator_lexeme_text')) = 0
  THEN
    DROP INDEX hcn_bm25;
    CREATE INDEX hcn_bm25 ON hierarchical_content_nodes USING bm25
      (id, (glossator_lexeme_text(tsv)::pdb.whitespace('alias=lexemes')),
       (repository::pdb.literal), (branch::pdb.literal), (work::pdb.literal),
       (node_type::pdb.literal), level)
      WITH (key_field = 'id', mutable_segment_rows = 0);
  END IF;
END
$$;
