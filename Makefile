# The README's quick start: `make run` (set up, run the main job) and `make test`
# (set up, run the whole test suite with ruff, mypy and the layer contracts).
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp
PYTEST_WORKERS ?= 2

.PHONY: run test lint typecheck layers unit bench clean setup browser golden

setup: $(STAMP)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

# The main job: eager vs cooperative vs KIP-848 under scale-out, rolling bounce and
# crash, a few seeds each, simulated on local Spark; writes out/demo/report.html.
run: $(STAMP)
	$(BIN)/regroup demo --out out/demo

# Headless Chromium (Debian's package) for the report's browser test; the test
# is skipped, saying so, on a machine without it.
browser:
	command -v chromium >/dev/null || (apt-get update -qq && apt-get install -y -qq chromium >/dev/null)

lint: $(STAMP)
	$(BIN)/ruff check src tests benchmarks tools
	$(BIN)/ruff format --check src tests benchmarks tools

typecheck: $(STAMP)
	$(BIN)/mypy

layers: $(STAMP)
	$(BIN)/lint-imports

unit: $(STAMP)
	$(BIN)/pytest -n $(PYTEST_WORKERS) --dist loadgroup

test: lint typecheck layers unit

# Rewrite the golden event-log hashes (tests/golden/hashes.json) after a change of
# behaviour that an issue asks for; a refactor never needs this.
golden: $(STAMP)
	$(BIN)/python tools/golden.py --write

bench: $(STAMP)
	$(BIN)/python benchmarks/assignors.py

clean:
	rm -rf $(VENV) build src/build src/*.egg-info .mypy_cache .ruff_cache .hypothesis
