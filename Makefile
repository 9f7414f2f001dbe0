# The two commands of the README's quick start: `make demo` and `make test`.
# Both create .venv on first use and reuse it afterwards (reinstalling only when pyproject.toml
# changes). Everything installs from the package registries; nothing runs online afterwards.

PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
STAMP_RUN := $(VENV)/.installed-run
STAMP_DEV := $(VENV)/.installed-dev
WORKDIR ?= demo-work

.PHONY: demo test lint format bench clean

demo: $(STAMP_RUN)
	$(BIN)/pmc demo --workdir $(WORKDIR)

test: lint
	$(BIN)/pytest

lint: $(STAMP_DEV)
	$(BIN)/ruff check src tests
	$(BIN)/ruff format --check src tests
	$(BIN)/mypy

format: $(STAMP_DEV)
	$(BIN)/ruff check --fix src tests
	$(BIN)/ruff format src tests

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(STAMP_RUN): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e .
	touch $@

$(STAMP_DEV): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e '.[dev]'
	touch $@ $(STAMP_RUN)

clean:
	rm -rf $(VENV) $(WORKDIR) .mypy_cache .ruff_cache .pytest_cache
