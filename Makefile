# Two commands on a fresh machine: `make run` and `make test`.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-deps
RUN_DIR := $(shell mktemp -u /tmp/aibuddy-run.XXXXXX)

.PHONY: install run test test-quick lint docs docs-serve reference screenshots bench clean

# Dependencies are installed once per pyproject change; the package itself is reinstalled
# (not editable, as a user installs it) on every run so tests see the current source.
$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip setuptools wheel
	$(PY) -m pip install -q ".[test]"
	touch $(STAMP)

install: $(STAMP)
	$(PY) -m pip install -q --no-deps --no-build-isolation --force-reinstall . 
	rm -rf build aibuddy_cli.egg-info

run: install
	@bash scripts/demo.sh "$(VENV)/bin/aibuddy" "$(RUN_DIR)"

# -n auto: one pytest worker per core (pytest-xdist). --dist worksteal: a few tests wait seconds on
# real processes (the model worker, signals, litellm's cold import) among many quick ones; an idle
# worker takes tests from the other's queue instead of waiting for it (load left one worker 37 s
# behind the other on the heavy files, worksteal 14 s; loadfile would keep each heavy file on one).
#
# The tests make some 30,000 small files a run, syncing many of them as the vault's writes do, and
# pytest deletes the folders of the run before last at the end of each run: on this machine's disk
# that I/O is a sixth of the suite's time. In memory (/dev/shm, where the machine has one) it is
# nearly free; `TMPDIR=DIR make test` picks another place.
TEST_TMPDIR ?= $(or $(TMPDIR),$(shell test -d /dev/shm -a -w /dev/shm && echo /dev/shm))
test: install
	$(if $(TEST_TMPDIR),TMPDIR=$(TEST_TMPDIR)) $(PY) -m pytest -q -n auto --dist worksteal

# The tests that start no process and no server (pytest's `process` mark), in seconds: while working.
test-quick: install
	$(if $(TEST_TMPDIR),TMPDIR=$(TEST_TMPDIR)) $(PY) -m pytest -q -n auto --dist worksteal -m "not process"

# The documentation site: the reference pages are made from the code (docs/gen_reference.py);
# a stale one, a broken link or a page left out of the navigation fails the build (--strict).
DOCS_STAMP := $(VENV)/.installed-docs
$(DOCS_STAMP): $(STAMP)
	$(PY) -m pip install -q ".[docs]"
	touch $(DOCS_STAMP)

reference: $(STAMP)
	$(PY) docs/gen_reference.py

# The documentation's pictures of `aibuddy ui`, taken by its browser tests (Debian's Chromium).
screenshots: install
	mkdir -p docs/images/ui
	AIBUDDY_UI_SCREENSHOTS=$(CURDIR)/docs/images/ui $(if $(TEST_TMPDIR),TMPDIR=$(TEST_TMPDIR)) $(PY) -m pytest -q tests/ui/test_ui_browser.py

docs: $(DOCS_STAMP)
	$(PY) docs/gen_reference.py --check
	NO_MKDOCS_2_WARNING=1 $(PY) -m mkdocs build --strict --quiet

docs-serve: $(DOCS_STAMP)
	NO_MKDOCS_2_WARNING=1 $(PY) -m mkdocs serve --dev-addr 127.0.0.1:8000

# `ruff format --check` is not part of lint yet: the code is not ruff-format-clean.
lint: $(STAMP)
	$(PY) -m ruff check aibuddy_cli tests bench docs
	$(PY) -m mypy aibuddy_cli

bench: install
	$(PY) bench/bench_memory.py
	$(PY) bench/bench_kb.py
	$(PY) bench/bench_tables.py
	$(PY) bench/bench_tasks.py
	$(PY) bench/bench_models.py
	$(PY) bench/bench_git.py
	$(PY) bench/bench_mcp.py
	$(PY) bench/bench_recall_warm.py
	$(PY) bench/bench_agents.py
	$(PY) bench/bench_hooks.py
	$(PY) bench/secret_rates.py
	$(PY) bench/secret_heldout.py --quiet
	$(PY) bench/secret_heldout2.py --quiet
	$(PY) bench/secret_heldout3.py --quiet
	$(PY) bench/bench_redaction.py
	$(PY) bench/bench_store.py
	$(PY) bench/bench_growth.py
	$(PY) bench/bench_workers.py
	$(PY) bench/bench_store_growth.py
	$(PY) bench/bench_watch.py
	$(PY) bench/recall_same.py
	$(PY) bench/bench_index_build.py
	$(PY) bench/fact_pair_rates.py
	$(PY) bench/cue_gate_rates.py
	$(PY) bench/eval_retrieval.py

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache site
