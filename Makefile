# airflow-provider-blinkops: the developer commands.
#   make test                          ruff, import-linter, mypy and every test on the locked Airflow 3 (.venv)
#   make test AIRFLOW_VERSION=2.11.2   the same on Airflow 2.11 (.venv-airflow-2.11.2, pinned by .ci/)
#   make compat AIRFLOW_VERSION=2.11.2 mypy and the tests that depend on Airflow's version (-m compat) there
#   make test-py313                    the compat tests on Python 3.13, the newest supported (.venv-py3.13, locked)
#   make test-lowest                   the built wheel with its lowest declared dependencies, then the compat tests
#   make ui-test                       the connection form and the plan review in Airflow 3's UI, in headless Chromium
#   make ci-recipe                     docs/ci.md's workflow line by line, installed as written into a fresh virtual environment; the sandbox's wheel alone
#   make demo                          the main job: both example DAGs end to end against the sandbox
#   make celery-demo                   the fleet example on CeleryExecutor: two workers, Redis, PostgreSQL, S3 (moto), the sandbox
#   make airflow-ui                    the example DAGs in Airflow 3's UI (airflow standalone, the sandbox); Ctrl-C stops
#   make docs                          the documentation site (Sphinx, warnings are errors) in docs/_build/html
#   make bench                         the benchmarks (prints measured figures)
#   make bench-fleet                   the fleet example's time per table at 20 and 100 tables (LocalExecutor)
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

# Bytecode is written once, under build/pycache (outside the tree), and read by every later process.
# With PYTHONDONTWRITEBYTECODE (set on the developer's machine) every process compiled Airflow anew:
# 7 s of CPU each xdist worker, `airflow dags test`, Airflow service and task process paid again.
unexport PYTHONDONTWRITEBYTECODE
PYTHONPYCACHEPREFIX ?= $(CURDIR)/build/pycache
export PYTHONPYCACHEPREFIX

.PHONY: help uv env lint typecheck pytest test compat test-py313 test-lowest ui-test ci-recipe demo debian-services celery-env celery-demo airflow-ui docs bench bench-fleet pins clean

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
		$(UV) pip install --quiet --python $(PY) --no-deps -e . -e ./sandbox ; \
	else \
		echo "no $(PINS): resolving apache-airflow==$(AIRFLOW_VERSION) afresh"; \
		$(UV) pip install --quiet --python $(PY) -e . -e ./sandbox --group dev "apache-airflow==$(AIRFLOW_VERSION)"; \
	fi
endif
	@$(PY) -c 'import airflow, sys; print(f"Airflow {airflow.__version__} on Python {sys.version.split()[0]} in $(VENV)")'

# The layers (pyproject.toml's [tool.importlinter]) are checked with the installed package.
lint: env
	$(VENV)/bin/ruff check provider sandbox tests dev benchmarks $(wildcard example_dags)
	$(VENV)/bin/ruff format --check provider sandbox tests dev benchmarks $(wildcard example_dags)
	$(VENV)/bin/lint-imports --no-cache

typecheck: env
	$(VENV)/bin/mypy

# pytest-xdist: a worker a core; each test module on one worker, in its order, but the end-to-end
# DAGs' tests, which stand alone and are spread (tests/conftest.py's SPREAD). XDIST= runs on one process.
XDIST ?= -n auto --dist loadgroup
pytest: env
	$(PY) -m pytest $(XDIST) $(PYTEST_ARGS)

test: lint typecheck pytest

# Another Airflow line: its types, and the tests that depend on Airflow's version.
compat: typecheck
	$(PY) -m pytest $(XDIST) -m compat $(PYTEST_ARGS)

# Python 3.13: a pyenv or system interpreter when there is one (uv cannot download one offline).
PY313 ?= $(firstword $(wildcard $(HOME)/.pyenv/versions/3.13*/bin/python3.13 /usr/bin/python3.13 /usr/local/bin/python3.13) 3.13)

test-py313: uv
	UV_PROJECT_ENVIRONMENT="$(CURDIR)/.venv-py3.13" $(UV) sync --locked --all-extras --quiet --python "$(PY313)"
	@.venv-py3.13/bin/python -c 'import airflow, sys; print(f"Airflow {airflow.__version__} on Python {sys.version.split()[0]} in .venv-py3.13")'
	.venv-py3.13/bin/python -m pytest $(XDIST) -m compat $(PYTEST_ARGS)

# The wheel as a user installs it, each direct dependency at its declared floor: a lowest-direct
# resolution of pyproject.toml's dependencies, whose direct pins constrain the install of the
# wheel and the test tools (which come at versions compatible with those floors).
FLOORED := apache-airflow|apache-airflow-providers-common-compat|requests|urllib3|pydantic|pydantic-core|tenacity|pyyaml|fastapi|uvicorn

