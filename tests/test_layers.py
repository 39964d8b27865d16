"""Only the composition root reads the environment (docs/architecture.md, "Where
configuration enters"). import-linter (`make lint`) keeps the imports between packages;
it cannot see `os.environ`, so this test reads every module below glossator/.

core/ may read it too (it is the vocabulary every layer shares); no module there does.
"""

from __future__ import annotations

import ast
import re
import tomllib
from pathlib import Path

import grimp

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
    ("hooks/commitback.py", "move_ref"): (
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


# -- store/ owns SQL (issue 24 item 5) ------------------------------------------------
# No package but store/ runs a statement or holds SQL text; only store/jobqueue.py names
# procrastinate's tables. import-linter sees imports, not `conn.execute("SELECT …")`, so
# this reads the code: a call of `.execute(` / `.executemany(` / `.cursor(`, a string
# (not a docstring) that is a statement (SELECT, INSERT INTO, DELETE FROM, UPDATE … SET)
# or names one of our tables (store/schema.sql) beside FROM / JOIN / INTO / WHERE, and
# any string naming `procrastinate_…`.
SQL_CHECKED = ("core", "gitserver", "glossator", "hooks", "indexer", "search")
PROCRASTINATE_ADAPTER = "store/jobqueue.py"

# Files still holding SQL, with who removes it; each entry goes when its file is clean
# (test_sql_debts_are_still_owed fails on a stale one: delete it then).
SQL_DEBTS: dict[str, str] = {}

_STATEMENT = re.compile(r"\b(SELECT|INSERT INTO|DELETE FROM)\b|\bUPDATE \w+ SET\b")
_CLAUSE = re.compile(r"\b(FROM|JOIN|INTO|WHERE)\b")


def _tables() -> re.Pattern[str]:
    names = re.findall(
        r"^CREATE (?:UNLOGGED )?TABLE (\w+)", (ROOT / "store/schema.sql").read_text(), re.M
    )
    assert names, "store/schema.sql lists no table"
    return re.compile(r"\b(" + "|".join(sorted(names)) + r")\b")


def sql_sites(path: Path, tables: re.Pattern[str], *, store: bool = False) -> list[str]:
    """`line: what` of each statement call, SQL string and procrastinate table name in a
    module (`store`: a module of store/, where only procrastinate's names count)."""
    tree = ast.parse(path.read_text(), str(path))
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Module | ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if (
            not store
            and isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in {"execute", "executemany", "cursor"}
        ):
            found.append((node.lineno, f".{node.func.attr}("))
        if not isinstance(node, ast.Constant) or not isinstance(node.value, str):
            continue
        if id(node) in docstrings:
            continue
        text = node.value
        if "procrastinate_" in text:
            found.append((node.lineno, f"names procrastinate's table ({text.strip()[:40]!r})"))
        elif not store and (
            _STATEMENT.search(text) or (tables.search(text) and _CLAUSE.search(text))
        ):
            found.append((node.lineno, f"SQL {' '.join(text.split())[:40]!r}"))
    return [f"{line}: {what}" for line, what in sorted(found)]


def _all_sql_sites() -> dict[str, list[str]]:
    tables = _tables()
    sites: dict[str, list[str]] = {}
    for package in (*SQL_CHECKED, "store"):
        for path in sorted((ROOT / package).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            if rel == PROCRASTINATE_ADAPTER:
                continue
            if found := sql_sites(path, tables, store=package == "store"):
                sites[rel] = found
    return sites


def test_no_sql_outside_store() -> None:
    unexpected = {p: s for p, s in _all_sql_sites().items() if p not in SQL_DEBTS}
    assert not unexpected, (
        "SQL outside store/ (a named function of store/ runs it: store/commits.py, "
        f"store/jobs.py…; procrastinate's tables only in {PROCRASTINATE_ADAPTER}): "
        + "; ".join(f"{p}: {', '.join(s)}" for p, s in sorted(unexpected.items()))
    )


def test_sql_debts_are_still_owed() -> None:
    sites = _all_sql_sites()
    paid = [p for p in SQL_DEBTS if p not in sites]
    assert not paid, f"no SQL left in {paid}: remove them from SQL_DEBTS in tests/test_layers.py"


def test_the_sql_check_sees_what_it_looks_for(tmp_path: Path) -> None:
    sample = tmp_path / "m.py"
    sample.write_text(
        '"""SELECT * FROM indexed_commits in a docstring is prose."""\n'
        "def f(conn):\n"
        "    conn.execute('SELECT 1')\n"
        "    with conn.cursor() as cur:\n"
        "        cur.executemany(Q, [])\n"
        "Q = 'UPDATE indexed_commits SET commit = %s'\n"
        "T = 'the jobs table: procrastinate_jobs'\n"
        "OK = {'vector_indexes': 1, 'message': 'select a branch from the list'}\n"
    )
    tables = re.compile(r"\b(indexed_commits|vector_indexes)\b")
    assert sql_sites(sample, tables) == [
        "3: .execute(",
        "3: SQL 'SELECT 1'",
        "4: .cursor(",
        "5: .executemany(",
        "6: SQL 'UPDATE indexed_commits SET commit = %s'",
        "7: names procrastinate's table ('the jobs table: procrastinate_jobs')",
    ]
    assert sql_sites(sample, tables, store=True) == [
        "7: names procrastinate's table ('the jobs table: procrastinate_jobs')"
    ]


# -- the tests' fakes stay in tests/ (issue 27) ---------------------------------------
# tests/fakes.py is a provider plugin that only the test environment names
# (GLOSSATOR_PROVIDER_PLUGINS=tests.fakes, glossator.providers loads it by name): no
# production module imports tests/, which is not even installed.
PRODUCTION = ("core", "gitserver", "glossator", "hooks", "indexer", "search", "store")


def imports_of_tests(path: Path) -> list[int]:
    """Lines importing the `tests` package (`import tests…`, `from tests… import`)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            if any(a.name == "tests" or a.name.startswith("tests.") for a in node.names):
                found.append(node.lineno)
        elif (
            isinstance(node, ast.ImportFrom)
            and node.level == 0
            and (node.module == "tests" or (node.module or "").startswith("tests."))
        ):
            found.append(node.lineno)
    return found


def test_no_production_module_imports_the_tests() -> None:
    found = [
        f"{path.relative_to(ROOT).as_posix()}:{line}"
        for package in PRODUCTION
        for path in sorted((ROOT / package).rglob("*.py"))
        for line in imports_of_tests(path)
    ]
    assert not found, (
        "production code imports tests/ (a fake belongs to the tests' provider plugin, "
        "tests/fakes.py, reached by name through GLOSSATOR_PROVIDER_PLUGINS): " + ", ".join(found)
    )
    fakes = [
        p.relative_to(ROOT).as_posix() for pkg in PRODUCTION for p in (ROOT / pkg).rglob("fake*.py")
    ]
    assert not fakes, f"fakes outside tests/: {fakes}"


# -- functions that fit on a screen (issue 27) -----------------------------------------
# No function over MAX_FUNCTION_LINES lines (its signature and docstring included)
# outside tests/ and bench/. A long function is split by its steps, not to pass the
# count. Any still over it would be listed here with who splits it; an entry goes when
# its function is split (test_long_function_debts_are_still_owed). Empty since issue
# 27's search/ and indexer/ work landed.
MAX_FUNCTION_LINES = 80
LONG_FUNCTION_DEBTS: dict[str, str] = {}


def long_functions() -> dict[str, int]:
    """`path:function` → its length in lines, for every function over the limit."""
    found = {}
    for package in PRODUCTION:
        for path in sorted((ROOT / package).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(), str(path))):
                if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                    lines = (node.end_lineno or node.lineno) - node.lineno + 1
                    if lines > MAX_FUNCTION_LINES:
                        found[f"{path.relative_to(ROOT).as_posix()}:{node.name}"] = lines
    return found


def test_no_function_is_over_80_lines() -> None:
    over = {f: n for f, n in long_functions().items() if f not in LONG_FUNCTION_DEBTS}
    assert not over, (
        f"functions over {MAX_FUNCTION_LINES} lines: split each into the named steps a "
        f"reader follows: {over}"
    )


def test_long_function_debts_are_still_owed() -> None:
    paid = sorted(set(LONG_FUNCTION_DEBTS) - set(long_functions()))
    assert not paid, f"now short: remove {paid} from LONG_FUNCTION_DEBTS in tests/test_layers.py"


PACKAGES = ("core", "gitserver", "glossator", "hooks", "indexer", "search", "store")


def import_circles(graph: grimp.ImportGraph) -> list[list[str]]:
    """The modules that import each other in a circle (Tarjan's strongly connected
    components of the module graph with more than one module), lazy imports included."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    circles: list[list[str]] = []

    def visit(module: str) -> None:  # recursion: the graph is a few hundred modules deep at most
        index[module] = low[module] = len(index)
        stack.append(module)
        on_stack.add(module)
        for other in sorted(graph.find_modules_directly_imported_by(module)):
            if other not in index:
                visit(other)
                low[module] = min(low[module], low[other])
            elif other in on_stack:
                low[module] = min(low[module], index[other])
        if low[module] == index[module]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == module:
                    break
            if len(component) > 1:
                circles.append(sorted(component))

    for module in sorted(graph.modules):
        if module not in index:
            visit(module)
    return circles


def test_no_import_circle() -> None:
    """No two modules of ours import each other, directly or round a circle (issue 27),
    a lazy import inside a function included. An import under TYPE_CHECKING is for the
    type checker only and makes no circle at run time: not counted."""
    graph = grimp.build_graph(*PACKAGES, exclude_type_checking_imports=True)
    assert import_circles(graph) == []
    # the check sees a circle, including one the type checker alone would not run
    typed = grimp.build_graph(*PACKAGES)
    typed.add_import(importer="store.db", imported="search.service")
    typed.add_import(importer="search.service", imported="store.db")
    assert ["search.service", "store.db"] in import_circles(typed)


def sibling_graph(graph: grimp.ImportGraph, package: str) -> grimp.ImportGraph:
    """`package`'s direct children (modules and subpackages) as one node each, with an
    arrow where anything inside one imports anything inside another."""

    def child(module: str) -> str:
        return f"{package}.{module[len(package) + 1 :].split('.')[0]}"

    inside = [m for m in graph.modules if m.startswith(f"{package}.")]
    siblings = grimp.ImportGraph()
    for module in inside:
        siblings.add_module(child(module))
        for other in graph.find_modules_directly_imported_by(module):
            if other.startswith(f"{package}.") and child(other) != child(module):
                siblings.add_import(importer=child(module), imported=child(other))
    return siblings


def test_no_circle_between_sibling_modules_or_packages() -> None:
    """Nor do two children of one package, taken whole: `glossator.supervision` may use
    `glossator.worker` or the other way round, not both (issue 27: a reader follows each
    arrow one way). Lazy imports included, TYPE_CHECKING ones not, as above."""
    graph = grimp.build_graph(*PACKAGES, exclude_type_checking_imports=True)
    packages = {m.rsplit(".", 1)[0] for m in graph.modules if "." in m}
    circles = {p: import_circles(sibling_graph(graph, p)) for p in sorted(packages)}
    assert {p: c for p, c in circles.items() if c} == {}
    # the check sees one between a module and a package beside it
    graph.add_import(importer="glossator.supervision.lifespan", imported="glossator.cli")
    graph.add_import(importer="glossator.cli", imported="glossator.supervision.database")
    found = import_circles(sibling_graph(graph, "glossator"))
    assert any({"glossator.cli", "glossator.supervision"} <= set(c) for c in found), found


# -- search/ is the engine, its faces live apart ------------------------------------------
# import-linter's forbidden contract names its source modules one by one: a module added to
# search/ and left off the list would escape it, so this checks the list is whole.
FACES = ("mcp", "web")


def test_the_engine_contract_names_every_engine_module() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    contracts = config["tool"]["importlinter"]["contracts"]
    (contract,) = [c for c in contracts if c["id"] == "search-engine-imports-no-face"]
    engine = {
        "search." + path.stem for path in (ROOT / "search").glob("*.py") if path.stem != "__init__"
    }
    engine |= {
        "search." + path.parent.name
        for path in (ROOT / "search").glob("*/__init__.py")
        if path.parent.name not in FACES
    }
    assert set(contract["source_modules"]) == engine
    assert contract["forbidden_modules"] == [f"search.{face}" for face in FACES]
    graph = grimp.build_graph("search")
    assert not [
        (importer, imported)
        for importer in engine
        for imported in graph.find_modules_directly_imported_by(importer)
        if imported.split(".")[:2] in (["search", face] for face in FACES)
    ]


def test_no_module_is_imported_under_a_one_letter_alias() -> None:
    """`from search import rows as R` makes every `R.` a riddle: a module keeps its name."""
    found = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(), str(path))):
                if isinstance(node, ast.Import | ast.ImportFrom):
                    found += [
                        f"{path.relative_to(ROOT)}:{node.lineno} {alias.name} as {alias.asname}"
                        for alias in node.names
                        if alias.asname and len(alias.asname) == 1
                    ]
    assert not found, found
