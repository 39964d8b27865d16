-- The schema store/migrations/ leave, at version 60. Generated: do not edit.
-- Regenerate with `.venv/bin/python -m store.schema --write` (store/schema.py); tests/test_store_schema.py checks it.

-- extensions

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
ALTER TEXT SEARCH CONFIGURATION glossator_ar ADD MAPPING FOR asciihword, asciiword, email, file, float, host, hword, hword_asciipart, hword_numpart, hword_part, int, numhword, numword, sfloat, uint, url, url_path, version, word WITH simple;
CREATE TEXT SEARCH CONFIGURATION glossator_ca (PARSER = default);
ALTER TEXT SEARCH CONFIGURATION glossator_ca ADD MAPPING FOR asciihword, asciiword, email, file, float, host, hword, hword_asciipart, hword_numpart, hword_part, int, numhword, numword, sfloat, uint, url, url_path, version, word WITH simple;
CREATE TEXT SEARCH CONFIGURATION glossator_da (PARSER = default);
ALTER TEXT SEARCH CONFIGURATION glossator_da ADD MAPPING FOR asciihword, asciiword, hword, hword_asciipart, hword_part, word WITH glossator_danish_stop, simple;
ALTER TEXT SEARCH CONFIGURATION glossator_da ADD MAPPING FOR email, file, float, host, hword_numpart, int, numhword, numword, sfloat, uint, url, url_path, version WITH simple;
CREATE TEXT SEARCH CONFIGURATION glossator_de (PARSER = default);
ALTER TEXT SEARCH CONFIGURATION glossator_de ADD MAPPING FOR asciihword, asciiword, hword, hword_asciipart, hword_part, word WITH glossator_german_stop, simple;
ALTER TEXT SEARCH CONFIGURATION glossator_de ADD MAPPING FOR email, file, float, host, hword_numpart, int, numhword, numword, sfloat, uint, url, url_path, version WITH simple;
CREATE TEXT SEARCH CONFIGURATION glossator_el (PARSER = default);
ALTER TEXT SEARCH CONFIGURATION glossator_el ADD MAPPING FOR asciihword, asciiword, email, file, float, host, hword, hword_asciipart, hword_numpart, hword_part, int, numhword, numword, sfloat, uint, url, url_path, version, word WITH simple;
CREATE TEXT SEARCH CONFIGURATION glossator_en (PARSER = default);
ALTER TEXT SEARCH CONFIGURATION glossator_en ADD MAPPING FOR asciihword, asciiword, hword, hword_asciipart, hword_part, word WITH glossator_english_stop, simple;
ALTER TEXT SEARCH CONFIGURATION glossator_en ADD MAPPING FOR email, file, float, host, hword_numpart, int, numhword, numword, sfloat, uint, url, url_path, version WITH simple;
CREATE TEXT SEARCH CONFIGURATION glossator_es (PARSER = default);
ALTER TEXT SEARCH CONFIGURATION glossator_es ADD MAPPING FOR asciihword, asciiword, hword, hword_asciipart, hword_part, word WITH glossator_spanish_stop, simple;
ALTER TEXT SEARCH CONFIGURATION glossator_es ADD MAPPING FOR email, file, float, host, hword_numpart, int, numhword, numword, sfloat, uint, url, url_path, version WITH simple;
CREATE TEXT SEARCH CONFIGURATION glossator_eu (PARSER = default);
ALTER TEXT SEARCH CONFIGURATION glossator_eu ADD MAPPING FOR asciihword, asciiword, email, file, float, host, hword, hword_asciipart, hword_numpart, hword_part, int, numhword, numword, sfloat, uint, url, url_path, version, word WITH simple;
CREATE TEXT SEARCH CONFIGURATION glossator_fi (PARSER = default);
ALTER TEXT SEARCH CONFIGURATION glossator_fi ADD MAPPING FOR asciihword, asciiword, hword, hword_asciipart, hword_part, word WITH glossator_finnish_stop, simple;
ALTER TEXT SEARCH CONFIGURATION glossator_fi ADD MAPPING FOR email, file, float, host, hword_numpart, int, numhword, numword, sfloat, uint, url, url_path, version WITH simple;
CREATE TEXT SEARCH CONFIGURATION glossator_fr (PARSER = default);
ALTER TEXT SEARCH CONFIGURATION glossator_fr ADD MAPPING FOR asciihword, asciiword, hword, hword_asciipart, hword_part, word WITH glossator_french_stop, simple;
ALTER TEXT SEARCH CONFIGURATION glossator_fr ADD MAPPING FOR email, file, float, host, hword_numpart, int, numhword, numword, sfloat, uint, url, url_path, version WITH simple;
CREATE TEXT SEARCH CONFIGURATION glossator_ga (PARSER = default);
ALTER TEXT SEARCH CONFIGURATION glossator_ga ADD MAPPING FOR asciihword, asciiword, email, file, float, host, hword, hword_asciipart, hword_numpart, hword_part, int, numhword, numword, sfloat, uint, url, url_path, version, word WITH simple;
CREATE TEXT SEARCH CONFIGURATION glossator_hi (PARSER = default);
ALTER TEXT SEARCH CONFIGURATION glossator_hi ADD MAPPING FOR asciihword, asciiword, email, file, float, host, hword, hword_asciipart, hword_numpart, hword_part, int, numhword, numword, sfloat, uint, url, url_path, version, word WITH simple;
CREATE TEXT SEARCH CONFIGURATION glossator_hu (PARSER = default);
ALTER TEXT SEARCH CONFIGURATION glossator_hu ADD MAPPING FOR asciihword, asciiword, hword, hword_asciipart, hword_part, word WITH glossator_hungarian_stop, simple;
ALTER TEXT SEARCH CONFIGURATION glossator_hu ADD MAPPING FOR email, file, float, host, hword_numpart, int, numhword, numword, sfloat, uint, url, url_path, version WITH simple;
CREATE TEXT SEARCH CONFIGURATION glossator_hy (PARSER = default);
ALTER TEXT SEARCH CONFIGURATION glossator_hy ADD MAPPING FOR asciihword, asciiword, email, file, float, host, hword, hword_asciipart, hword_numpart, hword_part, int, numhword, numword, sfloat, uint, url, url_path, version, word WITH simple;
CREATE TEXT SEARCH CONFIGURATION glossator_id (PARSER = default);
ALTER TEXT SEARCH CONFIGURATION glossator_id ADD MAPPING FOR asciihword, asciiword, email, file, float, host, hword, hword_asciipart, hword_numpart, hword_part, int, numhword, numword, sfloat, uint, url, url_path, version, word WITH simple;
CREATE TEXT SEARCH CONFIGURATION glossator_it (PARSER = default);
ALTER TEXT SEARCH CONFIGURATION glossator_it ADD MAPPING FOR asciihword, asciiword, hword, hword_asciipart, hword_part, word WITH glossator_italian_stop, simple;
ALTER TEXT SEARCH CONFIGURATION glossator_it ADD MAPPING FOR email, file, float, host, hword_numpart, int, numhword, numword, sfloat, uint, url, url_path, version WITH simple;
CREATE TEXT SEARCH CONFIGURATION glossator_lt (PARSER = default);
ALTER TEXT SEARCH CONFIGURATION glossator_lt ADD MAPPING FOR asciihword, asciiword, email, file, float, host, hword, hword_asciipart, hword_numpart, hword_part, int, numhword, numword, sfloat, uint, url, url_path, version, word WITH simple;
CREATE TEXT SEARCH CONFIGURATION glossator_nb (PARSER = default);
ALTER TEXT SEARCH CONFIGURATION glossator_nb ADD MAPPING FOR asciihword, asciiword, hword, hword_asciipart, hword_part, word WITH glossator_norwegian_stop, simple;
ALTER TEXT SEARCH CONFIGURATION glossator_nb ADD MAPPING FOR email, file, float, host, hword_numpart, int, numhword, numword, sfloat, uint, url, url_path, version WITH simple;
CREATE TEXT SEARCH CONFIGURATION glossator_ne (PARSER = default);
ALTER TEXT SEARCH CONFIGURATION glossator_ne ADD MAPPING FOR asciihword, asciiword, hword, hword_asciipart, hword_part, word WITH glossator_nepali_stop, simple;
ALTER TEXT SEARCH CONFIGURATION glossator_ne ADD MAPPING FOR email, file, float, host, hword_numpart, int, numhword, numword, sfloat, uint, url, url_path, version WITH simple;
CREATE TEXT SEARCH CONFIGURATION glossator_nl (PARSER = default);
ALTER TEXT SEARCH CONFIGURATION glossator_nl ADD MAPPING FOR asciihword, asciiword, hword, hword_asciipart, hword_part, word WITH glossator_dutch_stop, simple;
ALTER TEXT SEARCH CONFIGURATION glossator_nl ADD MAPPING FOR email, file, float, host, hword_numpart, int, numhword, numword, sfloat, uint, url, url_path, version WITH simple;
CREATE TEXT SEARCH CONFIGURATION glossator_nn (PARSER = default);
ALTER TEXT SEARCH CONFIGURATION glossator_nn ADD MAPPING FOR asciihword, asciiword, hword, hword_asciipart, hword_part, word WITH glossator_norwegian_stop, simple;
ALTER TEXT SEARCH CONFIGURATION glossator_nn ADD MAPPING FOR email, file, float, host, hword_numpart, int, numhword, numword, sfloat, uint, url, url_path, version WITH simple;
CREATE TEXT SEARCH CONFIGURATION glossator_no (PARSER = default);
ALTER TEXT SEARCH CONFIGURATION glossator_no ADD MAPPING FOR asciihword, asciiword, hword, hword_asciipart, hword_part, word WITH glossator_norwegian_stop, simple;
ALTER TEXT SEARCH CONFIGURATION glossator_no ADD MAPPING FOR email, file, float, host, hword_numpart, int, numhword, numword, sfloat, uint, url, url_path, version WITH simple;
CREATE TEXT SEARCH CONFIGURATION glossator_pt (PARSER = default);
ALTER TEXT SEARCH CONFIGURATION glossator_pt ADD MAPPING FOR asciihword, asciiword, hword, hword_asciipart, hword_part, word WITH glossator_portuguese_stop, simple;
ALTER TEXT SEARCH CONFIGURATION glossator_pt ADD MAPPING FOR email, file, float, host, hword_numpart, int, numhword, numword, sfloat, uint, url, url_path, version WITH simple;
CREATE TEXT SEARCH CONFIGURATION glossator_ro (PARSER = default);
ALTER TEXT SEARCH CONFIGURATION glossator_ro ADD MAPPING FOR asciihword, asciiword, email, file, float, host, hword, hword_asciipart, hword_numpart, hword_part, int, numhword, numword, sfloat, uint, url, url_path, version, word WITH simple;
CREATE TEXT SEARCH CONFIGURATION glossator_ru (PARSER = default);
ALTER TEXT SEARCH CONFIGURATION glossator_ru ADD MAPPING FOR asciihword, asciiword, hword, hword_asciipart, hword_part, word WITH glossator_russian_stop, simple;
ALTER TEXT SEARCH CONFIGURATION glossator_ru ADD MAPPING FOR email, file, float, host, hword_numpart, int, numhword, numword, sfloat, uint, url, url_path, version WITH simple;
CREATE TEXT SEARCH CONFIGURATION glossator_simple (PARSER = default);
ALTER TEXT SEARCH CONFIGURATION glossator_simple ADD MAPPING FOR asciihword, asciiword, email, file, float, host, hword, hword_asciipart, hword_numpart, hword_part, int, numhword, numword, sfloat, uint, url, url_path, version, word WITH simple;
CREATE TEXT SEARCH CONFIGURATION glossator_sr (PARSER = default);
ALTER TEXT SEARCH CONFIGURATION glossator_sr ADD MAPPING FOR asciihword, asciiword, email, file, float, host, hword, hword_asciipart, hword_numpart, hword_part, int, numhword, numword, sfloat, uint, url, url_path, version, word WITH simple;
CREATE TEXT SEARCH CONFIGURATION glossator_sv (PARSER = default);
ALTER TEXT SEARCH CONFIGURATION glossator_sv ADD MAPPING FOR asciihword, asciiword, hword, hword_asciipart, hword_part, word WITH glossator_swedish_stop, simple;
ALTER TEXT SEARCH CONFIGURATION glossator_sv ADD MAPPING FOR email, file, float, host, hword_numpart, int, numhword, numword, sfloat, uint, url, url_path, version WITH simple;
CREATE TEXT SEARCH CONFIGURATION glossator_ta (PARSER = default);
ALTER TEXT SEARCH CONFIGURATION glossator_ta ADD MAPPING FOR asciihword, asciiword, email, file, float, host, hword, hword_asciipart, hword_numpart, hword_part, int, numhword, numword, sfloat, uint, url, url_path, version, word WITH simple;
CREATE TEXT SEARCH CONFIGURATION glossator_tr (PARSER = default);
ALTER TEXT SEARCH CONFIGURATION glossator_tr ADD MAPPING FOR asciihword, asciiword, hword, hword_asciipart, hword_part, word WITH glossator_turkish_stop, simple;
ALTER TEXT SEARCH CONFIGURATION glossator_tr ADD MAPPING FOR email, file, float, host, hword_numpart, int, numhword, numword, sfloat, uint, url, url_path, version WITH simple;
CREATE TEXT SEARCH CONFIGURATION glossator_yi (PARSER = default);
ALTER TEXT SEARCH CONFIGURATION glossator_yi ADD MAPPING FOR asciihword, asciiword, email, file, float, host, hword, hword_asciipart, hword_numpart, hword_part, int, numhword, numword, sfloat, uint, url, url_path, version, word WITH simple;

