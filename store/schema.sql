-- The schema store/migrations/ leave, at version 33. Generated: do not edit.
-- Regenerate with `.venv/bin/python -m store.schema --write` (store/schema.py); tests/test_store_schema.py checks it.

-- extensions

CREATE EXTENSION unaccent;
CREATE EXTENSION vector;

-- text search dictionaries

CREATE TEXT SEARCH DICTIONARY glossator_danish_stop (TEMPLATE = simple, stopwords = 'danish', accept = 'false');
CREATE TEXT SEARCH DICTIONARY glossator_dutch_stop (TEMPLATE = simple, stopwords = 'dutch', accept = 'false');
CREATE TEXT SEARCH DICTIONARY glossator_english_stop (TEMPLATE = simple, stopwords = 'english', accept = 'false');
CREATE TEXT SEARCH DICTIONARY glossator_finnish_stop (TEMPLATE = simple, stopwords = 'finnish', accept = 'false');
CREATE TEXT SEARCH DICTIONARY glossator_french_stop (TEMPLATE = simple, stopwords = 'french', accept = 'false');
CREATE TEXT SEARCH DICTIONARY glossator_german_stop (TEMPLATE = simple, stopwords = 'german', accept = 'false');
CREATE TEXT SEARCH DICTIONARY glossator_hungarian_stop (TEMPLATE = simple, stopwords = 'hungarian', accept = 'false');
CREATE TEXT SEARCH DICTIONARY glossator_italian_stop (TEMPLATE = simple, stopwords = 'italian', accept = 'false');
CREATE TEXT SEARCH DICTIONARY glossator_nepali_stop (TEMPLATE = simple, stopwords = 'nepali', accept = 'false');
CREATE TEXT SEARCH DICTIONARY glossator_norwegian_stop (TEMPLATE = simple, stopwords = 'norwegian', accept = 'false');
CREATE TEXT SEARCH DICTIONARY glossator_portuguese_stop (TEMPLATE = simple, stopwords = 'portuguese', accept = 'false');
CREATE TEXT SEARCH DICTIONARY glossator_russian_stop (TEMPLATE = simple, stopwords = 'russian', accept = 'false');
CREATE TEXT SEARCH DICTIONARY glossator_spanish_stop (TEMPLATE = simple, stopwords = 'spanish', accept = 'false');
CREATE TEXT SEARCH DICTIONARY glossator_swedish_stop (TEMPLATE = simple, stopwords = 'swedish', accept = 'false');
CREATE TEXT SEARCH DICTIONARY glossator_turkish_stop (TEMPLATE = simple, stopwords = 'turkish', accept = 'false');

-- text search configurations

