# Two commands do all the set-up on a fresh machine (see README):
#   make lab    venv + packages + default model, then JupyterLab on notebooks/
#   make test   the same set-up (plus Chromium for the browser test), then every test
# Both are idempotent: a second run only checks that everything is in place.

SHELL := /bin/bash
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.viz-installed
PORT ?= 8888

.PHONY: setup model lab test test-fast notebooks bench browser clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

# Reinstall only when requirements.txt or pyproject.toml changed since the last install.
$(STAMP): requirements.txt pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -r requirements.txt
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --no-deps -e .
	touch $@

setup: $(STAMP) model

# Download (once), check and dequantize the default model into the local cache.
model: $(STAMP)
	$(BIN)/python -m viz fetch-model

lab: setup
	$(BIN)/jupyter lab --notebook-dir=notebooks --port=$(PORT)

test: setup
	$(BIN)/python -m pytest

# Only the unit tests (no notebooks, no browser): a quick check while editing.
test-fast: setup
	$(BIN)/python -m pytest tests -m "not slow"

clean:
	rm -rf $(VENV) .pytest_cache artifacts
