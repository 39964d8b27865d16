"""store/schema.sql is the schema the migrations leave (store/schema.py)."""

from __future__ import annotations

import difflib

import psycopg
import pytest

from store import migrations, schema, server
from tests.plugins.db import PgServer


# store/schema.sql is the embedded server's (PostgreSQL 17 with pg_search, no unaccent:
# `python -m store.schema --write`), on which the migrations branch
@pytest.mark.pg_backends("pg_search")
def test_schema_sql_is_what_the_migrations_leave(pg_server: PgServer) -> None:
    # a database the migrations alone made: the template also has the indexes
    # Database.start() makes for keyword search (store.pgsearch, store.fts)
    name = pg_server.create_database(template="template0")
    try:
        with psycopg.connect(pg_server.url(name), autocommit=True) as conn:
            migrations.migrate(conn)
            now = schema.describe(conn)
            unaccent = "unaccent" in server.available_extensions(conn)
    finally:
        pg_server.drop_database(name)
    kept = schema.SCHEMA_FILE.read_text()
    if not pg_server.embedded and unaccent != ("CREATE EXTENSION unaccent;" in kept):
        # migrations 001 and 003 build the text search pipeline with or without unaccent
        pytest.skip(
            "GLOSSATOR_TEST_DATABASE_URL's server differs from the embedded one on "
            "unaccent, which the migrations branch on; store/schema.sql is the embedded one's"
        )
    if kept != now:
        diff = "".join(
            list(
                difflib.unified_diff(
                    kept.splitlines(True), now.splitlines(True), "store/schema.sql", "migrated"
                )
            )[:60]
        )
        raise AssertionError(
            f"store/schema.sql is not the migrated schema: run `{schema.REGENERATE}` "
            f"and commit it\n{diff}"
        )


def test_the_description_sees_each_kind_of_object(db_url: str) -> None:
    """A change made after the migrations shows in the description (it would not pass
    the comparison above unnoticed), and so do procrastinate's tables' absence and a
    dropped column."""
    with psycopg.connect(db_url, autocommit=True) as conn:
        before = schema.describe(conn)
        conn.execute("CREATE TABLE schema_probe (a int PRIMARY KEY, b text DEFAULT 'x')")
        conn.execute("CREATE INDEX schema_probe_b ON schema_probe (b)")
        conn.execute(
            "CREATE FUNCTION schema_probe_f() RETURNS trigger LANGUAGE plpgsql"
            " AS $$ BEGIN RETURN NEW; END $$"
        )
        conn.execute(
            "CREATE TRIGGER schema_probe_t BEFORE INSERT ON schema_probe"
            " FOR EACH ROW EXECUTE FUNCTION schema_probe_f()"
        )
        conn.execute("ALTER TABLE indexed_commits DROP COLUMN problems")
        after = schema.describe(conn)
    assert (
        "CREATE TABLE schema_probe (\n    a integer NOT NULL,\n    b text DEFAULT 'x'::text"
        in after
    )
    assert "CREATE INDEX schema_probe_b ON public.schema_probe USING btree (b);" in after
    assert "FUNCTION public.schema_probe_f()" in after
    assert "CREATE TRIGGER schema_probe_t BEFORE INSERT ON public.schema_probe" in after
    assert "    problems jsonb" in before and "    problems jsonb" not in after
    assert "procrastinate" not in before
