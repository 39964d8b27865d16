"""The schema the migrations leave, as one file to read (`store/schema.sql`).

    .venv/bin/python -m store.schema --write         # regenerate store/schema.sql
    .venv/bin/python -m store.schema                 # print it
    .venv/bin/python -m store.schema --url URL ...   # from that server, not a throwaway one

The migrations (store/migrations/) are the truth and stay frozen once on main, but a
trigger body redefined by several of them cannot be read from them. `describe(conn)`
prints what a migrated database holds, from PostgreSQL's catalogues, in name order,
without the members of extensions and procrastinate's own schema. The catalogues
rather than `pg_dump --schema-only` because the output must be the same on every
machine for a test to compare it: pg_dump's changes with the client's version (17.6
writes a random `\\restrict` key), may be missing, and carries SET lines and owners.
Without `--url` a throwaway embedded PostgreSQL is migrated and described;
tests/test_store_schema.py compares the file with one and names this command.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

import psycopg

from store import migrations

SCHEMA_FILE = Path(__file__).with_name("schema.sql")
REGENERATE = ".venv/bin/python -m store.schema --write"

# objects that belong to an extension (pgvector's operators, unaccent's dictionary…)
_NOT_EXTENSION = """NOT EXISTS (SELECT 1 FROM pg_depend dep
                 WHERE dep.classid = {catalog}::regclass AND dep.objid = {oid}
                   AND dep.deptype = 'e')"""
_PUBLIC = "'public'::regnamespace"
_OURS = "NOT {name} LIKE 'procrastinate%'"  # procrastinate's schema is not a migration's


def _rows(conn: Any, query: str) -> list[tuple[Any, ...]]:
    return [tuple(r) for r in conn.execute(query.encode()).fetchall()]


def _extensions(conn: Any) -> list[str]:
    names = _rows(conn, "SELECT extname FROM pg_extension WHERE extname <> 'plpgsql' ORDER BY 1")
    return [f"CREATE EXTENSION {n};" for (n,) in names]


def _dictionaries(conn: Any) -> list[str]:
    rows = _rows(
        conn,
        f"""SELECT d.dictname, t.tmplname, coalesce(d.dictinitoption, '')
              FROM pg_ts_dict d JOIN pg_ts_template t ON t.oid = d.dicttemplate
             WHERE d.dictnamespace = {_PUBLIC}
               AND {_NOT_EXTENSION.format(catalog="'pg_ts_dict'", oid="d.oid")}
             ORDER BY 1""",
    )
    return [
        f"CREATE TEXT SEARCH DICTIONARY {name} (TEMPLATE = {template}"
        + (f", {options}" if options else "")
        + ");"
        for name, template, options in rows
    ]


def _configurations(conn: Any) -> list[str]:
    configs = _rows(
        conn,
        f"""SELECT c.cfgname, p.prsname FROM pg_ts_config c
              JOIN pg_ts_parser p ON p.oid = c.cfgparser
             WHERE c.cfgnamespace = {_PUBLIC} ORDER BY 1""",
    )
    maps = _rows(
        conn,
        f"""SELECT c.cfgname, t.alias, string_agg(d.dictname, ', ' ORDER BY m.mapseqno)
              FROM pg_ts_config c
              JOIN pg_ts_config_map m ON m.mapcfg = c.oid
              JOIN pg_ts_dict d ON d.oid = m.mapdict
              JOIN LATERAL ts_token_type(c.cfgparser) t ON t.tokid = m.maptokentype
             WHERE c.cfgnamespace = {_PUBLIC}
             GROUP BY 1, 2 ORDER BY 1, 2""",
    )
    out = []
    for name, parser in configs:
        out.append(f"CREATE TEXT SEARCH CONFIGURATION {name} (PARSER = {parser});")
        by_dicts: dict[str, list[str]] = {}
        for cfg, token, dicts in maps:
            if cfg == name:
                by_dicts.setdefault(dicts, []).append(token)
        out += [
            f"ALTER TEXT SEARCH CONFIGURATION {name} ADD MAPPING FOR {', '.join(tokens)}"
            f" WITH {dicts};"
            for dicts, tokens in sorted(by_dicts.items(), key=lambda kv: kv[1])
        ]
    return out


def _tables(conn: Any) -> list[str]:
    tables = _rows(
        conn,
        f"""SELECT c.oid, c.relname, c.relpersistence FROM pg_class c
             WHERE c.relnamespace = {_PUBLIC} AND c.relkind IN ('r', 'p')
               AND {_OURS.format(name="c.relname")}
               AND {_NOT_EXTENSION.format(catalog="'pg_class'", oid="c.oid")}
             ORDER BY c.relname""",
    )
    columns = _rows(
        conn,
        f"""SELECT a.attrelid, a.attname, format_type(a.atttypid, a.atttypmod), a.attnotnull,
                   pg_get_expr(d.adbin, d.adrelid), a.attidentity, a.attgenerated
              FROM pg_attribute a
              JOIN pg_class c ON c.oid = a.attrelid
              LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
             WHERE c.relnamespace = {_PUBLIC} AND a.attnum > 0 AND NOT a.attisdropped
             ORDER BY a.attrelid, a.attnum""",
    )
    constraints = _rows(
        conn,
        f"""SELECT k.conrelid, k.conname, pg_get_constraintdef(k.oid)
              FROM pg_constraint k JOIN pg_class c ON c.oid = k.conrelid
             WHERE c.relnamespace = {_PUBLIC} AND k.contype <> 'n'
             ORDER BY k.conrelid, k.conname""",
    )
    out = []
    for oid, name, persistence in tables:
        lines = []
        for rel, column, type_, not_null, default, identity, generated in columns:
            if rel != oid:
                continue
            line = f"    {column} {type_}"
            if generated == "s":
                line += f" GENERATED ALWAYS AS ({default}) STORED"
            elif identity:
                line += " GENERATED " + ("ALWAYS" if identity == "a" else "BY DEFAULT")
                line += " AS IDENTITY"
            elif default is not None:
                line += f" DEFAULT {default}"
            if not_null:
                line += " NOT NULL"
            lines.append(line)
        lines += [f"    CONSTRAINT {n} {d}" for rel, n, d in constraints if rel == oid]
        unlogged = "UNLOGGED " if persistence == "u" else ""
        out.append(f"CREATE {unlogged}TABLE {name} (\n" + ",\n".join(lines) + "\n);")
    return out


def _indexes(conn: Any) -> list[str]:
    """Indexes that no constraint made (a primary key's or a unique constraint's index is
    said by its constraint)."""
    rows = _rows(
        conn,
        f"""SELECT pg_get_indexdef(i.indexrelid) FROM pg_index i
              JOIN pg_class x ON x.oid = i.indexrelid
              JOIN pg_class t ON t.oid = i.indrelid
             WHERE t.relnamespace = {_PUBLIC} AND {_OURS.format(name="t.relname")}
               AND NOT EXISTS (SELECT 1 FROM pg_constraint k WHERE k.conindid = i.indexrelid)
             ORDER BY t.relname, x.relname""",
    )
    return [f"{d};" for (d,) in rows]


def _functions(conn: Any) -> list[str]:
    rows = _rows(
        conn,
        f"""SELECT pg_get_functiondef(p.oid) FROM pg_proc p
             WHERE p.pronamespace = {_PUBLIC} AND p.prokind IN ('f', 'p')
               AND {_OURS.format(name="p.proname")}
               AND {_NOT_EXTENSION.format(catalog="'pg_proc'", oid="p.oid")}
             ORDER BY p.proname, pg_get_function_identity_arguments(p.oid)""",
    )
    return [d.rstrip() + ";" for (d,) in rows]


def _triggers(conn: Any) -> list[str]:
    rows = _rows(
        conn,
        f"""SELECT pg_get_triggerdef(g.oid) FROM pg_trigger g
              JOIN pg_class c ON c.oid = g.tgrelid
             WHERE c.relnamespace = {_PUBLIC} AND NOT g.tgisinternal
               AND {_OURS.format(name="c.relname")}
             ORDER BY c.relname, g.tgname""",
    )
    return [f"{d};" for (d,) in rows]


def describe(conn: Any) -> str:
    """The schema of the database `conn` reads (module docstring), as SQL text."""
    version = max(migrations.applied(conn), default=0)
    parts = [
        f"-- The schema store/migrations/ leave, at version {version}. Generated: do not edit.",
        f"-- Regenerate with `{REGENERATE}` (store/schema.py); tests/test_store_schema.py checks it.",
    ]
    for title, statements in (
        ("extensions", _extensions(conn)),
        ("text search dictionaries", _dictionaries(conn)),
        ("text search configurations", _configurations(conn)),
        ("tables", _tables(conn)),
        ("indexes", _indexes(conn)),
        ("functions", _functions(conn)),
        ("triggers", _triggers(conn)),
    ):
        parts.append(f"\n-- {title}\n")
        parts.append(
            "\n\n".join(statements) if title in ("tables", "functions") else "\n".join(statements)
        )
    return "\n".join(parts).rstrip() + "\n"


def migrated_schema(admin_conninfo: str) -> str:
    """Migrate a new empty database on the server `admin_conninfo` names (its role needs
    CREATEDB), describe it, drop it."""
    from psycopg import sql

    from store.db import with_dbname

    name = "glossator_schema_check"
    with psycopg.connect(admin_conninfo, autocommit=True) as c:
        c.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))
        c.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    try:
        with psycopg.connect(with_dbname(admin_conninfo, name), autocommit=True) as c:
            migrations.migrate(c)
            return describe(c)
    finally:
        with psycopg.connect(admin_conninfo, autocommit=True) as c:
            c.execute(
                sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
            )


def embedded_schema() -> str:
    """The migrated schema on a throwaway embedded server (a new data directory): the
    migrations only (`start(migrate=False)`: no keyword index made at start)."""
    from store.db import Database, DatabaseConfig

    tmp = Path(tempfile.mkdtemp(prefix="glossator-schema-"))
    db = Database(DatabaseConfig(data_dir=tmp, keyword_backend="fts"), pool_min=1, pool_max=1)
    try:
        db.start(migrate=False)
        with psycopg.connect(db.conninfo, autocommit=True) as c:
            migrations.migrate(c)
            return describe(c)
    finally:
        db.stop()
        shutil.rmtree(tmp, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m store.schema", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--write", action="store_true", help=f"write {SCHEMA_FILE.name}")
    parser.add_argument(
        "--url", help="an admin connection string (CREATEDB); default: a throwaway embedded server"
    )
    args = parser.parse_args(argv)
    text = migrated_schema(args.url) if args.url else embedded_schema()
    if args.write:
        SCHEMA_FILE.write_text(text)
        print(f"wrote {SCHEMA_FILE}", file=sys.stderr)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