-- tables

CREATE TABLE access_tokens (
    id bigint GENERATED ALWAYS AS IDENTITY NOT NULL,
    digest text NOT NULL,
    role text NOT NULL,
    repositories text[],
    note text DEFAULT ''::text NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    revoked_at timestamp with time zone,
    CONSTRAINT access_tokens_digest_check CHECK ((digest ~ '^[0-9a-f]{64}$'::text)),
    CONSTRAINT access_tokens_digest_key UNIQUE (digest),
    CONSTRAINT access_tokens_pkey PRIMARY KEY (id),
    CONSTRAINT access_tokens_role_check CHECK ((role = ANY (ARRAY['read'::text, 'push'::text, 'admin'::text])))
);

CREATE TABLE branch_languages (
    repository text NOT NULL,
    branch text NOT NULL,
    ts_config regconfig NOT NULL,
    n_docs bigint NOT NULL,
    total_len bigint NOT NULL,
    CONSTRAINT branch_languages_pkey PRIMARY KEY (repository, branch, ts_config)
);

CREATE TABLE branch_tips (
    repository text NOT NULL,
    branch text NOT NULL,
    commit text NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT branch_tips_pkey PRIMARY KEY (repository, branch)
);

CREATE TABLE chapter_documents (
    id bigint GENERATED ALWAYS AS IDENTITY NOT NULL,
    repository text NOT NULL,
    branch text NOT NULL,
    source_file text NOT NULL,
    work text NOT NULL,
    lexemes text NOT NULL,
    doc_len bigint NOT NULL,
    n_rows integer NOT NULL,
    CONSTRAINT chapter_documents_pkey PRIMARY KEY (id),
    CONSTRAINT chapter_documents_repository_branch_source_file_key UNIQUE (repository, branch, source_file)
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

CREATE TABLE landed_vectors (
    node_id bigint NOT NULL,
    repository text NOT NULL,
    branch text NOT NULL,
    work text NOT NULL,
    level smallint NOT NULL,
    node_type text NOT NULL,
    model text NOT NULL,
    vector vector NOT NULL,
    CONSTRAINT landed_vectors_pkey PRIMARY KEY (node_id)
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

CREATE TABLE vector_coverage (
    repository text NOT NULL,
    branch text NOT NULL,
    total integer NOT NULL,
    missing integer NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT vector_coverage_pkey PRIMARY KEY (repository, branch)
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

CREATE INDEX glossator_job_runs_branch ON public.glossator_job_runs USING btree (repository, branch, started_at);
CREATE INDEX hcn_filters ON public.hierarchical_content_nodes USING btree (repository, branch, work, level);
CREATE INDEX hcn_parent ON public.hierarchical_content_nodes USING btree (repository, branch, parent_source_file);
CREATE INDEX landed_vectors_branch ON public.landed_vectors USING btree (repository, branch);

-- functions

CREATE OR REPLACE FUNCTION public.glossator_chapter_documents(repo text, br text, files text[])
 RETURNS void
 LANGUAGE sql
AS $function$
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
$function$;

CREATE OR REPLACE FUNCTION public.glossator_fold(word text)
 RETURNS text
 LANGUAGE sql
 IMMUTABLE PARALLEL SAFE
AS $function$
    SELECT replace(replace(replace(replace(replace(replace(replace(translate(word,
      'ÀÁÂÃÄÅÇÈÉÊËÌÍÎÏÑÒÓÔÕÖØÙÚÛÜÝàáâãäåçèéêëìíîïñòóôõöøùúûüýÿĀāĂăĄąĆćĈĉĊċČčĎďĐđĒēĔĕĖėĘęĚěĜĝĞğĠġĢģĤĥĦħĨĩĪīĬĭĮįİıĴĵĶķĹĺĻļĽľŁłŃńŅņŇňŌōŎŏŐőŔŕŖŗŘřŚśŜŝŞşŠšŢţŤťŦŧŨũŪūŬŭŮůŰűŲųŴŵŶŷŸŹźŻżŽžſ',
      'AAAAAACEEEEIIIINOOOOOOUUUUYaaaaaaceeeeiiiinoooooouuuuyyAaAaAaCcCcCcCcDdDdEeEeEeEeEeGgGgGgGgHhHhIiIiIiIiIiJjKkLlLlLlLlNnNnNnOoOoOoRrRrRrSsSsSsSsTtTtTtUuUuUuUuUuUuWwYyYZzZzZzs'),
      'œ', 'oe'), 'Œ', 'OE'), 'æ', 'ae'), 'Æ', 'AE'), 'ß', 'ss'), 'ĳ', 'ij'), 'ŀ', 'l')
  $function$;

CREATE OR REPLACE FUNCTION public.glossator_fold_stem(dict regdictionary, tsv tsvector)
 RETURNS tsvector
 LANGUAGE sql
 IMMUTABLE PARALLEL SAFE
AS $function$
    SELECT coalesce(string_agg(
             '''' || replace(replace(s.lexeme, '\', '\\'), '''', '''''') || ''''
             || CASE WHEN cardinality(u.positions) > 0
                     THEN ':' || array_to_string(u.positions, ',') ELSE '' END,
             ' '), '')::tsvector
      FROM unnest(tsv) AS u
     CROSS JOIN LATERAL unnest(
           CASE WHEN u.lexeme ~ '[0-9./@:]' THEN ARRAY[u.lexeme]
                ELSE ts_lexize(dict, glossator_fold(u.lexeme)) END) AS s(lexeme)
  $function$;

CREATE OR REPLACE FUNCTION public.glossator_lexeme_text(tsv tsvector)
 RETURNS text
 LANGUAGE sql
 IMMUTABLE PARALLEL SAFE
AS $function$
  SELECT coalesce(string_agg(u.lexeme, ' ' ORDER BY p.pos, u.lexeme), '')
    FROM unnest(tsv) AS u, unnest(coalesce(u.positions, '{1}'::smallint[])) AS p(pos)
$function$;

CREATE OR REPLACE FUNCTION public.glossator_stemmer(cfg regconfig)
 RETURNS regdictionary
 LANGUAGE sql
 IMMUTABLE PARALLEL SAFE
AS $function$ SELECT CASE cfg WHEN 'glossator_ar'::regconfig THEN 'arabic_stem'::regdictionary WHEN 'glossator_ca'::regconfig THEN 'catalan_stem'::regdictionary WHEN 'glossator_da'::regconfig THEN 'danish_stem'::regdictionary WHEN 'glossator_de'::regconfig THEN 'german_stem'::regdictionary WHEN 'glossator_el'::regconfig THEN 'greek_stem'::regdictionary WHEN 'glossator_en'::regconfig THEN 'english_stem'::regdictionary WHEN 'glossator_es'::regconfig THEN 'spanish_stem'::regdictionary WHEN 'glossator_eu'::regconfig THEN 'basque_stem'::regdictionary WHEN 'glossator_fi'::regconfig THEN 'finnish_stem'::regdictionary WHEN 'glossator_fr'::regconfig THEN 'french_stem'::regdictionary WHEN 'glossator_ga'::regconfig THEN 'irish_stem'::regdictionary WHEN 'glossator_hi'::regconfig THEN 'hindi_stem'::regdictionary WHEN 'glossator_hu'::regconfig THEN 'hungarian_stem'::regdictionary WHEN 'glossator_hy'::regconfig THEN 'armenian_stem'::regdictionary WHEN 'glossator_id'::regconfig THEN 'indonesian_stem'::regdictionary WHEN 'glossator_it'::regconfig THEN 'italian_stem'::regdictionary WHEN 'glossator_lt'::regconfig THEN 'lithuanian_stem'::regdictionary WHEN 'glossator_nb'::regconfig THEN 'norwegian_stem'::regdictionary WHEN 'glossator_ne'::regconfig THEN 'nepali_stem'::regdictionary WHEN 'glossator_nl'::regconfig THEN 'dutch_stem'::regdictionary WHEN 'glossator_nn'::regconfig THEN 'norwegian_stem'::regdictionary WHEN 'glossator_no'::regconfig THEN 'norwegian_stem'::regdictionary WHEN 'glossator_pt'::regconfig THEN 'portuguese_stem'::regdictionary WHEN 'glossator_ro'::regconfig THEN 'romanian_stem'::regdictionary WHEN 'glossator_ru'::regconfig THEN 'russian_stem'::regdictionary WHEN 'glossator_sr'::regconfig THEN 'serbian_stem'::regdictionary WHEN 'glossator_sv'::regconfig THEN 'swedish_stem'::regdictionary WHEN 'glossator_ta'::regconfig THEN 'tamil_stem'::regdictionary WHEN 'glossator_tr'::regconfig THEN 'turkish_stem'::regdictionary WHEN 'glossator_yi'::regconfig THEN 'yiddish_stem'::regdictionary ELSE 'simple'::regdictionary END $function$;

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
 LANGUAGE plpgsql
 IMMUTABLE PARALLEL SAFE
AS $function$
  DECLARE
    dict regdictionary := glossator_stemmer(cfg);
    v tsvector;
  BEGIN
    SELECT coalesce(string_agg(
             '''' || replace(replace(s.lexeme, '\', '\\'), '''', '''''') || ''''
             || CASE WHEN cardinality(u.positions) > 0
                     THEN ':' || array_to_string(u.positions, ',') ELSE '' END,
             ' '), '')::tsvector
      INTO v
      FROM unnest(to_tsvector(cfg, content)) AS u
     CROSS JOIN LATERAL unnest(
           CASE WHEN u.lexeme ~ '[0-9./@:]' THEN ARRAY[u.lexeme]
                WHEN octet_length(u.lexeme) = length(u.lexeme) THEN ts_lexize(dict, u.lexeme)
                WHEN u.lexeme ~ '^[\x01-\xff]*$' THEN ts_lexize(dict,
                  replace(replace(replace(translate(u.lexeme,
                    'ÀÁÂÃÄÅÇÈÉÊËÌÍÎÏÑÒÓÔÕÖØÙÚÛÜÝàáâãäåçèéêëìíîïñòóôõöøùúûüýÿ',
                    'AAAAAACEEEEIIIINOOOOOOUUUUYaaaaaaceeeeiiiinoooooouuuuyy'),
                    'æ', 'ae'), 'Æ', 'AE'), 'ß', 'ss'))
                ELSE ts_lexize(dict, glossator_fold(u.lexeme)) END) AS s(lexeme);
    IF cfg = 'glossator_fr'::regconfig THEN
      v := ts_delete(v, ARRAY['le', 'a']);
    END IF;
    RETURN v;
  END
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

CREATE TRIGGER hcn_text_search BEFORE INSERT OR UPDATE OF content, lang, ts_config, tsv, doc_len ON public.hierarchical_content_nodes FOR EACH ROW EXECUTE FUNCTION hcn_fill_text_search();