CREATE TEXT SEARCH CONFIGURATION glossator_ar (PARSER = default);
ALTER TEXT SEARCH CONFIGURATION glossator_ar ADD MAPPING FOR asciihword, asciiword, hword, hword_asciipart, hword_part, word WITH unaccent, arabic_stem;
ALTER TEXT SEARCH CONFIGURATION glossator_ar ADD MAPPING FOR email, file, float, host, hword_numpart, int, numhword, numword, sfloat, uint, url, url_path, version WITH simple;
CREATE TEXT SEARCH CONFIGURATION glossator_ca (PARSER = default);
ALTER TEXT SEARCH CONFIGURATION glossator_ca ADD MAPPING FOR asciihword, asciiword, hword, hword_asciipart, hword_part, word WITH unaccent, catalan_stem;
ALTER TEXT SEARCH CONFIGURATION glossator_ca ADD MAPPING FOR email, file, float, host, hword_numpart, int, numhword, numword, sfloat, uint, url, url_path, version WITH simple;
CREATE TEXT SEARCH CONFIGURATION glossator_da (PARSER = default);
ALTER TEXT SEARCH CONFIGURATION glossator_da ADD MAPPING FOR asciihword, asciiword, hword, hword_asciipart, hword_part, word WITH glossator_danish_stop, unaccent, danish_stem;
ALTER TEXT SEARCH CONFIGURATION glossator_da ADD MAPPING FOR email, file, float, host, hword_numpart, int, numhword, numword, sfloat, uint, url, url_path, version WITH simple;
CREATE TEXT SEARCH CONFIGURATION glossator_de (PARSER = default);
ALTER TEXT SEARCH CONFIGURATION glossator_de ADD MAPPING FOR asciihword, asciiword, hword, hword_asciipart, hword_part, word WITH glossator_german_stop, unaccent, german_stem;
ALTER TEXT SEARCH CONFIGURATION glossator_de ADD MAPPING FOR email, file, float, host, hword_numpart, int, numhword, numword, sfloat, uint, url, url_path, version WITH simple;
CREATE TEXT SEARCH CONFIGURATION glossator_el (PARSER = default);
ALTER TEXT SEARCH CONFIGURATION glossator_el ADD MAPPING FOR asciihword, asciiword, hword, hword_asciipart, hword_part, word WITH unaccent, greek_stem;
ALTER TEXT SEARCH CONFIGURATION glossator_el ADD MAPPING FOR email, file, float, host, hword_numpart, int, numhword, numword, sfloat, uint, url, url_path, version WITH simple;
CREATE TEXT SEARCH CONFIGURATION glossator_en (PARSER = default);
ALTER TEXT SEARCH CONFIGURATION glossator_en ADD MAPPING FOR asciihword, asciiword, hword, hword_asciipart, hword_part, word WITH glossator_english_stop, unaccent, english_stem;
ALTER TEXT SEARCH CONFIGURATION glossator_en ADD MAPPING FOR email, file, float, host, hword_numpart, int, numhword, numword, sfloat, uint, url, url_path, version WITH simple;
CREATE TEXT SEARCH CONFIGURATION glossator_es (PARSER = default);
ALTER TEXT SEARCH CONFIGURATION glossator_es ADD MAPPING FOR asciihword, asciiword, hword, hword_asciipart, hword_part, word WITH glossator_spanish_stop, unaccent, spanish_stem;
ALTER TEXT SEARCH CONFIGURATION glossator_es ADD MAPPING FOR email, file, float, host, hword_numpart, int, numhword, numword, sfloat, uint, url, url_path, version WITH simple;
CREATE TEXT SEARCH CONFIGURATION glossator_et (PARSER = default);
ALTER TEXT SEARCH CONFIGURATION glossator_et ADD MAPPING FOR asciihword, asciiword, hword, hword_asciipart, hword_part, word WITH unaccent, estonian_stem;
ALTER TEXT SEARCH CONFIGURATION glossator_et ADD MAPPING FOR email, file, float, host, hword_numpart, int, numhword, numword, sfloat, uint, url, url_path, version WITH simple;
CREATE TEXT SEARCH CONFIGURATION glossator_eu (PARSER = default);
ALTER TEXT SEARCH CONFIGURATION glossator_eu ADD MAPPING FOR asciihword, asciiword, hword, hword_asciipart, hword_part, word WITH unaccent, basque_stem;
ALTER TEXT SEARCH CONFIGURATION glossator_eu ADD MAPPING FOR email, file, float, host, hword_numpart, int, numhword, numword, sfloat, uint, url, url_path, version WITH simple;
CREATE TEXT SEARCH CONFIGURATION glossator_fi (PARSER = default);
ALTER TEXT SEARCH CONFIGURATION glossator_fi ADD MAPPING FOR asciihword, asciiword, hword, hword_asciipart, hword_part, word WITH glossator_finnish_stop, unaccent, finnish_stem;
ALTER TEXT SEARCH CONFIGURATION glossator_fi ADD MAPPING FOR email, file, float, host, hword_numpart, int, numhword, numword, sfloat, uint, url, url_path, version WITH simple;
CREATE TEXT SEARCH CONFIGURATION glossator_fr (PARSER = default);
ALTER TEXT SEARCH CONFIGURATION glossator_fr ADD MAPPING FOR asciihword, asciiword, hword, hword_asciipart, hword_part, word WITH glossator_french_stop, unaccent, french_stem;
ALTER TEXT SEARCH CONFIGURATION glossator_fr ADD MAPPING FOR email, file, float, host, hword_numpart, int, numhword, numword, sfloat, uint, url, url_path, version WITH simple;
CREATE TEXT SEARCH CONFIGURATION glossator_ga (PARSER = default);
ALTER TEXT SEARCH CONFIGURATION glossator_ga ADD MAPPING FOR asciihword, asciiword, hword, hword_asciipart, hword_part, word WITH unaccent, irish_stem;
ALTER TEXT SEARCH CONFIGURATION glossator_ga ADD MAPPING FOR email, file, float, host, hword_numpart, int, numhword, numword, sfloat, uint, url, url_path, version WITH simple;
CREATE TEXT SEARCH CONFIGURATION glossator_hi (PARSER = default);
ALTER TEXT SEARCH CONFIGURATION glossator_hi ADD MAPPING FOR asciihword, asciiword, hword, hword_asciipart, hword_part, word WITH unaccent, hindi_stem;
ALTER TEXT SEARCH CONFIGURATION glossator_hi ADD MAPPING FOR email, file, float, host, hword_numpart, int, numhword, numword, sfloat, uint, url, url_path, version WITH simple;
CREATE TEXT SEARCH CONFIGURATION glossator_hu (PARSER = default);
ALTER TEXT SEARCH CONFIGURATION glossator_hu ADD MAPPING FOR asciihword, asciiword, hword, hword_asciipart, hword_part, word WITH glossator_hungarian_stop, unaccent, hungarian_stem;
ALTER TEXT SEARCH CONFIGURATION glossator_hu ADD MAPPING FOR email, file, float, host, hword_numpart, int, numhword, numword, sfloat, uint, url, url_path, version WITH simple;
CREATE TEXT SEARCH CONFIGURATION glossator_hy (PARSER = default);
ALTER TEXT SEARCH CONFIGURATION glossator_hy ADD MAPPING FOR asciihword, asciiword, hword, hword_asciipart, hword_part, word WITH unaccent, armenian_stem;
ALTER TEXT SEARCH CONFIGURATION glossator_hy ADD MAPPING FOR email, file, float, host, hword_numpart, int, numhword, numword, sfloat, uint, url, url_path, version WITH simple;
CREATE TEXT SEARCH CONFIGURATION glossator_id (PARSER = default);
ALTER TEXT SEARCH CONFIGURATION glossator_id ADD MAPPING FOR asciihword, asciiword, hword, hword_asciipart, hword_part, word WITH unaccent, indonesian_stem;
ALTER TEXT SEARCH CONFIGURATION glossator_id ADD MAPPING FOR email, file, float, host, hword_numpart, int, numhword, numword, sfloat, uint, url, url_path, version WITH simple;
CREATE TEXT SEARCH CONFIGURATION glossator_it (PARSER = default);
ALTER TEXT SEARCH CONFIGURATION glossator_it ADD MAPPING FOR asciihword, asciiword, hword, hword_asciipart, hword_part, word WITH glossator_italian_stop, unaccent, italian_stem;
ALTER TEXT SEARCH CONFIGURATION glossator_it ADD MAPPING FOR email, file, float, host, hword_numpart, int, numhword, numword, sfloat, uint, url, url_path, version WITH simple;
CREATE TEXT SEARCH CONFIGURATION glossator_lt (PARSER = default);
ALTER TEXT SEARCH CONFIGURATION glossator_lt ADD MAPPING FOR asciihword, asciiword, hword, hword_asciipart, hword_part, word WITH unaccent, lithuanian_stem;
ALTER TEXT SEARCH CONFIGURATION glossator_lt ADD MAPPING FOR email, file, float, host, hword_numpart, int, numhword, numword, sfloat, uint, url, url_path, version WITH simple;
CREATE TEXT SEARCH CONFIGURATION glossator_nb (PARSER = default);
ALTER TEXT SEARCH CONFIGURATION glossator_nb ADD MAPPING FOR asciihword, asciiword, hword, hword_asciipart, hword_part, word WITH glossator_norwegian_stop, unaccent, norwegian_stem;
ALTER TEXT SEARCH CONFIGURATION glossator_nb ADD MAPPING FOR email, file, float, host, hword_numpart, int, numhword, numword, sfloat, uint, url, url_path, version WITH simple;
CREATE TEXT SEARCH CONFIGURATION glossator_ne (PARSER = default);
ALTER TEXT SEARCH CONFIGURATION glossator_ne ADD MAPPING FOR asciihword, asciiword, hword, hword_asciipart, hword_part, word WITH glossator_nepali_stop, unaccent, nepali_stem;
ALTER TEXT SEARCH CONFIGURATION glossator_ne ADD MAPPING FOR email, file, float, host, hword_numpart, int, numhword, numword, sfloat, uint, url, url_path, version WITH simple;
CREATE TEXT SEARCH CONFIGURATION glossator_nl (PARSER = default);
ALTER TEXT SEARCH CONFIGURATION glossator_nl ADD MAPPING FOR asciihword, asciiword, hword, hword_asciipart, hword_part, word WITH glossator_dutch_stop, unaccent, dutch_stem;
ALTER TEXT SEARCH CONFIGURATION glossator_nl ADD MAPPING FOR email, file, float, host, hword_numpart, int, numhword, numword, sfloat, uint, url, url_path, version WITH simple;
CREATE TEXT SEARCH CONFIGURATION glossator_nn (PARSER = default);
ALTER TEXT SEARCH CONFIGURATION glossator_nn ADD MAPPING FOR asciihword, asciiword, hword, hword_asciipart, hword_part, word WITH glossator_norwegian_stop, unaccent, norwegian_stem;
ALTER TEXT SEARCH CONFIGURATION glossator_nn ADD MAPPING FOR email, file, float, host, hword_numpart, int, numhword, numword, sfloat, uint, url, url_path, version WITH simple;
CREATE TEXT SEARCH CONFIGURATION glossator_no (PARSER = default);
ALTER TEXT SEARCH CONFIGURATION glossator_no ADD MAPPING FOR asciihword, asciiword, hword, hword_asciipart, hword_part, word WITH glossator_norwegian_stop, unaccent, norwegian_stem;
ALTER TEXT SEARCH CONFIGURATION glossator_no ADD MAPPING FOR email, file, float, host, hword_numpart, int, numhword, numword, sfloat, uint, url, url_path, version WITH simple;
CREATE TEXT SEARCH CONFIGURATION glossator_pt (PARSER = default);
ALTER TEXT SEARCH CONFIGURATION glossator_pt ADD MAPPING FOR asciihword, asciiword, hword, hword_asciipart, hword_part, word WITH glossator_portuguese_stop, unaccent, portuguese_stem;
ALTER TEXT SEARCH CONFIGURATION glossator_pt ADD MAPPING FOR email, file, float, host, hword_numpart, int, numhword, numword, sfloat, uint, url, url_path, version WITH simple;
CREATE TEXT SEARCH CONFIGURATION glossator_ro (PARSER = default);
ALTER TEXT SEARCH CONFIGURATION glossator_ro ADD MAPPING FOR asciihword, asciiword, hword, hword_asciipart, hword_part, word WITH unaccent, romanian_stem;
ALTER TEXT SEARCH CONFIGURATION glossator_ro ADD MAPPING FOR email, file, float, host, hword_numpart, int, numhword, numword, sfloat, uint, url, url_path, version WITH simple;
CREATE TEXT SEARCH CONFIGURATION glossator_ru (PARSER = default);
ALTER TEXT SEARCH CONFIGURATION glossator_ru ADD MAPPING FOR asciihword, asciiword, hword, hword_asciipart, hword_part, word WITH glossator_russian_stop, unaccent, russian_stem;
ALTER TEXT SEARCH CONFIGURATION glossator_ru ADD MAPPING FOR email, file, float, host, hword_numpart, int, numhword, numword, sfloat, uint, url, url_path, version WITH simple;
CREATE TEXT SEARCH CONFIGURATION glossator_simple (PARSER = default);
ALTER TEXT SEARCH CONFIGURATION glossator_simple ADD MAPPING FOR asciihword, asciiword, email, file, float, host, hword_asciipart, hword_numpart, int, numhword, numword, sfloat, uint, url, url_path, version WITH simple;
ALTER TEXT SEARCH CONFIGURATION glossator_simple ADD MAPPING FOR hword, hword_part, word WITH unaccent, simple;
CREATE TEXT SEARCH CONFIGURATION glossator_sr (PARSER = default);
ALTER TEXT SEARCH CONFIGURATION glossator_sr ADD MAPPING FOR asciihword, asciiword, hword, hword_asciipart, hword_part, word WITH unaccent, serbian_stem;
ALTER TEXT SEARCH CONFIGURATION glossator_sr ADD MAPPING FOR email, file, float, host, hword_numpart, int, numhword, numword, sfloat, uint, url, url_path, version WITH simple;
CREATE TEXT SEARCH CONFIGURATION glossator_sv (PARSER = default);
ALTER TEXT SEARCH CONFIGURATION glossator_sv ADD MAPPING FOR asciihword, asciiword, hword, hword_asciipart, hword_part, word WITH glossator_swedish_stop, unaccent, swedish_stem;
ALTER TEXT SEARCH CONFIGURATION glossator_sv ADD MAPPING FOR email, file, float, host, hword_numpart, int, numhword, numword, sfloat, uint, url, url_path, version WITH simple;
CREATE TEXT SEARCH CONFIGURATION glossator_ta (PARSER = default);
ALTER TEXT SEARCH CONFIGURATION glossator_ta ADD MAPPING FOR asciihword, asciiword, hword, hword_asciipart, hword_part, word WITH unaccent, tamil_stem;
ALTER TEXT SEARCH CONFIGURATION glossator_ta ADD MAPPING FOR email, file, float, host, hword_numpart, int, numhword, numword, sfloat, uint, url, url_path, version WITH simple;
CREATE TEXT SEARCH CONFIGURATION glossator_tr (PARSER = default);
ALTER TEXT SEARCH CONFIGURATION glossator_tr ADD MAPPING FOR asciihword, asciiword, hword, hword_asciipart, hword_part, word WITH glossator_turkish_stop, unaccent, turkish_stem;
ALTER TEXT SEARCH CONFIGURATION glossator_tr ADD MAPPING FOR email, file, float, host, hword_numpart, int, numhword, numword, sfloat, uint, url, url_path, version WITH simple;
CREATE TEXT SEARCH CONFIGURATION glossator_yi (PARSER = default);
ALTER TEXT SEARCH CONFIGURATION glossator_yi ADD MAPPING FOR asciihword, asciiword, hword, hword_asciipart, hword_part, word WITH unaccent, yiddish_stem;
ALTER TEXT SEARCH CONFIGURATION glossator_yi ADD MAPPING FOR email, file, float, host, hword_numpart, int, numhword, numword, sfloat, uint, url, url_path, version WITH simple;

