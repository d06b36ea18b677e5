# The README's commands. Each creates what it needs (venv, install, migrations).
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: help up test lint bench demo migrate clean

## List the targets and what each does.
help:
	@awk '/^## /{doc=substr($$0,4); next} /^[a-z][a-z-]*:/{if(doc){split($$0,t,":"); printf "  make %-14s %s\n", t[1], doc}; doc=""}' $(MAKEFILE_LIST)

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[dev]'
	touch $(STAMP)

## Start the service on the embedded default (SQLite, one process). DEMO=1 loads bundled cassettes first.
up: $(STAMP)
	$(BIN)/gpu-tracker up $(if $(DEMO),--demo,) --host $(or $(HOST),127.0.0.1) --port $(or $(PORT),8000)

## Run the whole test suite (SQLite and real PostgreSQL), plus ruff (lint and format), the layering contracts, mypy --strict and mypy on the tests.
test: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports
	$(BIN)/mypy --strict tracker providers api
	$(BIN)/mypy tests
	$(BIN)/pytest -q

## ruff (lint and format), the layering contracts, mypy --strict and mypy on the tests, without the tests.
lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports
	$(BIN)/mypy --strict tracker providers api
	$(BIN)/mypy tests

## Migrate the configured database (TRACKER_DATABASE_URL, default the embedded SQLite).
migrate: $(STAMP)
	$(BIN)/gpu-tracker db upgrade

## The benchmarks (BENCHMARKS.md): speed and memory targets, SQLite and PostgreSQL.
bench: $(STAMP)
	$(BIN)/python -m benchmarks.run

## Remove the virtual environment and caches.
clean:
	rm -rf $(VENV) .pytest_cache

## Regenerate docs/screenshots/ from the headless-Chromium tests (every view, the Plan tab, history, /docs offline).
.PHONY: screenshots
screenshots: $(STAMP)
	$(BIN)/pytest -q -m browser tests/api/test_browser_dashboard.py tests/api/test_browser_history.py tests/api/test_browser_offline.py tests/api/test_plan_browser.py
	mkdir -p docs/screenshots
	for f in market-laptop market-phone job-laptop plan-laptop health-laptop history-laptop history-imported-year history-one-observation docs-offline; do \
	  if test -f artifacts/screenshots/$$f.png; then cp artifacts/screenshots/$$f.png docs/screenshots/; fi; \
	done

## Only the headless-Chromium dashboard tests; screenshots land in artifacts/screenshots/.
.PHONY: test-browser
test-browser: $(STAMP)
	$(BIN)/pytest -q -m browser
