# airflow-provider-blinkops: the developer commands.
#   make test                          ruff, mypy and pytest on the locked Airflow 3 environment (.venv)
#   make test AIRFLOW_VERSION=2.11.2   the same on Airflow 2.11 (.venv-airflow-2.11.2, pinned by .ci/)
#   make ui-test                       the connection form in Airflow 3's UI, in headless Chromium (an extra check)
#   make demo                          the main job: both example DAGs end to end against the sandbox
#   make docs                          the documentation site (Sphinx, warnings are errors) in docs/_build/html
#   make bench                         the benchmarks (prints measured figures)
# Every target creates its environment with uv first when it is missing.

SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

AIRFLOW_VERSION ?=
UV := $(shell command -v uv 2>/dev/null || echo python3 -m uv)

ifeq ($(AIRFLOW_VERSION),)
VENV := .venv
else
VENV := .venv-airflow-$(AIRFLOW_VERSION)
PINS := .ci/requirements-airflow-$(AIRFLOW_VERSION).txt
endif
PY := $(VENV)/bin/python
export UV_PROJECT_ENVIRONMENT := $(abspath .venv)

.PHONY: help uv env lint typecheck pytest test ui-test demo docs bench pins-airflow2 clean

help:
	@sed -n 's/^#   //p' $(MAKEFILE_LIST)

uv:
	@$(UV) --version >/dev/null 2>&1 || python3 -m pip install --quiet uv || python3 -m pip install --quiet --user uv

env: uv
ifeq ($(AIRFLOW_VERSION),)
	@$(UV) sync --locked --all-extras --quiet
else
	@$(UV) venv --quiet --allow-existing $(VENV)
	@if [ -f "$(PINS)" ]; then \
		$(UV) pip sync --quiet --python $(PY) $(PINS) && \
		$(UV) pip install --quiet --python $(PY) --no-deps -e . ; \
	else \
		echo "no $(PINS): resolving apache-airflow==$(AIRFLOW_VERSION) afresh"; \
		$(UV) pip install --quiet --python $(PY) -e . --group dev "apache-airflow==$(AIRFLOW_VERSION)"; \
	fi
endif
	@$(PY) -c 'import airflow, sys; print(f"Airflow {airflow.__version__} on Python {sys.version.split()[0]} in $(VENV)")'

lint: env
	$(VENV)/bin/ruff check provider tests $(wildcard example_dags)
	$(VENV)/bin/ruff format --check provider tests $(wildcard example_dags)

typecheck: env
	$(VENV)/bin/mypy

pytest: env
	$(PY) -m pytest $(PYTEST_ARGS)

test: lint typecheck pytest

# Debian's chromium and chromium-driver, installed with apt when missing (a downloaded browser cannot work offline).
ui-test: env
	@command -v chromium >/dev/null && command -v chromedriver >/dev/null || { \
		echo "installing Debian's chromium and chromium-driver"; \
		$(if $(filter 0,$(shell id -u)),,sudo) apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive $(if $(filter 0,$(shell id -u)),,sudo) apt-get install -y -qq chromium chromium-driver >/dev/null; }
	$(PY) -m pytest -m ui tests/ui $(PYTEST_ARGS)
	@echo "Screenshots: build/ui-test/"

# With BLINK_BASE_URL and BLINK_API_KEY set, against that tenant instead (see example_dags/demo.py).
demo: env
	AIRFLOW_HOME="$(CURDIR)/.airflow$(if $(AIRFLOW_VERSION),-$(AIRFLOW_VERSION))" $(PY) example_dags/demo.py

docs: env
	$(VENV)/bin/sphinx-build -W --keep-going -q -b html docs docs/_build/html
	@echo "Documentation: docs/_build/html/index.html"

bench: env
	$(PY) tests/benchmarks/run.py $(BENCH_ARGS)

# Regenerate the pinned Airflow 2.11 environment (run when pyproject.toml's dependencies change).
pins-airflow2: uv
	@echo "apache-airflow==2.11.2" > .ci/airflow-2.11.2-override.txt
	$(UV) pip compile pyproject.toml --extra sandbox --group dev --overrides .ci/airflow-2.11.2-override.txt \
		--python-version 3.10 --universal --quiet -o .ci/requirements-airflow-2.11.2.txt
	@rm .ci/airflow-2.11.2-override.txt

clean:
	rm -rf .venv .venv-airflow-* .airflow .airflow-* .pytest_cache .mypy_cache .ruff_cache
