# split_assets — `make demo`, `make test`, `make ui` (README "Quick start").
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
DEV_STAMP := $(VENV)/.installed-dev
export DAGSTER_HOME ?= $(CURDIR)/.dagster_home
UI_PORT ?= 3000
# pytest workers of make test (pytest-xdist): most tests wait on a subprocess, a server or a
# browser, so two fill a 2-core machine
TEST_WORKERS ?= 2

.PHONY: demo test test-fast test-harness ui lint update_snapshot clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/pip install -q -e .
	touch $@

$(DEV_STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/pip install -q -e '.[dev]'
	touch $(STAMP) $@

demo: $(STAMP)
	$(BIN)/split-assets demo --dir demo-workspace

# the suite's temporary folders (workspaces, signal stores, Dagster instances, the PostgreSQL
# server) in memory when /dev/shm is there: every SQLite commit fsyncs, and on disk that is about
# a quarter of a run's time; an exported TMPDIR wins
TEST_TMPDIR := $(shell test -d /dev/shm -a -w /dev/shm && echo /dev/shm)

# the suite's system packages (chromium, postgresql) are installed here when missing
# the instance's settings (telemetry off, no first-visit modal) before dg or dagster first opens it
$(DAGSTER_HOME)/dagster.yaml:
	@mkdir -p $(DAGSTER_HOME)
	printf 'telemetry:\n  enabled: false\nnux:\n  enabled: false\n' > $@

# dg runs in this project's venv (VIRTUAL_ENV: no "venv mismatch" warning)
DG := VIRTUAL_ENV=$(CURDIR)/$(VENV) $(BIN)/dg

test: $(DEV_STAMP) $(DAGSTER_HOME)/dagster.yaml
	@tools/test_packages.sh
	$(BIN)/ruff check split_assets tests bench testkit tools
	env -u SPLIT_ASSETS_CONFIG SPLIT_ASSETS_WORKSPACES=tests/fixtures/workspaces $(DG) check defs
	TMPDIR=$${TMPDIR:-$(TEST_TMPDIR)} SPLIT_ASSETS_TEST_PACKAGES=required $(BIN)/python -m pytest -q -n $(TEST_WORKERS)

# the inner loop: the tests that start no process, server or Dagster run (tests/conftest.py
# says which); make test runs them all, with ruff and dg check
test-fast: $(DEV_STAMP) $(DAGSTER_HOME)/dagster.yaml
	TMPDIR=$${TMPDIR:-$(TEST_TMPDIR)} SPLIT_ASSETS_FAST=1 $(BIN)/python -m pytest -q -n $(TEST_WORKERS)

# lmms-eval's own task code loads the pool tasks of `split-assets export lmms-eval` in a venv of
# its own (.venv-harness): torch 2.13.0's CPU build (a plain `torch` would be a CUDA build of
# several GB), lmms-eval without its dependency list, and what its task loader imports
HARNESS_VENV := .venv-harness
HARNESS_STAMP := $(HARNESS_VENV)/.installed
# where torch 2.13.0's CPU build comes from: this machine's pip finds it on disk; elsewhere
# `make test-harness TORCH_INDEX=https://download.pytorch.org/whl/cpu` (PyPI's is a CUDA build)
TORCH_INDEX ?=
LMMS_EVAL_VERSION := 0.7.3

$(HARNESS_STAMP): tools/harness-requirements.txt
	rm -rf $(HARNESS_VENV)
	$(PYTHON) -m venv $(HARNESS_VENV)
	$(HARNESS_VENV)/bin/pip install -q torch==2.13.0 $(if $(TORCH_INDEX),--index-url $(TORCH_INDEX))
	$(HARNESS_VENV)/bin/pip install -q -r tools/harness-requirements.txt
	$(HARNESS_VENV)/bin/pip install -q --no-deps lmms-eval==$(LMMS_EVAL_VERSION)
	touch $@

test-harness: $(DEV_STAMP) $(HARNESS_STAMP) $(DAGSTER_HOME)/dagster.yaml
	TMPDIR=$${TMPDIR:-$(TEST_TMPDIR)} SPLIT_ASSETS_HARNESS_PYTHON=$(CURDIR)/$(HARNESS_VENV)/bin/python \
	  $(BIN)/python -m pytest -q tests/harness

# the release: python -m build makes the sdist and a wheel built from it (no network: the dev
# extra holds build and hatchling), and tests/release/test_wheel.py installs the wheel into a
# fresh venv outside the checkout (pip may fetch its dependencies; its cache makes later runs
# faster) and runs split-assets --version, demo and verify there; minutes, so not in make test
.PHONY: test-release dist
test-release: $(DEV_STAMP)
	$(BIN)/python -m pytest -q -s tests/release/test_changelog_version.py \
	  tests/release/test_wheel.py

# the wheel and the sdist in dist/ (pip install dist/split_assets-*.whl)
dist: $(DEV_STAMP)
	$(BIN)/python -m build --no-isolation --outdir dist .

# the documentation site (mkdocs.yml, docs/) on http://127.0.0.1:8000, with the docs extra only
DOCS_STAMP := $(VENV)/.installed-docs
DOCS_PORT ?= 8000
.PHONY: docs
$(DOCS_STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/pip install -q -e '.[docs]'
	touch $@

docs: $(DOCS_STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs serve -a 127.0.0.1:$(DOCS_PORT)

# every workspace declared in $SPLIT_ASSETS_WORKSPACES (default: workspaces/ here; make demo
# declares the sample one as "demo"); SPLIT_ASSETS_CONFIG, when set, serves that one unprefixed
ui: $(STAMP) $(DAGSTER_HOME)/dagster.yaml
	@test -f $${SPLIT_ASSETS_WORKSPACES:-workspaces}/demo/defs.yaml -o -n "$$SPLIT_ASSETS_CONFIG" \
	  || $(MAKE) demo
	$(DG) dev -h 127.0.0.1 -p $(UI_PORT)

update_snapshot: $(DEV_STAMP)
	UPDATE_SNAPSHOT=1 $(BIN)/python -m pytest -q tests/orchestration/test_definitions.py

lint: $(DEV_STAMP)
	$(BIN)/ruff check split_assets tests bench

clean:
	rm -rf demo-workspace .dagster_home workspaces/demo $(HARNESS_VENV)
	rm -rf dist
