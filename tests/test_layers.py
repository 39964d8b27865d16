"""Only the composition root reads the environment (docs/architecture.md, "Where
configuration enters"). import-linter (`make lint`) keeps the imports between packages;
it cannot see `os.environ`, so this test reads every module below glossator/.

core/ may read it too (it is the vocabulary every layer shares); no module there does.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CHECKED = ("gitserver", "hooks", "indexer", "search", "store")

# (module path, enclosing function) -> why it may touch os.environ. Neither reads a
# setting: each copies the process environment into a child process's, which git needs
# (PATH to find itself, HOME and LANG for its own config and messages).
ALLOWED = {
    ("gitserver/backend.py", "CgiRequest.environ"): (
        "git http-backend's CGI environment keeps PATH, HOME, LANG… (_KEEP_ENV) of the "
        "server process; the settings reach it as plain values (extra_env)"
    ),
    ("hooks/commits.py", "move_ref"): (
        "`git update-ref` runs with the process environment minus GIT_* (a hook's "
        "GIT_DIR would point it at the pushed repository's quarantine)"
    ),
}


def environment_reads(path: Path) -> list[tuple[str, int]]:
    """(enclosing function, line) of each os.environ / os.getenv / os.putenv use."""
    tree = ast.parse(path.read_text(), str(path))
    found: list[tuple[str, int]] = []

    def visit(node: ast.AST, scope: list[str]) -> None:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            scope = [*scope, node.name]
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id == "os"
            and node.attr in {"environ", "environb", "getenv", "getenvb", "putenv", "unsetenv"}
        ):
            found.append((".".join(scope), node.lineno))
        if isinstance(node, ast.ImportFrom) and node.module == "os":
            for alias in node.names:
                if alias.name in {"environ", "environb", "getenv", "getenvb", "putenv"}:
                    found.append((".".join(scope), node.lineno))
        for child in ast.iter_child_nodes(node):
            visit(child, scope)

    visit(tree, [])
    return found


def test_only_the_composition_root_reads_the_environment() -> None:
    unexpected = []
    for package in CHECKED:
        for path in sorted((ROOT / package).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            for scope, line in environment_reads(path):
                if (rel, scope) not in ALLOWED:
                    unexpected.append(f"{rel}:{line} ({scope or 'module level'})")
    assert not unexpected, (
        "these modules read the environment; take the value as an argument and read it "
        "in glossator/ (the composition root), or add a justified entry to ALLOWED: "
        + ", ".join(unexpected)
    )


def test_the_check_sees_what_it_looks_for(tmp_path: Path) -> None:
    sample = tmp_path / "m.py"
    sample.write_text(
        "import os\nfrom os import getenv\n"
        "X = os.environ.get('A')\n"
        "def f():\n    return os.getenv('B')\n"
        "class C:\n    def g(self):\n        return os.environ['C']\n"
        "# os.environ in a comment, and in a string: 'os.environ'\n"
    )
    assert environment_reads(sample) == [("", 2), ("", 3), ("f", 5), ("C.g", 8)]
