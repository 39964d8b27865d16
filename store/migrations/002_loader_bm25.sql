-- Glossator schema, version 2: what the loader and the BM25 backend need.
--
-- * tsv, doc_len and ts_config are computed by the database from (lang, content)
--   in a BEFORE trigger, so the loader's binary COPY sends only the sidecar's data
--   and no client can store a tsvector that disagrees with its text.
-- * bm25_corpus keeps N (documents) and the total length per (repository, branch,
--   text search configuration), maintained by statement triggers with transition
--   tables: exact under any mix of partial reloads, deletes and rollbacks, because
--   it changes in the same transaction as the rows. Document frequencies are not
--   stored: the query counts them over the rows its GIN match returns (store.keyword).
-- * loaded_files records each file loaded (with the sha256 of its sidecar), even
--   one with no chunks: the loader skips a file only when its whole sidecar is
--   unchanged (a parent's new title changes a child's heading_path, not its .md).
-- * vector_indexes records the HNSW index made for each embedding model
--   (store.vectors), with the model's dimension.

CREATE TABLE loaded_files (
    repository       text    NOT NULL,
    branch           text    NOT NULL,
    source_file      text    NOT NULL,
    source_file_hash text    NOT NULL,
    sidecar_hash     text    NOT NULL,
    embedding_model  text,
    chunk_count      integer NOT NULL,
    loaded_at        timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (repository, branch, source_file)
);

-- A work's lang ('fr', 'en-GB', …) to its text search configuration (unaccent first).
CREATE FUNCTION glossator_ts_config(lang text) RETURNS regconfig
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT CASE lower(split_part(coalesce(lang, 'fr'), '-', 1))
    WHEN 'fr' THEN 'glossator_fr'::regconfig
    WHEN 'en' THEN 'glossator_en'::regconfig
    WHEN 'de' THEN 'glossator_de'::regconfig
    ELSE 'glossator_simple'::regconfig
  END
$$;

-- Length of a document as BM25 counts it: lexeme occurrences (stop words excluded).
CREATE FUNCTION glossator_tsv_len(tsv tsvector) RETURNS integer
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT coalesce(sum(cardinality(u.positions)), 0)::integer FROM unnest(tsv) AS u
$$;

CREATE FUNCTION hcn_fill_text_search() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  NEW.ts_config := glossator_ts_config(NEW.lang);
  NEW.tsv := to_tsvector(NEW.ts_config, NEW.content);
  NEW.doc_len := glossator_tsv_len(NEW.tsv);
  RETURN NEW;
END
$$;

CREATE TRIGGER hcn_text_search
  BEFORE INSERT OR UPDATE OF content, lang, ts_config, tsv, doc_len ON hierarchical_content_nodes
  FOR EACH ROW EXECUTE FUNCTION hcn_fill_text_search();

CREATE TABLE bm25_corpus (
    repository  text      NOT NULL,
    branch      text      NOT NULL,
    ts_config   regconfig NOT NULL,
    n_docs      bigint    NOT NULL,
    total_len   bigint    NOT NULL,
    PRIMARY KEY (repository, branch, ts_config)
);

CREATE FUNCTION bm25_corpus_add() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  -- ORDER BY: concurrent writers lock the statistics rows in one order (no deadlock).
  INSERT INTO bm25_corpus AS b (repository, branch, ts_config, n_docs, total_len)
  SELECT repository, branch, ts_config, count(*), sum(doc_len)
    FROM new_rows GROUP BY 1, 2, 3 ORDER BY 1, 2, 3
  ON CONFLICT (repository, branch, ts_config) DO UPDATE
    SET n_docs = b.n_docs + excluded.n_docs, total_len = b.total_len + excluded.total_len;
  RETURN NULL;
END
$$;

CREATE FUNCTION bm25_corpus_remove() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  UPDATE bm25_corpus AS b
     SET n_docs = b.n_docs - g.n, total_len = b.total_len - g.len
    FROM (SELECT repository, branch, ts_config, count(*) AS n, sum(doc_len) AS len
            FROM old_rows GROUP BY 1, 2, 3 ORDER BY 1, 2, 3) AS g
   WHERE b.repository = g.repository AND b.branch = g.branch AND b.ts_config = g.ts_config;
  DELETE FROM bm25_corpus WHERE n_docs <= 0;
  RETURN NULL;
END
$$;

CREATE FUNCTION bm25_corpus_change() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  UPDATE bm25_corpus AS b
     SET n_docs = b.n_docs - g.n, total_len = b.total_len - g.len
    FROM (SELECT repository, branch, ts_config, count(*) AS n, sum(doc_len) AS len
            FROM old_rows GROUP BY 1, 2, 3 ORDER BY 1, 2, 3) AS g
   WHERE b.repository = g.repository AND b.branch = g.branch AND b.ts_config = g.ts_config;
  INSERT INTO bm25_corpus AS b (repository, branch, ts_config, n_docs, total_len)
  SELECT repository, branch, ts_config, count(*), sum(doc_len)
    FROM new_rows GROUP BY 1, 2, 3 ORDER BY 1, 2, 3
  ON CONFLICT (repository, branch, ts_config) DO UPDATE
    SET n_docs = b.n_docs + excluded.n_docs, total_len = b.total_len + excluded.total_len;
  DELETE FROM bm25_corpus WHERE n_docs <= 0;
  RETURN NULL;
END
$$;

CREATE FUNCTION bm25_corpus_clear() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM bm25_corpus;
  RETURN NULL;
END
$$;

CREATE TRIGGER hcn_bm25_insert AFTER INSERT ON hierarchical_content_nodes
  REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION bm25_corpus_add();
CREATE TRIGGER hcn_bm25_delete AFTER DELETE ON hierarchical_content_nodes
  REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION bm25_corpus_remove();
CREATE TRIGGER hcn_bm25_update AFTER UPDATE ON hierarchical_content_nodes
  REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION bm25_corpus_change();
CREATE TRIGGER hcn_bm25_truncate AFTER TRUNCATE ON hierarchical_content_nodes
  FOR EACH STATEMENT EXECUTE FUNCTION bm25_corpus_clear();

CREATE TABLE vector_indexes (
    embedding_model text    PRIMARY KEY,
    dimension       integer NOT NULL CHECK (dimension > 0),
    index_name      text    NOT NULL UNIQUE,
    created_at      timestamptz NOT NULL DEFAULT now()
);
