-- Glossator schema, version 50: the tokens `glossator token create` makes (core/access.py).
--
-- A token is kept as the hex sha256 of its text, never the text (shown once, at
-- creation): a token is 256 random bits, so a plain hash cannot be reversed and is the
-- key a request's token is looked up by. `role` is read, push or admin (each includes the
-- ones before); `repositories` NULL: every repository, else the only ones it reads and
-- pushes. A revoked token keeps its row (list shows when), and is never accepted again.
-- (Numbered 050, apart from the migrations other branches of December 2026 add.)
CREATE TABLE access_tokens (
  id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  digest       text NOT NULL UNIQUE CHECK (digest ~ '^[0-9a-f]{64}$'),
  role         text NOT NULL CHECK (role IN ('read', 'push', 'admin')),
  repositories text[],
  note         text NOT NULL DEFAULT '',
  created_at   timestamptz NOT NULL DEFAULT now(),
  revoked_at   timestamptz
);
