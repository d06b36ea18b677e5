# The README's commands. Each creates what it needs (venv, install, migrations).
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: up test lint bench demo migrate clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[dev]'
	touch $(STAMP)

## Start the service on the embedded default (SQLite, one process). DEMO=1 loads bundled cassettes first.
up: $(STAMP)
	$(BIN)/gpu-tracker up $(if $(DEMO),--demo,) --host $(or $(HOST),127.0.0.1) --port $(or $(PORT),8000)

## Run the whole test suite (SQLite and real PostgreSQL), plus ruff, the layering contracts and mypy --strict.
test: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/lint-imports
	$(BIN)/mypy --strict tracker providers api
	$(BIN)/pytest -q

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/lint-imports
	$(BIN)/mypy --strict tracker providers api

migrate: $(STAMP)
	$(BIN)/gpu-tracker db upgrade

bench: $(STAMP)
	$(BIN)/python -m benchmarks.run

clean:
	rm -rf $(VENV) .pytest_cache

## Only the headless-Chromium dashboard tests; screenshots land in artifacts/screenshots/.
.PHONY: test-browser
test-browser: $(STAMP)
	$(BIN)/pytest -q -m browser
