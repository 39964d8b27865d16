-- Honest job outcomes (hooks.service, issue 14). Numbered 020 to leave room to the
-- store's own migrations.
--
-- A job that met problems (a file whose rows could not be loaded, a summary that
-- could not be regenerated) ends `problems` ("done with problems"), not `done`;
-- `progress` is what a running attempt last published (phase, counts, ETA).
ALTER TABLE glossator_job_runs DROP CONSTRAINT glossator_job_runs_status_check;
ALTER TABLE glossator_job_runs ADD CONSTRAINT glossator_job_runs_status_check
    CHECK (status IN ('running', 'done', 'problems', 'failed'));
ALTER TABLE glossator_job_runs ADD COLUMN progress jsonb;

-- The problems of the last index of a branch: not empty = not fully indexed, so
-- reconciliation and the job's follow-up index it again, and search, `glossator
-- status` and the next push say why.
ALTER TABLE indexed_commits ADD COLUMN problems jsonb NOT NULL DEFAULT '[]'::jsonb;
