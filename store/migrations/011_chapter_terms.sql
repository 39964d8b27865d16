-- Glossator schema, version 11: term counts per chapter, for chapter-level BM25.
--
-- A chapter is one source file's paragraphs (level 0). Hybrid search ranks
-- chapters with BM25 as well as rows (store.chapters, search.chapters); doing
-- so from the rows at query time means reading every matching paragraph's
-- tsvector again. These two tables are that inverted index, kept exact by
-- statement triggers in the same transaction as the rows, like bm25_corpus:
--
-- * bm25_chapters: one row per chapter (its work, its length in lexemes as
--   BM25 counts them, its paragraph count): N and avgdl, and the work filter;
-- * bm25_chapter_terms: one row per (chapter, lexeme) with the lexeme's count
--   over the chapter's paragraphs (tf); df is counted by the query.
--
-- A statement recomputes the chapters it touched, from the rows as they are
-- after it (a file's DELETE empties them, its COPY fills them again).

CREATE TABLE bm25_chapters (
    repository  text    NOT NULL,
    branch      text    NOT NULL,
    source_file text    NOT NULL,
    work        text    NOT NULL,
    doc_len     bigint  NOT NULL,
    n_rows      integer NOT NULL,
    PRIMARY KEY (repository, branch, source_file)
);

CREATE TABLE bm25_chapter_terms (
    repository  text    NOT NULL,
    branch      text    NOT NULL,
    lexeme      text    NOT NULL,
    source_file text    NOT NULL,
    tf          integer NOT NULL,
    PRIMARY KEY (repository, branch, lexeme, source_file)
);
CREATE INDEX bm25_chapter_terms_file ON bm25_chapter_terms (repository, branch, source_file);

CREATE FUNCTION bm25_chapters_refresh(repos text[], branches text[], files text[]) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM bm25_chapter_terms t
   USING unnest(repos, branches, files) AS k(repository, branch, source_file)
   WHERE t.repository = k.repository AND t.branch = k.branch AND t.source_file = k.source_file;
  DELETE FROM bm25_chapters c
   USING unnest(repos, branches, files) AS k(repository, branch, source_file)
   WHERE c.repository = k.repository AND c.branch = k.branch AND c.source_file = k.source_file;
  INSERT INTO bm25_chapters (repository, branch, source_file, work, doc_len, n_rows)
  SELECT h.repository, h.branch, h.source_file, min(h.work), sum(h.doc_len), count(*)
    FROM hierarchical_content_nodes h
    JOIN unnest(repos, branches, files) AS k(repository, branch, source_file)
      ON h.repository = k.repository AND h.branch = k.branch AND h.source_file = k.source_file
   WHERE h.level = 0
   GROUP BY 1, 2, 3;
  INSERT INTO bm25_chapter_terms (repository, branch, lexeme, source_file, tf)
  SELECT h.repository, h.branch, u.lexeme, h.source_file, sum(cardinality(u.positions))
    FROM hierarchical_content_nodes h
    JOIN unnest(repos, branches, files) AS k(repository, branch, source_file)
      ON h.repository = k.repository AND h.branch = k.branch AND h.source_file = k.source_file
   CROSS JOIN LATERAL unnest(h.tsv) AS u
   WHERE h.level = 0
   GROUP BY 1, 2, 3, 4;
END
$$;

CREATE FUNCTION bm25_chapters_sync() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
  repos text[];
  branches text[];
  files text[];
BEGIN
  -- ORDER BY: concurrent writers lock the chapters in one order (no deadlock)
  IF TG_OP = 'INSERT' THEN
    SELECT array_agg(repository ORDER BY repository, branch, source_file),
           array_agg(branch ORDER BY repository, branch, source_file),
           array_agg(source_file ORDER BY repository, branch, source_file)
      INTO repos, branches, files
      FROM (SELECT DISTINCT repository, branch, source_file FROM new_rows) AS k;
  ELSIF TG_OP = 'DELETE' THEN
    SELECT array_agg(repository ORDER BY repository, branch, source_file),
           array_agg(branch ORDER BY repository, branch, source_file),
           array_agg(source_file ORDER BY repository, branch, source_file)
      INTO repos, branches, files
      FROM (SELECT DISTINCT repository, branch, source_file FROM old_rows) AS k;
  ELSE
    SELECT array_agg(repository ORDER BY repository, branch, source_file),
           array_agg(branch ORDER BY repository, branch, source_file),
           array_agg(source_file ORDER BY repository, branch, source_file)
      INTO repos, branches, files
      FROM (SELECT repository, branch, source_file FROM old_rows
            UNION
            SELECT repository, branch, source_file FROM new_rows) AS k;
  END IF;
  IF repos IS NOT NULL THEN
    PERFORM bm25_chapters_refresh(repos, branches, files);
  END IF;
  RETURN NULL;
END
$$;

CREATE FUNCTION bm25_chapters_clear() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM bm25_chapter_terms;
  DELETE FROM bm25_chapters;
  RETURN NULL;
END
$$;

CREATE TRIGGER hcn_chapters_insert AFTER INSERT ON hierarchical_content_nodes
  REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION bm25_chapters_sync();
CREATE TRIGGER hcn_chapters_delete AFTER DELETE ON hierarchical_content_nodes
  REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION bm25_chapters_sync();
CREATE TRIGGER hcn_chapters_update AFTER UPDATE ON hierarchical_content_nodes
  REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION bm25_chapters_sync();
CREATE TRIGGER hcn_chapters_truncate AFTER TRUNCATE ON hierarchical_content_nodes
  FOR EACH STATEMENT EXECUTE FUNCTION bm25_chapters_clear();

-- the rows already loaded
SELECT bm25_chapters_refresh(array_agg(repository), array_agg(branch), array_agg(source_file))
  FROM (SELECT DISTINCT repository, branch, source_file
          FROM hierarchical_content_nodes WHERE level = 0) AS k;
