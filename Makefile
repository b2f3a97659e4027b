# Set-up and entry points.  `make demo` and `make test` create .venv when it is missing.
SHELL := /bin/bash
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: demo test test-fast docs bench venv clean clean-cache

# Find a Python >= 3.12: versioned names on PATH first, then pyenv installs, then python3.
find-python = $(shell bash .ci/find-python)

$(STAMP): pyproject.toml
	@PYBIN="$(find-python)"; \
	if [ -z "$$PYBIN" ]; then \
	  echo "error: no Python >= 3.12 found (looked for python3.13, python3.12 on PATH, pyenv versions 3.12/3.13, python3)."; \
	  echo "       Install one (e.g. 'pyenv install 3.12') and run make again."; exit 1; fi; \
	echo "using $$PYBIN ($$($$PYBIN --version))"; \
	rm -rf $(VENV) && $$PYBIN -m venv $(VENV) && \
	$(PY) -m pip install -q --upgrade pip && \
	$(PY) -m pip install -q -e ".[test]" && touch $(STAMP)

venv: $(STAMP)

demo: $(STAMP)
	$(PY) -m pymc_trees.comparison.demo

test: $(STAMP)
	$(PY) -m pytest -q -n 2 --dist worksteal --durations=15 tests

# Every test but those marked slow (statistical, enumeration and end-to-end sampling tests of
# 2 s or more): under two minutes on two cores, for the edit-run loop.  `make test` runs all.
test-fast: $(STAMP)
	$(PY) -m pytest -q -n 2 --dist worksteal -m "not slow" tests

# The documentation site (Sphinx, PyData theme, notebooks executed by myst-nb), warnings as
# errors; open docs/_build/html/index.html.
DOCS_STAMP := $(VENV)/.docs-installed

$(DOCS_STAMP): $(STAMP) pyproject.toml
	$(PY) -m pip install -q -e ".[docs]" && touch $(DOCS_STAMP)

docs: $(DOCS_STAMP)
	$(PY) -m sphinx -W --keep-going -q -b html docs docs/_build/html
	@echo "site: docs/_build/html/index.html"

bench: $(STAMP)
	$(PY) -m pip install -q -e ".[bench]"
	$(PY) benchmarks/sweep.py

clean:
	rm -rf $(VENV)

clean-cache:
	find . -name __pycache__ -prune -exec rm -rf {} +
