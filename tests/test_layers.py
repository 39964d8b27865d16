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


# Settings: import-linter sees `import glossator.settings`, not a `settings` object
# handed down and read by attribute (typed `Any`, it imports nothing). Files still
# being moved, with their owner; each entry goes when its file takes plain values.
# Empty since issue 15 landed (gitserver/cli.py moved to glossator/commands/).
SETTINGS_TRANSITIONAL: dict[str, str] = {}


def settings_reads(path: Path) -> list[tuple[str, int]]:
    """(what, line) of each `Settings` name, `settings` parameter and `….settings.x` /
    `settings.x` attribute read in a module."""
    tree = ast.parse(path.read_text(), str(path))
    found: list[tuple[str, int]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id == "Settings":
            found.append(("Settings", node.lineno))
        elif isinstance(node, ast.alias) and node.name.rsplit(".", 1)[-1] == "Settings":
            found.append(("import Settings", node.lineno))
        elif isinstance(node, ast.arg) and node.arg == "settings":
            found.append(("parameter settings", node.lineno))
        elif isinstance(node, ast.Attribute):
            base = node.value
            named = (isinstance(base, ast.Name) and base.id == "settings") or (
                isinstance(base, ast.Attribute) and base.attr == "settings"
            )
            if named:
                found.append((f"settings.{node.attr}", node.lineno))
    return found


def test_no_module_below_the_composition_root_reads_settings() -> None:
    unexpected = []
    for package in (*CHECKED, "core"):
        for path in sorted((ROOT / package).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            if rel in SETTINGS_TRANSITIONAL:
                continue
            unexpected += [f"{rel}:{line} ({what})" for what, line in settings_reads(path)]
    assert not unexpected, (
        "these modules take or read the settings; take plain values (a model, a key as "
        "text, a path…) and read the settings in glossator/ (glossator.wiring, "
        "glossator.providers): " + ", ".join(unexpected)
    )


def test_the_settings_check_sees_what_it_looks_for(tmp_path: Path) -> None:
    sample = tmp_path / "m.py"
    sample.write_text(
        "from glossator.settings import Settings\n"
        "def f(settings):\n    return settings.embedder\n"
        "class C:\n    def g(self):\n        return self.settings.summarizer\n"
        "def h(config: 'X', settings_dir: str):\n    return config.settings_dir\n"
        "# settings.embedder in a comment, and in a string: 'settings.embedder'\n"
    )
    assert sorted(settings_reads(sample), key=lambda f: f[1]) == [
        ("import Settings", 1),
        ("parameter settings", 2),
        ("settings.embedder", 3),
        ("settings.summarizer", 6),
    ]
