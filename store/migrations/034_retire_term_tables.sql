-- Glossator schema, version 34: the home-made SQL BM25 retired (issue 24, item 4).
--
-- Keyword search is pg_search's bm25 index (migration 033, store/pgsearch.py) or, on a
-- PostgreSQL without pg_search, PostgreSQL's own text search over the rows' `tsv`
-- under a GIN index (store/fts.py). The term tables of migrations 002/011/012 and
-- their statement triggers, the bulk-load setting and functions of 013/024 go:
--
-- * bm25_row_terms (012): read by the SQL BM25 only, and by the relevance gate's
--   document frequencies, now counted over the rows' tsvectors (store/signals.py);
-- * bm25_chapters / bm25_chapter_terms (011): the chapter BM25 reads
--   chapter_documents below instead;
-- * bm25_corpus (002): it was also the catalogue of the repositories, branches and
--   text search configurations that search reads (search/retrieval.py, store.tips,
--   store.removal) and N / avgdl of the fallback's BM25: branch_languages below,
--   the same figures, written by the loader (store/catalogue.py) in the load's
--   transaction instead of by triggers.
--
-- chapter_documents: one row per chapter (the paragraphs, level 0, of one source.md),
-- its lexemes as migration 033 spells a row's (glossator_lexeme_text, paragraph after
-- paragraph: the same terms, term frequencies and length pg_search counts), its length
-- as BM25 counts it (the paragraphs' doc_len summed) and its work. The loader rewrites
-- the chapters of the files it loads or deletes (glossator_chapter_documents), in the
-- load's transaction. Its bm25 index is made here where pg_search is installed, else
-- by store.pgsearch when it is enabled. The fallback without pg_search (store.fts)
-- ranks chapters from the paragraphs its GIN index matches, with the lengths kept
-- here: a chapter's tsvector would miscount a long chapter's tf (a tsvector keeps at
-- most 256 positions a lexeme and none past 16,383).

DROP TRIGGER IF EXISTS hcn_bm25_insert ON hierarchical_content_nodes;
DROP TRIGGER IF EXISTS hcn_bm25_delete ON hierarchical_content_nodes;
DROP TRIGGER IF EXISTS hcn_bm25_update ON hierarchical_content_nodes;
DROP TRIGGER IF EXISTS hcn_bm25_truncate ON hierarchical_content_nodes;
DROP TRIGGER IF EXISTS hcn_chapters_insert ON hierarchical_content_nodes;
DROP TRIGGER IF EXISTS hcn_chapters_delete ON hierarchical_content_nodes;
DROP TRIGGER IF EXISTS hcn_chapters_update_1_remove ON hierarchical_content_nodes;
DROP TRIGGER IF EXISTS hcn_chapters_update_2_add ON hierarchical_content_nodes;
DROP TRIGGER IF EXISTS hcn_chapters_truncate ON hierarchical_content_nodes;
DROP TRIGGER IF EXISTS hcn_row_terms_insert ON hierarchical_content_nodes;
DROP TRIGGER IF EXISTS hcn_row_terms_delete ON hierarchical_content_nodes;
DROP TRIGGER IF EXISTS hcn_row_terms_update_1_remove ON hierarchical_content_nodes;
DROP TRIGGER IF EXISTS hcn_row_terms_update_2_add ON hierarchical_content_nodes;
DROP TRIGGER IF EXISTS hcn_row_terms_truncate ON hierarchical_content_nodes;

DROP FUNCTION IF EXISTS bm25_corpus_add();
DROP FUNCTION IF EXISTS bm25_corpus_remove();
DROP FUNCTION IF EXISTS bm25_corpus_change();
DROP FUNCTION IF EXISTS bm25_corpus_clear();
DROP FUNCTION IF EXISTS bm25_chapters_add();
DROP FUNCTION IF EXISTS bm25_chapters_remove();
DROP FUNCTION IF EXISTS bm25_chapters_clear();
DROP FUNCTION IF EXISTS bm25_row_terms_add();
DROP FUNCTION IF EXISTS bm25_row_terms_remove();
DROP FUNCTION IF EXISTS bm25_row_terms_clear();
DROP FUNCTION IF EXISTS glossator_bulk_index(text, text, text[]);
DROP FUNCTION IF EXISTS glossator_bulk_chapters(text, text, text[]);
DROP FUNCTION IF EXISTS glossator_bulk_rebuild(text, text);
DROP FUNCTION IF EXISTS glossator_bulk_loading();

DROP TABLE IF EXISTS bm25_row_terms, bm25_chapter_terms, bm25_chapters, bm25_corpus;

-- The catalogue: each (repository, branch) and the text search configurations its rows
-- use, with N (rows) and their total length as BM25 counts it (doc_len).
CREATE TABLE branch_languages (
    repository  text      NOT NULL,
    branch      text      NOT NULL,
    ts_config   regconfig NOT NULL,
    n_docs      bigint    NOT NULL,
    total_len   bigint    NOT NULL,
    PRIMARY KEY (repository, branch, ts_config)
);

INSERT INTO branch_languages (repository, branch, ts_config, n_docs, total_len)
SELECT repository, branch, ts_config, count(*), sum(doc_len)
  FROM hierarchical_content_nodes
 GROUP BY 1, 2, 3;

CREATE TABLE chapter_documents (
    id          bigint   GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    repository  text     NOT NULL,
    branch      text     NOT NULL,
    source_file text     NOT NULL,
    work        text     NOT NULL,
    lexemes     text     NOT NULL,
    doc_len     bigint   NOT NULL,
    n_rows      integer  NOT NULL,
    UNIQUE (repository, branch, source_file)
);

-- The chapters of `files` made again from their paragraphs (a file's rows are replaced
-- as a unit: a file with no paragraph left loses its chapter).
CREATE FUNCTION glossator_chapter_documents(repo text, br text, files text[]) RETURNS void
LANGUAGE sql AS $$
  DELETE FROM chapter_documents
   WHERE repository = repo AND branch = br AND source_file = ANY(files);
  INSERT INTO chapter_documents
         (repository, branch, source_file, work, lexemes, doc_len, n_rows)
  SELECT repository, branch, source_file, min(work),
         string_agg(glossator_lexeme_text(tsv), ' ' ORDER BY chunk_index),
         sum(doc_len), count(*)
    FROM hierarchical_content_nodes
   WHERE repository = repo AND branch = br AND source_file = ANY(files) AND level = 0
   GROUP BY 1, 2, 3
   ORDER BY 1, 2, 3;
$$;

-- the chapters of the rows already loaded, branch by branch
SELECT glossator_chapter_documents(repository, branch, array_agg(source_file))
  FROM (SELECT DISTINCT repository, branch, source_file
          FROM hierarchical_content_nodes WHERE level = 0) AS f
 GROUP BY repository, branch;

-- The chapters' bm25 index (store.pgsearch.CHAPTER_INDEX), made here after the rows
-- where pg_search is installed.
DO $$
BEGIN
  IF EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'pg_search') THEN
    CREATE INDEX chapter_documents_bm25 ON chapter_documents USING bm25
      (id, (lexemes::pdb.whitespace),
       (repository::pdb.literal), (branch::pdb.literal), (work::pdb.literal))
      WITH (key_field = 'id', mutable_segment_rows = 0);
  END IF;
END
$$;

ANALYZE branch_languages, chapter_documents;
