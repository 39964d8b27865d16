-- One row per attempt of an indexing job (hooks.worker): procrastinate keeps job
-- statuses and events but not why an attempt failed nor what it did; `glossator
-- status` and GET /api/jobs join this table to procrastinate_jobs by job id.
-- Numbered 010 to leave 003-009 to the store's own migrations.

CREATE TABLE glossator_job_runs (
    job_id        bigint      NOT NULL,
    attempt       integer     NOT NULL,
    repository    text        NOT NULL,
    branch        text        NOT NULL,
    status        text        NOT NULL CHECK (status IN ('running', 'done', 'failed')),
    tip           text,          -- the branch tip the attempt read
    result_commit text,          -- the commit indexed (the commit-back, or the tip)
    error         text,          -- one line: the exception's type and message
    stats         jsonb,         -- counts: files loaded, deleted, chunks embedded, …
    started_at    timestamptz NOT NULL DEFAULT now(),
    finished_at   timestamptz,
    PRIMARY KEY (job_id, attempt)
);

CREATE INDEX glossator_job_runs_branch ON glossator_job_runs (repository, branch, started_at);
