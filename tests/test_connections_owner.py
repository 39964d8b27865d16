"""Every connection is opened through store/: its pools (store.db) or its one helper for
a short connection (store.connections). Anywhere else in the product, a
`psycopg.connect`, `psycopg.Connection.connect` or `AsyncConnection.connect` fails this
test (bench/ and tests/ open their own)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PRODUCT = ("core", "gitserver", "glossator", "hooks", "indexer", "search")  # store/ aside


def _dotted(node: ast.expr) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return f"{_dotted(node.value)}.{node.attr}"
    return "?"


def connects(source: str, name: str = "<sample>") -> list[str]:
    """The lines of `source` that open a psycopg connection themselves."""
    found = []
    for node in ast.walk(ast.parse(source, name)):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("psycopg"):
            found += [
                f"{node.lineno}: from {node.module} import {a.name}"
                for a in node.names
                if a.name == "connect"
            ]
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            call = _dotted(node.func)
            if call == "psycopg.connect" or (
                node.func.attr in ("connect", "connect_async")
                and call.split(".")[-2:-1] in (["Connection"], ["AsyncConnection"])
            ):
                found.append(f"{node.lineno}: {call}(…)")
    return found


def test_the_check_finds_each_way_in() -> None:
    sample = (
        "import psycopg\n"
        "from psycopg import AsyncConnection, connect\n"
        "psycopg.connect('x')\n"
        "psycopg.Connection.connect('x')\n"
        "AsyncConnection.connect('x')\n"
        "connections.connect('x')\n"
        "pool.connection()\n"
    )
    assert connects(sample) == [
        "2: from psycopg import connect",
        "3: psycopg.connect(…)",
        "4: psycopg.Connection.connect(…)",
        "5: AsyncConnection.connect(…)",
    ]


def test_no_connection_is_opened_outside_store() -> None:
    found = [
        f"{path.relative_to(ROOT).as_posix()}:{hit}"
        for package in PRODUCT
        for path in sorted((ROOT / package).rglob("*.py"))
        for hit in connects(path.read_text(), str(path))
    ]
    assert not found, (
        "a connection opened outside store/ (use the pool, or store.connections.connect "
        "for a short one): " + ", ".join(found)
    )
