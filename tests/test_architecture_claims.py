"""docs/architecture.md says which of our packages each package imports; this checks the
page against the code (issue 42: "gitserver knows nothing of the pipeline"; the page had
said gitserver never imports hooks while two of its modules did).

The claims are read from the page itself, so a change to either fails here until both
agree: the table "What each package imports" (exactly those packages, at run time: an
import under TYPE_CHECKING is for the type checker) and the layer diagram's parentheses
under `gitserver/` and `search/`. import-linter (`make lint`) forbids the arrows; this
also fails on an arrow the page forgets to mention.
"""

from __future__ import annotations

import re
from pathlib import Path

import grimp

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "architecture.md"
PACKAGES = ("core", "glossator", "gitserver", "hooks", "indexer", "search", "store")
TABLE_TITLE = "What each package imports"


def imported_packages(graph: grimp.ImportGraph, package: str) -> set[str]:
    """Our other packages that any module of `package` imports directly."""
    found = set()
    for module in graph.find_descendants(package) | {package}:
        for imported in graph.find_modules_directly_imported_by(module):
            top = imported.split(".")[0]
            if top != package:
                found.add(top)
    return found


def packages_named(cell: str) -> set[str]:
    """The packages a cell names as `pkg/`; "every other package" and "nothing" read as said."""
    if "every other package" in cell:
        return {"*"}
    return set(re.findall(r"`?\b(\w+)/`?", cell)) & set(PACKAGES)


def table_claims(text: str) -> dict[str, set[str]]:
    """package -> the packages the page says it imports, from the table under TABLE_TITLE."""
    at = text.index(TABLE_TITLE)
    rows = re.findall(r"^\| `(\w+)/` \| ([^|]*) \|\s*$", text[at:].split("\n\n", 2)[1], re.M)
    return {package: packages_named(cell) for package, cell in rows}


def diagram_claims(text: str) -> dict[str, set[str]]:
    """The parentheses under `gitserver/` and `search/` in the layer diagram."""
    lines = text.splitlines()
    header = next(i for i, line in enumerate(lines) if "│ gitserver/" in line and "search/" in line)
    rows = [line.strip().strip("│").split("│") for line in lines[header + 1 : header + 4]]
    cells = [row for row in rows if len(row) == 2]
    # each side's claim is its first parenthesis below the header (a side may take two lines)
    left, right = (next(c[side] for c in cells if "(" in c[side]) for side in (0, 1))
    return {"gitserver": packages_named(left), "search": packages_named(right)}


def test_the_page_says_what_each_package_imports() -> None:
    text = DOC.read_text()
    graph = grimp.build_graph(*PACKAGES, exclude_type_checking_imports=True)
    actual = {p: imported_packages(graph, p) for p in PACKAGES}
    claims = table_claims(text)
    assert set(claims) == set(PACKAGES), f"the table names {sorted(claims)}"
    for package, said in claims.items():
        expected = set(PACKAGES) - {package} if said == {"*"} else said
        assert actual[package] == expected, (
            f"docs/architecture.md says {package}/ imports {sorted(expected) or 'nothing'} "
            f"of ours; the code imports {sorted(actual[package]) or 'nothing'}"
        )
    for package, said in diagram_claims(text).items():
        assert actual[package] == said, (package, sorted(said), sorted(actual[package]))
    # what issue 42 asked for by name: the git route knows nothing of the pipeline
    assert actual["gitserver"] == {"core"}


def test_the_check_reads_the_claims_and_sees_an_arrow() -> None:
    page = (
        "## What each package imports\n\n"
        "| package | imports, of ours |\n|---|---|\n"
        "| `glossator/` | every other package |\n"
        "| `gitserver/` | `core/` |\n| `core/` | nothing |\n\n"
        "  │ gitserver/   git over HTTP       │ search/   queries, MCP server    │\n"
        "  │ (imports only core/)             │ (store/, indexer/, core/)        │\n"
    )
    assert table_claims(page) == {"glossator": {"*"}, "gitserver": {"core"}, "core": set()}
    assert diagram_claims(page) == {"gitserver": {"core"}, "search": {"store", "indexer", "core"}}
    graph = grimp.ImportGraph()
    for module in ("gitserver", "gitserver.app", "core", "core.receiving", "hooks", "hooks.x"):
        graph.add_module(module)
    graph.add_import(importer="gitserver.app", imported="core.receiving")
    assert imported_packages(graph, "gitserver") == {"core"}
    graph.add_import(importer="gitserver.app", imported="hooks.x")  # the arrow issue 42 removed
    assert imported_packages(graph, "gitserver") == {"core", "hooks"}
