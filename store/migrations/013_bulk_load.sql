-- Glossator schema, version 13: bulk loads build the derived term indexes once.
--
-- The statement triggers of migrations 011-012 keep bm25_row_terms and the chapter
-- index in step with every COPY, file by file: right for a push that changes a few
-- files, slow for a first load of 10^5-10^6 rows (a few index entries written per
-- statement, in lexeme order of no one). A bulk load (store.loader: a first load of a
-- branch, a model change, a whole tree) sets `glossator.bulk_load` for its
-- transaction: the *add* triggers then do nothing, and glossator_bulk_index() writes
-- the entries of the files it loaded in one statement per table, sorted by lexeme,
-- before the transaction commits. The *remove* triggers stay as they are (a reloaded
-- file's old entries go by deltas, through the row id index), and bm25_corpus stays
-- trigger-kept (two small aggregates per statement). Same entries either way: the
-- tests compare a bulk and an incremental load table by table and score by score.
--
-- hcn_tsv, the GIN index on the rows' tsvectors, has had no reader since migration
-- 012 (BM25 reads bm25_row_terms; phrase checks look rows up by id): it is dropped,
-- it cost every load ~25 GIN entries per row.

DROP INDEX IF EXISTS hcn_tsv;

CREATE FUNCTION glossator_bulk_loading() RETURNS boolean
LANGUAGE sql STABLE PARALLEL SAFE AS $$
  SELECT coalesce(current_setting('glossator.bulk_load', true), '') = 'on'
$$;

CREATE OR REPLACE FUNCTION bm25_row_terms_add() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  IF glossator_bulk_loading() THEN
    RETURN NULL;  -- glossator_bulk_index() writes them at the end of the load
  END IF;
  INSERT INTO bm25_row_terms (lexeme, repository, branch, row_id, tf, doc_len)
  SELECT u.lexeme, n.repository, n.branch, n.id, cardinality(u.positions), n.doc_len
    FROM new_rows n CROSS JOIN LATERAL unnest(n.tsv) AS u;
  RETURN NULL;
END
$$;

CREATE OR REPLACE FUNCTION bm25_chapters_add() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  IF glossator_bulk_loading() THEN
    RETURN NULL;  -- glossator_bulk_index() writes them at the end of the load
  END IF;
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

-- The entries the add triggers skipped: those of the rows of `files` (the files the
-- bulk load wrote, each whole: the loader replaces a file's rows as a unit). Called
-- once, after the last COPY, with glossator.bulk_load off again.
CREATE FUNCTION glossator_bulk_index(repo text, br text, files text[]) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO bm25_row_terms (lexeme, repository, branch, row_id, tf, doc_len)
  SELECT u.lexeme, h.repository, h.branch, h.id, cardinality(u.positions), h.doc_len
    FROM hierarchical_content_nodes h CROSS JOIN LATERAL unnest(h.tsv) AS u
   WHERE h.repository = repo AND h.branch = br AND h.source_file = ANY(files)
   ORDER BY 1, 4;  -- the lookup index's order: its pages are written once, in sequence

  INSERT INTO bm25_chapters AS c (repository, branch, source_file, work, doc_len, n_rows)
  SELECT repository, branch, source_file, min(work), sum(doc_len), count(*)
    FROM hierarchical_content_nodes
   WHERE repository = repo AND branch = br AND source_file = ANY(files) AND level = 0
   GROUP BY 1, 2, 3 ORDER BY 1, 2, 3
  ON CONFLICT (repository, branch, source_file) DO UPDATE
    SET doc_len = c.doc_len + excluded.doc_len, n_rows = c.n_rows + excluded.n_rows,
        work = excluded.work;

  INSERT INTO bm25_chapter_terms AS t (lexeme, chapter_id, tf)
  SELECT u.lexeme, c.id, sum(cardinality(u.positions))
    FROM hierarchical_content_nodes h
    JOIN bm25_chapters c
      ON c.repository = h.repository AND c.branch = h.branch AND c.source_file = h.source_file
   CROSS JOIN LATERAL unnest(h.tsv) AS u
   WHERE h.repository = repo AND h.branch = br AND h.source_file = ANY(files) AND h.level = 0
   GROUP BY 1, 2 ORDER BY 1, 2
  ON CONFLICT (lexeme, chapter_id) DO UPDATE SET tf = t.tf + excluded.tf;
END
$$;
