-- The tip of each branch pushed to this server, as the push left it (issue 15).
--
-- Search states how fresh its answers are by comparing the commit a branch's rows
-- come from (`indexed_commits`) with the branch's tip. It read the tip from the bare
-- repository on every query; now the server records it where search already reads:
-- the post-receive hook at each push (a deleted branch drops its row), the worker
-- when its commit-back moves the branch, and reconciliation at start (every branch
-- of every repository, so a push the hook could not record is caught up). A
-- repository with no row here is not on this server (rows loaded from a folder).
CREATE TABLE branch_tips (
    repository  text        NOT NULL,
    branch      text        NOT NULL,
    commit      text        NOT NULL,
    updated_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (repository, branch)
);
