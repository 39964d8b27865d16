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
-- * bm25_chapter_terms: one row per (lexeme, chapter id) with the lexeme's count
--   over the chapter's paragraphs (tf); df is counted by the query.
--
-- A statement recomputes the chapters it touched, from the rows as they are
-- after it (a file's DELETE empties them, its COPY fills them again).

CREATE TABLE bm25_chapters (
    id          bigint  GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    repository  text    NOT NULL,
    branch      text    NOT NULL,
    source_file text    NOT NULL,
    work        text    NOT NULL,
    doc_len     bigint  NOT NULL,
    n_rows      integer NOT NULL,
    UNIQUE (repository, branch, source_file)
);

-- narrow rows (the chapter by its id): a chapter's reload rewrites ~1,500 of them
CREATE TABLE bm25_chapter_terms (
    lexeme      text    NOT NULL,
    chapter_id  bigint  NOT NULL,
    tf          integer NOT NULL,
    PRIMARY KEY (lexeme, chapter_id)
);
CREATE INDEX bm25_chapter_terms_chapter ON bm25_chapter_terms (chapter_id);

-- plan_cache_mode: planned again at each call, for the tables as they are then. A
-- cached generic plan made while a first load had just begun (tables nearly empty) is a
-- sequential scan, kept while the tables grow: 14x slower at 200,000 rows (bench/load.py).
CREATE FUNCTION bm25_chapters_refresh(repos text[], branches text[], files text[]) RETURNS void
LANGUAGE plpgsql SET plan_cache_mode = force_custom_plan AS $$
DECLARE
  k record;
  old_id bigint;
  new_id bigint;
BEGIN
  -- one chapter at a time, by equality on the indexed keys: an index lookup whatever
  -- the tables' statistics (a join with the key list was planned as a scan of every
  -- term for each file of a first load, quadratic in the corpus)
  FOR k IN SELECT * FROM unnest(repos, branches, files) AS u(repository, branch, source_file)
  LOOP
    DELETE FROM bm25_chapters
     WHERE repository = k.repository AND branch = k.branch AND source_file = k.source_file
    RETURNING id INTO old_id;
    IF old_id IS NOT NULL THEN
      DELETE FROM bm25_chapter_terms WHERE chapter_id = old_id;
    END IF;
    -- level::integer: not an index condition, so the file's own index
    -- (hcn_unique_chunk: repository, branch, source_file) is the one used; PostgreSQL
    -- 18's skip scan otherwise picks hcn_filters and reads the branch's every paragraph
    INSERT INTO bm25_chapters (repository, branch, source_file, work, doc_len, n_rows)
    SELECT k.repository, k.branch, k.source_file, min(h.work), sum(h.doc_len), count(*)
      FROM hierarchical_content_nodes h
     WHERE h.repository = k.repository AND h.branch = k.branch
       AND h.source_file = k.source_file AND h.level::integer = 0
    HAVING count(*) > 0
    RETURNING id INTO new_id;
    IF new_id IS NOT NULL THEN
      INSERT INTO bm25_chapter_terms (lexeme, chapter_id, tf)
      SELECT u.lexeme, new_id, sum(cardinality(u.positions))
        FROM hierarchical_content_nodes h CROSS JOIN LATERAL unnest(h.tsv) AS u
       WHERE h.repository = k.repository AND h.branch = k.branch
         AND h.source_file = k.source_file AND h.level::integer = 0
       GROUP BY u.lexeme;
    END IF;
    old_id := NULL;
    new_id := NULL;
  END LOOP;
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
  TRUNCATE bm25_chapter_terms, bm25_chapters;
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
