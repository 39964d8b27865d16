-- Vectors that land while a job embeds, beside the rows rather than on them (issue 41).
--
-- A job loads a rebuilt file's rows before their vectors (keyword search answers at once);
-- each computed vector used to land on its row by an UPDATE, which makes a new heap tuple
-- that pg_search's BM25 index and the HNSW index both index again (dead tuples, new BM25
-- segments: a search over the branch took 22-46 ms against 16-25 ms for the same rows
-- loaded whole, bench/churn.py). Now each vector is one row here, keyed by the row it
-- belongs to (`node_id`: a file's rows are replaced whole with new ids, so a vector never
-- meets another text), and the vector stage of a search reads this table beside the
-- model's HNSW index (an exact scan: it holds one job's vectors at most). The job's final
-- load writes the rows whole with their vectors, as any load, and deletes the branch's
-- rows here in the same transaction (store.landing.clear). A resumed job takes its
-- vectors back from here (store.landing.loaded_vectors). No foreign key: a row replaced
-- meanwhile leaves its vector unjoined until the final load clears it, and the loader's
-- DELETEs stay free of a trigger per row. (Numbered 060, apart from the migrations other
-- branches of December 2026 add.)
-- The row's columns a search filters on are copied (a row's are never updated: a file's
-- rows are replaced whole), so the vector stage's conditions apply here as they are,
-- without a join to the rows.
CREATE TABLE landed_vectors (
    node_id     bigint   NOT NULL PRIMARY KEY,  -- hierarchical_content_nodes.id
    repository  text     NOT NULL,
    branch      text     NOT NULL,
    work        text     NOT NULL,
    level       smallint NOT NULL,
    node_type   text     NOT NULL,
    model       text     NOT NULL,
    vector      vector   NOT NULL
);
CREATE INDEX landed_vectors_branch ON landed_vectors (repository, branch);
