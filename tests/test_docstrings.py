"""Docstrings say what a module is for and why, in a few lines; history belongs in git.

Reads every module of the product packages: a module docstring longer than
MODULE_DOCSTRING_LINES, or a docstring (module, class or function) that names one of
this project's issues ("issue 23") or a working session, fails. A format or a design
rationale too long for that lives in docs/*.md, and the module points to it.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("core", "gitserver", "glossator", "hooks", "indexer", "search", "store")
MODULE_DOCSTRING_LINES = 40

# "issue 23", "issues 7 and 22", "session 12". Another project's tracker is named with
# its own name and a '#' ("procrastinate issues #1446"), which says where the workaround
# comes from and stays.
HISTORY = re.compile(r"\b(?:issues?|sessions?)\s+\d+", re.IGNORECASE)


def product_modules() -> list[Path]:
    return sorted(p for package in PACKAGES for p in (ROOT / package).rglob("*.py"))


def problems(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(), str(path))
    found: list[str] = []
    module_doc = ast.get_docstring(tree, clean=False)
    if module_doc and len(module_doc.splitlines()) > MODULE_DOCSTRING_LINES:
        found.append(
            f"module docstring of {len(module_doc.splitlines())} lines "
            f"(> {MODULE_DOCSTRING_LINES}): move the format or rationale to docs/"
        )
    for node in ast.walk(tree):
        if not isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        doc = ast.get_docstring(node, clean=False)
        if not doc:
            continue
        for match in HISTORY.finditer(doc):
            where = getattr(node, "name", "module")
            found.append(f"{where}: {match.group(0)!r} (history belongs in git)")
    return found


def test_product_docstrings_are_short_and_carry_no_history() -> None:
    failing = {}
    for path in product_modules():
        name = path.relative_to(ROOT).as_posix()
        found = problems(path)
        if found:
            failing[name] = found
    assert not failing, "\n".join(f"{name}: {'; '.join(p)}" for name, p in failing.items())


def test_the_check_sees_an_issue_number_and_a_long_docstring(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text('"""A module.\n\nKept since issue 23."""\n')
    assert problems(module) == ["module: 'issue 23' (history belongs in git)"]
    module.write_text('"""' + "line\n" * (MODULE_DOCSTRING_LINES + 1) + '"""\n')
    assert problems(module)[0].startswith(f"module docstring of {MODULE_DOCSTRING_LINES + 1} lines")
    module.write_text('"""Works around procrastinate issues #1446 and #1543."""\n')
    assert problems(module) == []
