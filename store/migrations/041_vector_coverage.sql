-- How much of a branch's rows have their vectors while a job embeds (issue 41).
--
-- A job loads each rebuilt file's rows before it embeds (keyword search, the tree and the
-- summaries answer at once), then its vectors in slices as they are computed. While it
-- does, this row says how many of the branch's vectorized rows still lack theirs; search
-- states the coverage on every surface ("vectors 40 %, keyword search complete"). The
-- job's final load, which makes the rows equal the committed sidecars, deletes the row
-- (store.commits.record_indexed); a job killed meanwhile leaves it, and its retry resumes.
-- Numbered after the issue, not 036: parallel branches of December 2026 add migrations.
CREATE TABLE vector_coverage (
    repository  text        NOT NULL,
    branch      text        NOT NULL,
    total       integer     NOT NULL,  -- the branch's rows that are to have a vector
    missing     integer     NOT NULL,  -- of which still without one
    updated_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (repository, branch)
);