-- tables

CREATE TABLE bm25_chapter_terms (
    lexeme text NOT NULL,
    chapter_id bigint NOT NULL,
    tf integer NOT NULL,
    CONSTRAINT bm25_chapter_terms_pkey PRIMARY KEY (lexeme, chapter_id) INCLUDE (tf)
);

CREATE TABLE bm25_chapters (
    id bigint GENERATED ALWAYS AS IDENTITY NOT NULL,
    repository text NOT NULL,
    branch text NOT NULL,
    source_file text NOT NULL,
    work text NOT NULL,
    doc_len bigint NOT NULL,
    n_rows integer NOT NULL,
    CONSTRAINT bm25_chapters_pkey PRIMARY KEY (id),
    CONSTRAINT bm25_chapters_repository_branch_source_file_key UNIQUE (repository, branch, source_file)
);

CREATE TABLE bm25_corpus (
    repository text NOT NULL,
    branch text NOT NULL,
    ts_config regconfig NOT NULL,
    n_docs bigint NOT NULL,
    total_len bigint NOT NULL,
    CONSTRAINT bm25_corpus_pkey PRIMARY KEY (repository, branch, ts_config)
);

CREATE TABLE bm25_row_terms (
    lexeme text NOT NULL,
    repository text NOT NULL,
    branch text NOT NULL,
    row_id bigint NOT NULL,
    tf integer NOT NULL,
    doc_len integer NOT NULL
);

