# Developer entry points. `make test` is the whole suite (lint, types, tests) and is
# what .ci/run and the README run; it creates .venv on first use.
VENV ?= .venv
BIN := $(VENV)/bin
FIXTURES := -e tests/fixtures/ssebench_fake_ext -e tests/fixtures/ssebench_example_ext

.PHONY: dev lint test test-unit test-docker bench clean

$(VENV)/.installed: pyproject.toml tests/fixtures/*/pyproject.toml
	python3 -m venv $(VENV)
	PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 $(BIN)/pip install -q -e '.[dev,webui]' $(FIXTURES)
	touch $@

dev: $(VENV)/.installed

lint: dev
	$(BIN)/ruff check src tests bench
	$(BIN)/ruff format --check src tests bench
	$(BIN)/mypy
	$(BIN)/lint-imports --no-cache

# --durations: what the costliest tests take, to keep a cold CI within its budget.
test: lint
	$(BIN)/pytest --durations=40

test-unit: dev
	$(BIN)/pytest tests/unit

test-docker: dev
	$(BIN)/pytest -m docker

bench: dev
	$(BIN)/python bench/run_all.py

clean:
	rm -rf $(VENV) .mypy_cache .pytest_cache .ruff_cache
