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
-- Like bm25_corpus, they change by deltas read from the statement's transition
-- tables (the rows it inserted or deleted), never from the rows' table: a file's
-- DELETE subtracts its counts (a chapter at zero is dropped), its COPY adds them
-- back. Reading the rows' table instead was planned on its statistics, which a
-- long first load leaves stale (a repository the statistics have never seen looks
-- empty): the lookup by file became a scan of the repository, per file.

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

-- narrow rows (the chapter by its id): a chapter's reload rewrites ~1,500 of them;
-- tf in the primary key's index, so a query's lookups are index-only scans (a common
-- word is in every chapter: 2,000 heap fetches per lexeme otherwise)
CREATE TABLE bm25_chapter_terms (
    lexeme      text    NOT NULL,
    chapter_id  bigint  NOT NULL,
    tf          integer NOT NULL,
    PRIMARY KEY (lexeme, chapter_id) INCLUDE (tf)
);
CREATE INDEX bm25_chapter_terms_chapter ON bm25_chapter_terms (chapter_id);

CREATE FUNCTION bm25_chapters_add() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  -- ORDER BY: concurrent writers lock the rows in one order (no deadlock)
  INSERT INTO bm25_chapters AS c (repository, branch, source_file, work, doc_len, n_rows)
  SELECT repository, branch, source_file, min(work), sum(doc_len), count(*)
    FROM new_rows WHERE level = 0
   GROUP BY 1, 2, 3 ORDER BY 1, 2, 3
  ON CONFLICT (repository, branch, source_file) DO UPDATE
    SET doc_len = c.doc_len + excluded.doc_len, n_rows = c.n_rows + excluded.n_rows,
        work = excluded.work;
  INSERT INTO bm25_chapter_terms AS t (lexeme, chapter_id, tf)
  SELECT u.lexeme, c.id, sum(cardinality(u.positions))
    FROM new_rows n
    JOIN bm25_chapters c
      ON c.repository = n.repository AND c.branch = n.branch AND c.source_file = n.source_file
   CROSS JOIN LATERAL unnest(n.tsv) AS u
   WHERE n.level = 0
   GROUP BY 1, 2 ORDER BY 2, 1
  ON CONFLICT (lexeme, chapter_id) DO UPDATE SET tf = t.tf + excluded.tf;
  RETURN NULL;
END
$$;

CREATE FUNCTION bm25_chapters_remove() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  WITH d AS (
    SELECT u.lexeme, c.id, sum(cardinality(u.positions)) AS tf
      FROM old_rows o
      JOIN bm25_chapters c
        ON c.repository = o.repository AND c.branch = o.branch AND c.source_file = o.source_file
     CROSS JOIN LATERAL unnest(o.tsv) AS u
     WHERE o.level = 0
     GROUP BY 1, 2
  )
  UPDATE bm25_chapter_terms t SET tf = t.tf - d.tf
    FROM d WHERE t.lexeme = d.lexeme AND t.chapter_id = d.id;
  WITH g AS (
    SELECT repository, branch, source_file, sum(doc_len) AS len, count(*) AS n
      FROM old_rows WHERE level = 0
     GROUP BY 1, 2, 3
  )
  UPDATE bm25_chapters c SET doc_len = c.doc_len - g.len, n_rows = c.n_rows - g.n
    FROM g
   WHERE c.repository = g.repository AND c.branch = g.branch AND c.source_file = g.source_file;
  DELETE FROM bm25_chapter_terms t
   USING (SELECT DISTINCT c.id
            FROM old_rows o
            JOIN bm25_chapters c
              ON c.repository = o.repository AND c.branch = o.branch
             AND c.source_file = o.source_file
           WHERE o.level = 0) AS k
   WHERE t.chapter_id = k.id AND t.tf <= 0;
  DELETE FROM bm25_chapters c
   USING (SELECT DISTINCT repository, branch, source_file FROM old_rows WHERE level = 0) AS k
   WHERE c.repository = k.repository AND c.branch = k.branch AND c.source_file = k.source_file
     AND c.n_rows <= 0;
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

-- An UPDATE is a removal of its old rows, then an addition of its new ones: two
-- triggers, in name order (PostgreSQL fires same-event triggers alphabetically).
CREATE TRIGGER hcn_chapters_insert AFTER INSERT ON hierarchical_content_nodes
  REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION bm25_chapters_add();
CREATE TRIGGER hcn_chapters_delete AFTER DELETE ON hierarchical_content_nodes
  REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION bm25_chapters_remove();
CREATE TRIGGER hcn_chapters_update_1_remove AFTER UPDATE ON hierarchical_content_nodes
  REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION bm25_chapters_remove();
CREATE TRIGGER hcn_chapters_update_2_add AFTER UPDATE ON hierarchical_content_nodes
  REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION bm25_chapters_add();
CREATE TRIGGER hcn_chapters_truncate AFTER TRUNCATE ON hierarchical_content_nodes
  FOR EACH STATEMENT EXECUTE FUNCTION bm25_chapters_clear();

-- the rows already loaded
INSERT INTO bm25_chapters (repository, branch, source_file, work, doc_len, n_rows)
SELECT repository, branch, source_file, min(work), sum(doc_len), count(*)
  FROM hierarchical_content_nodes WHERE level = 0
 GROUP BY 1, 2, 3;
INSERT INTO bm25_chapter_terms (lexeme, chapter_id, tf)
SELECT u.lexeme, c.id, sum(cardinality(u.positions))
  FROM hierarchical_content_nodes h
  JOIN bm25_chapters c
    ON c.repository = h.repository AND c.branch = h.branch AND c.source_file = h.source_file
 CROSS JOIN LATERAL unnest(h.tsv) AS u
 WHERE h.level = 0
 GROUP BY 1, 2;