CREATE TABLE branch_tips (
    repository text NOT NULL,
    branch text NOT NULL,
    commit text NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT branch_tips_pkey PRIMARY KEY (repository, branch)
);

CREATE TABLE glossator_job_runs (
    job_id bigint NOT NULL,
    attempt integer NOT NULL,
    repository text NOT NULL,
    branch text NOT NULL,
    status text NOT NULL,
    tip text,
    result_commit text,
    error text,
    stats jsonb,
    started_at timestamp with time zone DEFAULT now() NOT NULL,
    finished_at timestamp with time zone,
    progress jsonb,
    worker text,
    CONSTRAINT glossator_job_runs_pkey PRIMARY KEY (job_id, attempt),
    CONSTRAINT glossator_job_runs_status_check CHECK ((status = ANY (ARRAY['running'::text, 'done'::text, 'problems'::text, 'failed'::text])))
);

CREATE TABLE glossator_languages (
    iso text NOT NULL,
    pg_name text NOT NULL,
    cfg regconfig,
    CONSTRAINT glossator_languages_pkey PRIMARY KEY (iso)
);

CREATE TABLE hierarchical_content_nodes (
    id bigint DEFAULT nextval('hierarchical_content_nodes_id_seq'::regclass) NOT NULL,
    repository text NOT NULL,
    branch text DEFAULT 'main'::text NOT NULL,
    level smallint NOT NULL,
    parent_source_file text,
    node_type text NOT NULL,
    source_file text NOT NULL,
    source_file_hash text NOT NULL,
    chunk_index integer NOT NULL,
    heading_path text NOT NULL,
    content text NOT NULL,
    content_token_count integer NOT NULL,
    embedding_model text,
    embedding vector,
    work text NOT NULL,
    lang text DEFAULT 'fr'::text NOT NULL,
    line_start integer,
    line_end integer,
    ts_config regconfig DEFAULT 'glossator_fr'::regconfig NOT NULL,
    tsv tsvector NOT NULL,
    doc_len integer NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT hcn_unique_chunk UNIQUE (repository, branch, source_file, chunk_index),
    CONSTRAINT hcn_vector_has_model CHECK (((embedding IS NULL) = (embedding_model IS NULL))),
    CONSTRAINT hierarchical_content_nodes_chunk_index_check CHECK ((chunk_index >= 0)),
    CONSTRAINT hierarchical_content_nodes_level_check CHECK (((level >= 0) AND (level <= 3))),
    CONSTRAINT hierarchical_content_nodes_node_type_check CHECK ((node_type = ANY (ARRAY['source'::text, 'section_summary'::text, 'part_summary'::text, 'work_summary'::text]))),
    CONSTRAINT hierarchical_content_nodes_pkey PRIMARY KEY (id)
);

