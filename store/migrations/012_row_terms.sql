-- Glossator schema, version 12: an inverted index of the rows' lexemes for BM25.
--
-- The row BM25 (store.keyword.SqlBm25) read the tsvector of every row matching the
-- query (a GIN match, then the row's lexemes picked out one row at a time): ~5 ms on
-- the example, where the query itself is a few index lookups. bm25_row_terms holds
-- one entry per (row, lexeme) with its tf and the row's length, in an index that
-- answers a query's lexemes by index-only scans (same scores, same order: the tests
-- compare them with a BM25 computed in Python). Statement triggers keep it in step
-- with the rows in the same transaction, from the transition tables, like
-- bm25_corpus and the chapter index (migration 011).

CREATE TABLE bm25_row_terms (
    lexeme     text    NOT NULL,
    repository text    NOT NULL,
    branch     text    NOT NULL,
    row_id     bigint  NOT NULL,
    tf         integer NOT NULL,
    doc_len    integer NOT NULL
);
CREATE INDEX bm25_row_terms_lookup ON bm25_row_terms (lexeme, repository, branch)
  INCLUDE (row_id, tf, doc_len);
CREATE INDEX bm25_row_terms_row ON bm25_row_terms (row_id);

CREATE FUNCTION bm25_row_terms_add() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO bm25_row_terms (lexeme, repository, branch, row_id, tf, doc_len)
  SELECT u.lexeme, n.repository, n.branch, n.id, cardinality(u.positions), n.doc_len
    FROM new_rows n CROSS JOIN LATERAL unnest(n.tsv) AS u;
  RETURN NULL;
END
$$;

CREATE FUNCTION bm25_row_terms_remove() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM bm25_row_terms t USING (SELECT DISTINCT id FROM old_rows) AS o
   WHERE t.row_id = o.id;
  RETURN NULL;
END
$$;

CREATE FUNCTION bm25_row_terms_clear() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  TRUNCATE bm25_row_terms;
  RETURN NULL;
END
$$;

-- An UPDATE removes its old rows' entries, then adds its new rows' (name order).
CREATE TRIGGER hcn_row_terms_insert AFTER INSERT ON hierarchical_content_nodes
  REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION bm25_row_terms_add();
CREATE TRIGGER hcn_row_terms_delete AFTER DELETE ON hierarchical_content_nodes
  REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION bm25_row_terms_remove();
CREATE TRIGGER hcn_row_terms_update_1_remove AFTER UPDATE ON hierarchical_content_nodes
  REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION bm25_row_terms_remove();
CREATE TRIGGER hcn_row_terms_update_2_add AFTER UPDATE ON hierarchical_content_nodes
  REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION bm25_row_terms_add();
CREATE TRIGGER hcn_row_terms_truncate AFTER TRUNCATE ON hierarchical_content_nodes
  FOR EACH STATEMENT EXECUTE FUNCTION bm25_row_terms_clear();

-- the rows already loaded
INSERT INTO bm25_row_terms (lexeme, repository, branch, row_id, tf, doc_len)
SELECT u.lexeme, h.repository, h.branch, h.id, cardinality(u.positions), h.doc_len
  FROM hierarchical_content_nodes h CROSS JOIN LATERAL unnest(h.tsv) AS u;
