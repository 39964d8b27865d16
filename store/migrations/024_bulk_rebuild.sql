-- Glossator schema, version 24: a bulk load that carries most of the term entries
-- builds the term tables anew, indexes after the entries.
--
-- glossator_bulk_index (migration 013) writes a bulk load's entries in one sorted
-- statement per table, but into tables whose B-trees are kept entry by entry: ~25
-- row-term and ~13 chapter-term entries per row, two B-trees each. Measured on
-- 20,000 synthetic rows (bench/load.py's): 5.3 s for the row terms so, 2.4 s into a
-- bare table then CREATE INDEX; the statement was two thirds of the whole load.
--
-- glossator_bulk_rebuild(repo, br) builds each term table as a new table: the other
-- branches' entries copied as they are, this branch's computed from its rows, then
-- its indexes, then the new table takes the old one's name, all in the load's
-- transaction. The loader calls it instead of glossator_bulk_index's term inserts
-- when the branch will hold at least as many rows as all the others (a first load
-- into a new server, a model change of the main library): copying the others then
-- costs at most as much as the entries of the load itself. Otherwise (a small book
-- added beside a large library) the entries go in as before.
--
-- Locks. SHARE on the three tables from the start of the rebuild: searches go on
-- reading the tables as they were, a concurrent writer (another branch's job)
-- waits for this load's commit instead of writing into a table about to be
-- dropped. ACCESS EXCLUSIVE only for the DROP and the renames at the end, until
-- the commit that follows: searches wait that long. The triggers' functions name
-- the tables, so their plans follow the new ones.

-- Plans. A bulk load's rows are not in the table's statistics yet (ANALYZE comes
-- after): a branch the statistics never saw looks like one row, and the chapter
-- terms' join then ran as a nested loop over every chapter of the branch for each
-- paragraph (10^6 rows x 10^4 chapters: hours, seen in bench/load.py). These
-- statements read whole branches: no nested loop but the LATERAL unnest's.

CREATE FUNCTION glossator_bulk_rebuild(repo text, br text) RETURNS void
LANGUAGE plpgsql
SET maintenance_work_mem = '256MB'  -- CREATE INDEX sorts in memory up to this (default 64MB)
SET enable_nestloop = off  -- see "Plans" above
AS $$
BEGIN
  LOCK TABLE bm25_row_terms, bm25_chapter_terms, bm25_chapters IN SHARE MODE;

  CREATE TABLE bm25_row_terms_next (LIKE bm25_row_terms INCLUDING DEFAULTS);
  INSERT INTO bm25_row_terms_next (lexeme, repository, branch, row_id, tf, doc_len)
  SELECT lexeme, repository, branch, row_id, tf, doc_len
    FROM bm25_row_terms
   WHERE repository <> repo OR branch <> br;
  INSERT INTO bm25_row_terms_next (lexeme, repository, branch, row_id, tf, doc_len)
  SELECT u.lexeme, h.repository, h.branch, h.id, cardinality(u.positions), h.doc_len
    FROM hierarchical_content_nodes h CROSS JOIN LATERAL unnest(h.tsv) AS u
   WHERE h.repository = repo AND h.branch = br
   ORDER BY 1, 4;  -- the lookup's order: a query's entries sit on few heap pages
  CREATE INDEX bm25_row_terms_next_lookup ON bm25_row_terms_next (lexeme, repository, branch)
    INCLUDE (row_id, tf, doc_len);
  CREATE INDEX bm25_row_terms_next_row ON bm25_row_terms_next (row_id);

  CREATE TABLE bm25_chapter_terms_next (LIKE bm25_chapter_terms INCLUDING DEFAULTS);
  INSERT INTO bm25_chapter_terms_next (lexeme, chapter_id, tf)
  SELECT t.lexeme, t.chapter_id, t.tf
    FROM bm25_chapter_terms t
   WHERE NOT EXISTS (SELECT 1 FROM bm25_chapters c
                      WHERE c.id = t.chapter_id AND c.repository = repo AND c.branch = br);
  INSERT INTO bm25_chapter_terms_next (lexeme, chapter_id, tf)
  SELECT u.lexeme, c.id, sum(cardinality(u.positions))
    FROM hierarchical_content_nodes h
    JOIN bm25_chapters c
      ON c.repository = h.repository AND c.branch = h.branch AND c.source_file = h.source_file
   CROSS JOIN LATERAL unnest(h.tsv) AS u
   WHERE h.repository = repo AND h.branch = br AND h.level = 0
   GROUP BY 1, 2 ORDER BY 1, 2;
  CREATE UNIQUE INDEX bm25_chapter_terms_next_pkey ON bm25_chapter_terms_next (lexeme, chapter_id)
    INCLUDE (tf);
  CREATE INDEX bm25_chapter_terms_next_chapter ON bm25_chapter_terms_next (chapter_id);

  DROP TABLE bm25_row_terms;
  ALTER TABLE bm25_row_terms_next RENAME TO bm25_row_terms;
  ALTER INDEX bm25_row_terms_next_lookup RENAME TO bm25_row_terms_lookup;
  ALTER INDEX bm25_row_terms_next_row RENAME TO bm25_row_terms_row;
  DROP TABLE bm25_chapter_terms;
  ALTER TABLE bm25_chapter_terms_next RENAME TO bm25_chapter_terms;
  ALTER TABLE bm25_chapter_terms
    ADD CONSTRAINT bm25_chapter_terms_pkey PRIMARY KEY USING INDEX bm25_chapter_terms_next_pkey;
  ALTER INDEX bm25_chapter_terms_next_chapter RENAME TO bm25_chapter_terms_chapter;
END
$$;

-- The chapters' rows of the files a bulk load wrote (glossator_bulk_index's second
-- statement), for the rebuild, which needs them before it computes the chapter terms.
CREATE FUNCTION glossator_bulk_chapters(repo text, br text, files text[]) RETURNS void
LANGUAGE sql AS $$
  INSERT INTO bm25_chapters AS c (repository, branch, source_file, work, doc_len, n_rows)
  SELECT repository, branch, source_file, min(work), sum(doc_len), count(*)
    FROM hierarchical_content_nodes
   WHERE repository = repo AND branch = br AND source_file = ANY(files) AND level = 0
   GROUP BY 1, 2, 3 ORDER BY 1, 2, 3
  ON CONFLICT (repository, branch, source_file) DO UPDATE
    SET doc_len = c.doc_len + excluded.doc_len, n_rows = c.n_rows + excluded.n_rows,
        work = excluded.work
$$;

-- migration 013's way of writing the entries has the same join
ALTER FUNCTION glossator_bulk_index(text, text, text[]) SET enable_nestloop = off;