CREATE TABLE indexed_commits (
    repository text NOT NULL,
    branch text NOT NULL,
    commit text NOT NULL,
    job_id bigint,
    indexed_at timestamp with time zone DEFAULT now() NOT NULL,
    problems jsonb DEFAULT '[]'::jsonb NOT NULL,
    CONSTRAINT indexed_commits_pkey PRIMARY KEY (repository, branch)
);

CREATE TABLE loaded_files (
    repository text NOT NULL,
    branch text NOT NULL,
    source_file text NOT NULL,
    source_file_hash text NOT NULL,
    sidecar_hash text NOT NULL,
    embedding_model text,
    chunk_count integer NOT NULL,
    loaded_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT loaded_files_pkey PRIMARY KEY (repository, branch, source_file)
);

CREATE TABLE repository_heads (
    repository text NOT NULL,
    branch text NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT repository_heads_pkey PRIMARY KEY (repository)
);

CREATE TABLE schema_migrations (
    version integer NOT NULL,
    name text NOT NULL,
    checksum text NOT NULL,
    applied_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT schema_migrations_pkey PRIMARY KEY (version)
);

CREATE TABLE search_calibrations (
    model text NOT NULL,
    branch text NOT NULL,
    repository text NOT NULL,
    work text NOT NULL,
    languages text NOT NULL,
    state text NOT NULL,
    payload jsonb NOT NULL,
    computed_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT search_calibrations_pkey PRIMARY KEY (model, branch, repository, work, languages)
);

