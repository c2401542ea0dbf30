# The two commands the README promises: `make lab` and `make test`.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: lab test lint install server-stop clean

lab: $(STAMP)
	$(BIN)/pgq-teach lab

# Lint and types first: they take seconds, and a failure there needs no server.
lint: $(STAMP)
	$(BIN)/ruff check pgq_teach
	$(BIN)/ruff format --check pgq_teach
	$(BIN)/mypy

test: $(STAMP) lint
	$(BIN)/pgq-teach server start
	$(BIN)/pytest --nbval --nbval-current-env tests notebooks $(PYTEST_ARGS)

install: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e ".[dev]"
	touch $(STAMP)

server-stop: $(STAMP)
	$(BIN)/pgq-teach server stop

clean:
	rm -rf $(VENV) build dist *.egg-info .pytest_cache .mypy_cache .ruff_cache
