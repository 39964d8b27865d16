-- The branch each bare repository's HEAD names: its default branch (issue 23).
--
-- A search, context pack or node lookup without a branch reads each repository's own
-- default branch, so a book pushed on `master` (git's own default before 3.0) is not
-- hidden behind the `main` of another. The server records HEAD where search reads:
-- the post-receive hook at each push (after pointing a HEAD that names no branch at
-- the branch the push created) and reconciliation at start. A repository with no row
-- here (rows loaded from a folder) defaults to its only indexed branch, else to
-- core.vocabulary.DEFAULT_BRANCH (store.tips.default_branches).
CREATE TABLE repository_heads (
    repository  text        PRIMARY KEY,
    branch      text        NOT NULL,
    updated_at  timestamptz NOT NULL DEFAULT now()
);