CREATE TABLE vector_indexes (
    embedding_model text NOT NULL,
    dimension integer NOT NULL,
    index_name text NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT vector_indexes_dimension_check CHECK ((dimension > 0)),
    CONSTRAINT vector_indexes_index_name_key UNIQUE (index_name),
    CONSTRAINT vector_indexes_pkey PRIMARY KEY (embedding_model)
);

-- indexes

CREATE INDEX bm25_chapter_terms_chapter ON public.bm25_chapter_terms USING btree (chapter_id);
CREATE INDEX bm25_row_terms_lookup ON public.bm25_row_terms USING btree (lexeme, repository, branch) INCLUDE (row_id, tf, doc_len);
CREATE INDEX bm25_row_terms_row ON public.bm25_row_terms USING btree (row_id);
CREATE INDEX glossator_job_runs_branch ON public.glossator_job_runs USING btree (repository, branch, started_at);
CREATE INDEX hcn_filters ON public.hierarchical_content_nodes USING btree (repository, branch, work, level);
CREATE INDEX hcn_parent ON public.hierarchical_content_nodes USING btree (repository, branch, parent_source_file);

-- functions

CREATE OR REPLACE FUNCTION public.bm25_chapters_add()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
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
$function$;

CREATE OR REPLACE FUNCTION public.bm25_chapters_clear()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
BEGIN
  TRUNCATE bm25_chapter_terms, bm25_chapters;
  RETURN NULL;
END
$function$;

CREATE OR REPLACE FUNCTION public.bm25_chapters_remove()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
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
$function$;

