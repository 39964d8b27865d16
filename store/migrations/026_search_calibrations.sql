-- Glossator schema, version 26: the "nothing relevant" gate calibrated on a corpus
-- (search/calibration.py), kept so that a restart or a CLI process reuses it.
--
-- One row per scope the gate was measured on: model, branch ('' for each
-- repository's default branch), repository ('' for every repository), work ('' for
-- every work) and the corpus's languages. `state` says what it was measured on (the scope's indexed commits and
-- the calibration's method, search.service): a row whose state is not the scope's
-- current one is stale and is replaced by the next calibration of that scope, so
-- the table holds one row per scope, not one per indexed state. A push to another
-- repository does not change a repository's scope, nor its row.
CREATE TABLE search_calibrations (
  model       text NOT NULL,
  branch      text NOT NULL,
  repository  text NOT NULL,
  work        text NOT NULL,
  languages   text NOT NULL,
  state       text NOT NULL,
  payload     jsonb NOT NULL,
  computed_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (model, branch, repository, work, languages)
);
