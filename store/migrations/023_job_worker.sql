-- Which worker ran an attempt (issue 17: `glossator worker` on N machines). The
-- name is `<host>:<pid>` (hooks.service.worker_name): `glossator status` and
-- GET /api/jobs say where a job runs, and an attempt interrupted by a dead worker
-- names the process that died.
ALTER TABLE glossator_job_runs ADD COLUMN worker text;