CREATE OR REPLACE FUNCTION public.bm25_corpus_add()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
BEGIN
  -- ORDER BY: concurrent writers lock the statistics rows in one order (no deadlock).
  INSERT INTO bm25_corpus AS b (repository, branch, ts_config, n_docs, total_len)
  SELECT repository, branch, ts_config, count(*), sum(doc_len)
    FROM new_rows GROUP BY 1, 2, 3 ORDER BY 1, 2, 3
  ON CONFLICT (repository, branch, ts_config) DO UPDATE
    SET n_docs = b.n_docs + excluded.n_docs, total_len = b.total_len + excluded.total_len;
  RETURN NULL;
END
$function$;

CREATE OR REPLACE FUNCTION public.bm25_corpus_change()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
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
$function$;

CREATE OR REPLACE FUNCTION public.bm25_corpus_clear()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
BEGIN
  DELETE FROM bm25_corpus;
  RETURN NULL;
END
$function$;

CREATE OR REPLACE FUNCTION public.bm25_corpus_remove()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
BEGIN
  UPDATE bm25_corpus AS b
     SET n_docs = b.n_docs - g.n, total_len = b.total_len - g.len
    FROM (SELECT repository, branch, ts_config, count(*) AS n, sum(doc_len) AS len
            FROM old_rows GROUP BY 1, 2, 3 ORDER BY 1, 2, 3) AS g
   WHERE b.repository = g.repository AND b.branch = g.branch AND b.ts_config = g.ts_config;
  DELETE FROM bm25_corpus WHERE n_docs <= 0;
  RETURN NULL;
END
$function$;

CREATE OR REPLACE FUNCTION public.bm25_row_terms_add()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
BEGIN
  IF glossator_bulk_loading() THEN
    RETURN NULL;  -- glossator_bulk_index() writes them at the end of the load
  END IF;
  INSERT INTO bm25_row_terms (lexeme, repository, branch, row_id, tf, doc_len)
  SELECT u.lexeme, n.repository, n.branch, n.id, cardinality(u.positions), n.doc_len
    FROM new_rows n CROSS JOIN LATERAL unnest(n.tsv) AS u;
  RETURN NULL;
END
$function$;

CREATE OR REPLACE FUNCTION public.bm25_row_terms_clear()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
BEGIN
  TRUNCATE bm25_row_terms;
  RETURN NULL;
END
$function$;

CREATE OR REPLACE FUNCTION public.bm25_row_terms_remove()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
BEGIN
  DELETE FROM bm25_row_terms t USING (SELECT DISTINCT id FROM old_rows) AS o
   WHERE t.row_id = o.id;
  RETURN NULL;
END
$function$;

CREATE OR REPLACE FUNCTION public.glossator_bulk_chapters(repo text, br text, files text[])
 RETURNS void
 LANGUAGE sql
AS $function$
  INSERT INTO bm25_chapters AS c (repository, branch, source_file, work, doc_len, n_rows)
  SELECT repository, branch, source_file, min(work), sum(doc_len), count(*)
    FROM hierarchical_content_nodes
   WHERE repository = repo AND branch = br AND source_file = ANY(files) AND level = 0
   GROUP BY 1, 2, 3 ORDER BY 1, 2, 3
  ON CONFLICT (repository, branch, source_file) DO UPDATE
    SET doc_len = c.doc_len + excluded.doc_len, n_rows = c.n_rows + excluded.n_rows,
        work = excluded.work
$function$;

CREATE OR REPLACE FUNCTION public.glossator_bulk_index(repo text, br text, files text[])
 RETURNS void
 LANGUAGE plpgsql
 SET enable_nestloop TO 'off'
AS $function$
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
$function$;

CREATE OR REPLACE FUNCTION public.glossator_bulk_loading()
 RETURNS boolean
 LANGUAGE sql
 STABLE PARALLEL SAFE
AS $function$
  SELECT coalesce(current_setting('glossator.bulk_load', true), '') = 'on'
$function$;

CREATE OR REPLACE FUNCTION public.glossator_bulk_rebuild(repo text, br text)
 RETURNS void
 LANGUAGE plpgsql
 SET maintenance_work_mem TO '256MB'
 SET enable_nestloop TO 'off'
AS $function$
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
$function$;

CREATE OR REPLACE FUNCTION public.glossator_lexeme_text(tsv tsvector)
 RETURNS text
 LANGUAGE sql
 IMMUTABLE PARALLEL SAFE