test-lowest: uv
	rm -rf dist/lowest .venv-lowest
	$(UV) build --wheel --quiet -o dist/lowest
	$(UV) build --wheel --quiet --package blinkops-sandbox -o dist/lowest/sandbox
	$(UV) pip compile pyproject.toml sandbox/pyproject.toml --resolution lowest-direct --python-version 3.11 \
		--quiet -o dist/lowest/resolved.txt
	grep -iE '^($(FLOORED))==' dist/lowest/resolved.txt > dist/lowest/floors.txt
	@echo "the declared floors:"; sed 's/^/  /' dist/lowest/floors.txt
	$(UV) venv --quiet --python 3.11 .venv-lowest
	$(UV) pip install --quiet --python .venv-lowest/bin/python -c dist/lowest/floors.txt \
		"$$(ls dist/lowest/*.whl)" "$$(ls dist/lowest/sandbox/*.whl)" pytest pytest-xdist requests-mock apache-airflow-providers-http \
		"apache-airflow-providers-amazon[s3fs]" "moto[s3,server]"
	$(UV) pip freeze --python .venv-lowest/bin/python | grep -ixF -f dist/lowest/floors.txt | diff - dist/lowest/floors.txt
	.venv-lowest/bin/python -m pytest -p no:cacheprovider $(XDIST) -m compat $(PYTEST_ARGS)

# Debian's chromium and chromium-driver, installed with apt when missing (a downloaded browser cannot work offline).
ui-test: env
	@command -v chromium >/dev/null && command -v chromedriver >/dev/null || { \
		echo "installing Debian's chromium and chromium-driver"; \
		$(if $(filter 0,$(shell id -u)),,sudo) apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive $(if $(filter 0,$(shell id -u)),,sudo) apt-get install -y -qq chromium chromium-driver >/dev/null; }
	$(PY) -m pytest -m ui tests/ui $(PYTEST_ARGS)
	@echo "Screenshots: build/ui-test/"

# docs/ci.md's workflow as a runner runs it: its install line into a fresh virtual environment (the
# locked versions as pip's constraints, so that the install resolves nothing), then its commands.
ci-recipe: env
	$(UV) export --locked --no-hashes --no-emit-workspace --all-extras --quiet -o build/ci-recipe-constraints.txt
	PIP_CONSTRAINT="$(CURDIR)/build/ci-recipe-constraints.txt" $(PY) -m pytest -m recipe tests/integration/test_ci_recipe.py tests/integration/test_distributions.py $(PYTEST_ARGS)

# With BLINK_BASE_URL and BLINK_API_KEY set, against that tenant instead (see dev/demo.py).
demo: env
	AIRFLOW_HOME="$(CURDIR)/.airflow$(if $(AIRFLOW_VERSION),-$(AIRFLOW_VERSION))" $(PY) dev/demo.py

# Debian's postgresql and redis-server, installed with apt when missing, and the Celery provider with
# PostgreSQL's drivers in their own environment (.venv-celery: uv.lock's group celery). Airflow 3 only.
debian-services:
	@ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 && command -v redis-server >/dev/null || { \
		echo "installing Debian's postgresql and redis-server"; \
		$(if $(filter 0,$(shell id -u)),,sudo) apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive $(if $(filter 0,$(shell id -u)),,sudo) apt-get install -y -qq postgresql redis-server >/dev/null; }

celery-env: uv debian-services
	UV_PROJECT_ENVIRONMENT="$(CURDIR)/.venv-celery" $(UV) sync --locked --all-extras --group celery --quiet

# State and logs in .airflow-celery/.
celery-demo: celery-env
	.venv-celery/bin/python dev/celery_demo.py

# Airflow 3 only (the event-driven sync and the review need it). Records, snapshots and logs in .airflow-ui/.
airflow-ui: env
	AIRFLOW_HOME="$(CURDIR)/.airflow-ui" $(PY) dev/airflow_ui.py

docs: env
	$(VENV)/bin/sphinx-build -W -n --keep-going -q -b html docs docs/_build/html
	@echo "Documentation: docs/_build/html/index.html"

bench: env
	$(PY) benchmarks/run.py $(BENCH_ARGS)

# The fleet example through Airflow's scheduler (LocalExecutor, PostgreSQL): 20 and 100 tables.
bench-fleet: celery-env
	.venv-celery/bin/python benchmarks/fleet.py $(BENCH_ARGS)

# Regenerate the pinned Airflow 2.11 environment (run when pyproject.toml's dependencies change).
# The pinned environment of another Airflow (make pins AIRFLOW_VERSION=...): 2.x with the sandbox's
# dependencies (sandbox/pyproject.toml), 3.x with every extra and the browser test's group too.
pins: uv
	@test -n "$(AIRFLOW_VERSION)" || { echo "make pins needs AIRFLOW_VERSION (2.11.2, 3.1.8)"; exit 2; }
	@echo "apache-airflow==$(AIRFLOW_VERSION)" > .ci/airflow-$(AIRFLOW_VERSION)-override.txt
	$(UV) pip compile pyproject.toml sandbox/pyproject.toml $(if $(filter 2.%,$(AIRFLOW_VERSION)),--universal,--all-extras --group ui) \
		--group dev --overrides .ci/airflow-$(AIRFLOW_VERSION)-override.txt --python-version 3.11 --quiet -o $(PINS)
	@rm .ci/airflow-$(AIRFLOW_VERSION)-override.txt

clean:
	rm -rf .venv .venv-airflow-* .venv-py3.13 .venv-lowest .venv-celery build/pycache .airflow-celery .airflow-bench-fleet dist .airflow .airflow-* .airflow-ui .pytest_cache .mypy_cache .ruff_cache
