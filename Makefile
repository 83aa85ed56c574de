# split_assets — `make demo`, `make test`, `make ui` (README "Quick start").
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
DEV_STAMP := $(VENV)/.installed-dev
export DAGSTER_HOME ?= $(CURDIR)/.dagster_home
UI_PORT ?= 3000

.PHONY: demo test ui lint update_snapshot clean

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

# the suite's system packages (chromium, postgresql) are installed here when missing
test: $(DEV_STAMP)
	@tools/test_packages.sh
	$(BIN)/ruff check split_assets tests bench
	SPLIT_ASSETS_TEST_PACKAGES=required $(BIN)/python -m pytest -q

ui: $(STAMP)
	@test -f demo-workspace/video_split.yaml || $(MAKE) demo
	SPLIT_ASSETS_CONFIG=$${SPLIT_ASSETS_CONFIG:-demo-workspace/video_split.yaml} \
	  PYTHONWARNINGS='ignore:Function `dev_command` is superseded:FutureWarning' \
	  $(BIN)/dagster dev -w workspace.yaml -h 127.0.0.1 -p $(UI_PORT)

update_snapshot: $(DEV_STAMP)
	UPDATE_SNAPSHOT=1 $(BIN)/python -m pytest -q tests/defs/test_definitions.py

lint: $(DEV_STAMP)
	$(BIN)/ruff check split_assets tests bench

clean:
	rm -rf demo-workspace .dagster_home