AS $function$
  SELECT coalesce(string_agg(u.lexeme, ' ' ORDER BY p.pos, u.lexeme), '')
    FROM unnest(tsv) AS u, unnest(coalesce(u.positions, '{1}'::smallint[])) AS p(pos)
$function$;

CREATE OR REPLACE FUNCTION public.glossator_ts_config(lang text)
 RETURNS regconfig
 LANGUAGE sql
 STABLE PARALLEL SAFE
AS $function$
  SELECT coalesce(
    (SELECT cfg FROM glossator_languages
      WHERE iso = lower(split_part(replace(coalesce(lang, 'fr'), '_', '-'), '-', 1))),
    'glossator_simple'::regconfig)
$function$;

CREATE OR REPLACE FUNCTION public.glossator_tsv_len(tsv tsvector)
 RETURNS integer
 LANGUAGE sql
 IMMUTABLE PARALLEL SAFE
AS $function$
  SELECT coalesce(sum(cardinality(u.positions)), 0)::integer FROM unnest(tsv) AS u
$function$;

CREATE OR REPLACE FUNCTION public.glossator_tsvector(cfg regconfig, content text)
 RETURNS tsvector
 LANGUAGE sql
 IMMUTABLE PARALLEL SAFE
AS $function$
      SELECT CASE WHEN cfg = 'glossator_fr'::regconfig
                  THEN ts_delete(to_tsvector(cfg, content), ARRAY['le', 'a'])
                  ELSE to_tsvector(cfg, content) END
    $function$;

CREATE OR REPLACE FUNCTION public.hcn_fill_text_search()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
BEGIN
  NEW.ts_config := glossator_ts_config(NEW.lang);
  NEW.tsv := glossator_tsvector(NEW.ts_config, NEW.content);
  NEW.doc_len := glossator_tsv_len(NEW.tsv);
  RETURN NEW;
END
$function$;

-- triggers

CREATE TRIGGER hcn_bm25_delete AFTER DELETE ON public.hierarchical_content_nodes REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION bm25_corpus_remove();
CREATE TRIGGER hcn_bm25_insert AFTER INSERT ON public.hierarchical_content_nodes REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION bm25_corpus_add();
CREATE TRIGGER hcn_bm25_truncate AFTER TRUNCATE ON public.hierarchical_content_nodes FOR EACH STATEMENT EXECUTE FUNCTION bm25_corpus_clear();
CREATE TRIGGER hcn_bm25_update AFTER UPDATE ON public.hierarchical_content_nodes REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION bm25_corpus_change();
CREATE TRIGGER hcn_chapters_delete AFTER DELETE ON public.hierarchical_content_nodes REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION bm25_chapters_remove();
CREATE TRIGGER hcn_chapters_insert AFTER INSERT ON public.hierarchical_content_nodes REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION bm25_chapters_add();
CREATE TRIGGER hcn_chapters_truncate AFTER TRUNCATE ON public.hierarchical_content_nodes FOR EACH STATEMENT EXECUTE FUNCTION bm25_chapters_clear();
CREATE TRIGGER hcn_chapters_update_1_remove AFTER UPDATE ON public.hierarchical_content_nodes REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION bm25_chapters_remove();
CREATE TRIGGER hcn_chapters_update_2_add AFTER UPDATE ON public.hierarchical_content_nodes REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION bm25_chapters_add();
CREATE TRIGGER hcn_row_terms_delete AFTER DELETE ON public.hierarchical_content_nodes REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION bm25_row_terms_remove();
CREATE TRIGGER hcn_row_terms_insert AFTER INSERT ON public.hierarchical_content_nodes REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION bm25_row_terms_add();
CREATE TRIGGER hcn_row_terms_truncate AFTER TRUNCATE ON public.hierarchical_content_nodes FOR EACH STATEMENT EXECUTE FUNCTION bm25_row_terms_clear();
CREATE TRIGGER hcn_row_terms_update_1_remove AFTER UPDATE ON public.hierarchical_content_nodes REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION bm25_row_terms_remove();
CREATE TRIGGER hcn_row_terms_update_2_add AFTER UPDATE ON public.hierarchical_content_nodes REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION bm25_row_terms_add();
CREATE TRIGGER hcn_text_search BEFORE INSERT OR UPDATE OF content, lang, ts_config, tsv, doc_len ON public.hierarchical_content_nodes FOR EACH ROW EXECUTE FUNCTION hcn_fill_text_search();
